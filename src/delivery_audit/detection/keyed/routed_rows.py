"""Pass 1's rows out: per identity, the write-side rules and seq_gap's range; per broker
copy, dup_write, zombie_write, the key's moves and write_reorder; per ledger row, the
broker copy at its record and its identity's ``judged`` (to the consumer side) and, at an
aborted record, an aborted read — as routed rows. The states' rows stay in the pass's
partitioning: the (group, identity) pairs (with rule 12's ``past``) and the successful
processings (delivery_states.py counts them)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...config import AuditConfig
from ...sqlexpr import BEFORE, WHOLE, X
from .. import ordering, routes, transactions, write_side
from ..facts import Facts
from .identity_facts import successes_by_slot
from .layout import (
    BROKER,
    FIRST,
    ID,
    KEY,
    KINDS,
    LEDGER,
    MASK_BITS,
    PAIR,
    TPO,
    A,
    K,
    L,
    group_slots,
)


def _pair_row(df: DataFrame, given: dict[str, X]) -> DataFrame:
    """``df``'s rows as pair rows (layout.PAIR): the ``given`` fields."""
    return S.select(df, *[given[name].cast(dtype).alias(name) for name, dtype in PAIR])


def pair_rows(ids: DataFrame, successes: DataFrame, facts: Facts) -> DataFrame:
    """A judged identity's (group, identity) pairs: one per group consuming its topic
    (rule 9), with its figures, whether the group went past every copy (rule 12), and the
    group's successful processings of it (k, the first: ``successes`` counted per identity
    and group slot, identity_facts.successes_by_slot, merge joined in the pass's order), in
    the pass's partitioning (by key; delivery_states.py decides the states there). An
    identity of a topic no group consumes has no pair (it still counts as judged)."""
    case = None
    for t, slots in group_slots(facts).items():
        value = S.fn("array", *[S.struct(
            g=S.lit(g),
            past=S.raw(f"coalesce(shiftright(past_all{i // MASK_BITS}, {i % MASK_BITS}) & 1 "
                       "= 1, false)"),
            k=S.raw(f"coalesce(_k{i}, 0L)"), first=S.col(f"_first{i}"))
            for g, i in slots])
        case = S.when(S.col("topic") == t, value) if case is None\
            else case.when(S.col("topic") == t, value)
    if case is None:  # no group consumes any topic: no pairs
        return _pair_row(ids.limit(0), {name: S.lit(None) for name, _ in PAIR})
    none = S.raw(f"CAST(array() AS array<struct<g:string,past:boolean,k:bigint,"
                 f"first:{FIRST}>>)")
    judged = ids.filter(F.col("judged")).hint("merge").join(
        successes_by_slot(successes, facts).hint("merge"), on=ID, how="left")
    paired = S.select(judged, "*", S.fn("explode", case.otherwise(none)).alias("_gp"))
    kept = ("n_copies", "first_copy", "any_acked", "acked_inside", "acked_below", "acked_at",
            "below_at", "first_send_ts", "judged_ts")
    return _pair_row(paired, {**{c: S.col(c) for c in (*ID, *kept)},
                              "group_id": S.col("_gp.g"), "past": S.col("_gp.past"),
                              "k": S.col("_gp.k"), "first": S.col("_gp.first")})


_ANYWHERE = routes.route_hash("key_v", "seq")


def identity_rows(ids: DataFrame, config: AuditConfig) -> DataFrame:
    """Per identity: the identity rules; per key in seq order (the leaf's order): seq_gap's
    range and the previous identity."""
    judged_seq = "IF(judged, seq, NULL)"
    ranged = S.select(ids, "*",
                      S.over(f"min({judged_seq})", KEY, ["seq"], WHOLE).alias("lo"),
                      S.over(f"max({judged_seq})", KEY, ["seq"], WHOLE).alias("hi"),
                      S.over("lag(seq)", KEY, ["seq"]).alias("prev_seq"))
    emit = routes.emit_when
    rows = [emit(KINDS, cond, A, S.lit(None), S.col("topic"), _ANYWHERE, a)
            for cond, a in write_side.identity_rules(config)]
    return routes.routed(ranged, rows)


def copy_rows(sb: DataFrame, ids: DataFrame) -> DataFrame:
    """Per broker copy, with the key's previous copy (seq, partition, offset order) and its
    identity: dup_write, zombie_write, the key's moves, and write_reorder among the first
    copies of each identity in each partition (the key's copies in that partition in
    offset order: a running maximum of their seqs)."""
    # the key's previous copy: aborted rows are none (rule 22), but they stay for
    # zombie_write (rule 24)
    prev = S.over("last(IF(txn <> 'aborted', named_struct('seq', seq, 'partition', "
                  "partition), NULL), true)", KEY, ["seq", "partition", "offset", "_side"],
                  BEFORE)
    copies = S.select(sb.filter(F.col("_side") == BROKER), "*", prev.alias("prev"))
    copy = S.col("txn") != "aborted"
    first_in_partition = copy & ~S.coalesce((S.col("prev.seq") == S.col("seq"))
                                            & (S.col("prev.partition") == S.col("partition")),
                                            S.lit(False))
    copies = S.select(copies, "*", first_in_partition.alias("first_in_partition"))
    seen = S.over("max(IF(first_in_partition, seq, NULL))", [*KEY, "partition"],
                  ["offset", "seq"], BEFORE)
    copies = S.select(copies, "*", seen.alias("max_seen"))
    joined = copies.hint("merge").join(ids.hint("merge"), on=ID, how="inner")
    emit = routes.emit_when
    dup_cond, dup = write_side.dup_write()
    move_cond, move = write_side.key_move()
    zombie_cond, zombie = transactions.zombie_write()
    reorder_cond, reorder = ordering.write_reorder()
    rows = [
        emit(KINDS, copy & dup_cond, A, S.lit(None), S.col("topic"), _ANYWHERE, dup),
        emit(KINDS, zombie_cond, A, S.lit(None), S.col("topic"), _ANYWHERE, zombie),
        emit(KINDS, copy & move_cond, K, S.lit(None), S.col("topic"),
             routes.route_hash("key_null", "key_v"),
             S.struct(anomaly=move, key_null=S.col("key_null"), key_v=S.col("key_v"),
                      seq=S.col("seq"), partition=S.col("partition"), offset=S.col("offset"))),
        emit(KINDS, S.col("first_in_partition") & reorder_cond, A, S.lit(None), S.col("topic"),
             _ANYWHERE, reorder),
    ]
    return routes.routed(joined, rows)


def ledger_joined(lm: DataFrame, sb: DataFrame, ids: DataFrame) -> DataFrame:
    """Each ledger row with the broker copy at its record (``copy_ts``, its transaction:
    ``aborted``) and its identity's ``judged`` (merge joins in the pass's order)."""
    copy_at = sb.filter(F.col("_side") == BROKER).select(
        *TPO, F.col("timestamp").alias("copy_ts"), "txn", "pid", "producer_epoch", "marker")
    rows = (lm.filter(F.col("_side") == LEDGER).hint("merge")
            .join(copy_at.hint("merge"), on=TPO, how="left")
            .join(ids.select(*ID, "judged").hint("merge"), on=ID, how="left"))
    return S.select(rows, *[c for c in rows.columns if c != "judged"],
                    S.coalesce(S.col("txn") == "aborted", S.lit(False)).alias("aborted"),
                    S.coalesce(S.col("judged"), S.lit(False)).alias("judged"))


def consumed_partitions(facts: Facts) -> dict[tuple[str, str, int], int]:
    """Each (group, topic, partition) the ledger rows may name, weighed by its records in
    the dump (about as many as the consumer side's rows of it)."""
    return {(g, t, p): hi - lo for g in facts.group_ids for (t, p), (lo, hi) in
            facts.ranges.items() if t in facts.topics_of.get(g, ())}


def ledger_out(rows: DataFrame, config: AuditConfig, facts: Facts) -> DataFrame:
    """Per ledger row (``rows``: :func:`ledger_joined`): to the consumer side, with the
    broker copy's timestamp and its identity's ``judged``. A row at an aborted record (rule
    22) goes on like an unresolved one (for "went past" and overlaps only), and its success
    is an aborted read."""
    judged = S.col("judged")
    kept = ~S.col("aborted")
    led = S.struct(**{c: S.col(c) for c in ("group_id", "member_id", "topic", "partition",
                                             "offset", "key_null", "key_v", "seq",
                                             "started_ts", "finished_ts", "outcome")},
                   resolved=S.col("seq").isNotNull() & kept, judged=judged,
                   copy_ts=S.when(kept, S.col("copy_ts")))
    emit = routes.emit_when
    # to the consumer side by (group, topic, partition), each on a task of its own
    tasks = int(rows.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    route = routes.placed(routes.placement(consumed_partitions(facts), tasks),
                          S.col("group_id"), S.col("topic"), S.col("partition"))
    out = [emit(KINDS, S.lit(True), L, S.lit(None), S.lit(None), route, led)]
    if facts.transactional:
        cond, aborted = transactions.aborted_read(
            transactions.isolation_cause(config, facts.group_ids))
        out.append(emit(KINDS, cond, A, S.lit(None), S.col("topic"), _ANYWHERE, aborted))
    return routes.routed(rows, out)
