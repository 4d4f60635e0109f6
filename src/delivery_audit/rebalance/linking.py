"""Redeliveries linked to the rebalance that caused them (the package docstring's
**redeliveries_linked**): round 2's Spark table of the anomaly table's ``redelivery`` rows
per group and linked rebalance."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..spark import local_frame
from .settings import Settings
from .timeline import Clusters
from .units import millis


def links(anomalies: DataFrame, clusters: Clusters, settings: dict[str, Settings]
          ) -> DataFrame:
    """Per (group, linked rebalance or null): the redeliveries (rule 15's rows of the
    anomaly table, judged identities only) of the group."""
    repeats = anomalies.filter(F.col("anomaly") == "redelivery").select(
        "group_id", "topic", "partition", "offset", millis("ts").alias("s"),
        millis("related_ts").alias("ps"))
    counted = clusters.counted()
    if counted:
        table = local_frame(
            anomalies.sparkSession,
            [(g, i, r.start, settings[g]["max.poll.interval.ms"]) for g, i, r in counted],
            "r_group string, r_idx int, r_start long, r_interval long")
        cond = ((F.col("group_id") == F.col("r_group")) & (F.col("r_start") <= F.col("s"))
                & (F.col("r_start") >= F.col("ps") - F.col("r_interval")))
        linked = (
            # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
            repeats.join(table.hint("merge"), on=cond, how="left")
            .groupBy("group_id", "topic", "partition", "offset", "s")
            .agg(F.max_by("r_idx", "r_start").alias("r_idx"))
        )
    else:
        linked = repeats.select("group_id", "topic", "partition", "offset", "s",
                                F.lit(None).cast("int").alias("r_idx"))
    return linked.groupBy("group_id", "r_idx").agg(F.count(F.lit(1)).alias("n"))

