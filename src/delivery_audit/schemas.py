"""Canonical input schemas (audit contract §2) and the schemas of what the audit writes.

A source is described by its fields; each field has a kind that decides how a
raw value is parsed (contract §8 rules 1–3) and the Spark type it becomes.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as T

from .config import ISOLATION_LEVELS

SOURCES: tuple[str, ...] = ("sends", "broker", "ledger", "events")

SEND_STATUSES = ("acked", "failed", "timeout", "aborted")
OUTCOMES = ("success", "failure", "skipped")
CONTROLS = ("commit", "abort")  # a transaction marker's kind (contract §9)
EVENT_TYPES = (
    "assigned", "revoked", "lost", "commit", "commit_failed", "left_group", "joined_group",
)

_SPARK_TYPES: dict[str, T.DataType] = {
    "string": T.StringType(),
    "key": T.StringType(),
    "enum": T.StringType(),
    "long": T.LongType(),
    "int": T.IntegerType(),
    "nonneg_long": T.LongType(),
    "nonneg_int": T.IntegerType(),
    "timestamp": T.TimestampType(),
    "bool": T.BooleanType(),
}


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # a key of _SPARK_TYPES
    required: bool = False
    allowed: tuple[str, ...] = ()

    @property
    def spark_type(self) -> T.DataType:
        return _SPARK_TYPES[self.kind]


FIELDS: dict[str, tuple[Field, ...]] = {
    "sends": (
        Field("send_ts", "timestamp", required=True),
        Field("topic", "string", required=True),
        Field("key", "key"),
        Field("seq", "long", required=True),
        Field("status", "enum", required=True, allowed=SEND_STATUSES),
        Field("partition", "nonneg_int"),
        Field("offset", "nonneg_long"),
        Field("ack_ts", "timestamp"),
        Field("attempt", "int"),
        Field("producer_id", "string"),
        Field("idempotent", "bool"),
        Field("error", "string"),
        Field("transactional_id", "string"),
    ),
    "broker": (
        Field("topic", "string", required=True),
        Field("partition", "nonneg_int", required=True),
        Field("offset", "nonneg_long", required=True),
        Field("key", "key"),
        Field("seq", "long"),
        Field("timestamp", "timestamp"),
        Field("producer_id", "string"),
        Field("pid", "long"),
        Field("producer_epoch", "int"),
        Field("batch_sequence", "int"),
        Field("transactional", "bool"),
        Field("control", "enum", allowed=CONTROLS),
    ),
    "ledger": (
        Field("group_id", "string", required=True),
        Field("member_id", "string", required=True),
        Field("topic", "string", required=True),
        Field("partition", "nonneg_int", required=True),
        Field("offset", "nonneg_long", required=True),
        Field("key", "key"),
        Field("seq", "long"),
        Field("started_ts", "timestamp", required=True),
        Field("finished_ts", "timestamp"),
        Field("outcome", "enum", required=True, allowed=OUTCOMES),
        Field("generation", "int"),
        Field("isolation", "enum", allowed=ISOLATION_LEVELS),
    ),
    "events": (
        Field("group_id", "string", required=True),
        Field("member_id", "string"),
        Field("ts", "timestamp", required=True),
        Field("event", "enum", required=True, allowed=EVENT_TYPES),
        Field("topic", "string"),
        Field("partition", "nonneg_int"),
        Field("offset", "nonneg_long"),
        Field("generation", "int"),
        Field("detail", "string"),
    ),
}

# The column that places a row in time, for the window's read bound (rule 6).
TIME_COLUMN: dict[str, str] = {
    "sends": "send_ts",
    "broker": "timestamp",
    "ledger": "started_ts",
    "events": "ts",
}


def canonical_schema(source: str) -> T.StructType:
    """The Spark schema of a source's valid rows."""
    return T.StructType([T.StructField(f.name, f.spark_type, True) for f in FIELDS[source]])


QUARANTINE_SCHEMA = T.StructType([
    T.StructField("source", T.StringType(), False),
    T.StructField("file", T.StringType(), True),
    T.StructField("row", T.LongType(), True),
    T.StructField("reason", T.StringType(), False),
    T.StructField("raw", T.StringType(), True),
])

# One row per counting unit of an anomaly (`units` is 1 except for seq_gap
# ranges, which stand for every missing value between seq_from and seq_to).
ANOMALY_SCHEMA = T.StructType([
    T.StructField("anomaly", T.StringType(), False),
    T.StructField("severity", T.StringType(), False),
    T.StructField("cause", T.StringType(), True),
    T.StructField("units", T.LongType(), False),
    T.StructField("group_id", T.StringType(), True),
    T.StructField("topic", T.StringType(), True),
    T.StructField("key", T.StringType(), True),
    T.StructField("seq", T.LongType(), True),
    T.StructField("seq_to", T.LongType(), True),
    T.StructField("partition", T.IntegerType(), True),
    T.StructField("offset", T.LongType(), True),
    T.StructField("related_partition", T.IntegerType(), True),
    T.StructField("related_offset", T.LongType(), True),
    T.StructField("member_id", T.StringType(), True),
    T.StructField("related_member_id", T.StringType(), True),
    T.StructField("ts", T.TimestampType(), True),
    T.StructField("related_ts", T.TimestampType(), True),
    T.StructField("attempts", T.LongType(), True),
    T.StructField("detail", T.StringType(), True),
])

STATE_SCHEMA = T.StructType([
    T.StructField("group_id", T.StringType(), False),
    T.StructField("topic", T.StringType(), False),
    T.StructField("key", T.StringType(), True),
    T.StructField("seq", T.LongType(), False),
    T.StructField("state", T.StringType(), False),
    T.StructField("successes", T.LongType(), False),
])
