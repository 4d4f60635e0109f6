"""Canonical input schemas (audit contract §2) and the schemas of what the audit writes.

A source is described by its fields; each field has a kind that decides how a
raw value is parsed (contract §8 rules 1–3) and the Spark type it becomes.
"""

from __future__ import annotations

from pyspark.sql import types as T

from .fields import CONTROLS, EVENT_TYPES, FIELDS, OUTCOMES, SEND_STATUSES, SOURCES, Field

__all__ = ["CONTROLS", "EVENT_TYPES", "FIELDS", "OUTCOMES", "SEND_STATUSES", "SOURCES", "Field"]

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
