"""What every rule shares: dump ranges (rule 7), identities and judging (rule 8),
judged groups and their topics (rule 9), ledger resolution (rule 10) and each
group's progress per partition (rule 12).

Two passes, one exchange each (docs/scaling.md, "Detection in two partitionings"):

* **by key** (topic, key): the send attempts, the broker rows that form an identity and the
  ledger rows that name one are unioned and shuffled once, hash partitioned by key. Every
  per-identity figure is an aggregate over that frame and travels with the rows as a
  window over the identity: the broker copies and the ledger rows carry their identity's
  ``judged`` flag (no rule joins the identities again). The write side, the delivery
  states and dup_effect run here; their windows and joins are by key, by identity or by
  (topic, partition, key), which the key partitioning already satisfies.
* **by (group, topic, partition)**: the ledger rows, with ``judged``, shuffled once more;
  ledger resolution of redeliveries, retries, reordering, concurrency and progress run
  here.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..config import AuditConfig
from ..schemas import FIELDS
from ..window import AuditWindow
from .identity import ID, KEY, with_key_parts

# the side of a row in the by-key frame; broker copies sort first within an identity
BROKER, SEND, LEDGER = 0, 1, 2
PARTITION = ["group_id", "topic", "partition"]


@dataclass
class Prepared:
    window: AuditWindow
    config: AuditConfig
    copies: DataFrame  # broker rows that form an identity, ranked, with their identity's figures
    ranges: DataFrame  # topic, partition, log_start_offset, end_offset
    identities: DataFrame  # one row per identity seen in sends or broker
    keyed_ledger: DataFrame  # resolved ledger rows of judged groups, by key, with `judged`
    ledger: DataFrame  # every ledger row of judged groups, by (group, topic, partition)
    events: DataFrame  # events of judged groups
    group_topics: DataFrame  # group_id, topic
    progress: DataFrame  # group_id, topic, partition, max_attempted, max_committed
    group_ids: list[str]  # every judged group (rule 9)


def _ts(value) -> F.Column:
    return F.lit(value.replace(tzinfo=None)).cast("timestamp")


def by_key(df: DataFrame) -> DataFrame:
    """Hash partitioned by key: every window and join by key, by identity or by (topic,
    partition, key) then runs without another exchange."""
    return df.repartition(*[F.col(c) for c in KEY])


def by_partition(df: DataFrame) -> DataFrame:
    """Hash partitioned by (group, topic, partition): the consumer side's windows."""
    return df.repartition(*[F.col(c) for c in PARTITION])


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


# -- the by-key frame -------------------------------------------------------------------

_SEND_COLUMNS = {"send_ts": T.TimestampType(), "attempt": T.IntegerType(),
                 "status": T.StringType(), "send_idempotent": T.BooleanType(),
                 "inside": T.BooleanType(), "below": T.BooleanType()}
_BROKER_COLUMNS = {"timestamp": T.TimestampType(), "producer_id": T.StringType()}
_COMMON = ["topic", "key_null", "key_v", "seq", "partition", "offset"]


def _ledger_columns() -> dict[str, T.DataType]:
    return {f.name: f.spark_type for f in FIELDS["ledger"]
            if f.name not in ("key", *_COMMON)}


def _aligned(df: DataFrame, side: int, given: dict[str, Column]) -> DataFrame:
    """One side's rows in the by-key frame's columns (the other sides' columns null)."""
    out = [F.col(c) for c in _COMMON] + [F.lit(side).cast("tinyint").alias("_side")]
    for part in (_SEND_COLUMNS, _BROKER_COLUMNS, _ledger_columns()):
        for name, dtype in part.items():
            out.append((given[name] if name in given else F.lit(None)).cast(dtype).alias(name))
    return df.select(*out)


def keyed_rows(sends: DataFrame, broker: DataFrame, ledger: DataFrame,
               ranges: DataFrame) -> DataFrame:
    """Send attempts, broker rows with a seq and resolved ledger rows (all with key parts),
    as one frame hash partitioned by key (the one exchange of the by-key pass)."""
    r = F.broadcast(ranges.select("topic", "partition", "log_start_offset", "end_offset"))
    acked = F.col("status") == "acked"
    s = sends.join(r, on=["topic", "partition"], how="left")
    send_rows = _aligned(s, SEND, {
        "send_ts": F.col("send_ts"), "attempt": F.col("attempt"), "status": F.col("status"),
        "send_idempotent": F.col("idempotent"),
        "inside": acked & (F.col("offset") >= F.col("log_start_offset"))
        & (F.col("offset") < F.col("end_offset")),
        "below": acked & (F.col("offset") < F.col("log_start_offset")),
    })
    broker_rows = _aligned(broker.filter(F.col("seq").isNotNull()), BROKER,
                           {c: F.col(c) for c in _BROKER_COLUMNS})
    ledger_rows = _aligned(ledger, LEDGER, {c: F.col(c) for c in _ledger_columns()})
    return by_key(send_rows.unionByName(broker_rows).unionByName(ledger_rows))


def _when(side: int, value: Column) -> Column:
    return F.when(F.col("_side") == side, value)


def _identity_aggregates() -> dict[str, Column]:
    """Every per-identity figure, as aggregates over the by-key frame's rows of one
    identity (grouped for the identities, as windows for the rows that carry them)."""
    acked = F.col("status") == "acked"
    at = F.struct("partition", "offset")
    return {
        "first_send_ts": F.min(_when(SEND, F.col("send_ts"))),
        "n_send_rows": F.count(_when(SEND, F.lit(1))),
        "max_attempt": F.max(_when(SEND, F.coalesce(F.col("attempt"), F.lit(1)))),
        "any_failed": F.max(_when(SEND, F.col("status").isin("failed", "timeout"))),
        "any_acked": F.max(_when(SEND, acked)),
        "idempotent": F.max(_when(SEND, F.coalesce(F.col("send_idempotent"), F.lit(False)))),
        "acked_inside": F.max(_when(SEND, F.coalesce(F.col("inside"), F.lit(False)))),
        "acked_below": F.max(_when(SEND, F.coalesce(F.col("below"), F.lit(False)))),
        "inside_at": F.min(_when(SEND, F.when(F.col("inside"), at))),
        "below_at": F.min(_when(SEND, F.when(F.col("below"), at))),
        "acked_at": F.min(_when(SEND, F.when(acked, at))),
        "n_copies": F.count(_when(BROKER, F.lit(1))),
        "first_broker_ts": F.min(_when(BROKER, F.col("timestamp"))),
        "first_copy": F.min(_when(BROKER, at)),
    }


def _identity_columns(window: AuditWindow, names: list[str]) -> list[Column]:
    """The aggregated figures ``names`` with their defaults, ``judged_ts`` and ``judged``."""
    defaults = {"max_attempt": 0, "any_failed": False, "any_acked": False, "idempotent": False,
                "acked_inside": False, "acked_below": False}
    judged_ts = F.coalesce(F.col("first_send_ts"), F.col("first_broker_ts"))
    return [
        *[F.coalesce(F.col(n), F.lit(defaults[n])).alias(n) if n in defaults else F.col(n)
          for n in names],
        judged_ts.alias("judged_ts"),
        ((judged_ts >= _ts(window.start)) & (judged_ts < _ts(window.end))).alias("judged"),
    ]


def identities(rows: DataFrame, window: AuditWindow) -> DataFrame:
    """One row per identity seen in sends or broker, with what the rules need, and whether
    this window judges it, from the by-key rows (still partitioned by key)."""
    aggs = _identity_aggregates()
    grouped = (rows.filter(F.col("_side") != LEDGER).groupBy(*ID)
               .agg(*[c.alias(n) for n, c in aggs.items()]))
    return grouped.select(*ID, *_identity_columns(window, list(aggs)))


# what the rows of an identity carry of it (dup_write's evidence and cause, judging)
_CARRIED = ["first_send_ts", "first_broker_ts", "n_send_rows", "max_attempt", "any_failed",
            "idempotent", "n_copies", "first_copy"]


def with_identity(keyed: DataFrame, window: AuditWindow) -> DataFrame:
    """Every by-key row with its identity's figures (windows over the identity, in one
    sort: broker copies first, by partition and offset), and ``copy_no`` and
    ``prev_copy_partition`` for the broker copies."""
    aggs = _identity_aggregates()
    ordered = Window.partitionBy(*ID).orderBy("_side", "partition", "offset")
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    figures = keyed.select(
        "*", *[aggs[n].over(whole).alias(n) for n in _CARRIED],
        F.row_number().over(ordered).alias("copy_no"),
        F.lag("partition").over(ordered).alias("prev_copy_partition"),
    )
    return figures.select(*keyed.columns, "copy_no", "prev_copy_partition",
                          *_identity_columns(window, _CARRIED))


def copies_of(rows: DataFrame) -> DataFrame:
    """Broker rows that form an identity, each with its copy number and identity figures."""
    return rows.filter(F.col("_side") == BROKER).select(
        *ID, "partition", "offset", "timestamp", "producer_id", "copy_no",
        "prev_copy_partition", *_CARRIED, "judged_ts", "judged")


def ledger_of(rows: DataFrame) -> DataFrame:
    """Resolved ledger rows, each with ``judged`` (its identity judged in this window)."""
    return rows.filter(F.col("_side") == LEDGER).select(
        *_COMMON, *_ledger_columns(), F.lit(True).alias("resolved"),
        F.coalesce(F.col("judged"), F.lit(False)).alias("judged"))


# -- groups and the consumer side -------------------------------------------------------

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


def resolve_ledger(ledger: DataFrame, broker: DataFrame,
                   rows_without_seq: int | None = None) -> DataFrame:
    """Rule 10: a row without seq takes key and seq from the broker record it points at.
    With ``rows_without_seq`` 0 (ingestion counted them) there is nothing to look up and
    the broker is not shuffled for it."""
    if rows_without_seq == 0:
        return ledger
    own = ledger.filter(F.col("seq").isNotNull())
    missing = ledger.filter(F.col("seq").isNull()).drop("key", "seq")
    looked_up = missing.join(
        broker.select("topic", "partition", "offset", "key", "seq"),
        on=["topic", "partition", "offset"], how="left",
    )
    return own.unionByName(looked_up.select(*ledger.columns))


def progress(ledger: DataFrame, events: DataFrame) -> DataFrame:
    """Per (group, topic, partition): the highest offset attempted and committed (rule 12)."""
    attempted = ledger.groupBy(*PARTITION).agg(F.max("offset").alias("max_attempted"))
    committed = (
        events.filter((F.col("event") == "commit") & F.col("topic").isNotNull()
                      & F.col("partition").isNotNull() & F.col("offset").isNotNull())
        .groupBy(*PARTITION)
        .agg(F.max("offset").alias("max_committed"))
    )
    return attempted.join(committed, on=PARTITION, how="full_outer")


def prepare(spark: SparkSession, frames: dict[str, DataFrame], window: AuditWindow,
            config: AuditConfig, seen_groups: list[str] | None = None,
            ledger_rows_without_seq: int | None = None) -> Prepared:
    broker = frames["broker"]
    ranges = dump_ranges(spark, broker, config).persist()
    groups = group_ids(spark, frames["ledger"], frames["events"], config, seen_groups)
    listed = spark.createDataFrame([(g,) for g in groups], "group_id string")
    ledger = frames["ledger"].join(F.broadcast(listed), on="group_id", how="left_semi")
    events = frames["events"].join(F.broadcast(listed), on="group_id", how="left_semi")
    resolved = with_key_parts(resolve_ledger(ledger, broker, ledger_rows_without_seq))
    keyed = keyed_rows(with_key_parts(frames["sends"]), with_key_parts(broker),
                       resolved.filter(F.col("seq").isNotNull()), ranges)
    # every rule family reads these rows: cached once (a subtree shared by several
    # branches of one plan is computed once per branch; only exchanges are reused)
    rows = with_identity(keyed, window).persist(StorageLevel.MEMORY_AND_DISK)
    keyed_ledger = ledger_of(rows)
    unresolved = resolved.filter(F.col("seq").isNull()).select(
        *keyed_ledger.columns[:-2], F.lit(False).alias("resolved"), F.lit(False).alias("judged"))
    consumer = by_partition(keyed_ledger.unionByName(unresolved)).persist(
        StorageLevel.MEMORY_AND_DISK)
    return Prepared(
        window=window, config=config, copies=copies_of(rows), ranges=ranges,
        identities=identities(rows, window).persist(StorageLevel.MEMORY_AND_DISK),
        keyed_ledger=keyed_ledger, ledger=consumer, events=events.persist(),
        group_topics=judged_groups(spark, ledger, config).persist(),
        progress=progress(consumer, events).persist(),
        group_ids=groups,
    )
