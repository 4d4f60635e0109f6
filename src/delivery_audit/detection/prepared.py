"""What every rule shares: dump ranges (rule 7), identities and judging (rule 8),
judged groups and their topics (rule 9), ledger resolution (rule 10) and each
group's progress per partition (rule 12)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..config import AuditConfig
from ..window import AuditWindow
from .identity import ID, with_key_parts


@dataclass
class Prepared:
    window: AuditWindow
    config: AuditConfig
    sends: DataFrame  # with key parts
    copies: DataFrame  # broker rows that form an identity, ranked per identity
    ranges: DataFrame  # topic, partition, log_start_offset, end_offset
    identities: DataFrame  # one row per identity seen in sends or broker
    ledger: DataFrame  # ledger rows of judged groups, key/seq resolved, with `resolved`
    events: DataFrame  # events of judged groups
    group_topics: DataFrame  # group_id, topic
    progress: DataFrame  # group_id, topic, partition, max_attempted, max_committed
    group_ids: list[str]  # every judged group (rule 9)


def _ts(value) -> F.Column:
    return F.lit(value.replace(tzinfo=None)).cast("timestamp")


def dump_ranges(spark: SparkSession, broker: DataFrame, config: AuditConfig) -> DataFrame:
    """[min offset, max offset + 1) per (topic, partition), unless the config states it."""
    seen = broker.groupBy("topic", "partition").agg(
        F.min("offset").alias("log_start_offset"),
        (F.max("offset") + 1).alias("end_offset"),
    )
    if not config.dump_ranges:
        return seen
    stated = spark.createDataFrame(
        [(r.topic, r.partition, r.log_start_offset, r.end_offset) for r in config.dump_ranges],
        "topic string, partition int, log_start_offset long, end_offset long",
    )
    unstated = seen.join(stated.select("topic", "partition"), on=["topic", "partition"],
                         how="left_anti")
    return stated.unionByName(unstated)


def rank_copies(broker: DataFrame) -> DataFrame:
    """Broker rows with a seq, each knowing its copy number within its identity."""
    w = Window.partitionBy(*ID).orderBy("partition", "offset")
    return (
        with_key_parts(broker.filter(F.col("seq").isNotNull()))
        .select(
            *ID, "partition", "offset", "timestamp", "producer_id",
            F.row_number().over(w).alias("copy_no"),
            F.count(F.lit(1)).over(Window.partitionBy(*ID)).alias("n_copies"),
            F.lag("partition").over(w).alias("prev_copy_partition"),
        )
    )


def identities(sends: DataFrame, copies: DataFrame, ranges: DataFrame,
               window: AuditWindow) -> DataFrame:
    """One row per identity with what the rules need, and whether this window judges it."""
    r = F.broadcast(ranges.select("topic", "partition", "log_start_offset", "end_offset"))
    acked = F.col("status") == "acked"
    inside = acked & (F.col("offset") >= F.col("log_start_offset")) & (
        F.col("offset") < F.col("end_offset"))
    below = acked & (F.col("offset") < F.col("log_start_offset"))
    send_side = (
        sends.join(r, on=["topic", "partition"], how="left")
        .groupBy(*ID)
        .agg(
            F.min("send_ts").alias("first_send_ts"),
            F.count(F.lit(1)).alias("n_send_rows"),
            F.max(F.coalesce(F.col("attempt"), F.lit(1))).alias("max_attempt"),
            F.max(F.col("status").isin("failed", "timeout")).alias("any_failed"),
            F.max(acked).alias("any_acked"),
            F.max(F.coalesce(F.col("idempotent"), F.lit(False))).alias("idempotent"),
            F.max(F.coalesce(inside, F.lit(False))).alias("acked_inside"),
            F.max(F.coalesce(below, F.lit(False))).alias("acked_below"),
            F.min(F.when(inside, F.struct("partition", "offset"))).alias("inside_at"),
            F.min(F.when(below, F.struct("partition", "offset"))).alias("below_at"),
            F.min(F.when(acked, F.struct("partition", "offset"))).alias("acked_at"),
        )
    )
    broker_side = copies.groupBy(*ID).agg(
        F.count(F.lit(1)).alias("n_copies"),
        F.min("timestamp").alias("first_broker_ts"),
        F.min(F.struct("partition", "offset")).alias("first_copy"),
    )
    judged_ts = F.coalesce(F.col("first_send_ts"), F.col("first_broker_ts"))
    return (
        send_side.join(broker_side, on=ID, how="full_outer")
        .select(
            *ID,
            F.coalesce(F.col("n_send_rows"), F.lit(0)).alias("n_send_rows"),
            F.coalesce(F.col("n_copies"), F.lit(0)).alias("n_copies"),
            "first_send_ts", "first_broker_ts", judged_ts.alias("judged_ts"),
            ((judged_ts >= _ts(window.start)) & (judged_ts < _ts(window.end))).alias("judged"),
            F.coalesce(F.col("max_attempt"), F.lit(0)).alias("max_attempt"),
            F.coalesce(F.col("any_failed"), F.lit(False)).alias("any_failed"),
            F.coalesce(F.col("any_acked"), F.lit(False)).alias("any_acked"),
            F.coalesce(F.col("idempotent"), F.lit(False)).alias("idempotent"),
            F.coalesce(F.col("acked_inside"), F.lit(False)).alias("acked_inside"),
            F.coalesce(F.col("acked_below"), F.lit(False)).alias("acked_below"),
            "inside_at", "below_at", "acked_at", "first_copy",
        )
    )


def judged_groups(spark: SparkSession, ledger: DataFrame, config: AuditConfig) -> DataFrame:
    """(group_id, topic) pairs: the groups judged (rule 9) and the topics each consumes."""
    seen_topics = ledger.select("group_id", "topic")
    configured = [(g.group_id, t) for g in config.groups for t in g.topics]
    if configured:
        seen_topics = seen_topics.unionByName(
            spark.createDataFrame(configured, "group_id string, topic string"))
    pairs = seen_topics.groupBy("group_id", "topic").agg(F.count(F.lit(1)).alias("_n"))
    if config.groups:
        listed = spark.createDataFrame([(g.group_id,) for g in config.groups], "group_id string")
        pairs = pairs.join(F.broadcast(listed), on="group_id", how="left_semi")
    return pairs.select("group_id", "topic")


def group_ids(spark: SparkSession, ledger: DataFrame, events: DataFrame,
              config: AuditConfig, seen: list[str] | None = None) -> list[str]:
    """Every judged group, including those with events but no ledger rows; ``seen``: the
    group ids of the ledger and events when already known."""
    if config.groups:
        return sorted(g.group_id for g in config.groups)
    if seen is not None:
        return sorted(set(seen))
    found = ledger.select("group_id").unionByName(events.select("group_id"))
    return sorted(r["group_id"] for r in found.groupBy("group_id").count().collect())


def resolve_ledger(ledger: DataFrame, broker: DataFrame) -> DataFrame:
    """Rule 10: a row without seq takes key and seq from the broker record it points at."""
    own = ledger.filter(F.col("seq").isNotNull())
    missing = ledger.filter(F.col("seq").isNull()).drop("key", "seq")
    looked_up = missing.join(
        broker.select("topic", "partition", "offset", "key", "seq"),
        on=["topic", "partition", "offset"], how="left",
    )
    both = own.unionByName(looked_up.select(*ledger.columns))
    return with_key_parts(both).withColumn("resolved", F.col("seq").isNotNull())


def progress(ledger: DataFrame, events: DataFrame) -> DataFrame:
    """Per (group, topic, partition): the highest offset attempted and committed (rule 12)."""
    attempted = ledger.groupBy("group_id", "topic", "partition").agg(
        F.max("offset").alias("max_attempted"))
    committed = (
        events.filter((F.col("event") == "commit") & F.col("topic").isNotNull()
                      & F.col("partition").isNotNull() & F.col("offset").isNotNull())
        .groupBy("group_id", "topic", "partition")
        .agg(F.max("offset").alias("max_committed"))
    )
    return attempted.join(committed, on=["group_id", "topic", "partition"], how="full_outer")


def prepare(spark: SparkSession, frames: dict[str, DataFrame], window: AuditWindow,
            config: AuditConfig, seen_groups: list[str] | None = None) -> Prepared:
    sends = with_key_parts(frames["sends"])
    broker = frames["broker"]
    copies = rank_copies(broker).persist(StorageLevel.MEMORY_AND_DISK)
    ranges = dump_ranges(spark, broker, config).persist()
    ids = identities(sends, copies, ranges, window).persist(StorageLevel.MEMORY_AND_DISK)
    groups = group_ids(spark, frames["ledger"], frames["events"], config, seen_groups)
    listed = spark.createDataFrame([(g,) for g in groups], "group_id string")
    ledger = frames["ledger"].join(F.broadcast(listed), on="group_id", how="left_semi")
    events = frames["events"].join(F.broadcast(listed), on="group_id", how="left_semi")
    resolved = resolve_ledger(ledger, broker).persist(StorageLevel.MEMORY_AND_DISK)
    return Prepared(
        window=window, config=config, sends=sends, copies=copies, ranges=ranges,
        identities=ids, ledger=resolved, events=events.persist(),
        group_topics=judged_groups(spark, ledger, config).persist(),
        progress=progress(ledger, events).persist(),
        group_ids=groups,
    )
