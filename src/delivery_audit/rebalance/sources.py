"""Round 1 on Spark (no action): the small tables a group's timeline is built from — its
group events, compacted; for a group without events, the ledger's handovers between
members — and its processing times. Detection computes the last two for the audit
(``detection.outputs``: the same aggregates); :func:`rebalance_tables` computes them here
for a caller without detection's output."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..detection.outputs import handover_table, processing_table
from ..group_events import TIMELINE_EVENTS
from .timeline import MAX_LISTED
from .units import millis


def _stats_table(ledger: DataFrame) -> DataFrame:
    """Per group: p50/p99/max per-record processing ms of successful attempts (the
    aggregate detection's ``__processing`` facts use)."""
    done = ledger.filter((F.col("outcome") == "success") & F.col("finished_ts").isNotNull()
                         & (F.col("finished_ts") >= F.col("started_ts")))
    return processing_table(
        done.select("group_id", (millis("finished_ts") - millis("started_ts")).alias("dur_ms")))


def _compact_events(events: DataFrame) -> DataFrame:
    """Timeline events collapsed per (group, member, event, ts); consecutive failed commits
    of one member collapsed into one run."""
    ev = events.filter(F.col("event").isin(*TIMELINE_EVENTS)).select(
        "group_id", "member_id", "event", millis("ts").alias("t"), "topic", "partition",
        "generation", "detail")
    w = Window.partitionBy("group_id", "member_id").orderBy("t", "event")
    change = F.when(F.lag("event").over(w).eqNullSafe(F.col("event")), 0).otherwise(1)
    ev = ev.withColumn("_chg", change).withColumn(
        "_run", F.sum("_chg").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    key_t = F.when(F.col("event") == "commit_failed", F.lit(None)).otherwise(F.col("t"))
    tp = F.when(F.col("topic").isNotNull(), F.concat_ws(
        "-", F.col("topic"), F.coalesce(F.col("partition").cast("string"), F.lit("*"))))
    return (
        ev.groupBy("group_id", "member_id", "event", "_run", key_t.alias("_kt"))
        .agg(F.min("t").alias("t"), F.max("t").alias("t_last"), F.count(F.lit(1)).alias("n"),
             F.max("generation").alias("generation"),
             F.first("detail", ignorenulls=True).alias("detail"),
             F.slice(F.sort_array(F.collect_set(tp)), 1, MAX_LISTED).alias("tps"),
             F.max(F.col("topic").isNull()).alias("all_partitions"))
    )


def _handovers(ledger: DataFrame, events: DataFrame) -> DataFrame:
    """Ledger member changes on a partition, for the groups without timeline events (the
    only ones whose rebalances are inferred): aggregated first (as detection's
    ``__handover`` facts are), then the groups with events are dropped from the small
    result."""
    w = Window.partitionBy("group_id", "topic", "partition").orderBy("t", "offset")
    led = ledger.select(
        "group_id", "topic", "partition", "offset", "member_id", millis("started_ts").alias("t"),
        F.coalesce(millis("finished_ts"), millis("started_ts")).alias("f"))
    with_events = (events.filter(F.col("event").isin(*TIMELINE_EVENTS))
                   .select("group_id").distinct())
    changes = led.select(
        "group_id", "member_id", "t", F.lag("member_id").over(w).alias("prev"),
        F.lag("f").over(w).alias("prev_f"),
        F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("tp"))
    return (
        handover_table(changes.filter(F.col("prev").isNotNull()
                                      & (F.col("prev") != F.col("member_id"))))
        # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
        .join(with_events.hint("merge"), on="group_id", how="left_anti")
    )


def judged(group_ids: list[str]) -> list[str]:
    """The groups to report on, in report order."""
    return sorted({g for g in group_ids if g})


def rebalance_tables(ledger: DataFrame, events: DataFrame, group_ids: list[str]
                     ) -> dict[str, DataFrame]:
    """Round 1: the small tables the timelines are built from (no Spark action). Collect
    them with ``collect.collect_all`` (alone or with other tables) and pass the result to
    ``cluster_groups``.

    * ``rebalance_stats`` — per group_id: ``q`` [p50, p99] and ``mx`` (max) per-record
      processing ms of successful attempts, ``n`` attempts.
    * ``rebalance_events`` — timeline events per (group_id, member_id, event, ``t``) (epoch
      ms; a member's run of failed commits is one row from ``t`` to ``t_last``): ``n``
      events, max ``generation``, first ``detail``, ``tps`` (topic-partition list).
    * ``rebalance_handovers`` — groups without timeline events only: ledger member changes
      on a partition per (group_id, ``prev`` member, member_id, ``t`` = the first start by
      the new member), ``prev_f`` (the previous member's last finish), ``tps``.
    """
    groups = judged(group_ids)
    if not groups:
        return {}
    ledger = ledger.filter(F.col("group_id").isin(*groups))
    events = events.filter(F.col("group_id").isin(*groups))
    return {
        "rebalance_stats": _stats_table(ledger),
        "rebalance_events": _compact_events(events),
        "rebalance_handovers": _handovers(ledger, events),
    }


def rebalance_event_tables(events: DataFrame, group_ids: list[str]) -> dict[str, DataFrame]:
    """Round 1's events table alone (``rebalance_events``): the audit takes the processing
    stats and the ledger handovers from detection's output (detection/outputs.py)."""
    groups = judged(group_ids)
    if not groups:
        return {}
    return {"rebalance_events": _compact_events(events.filter(F.col("group_id").isin(*groups)))}

