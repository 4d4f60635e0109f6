"""Pass 1's per-identity facts: one sort-based aggregation of the send and broker rows
per identity (first send, attempts, acks, copies, the time that judges it: rule 8),
whether this window judges it (rules 8 and 25), and per group consuming its topic whether
the group went past every copy (rule 12: by its attempts and commits, or a ``skipped``
mark on the copy's record), as bit masks."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...core.window import AuditWindow
from ...sqlexpr import X
from .. import routes
from ..facts import Facts
from .layout import (
    BROKER,
    ID,
    MARK,
    MASK_BITS,
    SEND,
    TPO,
    group_slot,
    group_slots,
    mask_count,
    slot_count,
    success_struct,
)


def _ts(value) -> X:
    return S.lit(value.replace(tzinfo=None).isoformat(sep=" ")).cast("timestamp")


_AT = "named_struct('partition', partition, 'offset', offset)"


def _when(side: int, value: str) -> str:
    return f"IF(_side = {side}, {value}, NULL)"


_COPY = f"_side = {BROKER} AND txn <> 'aborted'"  # an aborted row is no copy (rule 22)


def _copy(value: str) -> str:
    return f"IF({_COPY}, {value}, NULL)"


def _reach_bits(facts: Facts, chunk: int) -> X:
    """A broker copy's groups (of its topic, in mask ``chunk``) that went past it by their
    attempts and commits (rule 12), as bits."""
    reach = S.map_literal(
        [(S.struct(g=g, t=t, p=p), S.lit(o).cast("bigint"))
         for (g, t, p), o in sorted(facts.reach.items())],
        "map<struct<g:string,t:string,p:int>,bigint>")
    case = None
    for t, slots in group_slots(facts).items():
        terms = [f"IF(coalesce(element_at({reach.sql}, named_struct('g', "
                 f"{S.lit(g).sql}, 't', topic, 'p', partition)) > offset, false), "
                 f"{1 << (i % MASK_BITS)}L, 0L)"
                 for g, i in slots if i // MASK_BITS == chunk]
        if terms:
            value = S.raw(" | ".join(terms))
            cond = S.col("topic") == t
            case = S.when(cond, value) if case is None else case.when(cond, value)
    return S.lit(0).cast("bigint") if case is None else case.otherwise(S.lit(0).cast("bigint"))


def successes_by_slot(successes: DataFrame, facts: Facts) -> DataFrame:
    """Per identity, per group slot of its topic: the group's successful processings of it
    (``_k{i}``) and the first of them by start, finish, partition, offset and member
    (``_first{i}``). One sort-based aggregation by identity over rows already in that order
    (``successes``: leaves.success_rows): no exchange, no sort."""
    rows = S.select(successes, *ID, group_slot(facts).alias("_slot"),
                    success_struct().alias("_s"))
    aggs = []
    for i in range(slot_count(facts)):
        aggs += [F.expr(f"count(IF(_slot = {i}, 1, NULL))").alias(f"_k{i}"),
                 F.expr(f"min(IF(_slot = {i}, _s, NULL))").alias(f"_first{i}")]
    return rows.groupBy(*ID).agg(*aggs)


def identities(sb: DataFrame, lm: DataFrame, window: AuditWindow, facts: Facts) -> DataFrame:
    """One row per identity seen in sends or broker: its figures, whether this window judges
    it, and per mask the groups that went past every copy (a leaf: several steps read
    it)."""
    chunks = range(mask_count(facts))
    marks = (lm.filter(F.col("_side") == MARK)
             .groupBy(*TPO).agg(*[F.expr(f"bit_or(IF(_mask = {c}, _mark, NULL))").alias(f"_m{c}")
                                 for c in chunks]))
    copies = sb.hint("merge").join(marks.hint("merge"), on=TPO, how="left")
    # rule 23: an aborted attempt is not acked, and it is a retry's sign (rule 14)
    acked, failed = "status = 'acked'", "status IN ('failed', 'timeout', 'aborted')"
    figures = {
        "first_send_ts": f"min({_when(SEND, 'send_ts')})",
        "n_send_rows": f"count({_when(SEND, '1')})",
        "max_attempt": f"max({_when(SEND, 'coalesce(attempt, 1)')})",
        "any_failed": f"max({_when(SEND, failed)})",
        "any_acked": f"coalesce(max({_when(SEND, acked)}), false)",
        "any_idempotent": f"max({_when(SEND, 'coalesce(idempotent, false)')})",
        "acked_inside": f"coalesce(max({_when(SEND, 'coalesce(inside, false)')}), false)",
        "acked_below": f"coalesce(max({_when(SEND, 'coalesce(below, false)')}), false)",
        "inside_at": f"min(IF(_side = {SEND} AND inside, {_AT}, NULL))",
        "below_at": f"min(IF(_side = {SEND} AND below, {_AT}, NULL))",
        "acked_at": f"min(IF(_side = {SEND} AND {acked}, {_AT}, NULL))",
        "n_copies": f"count({_copy('1')})",
        # rule 25: aborted copies judge an identity with no send row
        "first_broker_ts": f"min({_when(BROKER, 'timestamp')})",
        "first_copy": f"min({_copy(_AT)})",
    }
    for c in chunks:
        past = f"{_reach_bits(facts, c).sql} | coalesce(_m{c}, 0L)"
        figures[f"past_all{c}"] = f"bit_and({_copy(past)})"
    grouped = copies.groupBy(*ID).agg(*[F.expr(v).alias(k) for k, v in figures.items()])
    judged_ts = S.coalesce(S.col("first_send_ts"), S.col("first_broker_ts"))
    judged = S.coalesce((judged_ts >= _ts(window.start)) & (judged_ts < _ts(window.end)),
                        S.lit(False))
    return routes.checkpoint(S.select(grouped, "*", judged_ts.alias("judged_ts"),
                                      judged.alias("judged")))
