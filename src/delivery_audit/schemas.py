"""Canonical input schemas (audit contract §2) and the schemas of what the audit writes.

A source is described by its fields; each field has a kind that decides how a
raw value is parsed (contract §8 rules 1–3) and the Spark type it becomes.
"""

from __future__ import annotations

from pyspark.sql import types as T

from .fields import (
    ANOMALY_COLUMNS,
    CONTROLS,
    EVENT_TYPES,
    FIELDS,
    OUTCOMES,
    SEND_STATUSES,
    SOURCES,
    Field,
)

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
_SQL_TYPES = {"string": T.StringType(), "bigint": T.LongType(), "int": T.IntegerType(),
              "timestamp": T.TimestampType()}
ANOMALY_SCHEMA = T.StructType([T.StructField(name, _SQL_TYPES[kind], nullable)
                               for name, kind, nullable in ANOMALY_COLUMNS])

STATE_SCHEMA = T.StructType([
    T.StructField("group_id", T.StringType(), False),
    T.StructField("topic", T.StringType(), False),
    T.StructField("key", T.StringType(), True),
    T.StructField("seq", T.LongType(), False),
    T.StructField("state", T.StringType(), False),
    T.StructField("successes", T.LongType(), False),
])
