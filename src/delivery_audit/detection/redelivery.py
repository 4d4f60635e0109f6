"""redelivery (rule 15): the same record processed successfully again by the same group.

Successful processings of (group, topic, partition, offset), ordered by
(started_ts, finished_ts); each after the first is compared with the one just
before it: cause ``rebalance`` when the member differs or an assigned / revoked /
lost / commit_failed event of the group for that partition lies between the
two start times (an event without topic/partition applies to every partition of
the group), else ``other``. A retry after a *failed* processing is not a
redelivery: only successes are compared.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..group_events import REDELIVERY_EVENTS as REBALANCE_EVENTS
from .evidence import anomaly_rows, key_value
from .identity import ID
from .prepared import Prepared


def repeated_successes(p: Prepared) -> DataFrame:
    """Every successful processing after the first of its record, with the previous one."""
    w = Window.partitionBy("group_id", "topic", "partition", "offset").orderBy(
        "started_ts", "finished_ts")
    return (
        p.ledger.filter((F.col("outcome") == "success") & F.col("resolved"))
        .select(
            "group_id", *ID, "partition", "offset", "member_id", "started_ts", "finished_ts",
            "judged",
            F.lag("member_id").over(w).alias("prev_member_id"),
            F.lag("started_ts").over(w).alias("prev_started_ts"),
            F.row_number().over(w).alias("_n"),
        )
        .filter(F.col("_n") > 1)
        .drop("_n")
    )


def redelivery(p: Prepared) -> DataFrame:
    repeats = repeated_successes(p).filter(F.col("judged"))
    ev = p.events.filter(F.col("event").isin(*REBALANCE_EVENTS)).select(
        F.col("group_id").alias("e_group"), F.col("topic").alias("e_topic"),
        F.col("partition").alias("e_partition"), F.col("ts").alias("e_ts"))
    between = (
        (F.col("e_group") == F.col("group_id"))
        & (F.col("e_topic").isNull() | (F.col("e_topic") == F.col("topic")))
        & (F.col("e_partition").isNull() | (F.col("e_partition") == F.col("partition")))
        & (F.col("e_ts") >= F.col("prev_started_ts"))
        & (F.col("e_ts") <= F.col("started_ts"))
    )
    same_member = repeats.filter(F.col("member_id") == F.col("prev_member_id"))
    with_event = same_member.join(ev, on=between, how="left_semi").select(
        *repeats.columns, F.lit("rebalance").alias("cause"),
        F.lit("same member; a rebalance event lies between the two").alias("why"))
    without_event = same_member.join(ev, on=between, how="left_anti").select(
        *repeats.columns, F.lit("other").alias("cause"),
        F.lit("same member, no rebalance event between the two").alias("why"))
    moved = repeats.filter(~F.col("member_id").eqNullSafe(F.col("prev_member_id"))).select(
        *repeats.columns, F.lit("rebalance").alias("cause"),
        F.lit("processed again by a different member").alias("why"))
    hit = moved.unionByName(with_event).unionByName(without_event)
    return anomaly_rows(hit, "redelivery", cause="cause", group_id="group_id", topic="topic",
                        key=key_value(), seq="seq", partition="partition", offset="offset",
                        member_id="member_id", related_member_id="prev_member_id",
                        ts="started_ts", related_ts="prev_started_ts", detail="why")
