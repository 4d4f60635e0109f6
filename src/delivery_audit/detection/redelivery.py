"""redelivery (rule 15): the same record processed successfully again by the same group.

Successful processings of (group, topic, partition, offset), ordered by
(started_ts, finished_ts); each after the first is compared with the one just
before it: cause ``rebalance`` when the member differs or an assigned / revoked /
lost / commit_failed event of the group for that partition lies between the
two start times (an event without topic/partition applies to every partition of
the group), else ``other``. A retry after a *failed* processing is not a
redelivery: only successes are compared.

The comparison runs in the consumer pass (consumer.py: ``repeat``, the previous
success's member and start); a repeat by the same member goes on to pass 3, where
:func:`with_event_cause` looks for a rebalance event between the two.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..group_events import REDELIVERY_EVENTS as REBALANCE_EVENTS
from ..schemas import ANOMALY_SCHEMA
from ..sqlexpr import X
from .evidence import KEY, anomaly_struct

_REPEAT = S.raw("outcome = 'success' AND resolved") & S.col("judged") & S.col("repeat")


def _row(cause: X | None, detail: X | None) -> X:
    return anomaly_struct("redelivery", cause=cause, group_id="group_id", topic="topic",
                          key=KEY, seq="seq", partition="partition", offset="offset",
                          member_id="member_id", related_member_id="prev_succ_member",
                          ts="started_ts", related_ts="prev_succ_started", detail=detail)


def moved() -> tuple[X, X]:
    """A repeat by another member: caused by a rebalance."""
    return (_REPEAT & (S.col("member_id") != S.col("prev_succ_member")),
            _row(S.lit("rebalance"), S.lit("processed again by a different member")))


def same_member() -> tuple[X, X]:
    """A repeat by the same member: its cause needs the group's events (pass 3)."""
    return _REPEAT & (S.col("member_id") == S.col("prev_succ_member")), _row(None, None)


def with_event_cause(repeats: DataFrame, events: DataFrame) -> DataFrame:
    """``repeats`` (the same member's, with ``anomaly``, ``group_id``, ``topic``,
    ``partition``, ``prev_started_ts``, ``started_ts``) as anomaly rows with their cause."""
    ev = S.select(events.filter(S.col("event").isin(*REBALANCE_EVENTS).sql),
                  S.col("group_id").alias("e_group"), S.col("topic").alias("e_topic"),
                  S.col("partition").alias("e_partition"), S.col("ts").alias("e_ts"))
    between = S.column(
        (S.col("e_group") == S.col("group_id"))
        & (S.col("e_topic").isNull() | (S.col("e_topic") == S.col("topic")))
        & (S.col("e_partition").isNull() | (S.col("e_partition") == S.col("partition")))
        & (S.col("e_ts") >= S.col("prev_started_ts"))
        & (S.col("e_ts") <= S.col("started_ts"))
    )
    # shuffle joins of two small sides, never a broadcast: a broadcast is a job of its own
    out = []
    for how, cause, detail in (
            ("left_semi", "rebalance", "same member; a rebalance event lies between the two"),
            ("left_anti", "other", "same member, no rebalance event between the two")):
        fields = [f"'{cause}' AS cause" if f.name == "cause" else
                  f"'{detail}' AS detail" if f.name == "detail" else f"anomaly.{f.name}"
                  for f in ANOMALY_SCHEMA.fields]
        out.append(repeats.join(ev.hint("merge"), on=between, how=how).selectExpr(*fields))
    return out[0].unionByName(out[1])
