"""Delivery states (rule 11) per judged identity and group, the per-group anomalies they
imply (skipped, pending, expired_unconsumed) and dup_effect.

late_delivery (contract §9) compares a pair's first success with the time that judges it.

Pass 1 (by key) gives, for each judged identity, one *pair* row per group consuming its
topic: its figures, whether the group went past every copy (rule 12), and the group's
successful processings of it, k, and the first of them (counted per identity and group
slot in the identity's aggregation: keyed/identity_facts.py), in its partitioning; only the
successes of pairs with k ≥ 2 are read again and ordered, for dup_effect
(:func:`extra_successes`). No exchange and no sort of all the rows; what it decides goes
to pass 3 as routed rows (:func:`states_pass`). Per pair the precedence: k ≥ 2
``delivered_duplicate``, k = 1 ``delivered_once``; else with a broker copy, ``skipped`` if
the group went past every copy, else ``pending``; else (no copy) an acked offset inside
the dump range → ``lost_acked``, below the log start → ``expired_unconsumed``, acked
elsewhere → ``pending``; never acked → ``lost_unacked``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..anomalies import PENDING_BEFORE_READ, STATES
from ..sqlexpr import UPTO, X
from . import consumer, routes
from .evidence import KEY, anomaly_struct
from .facts import Facts
from .keyed.layout import FIRST, ID, SUCCESS_ORDER, group_slot, slot_count, success_struct

# a (group, identity), and its successes' order
_RUN = ["group_id", *ID]
_ORDER = list(SUCCESS_ORDER)


def extra_successes(successes: DataFrame, ids: DataFrame, facts: Facts) -> DataFrame:
    """The successful processings of the (group, judged identity) pairs processed more than
    once, each with ``n``, its rank in processing order, and ``first``, the pair's first
    (dup_effect: one row per n > 1). Each success learns its group's count from a window
    per identity in the pass's order (no sort); only the few of pairs with k ≥ 2 are
    ordered, and kept where ``ids`` judges the identity (a hash join, those rows built)."""
    slots = slot_count(facts)
    if not slots:
        return S.select(successes.limit(0), "*", S.lit(0).alias("n"),
                        S.lit(None).cast(FIRST).alias("first"))
    rows = S.select(successes, "*", group_slot(facts).alias("_slot"))
    counts = S.fn("array", *[S.over(f"count(IF(_slot = {i}, 1, NULL))", ID)
                             for i in range(slots)])
    mine = S.fn("element_at", counts, S.raw("_slot + 1"))
    twice = S.select(rows, "*", mine.alias("_k")).filter(F.col("_k") >= 2)
    ranked = S.select(twice, *successes.columns,
                      S.over("row_number()", _RUN, _ORDER).alias("n"),
                      S.over(f"first({success_struct().sql})", _RUN, _ORDER, UPTO)
                      .alias("first"))
    judged = ids.filter(F.col("judged")).select(*ID)
    return judged.join(ranked.hint("shuffle_hash"), on=ID, how="inner")


def state() -> X:
    copies = S.col("n_copies") > 0
    return (S.when(S.col("k") >= 2, S.lit("delivered_duplicate"))
            .when(S.col("k") == 1, S.lit("delivered_once"))
            .when(copies & S.col("past"), S.lit("skipped"))
            .when(copies, S.lit("pending"))
            .when(S.coalesce(S.col("acked_inside"), S.lit(False)), S.lit("lost_acked"))
            .when(S.coalesce(S.col("acked_below"), S.lit(False)), S.lit("expired_unconsumed"))
            .when(S.coalesce(S.col("any_acked"), S.lit(False)), S.lit("pending"))
            .otherwise(S.lit("lost_unacked")))


def _with_state(pairs: DataFrame) -> DataFrame:
    return S.select(pairs, "*", state().alias("state"))


def _pending_cause(read_starts: dict[tuple[str, int], int]) -> X:
    """``lag`` with a copy; without one, ``acked before the read`` when the acked offset lies
    below the read's start of an offsets file whose log start is lower (``read_starts``:
    (topic, partition) → read_from, rule 26), else ``acked beyond the dump``."""
    cause = S.when(S.col("n_copies") > 0, S.lit("lag"))
    if read_starts:
        starts = S.map_literal(
            [(S.struct(t=t, p=p), S.lit(o).cast("bigint")) for (t, p), o in
             sorted(read_starts.items())], "map<struct<t:string,p:int>,bigint>")
        start = S.fn("element_at", starts,
                     S.raw("named_struct('t', topic, 'p', acked_at.partition)"))
        cause = cause.when(S.coalesce(S.col("acked_at.offset") < start, S.lit(False)),
                           S.lit(PENDING_BEFORE_READ))
    return cause.otherwise(S.lit("acked beyond the dump"))


def _state_anomalies(read_starts: dict[tuple[str, int], int] | None = None
                     ) -> list[tuple[X, X]]:
    """skipped, pending and expired_unconsumed: one row per (group, identity) in that state."""
    common = dict(group_id="group_id", topic="topic", key=KEY, seq="seq", ts="judged_ts")
    pending_cause = _pending_cause(read_starts or {})
    return [
        (S.col("state") == "skipped", anomaly_struct(
            "skipped", partition=S.col("first_copy.partition"), offset=S.col("first_copy.offset"),
            detail=S.lit("the group went past every copy without processing it"), **common)),
        (S.col("state") == "pending", anomaly_struct(
            "pending", cause=pending_cause,
            partition=S.coalesce(S.col("first_copy.partition"), S.col("acked_at.partition")),
            offset=S.coalesce(S.col("first_copy.offset"), S.col("acked_at.offset")), **common)),
        (S.col("state") == "expired_unconsumed", anomaly_struct(
            "expired_unconsumed", partition=S.col("below_at.partition"),
            offset=S.col("below_at.offset"),
            detail=S.lit("acked below the dump's log start offset; never processed"),
            **common)),
    ]


def late_delivery(sla_ms: dict[str, int]) -> tuple[X, X]:
    """A pair processed (k ≥ 1) whose first successful processing started more than the
    group's ``latency_sla_ms`` after the time that judges the identity (contract §9; a
    group without an SLA never counts). ``sla_ms``: group → SLA."""
    sla = S.map_literal([(S.lit(g), S.lit(ms).cast("bigint")) for g, ms in sorted(sla_ms.items())],
                        "map<string,bigint>")
    limit = S.fn("element_at", sla, S.col("group_id"))
    delay = (S.fn("unix_millis", S.col("first.started_ts"))
             - S.fn("unix_millis", S.col("judged_ts")))
    cond = (S.col("k") >= 1) & S.coalesce(delay > limit, S.lit(False))
    detail = S.concat(S.lit("first processed "), delay.cast("string"),
                      S.lit(" ms after it was judged; latency_sla_ms "), limit.cast("string"))
    return (cond if sla_ms else S.lit(False),
            anomaly_struct("late_delivery", group_id="group_id", topic="topic", key=KEY,
                           seq="seq", partition=S.col("first.partition"),
                           offset=S.col("first.offset"), member_id=S.col("first.member_id"),
                           ts="judged_ts", related_ts=S.col("first.started_ts"),
                           detail=detail))


def dup_effect() -> tuple[X, X]:
    """One row per extra successful processing (k − 1) of a judged identity by a group
    (rows: :func:`extra_successes`)."""
    return (S.col("n") > 1,
            anomaly_struct("dup_effect", group_id="group_id", topic="topic", key=KEY,
                           seq="seq", partition="partition", offset="offset",
                           related_partition=S.col("first.partition"),
                           related_offset=S.col("first.offset"), member_id="member_id",
                           related_member_id=S.col("first.member_id"), ts="started_ts",
                           related_ts=S.col("first.started_ts"), attempts="n"))


def state_rows(pairs: DataFrame) -> DataFrame:
    """One row per (group, judged identity on a topic the group consumes): group_id, topic,
    key, seq, state, successes (``pairs``: pass 1's, keyed.KeyedPass.pairs)."""
    return _with_state(pairs).selectExpr(
        "group_id", "topic", f"{KEY.sql} AS key", "seq", "state", "k AS successes")


def states_pass(pairs: DataFrame, extra: DataFrame, sla_ms: dict[str, int] | None = None,
                read_starts: dict[tuple[str, int], int] | None = None) -> DataFrame:
    """The states, dup_effect and late_delivery (``sla_ms``: group → latency SLA) as routed
    rows for pass 3: anomaly rows, and one row per pair not delivered once (the report
    counts states; delivered_once is the rest of the judged identities). ``pairs``: pass
    1's (keyed.KeyedPass.pairs); ``extra``: :func:`extra_successes`.
    ``read_starts``: an offsets file's read_from where it lies above the log start
    (pending's cause)."""
    emit = routes.emit_when
    K, A, ST = consumer.KINDS, consumer.A, consumer.ST
    anywhere = (S.col("group_id"), S.col("topic"), routes.route_hash("key_v", "seq"))
    rows = [emit(K, cond, A, *anywhere, a)
            for cond, a in (*_state_anomalies(read_starts), late_delivery(sla_ms or {}))]
    code = S.fn("array_position", S.fn("array", *[S.lit(s) for s in STATES]), S.col("state"))
    rows.append(emit(K, S.col("state") != "delivered_once", ST,
                     S.col("group_id"), S.col("topic"), code,
                     S.struct(group_id=S.col("group_id"), topic=S.col("topic"),
                              state=S.col("state"))))
    dup_cond, dup = dup_effect()
    return (routes.routed(_with_state(pairs), rows)
            .unionByName(routes.routed(extra, [emit(K, dup_cond, A, *anywhere, dup)])))
