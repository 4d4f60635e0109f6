"""The canonical sources and their fields (audit contract §2), without Spark: what the
adapters write and the readers parse. ``schemas`` re-exports them with the Spark schemas."""

from __future__ import annotations

from dataclasses import dataclass

SOURCES: tuple[str, ...] = ("sends", "broker", "ledger", "events")

SEND_STATUSES = ("acked", "failed", "timeout", "aborted")
OUTCOMES = ("success", "failure", "skipped")
CONTROLS = ("commit", "abort")  # a transaction marker's kind (contract §9)
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")  # a consumer's isolation.level (§9)
EVENT_TYPES = (
    "assigned", "revoked", "lost", "commit", "commit_failed", "left_group", "joined_group",
)

# the Spark type of each kind (types imported when asked: this module needs no Spark, so
# the adapters and `delivery-audit convert` run without a JVM)
_SPARK_TYPE_NAMES: dict[str, str] = {
    "string": "StringType",
    "key": "StringType",
    "enum": "StringType",
    "long": "LongType",
    "int": "IntegerType",
    "nonneg_long": "LongType",
    "nonneg_int": "IntegerType",
    "timestamp": "TimestampType",
    "bool": "BooleanType",
}


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # a key of _SPARK_TYPE_NAMES
    required: bool = False
    allowed: tuple[str, ...] = ()

    @property
    def spark_type(self):  # -> pyspark.sql.types.DataType
        from pyspark.sql import types as T  # not at the top: `convert` imports no Spark

        return getattr(T, _SPARK_TYPE_NAMES[self.kind])()


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

# The anomaly table's columns (name, Spark SQL type, nullable): schemas.ANOMALY_SCHEMA (Spark)
# and anomaly_table.SCHEMA (pyarrow) are both made from them, so that the table is read
# back without importing Spark.
ANOMALY_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("anomaly", "string", False),
    ("severity", "string", False),
    ("cause", "string", True),
    ("units", "bigint", False),
    ("group_id", "string", True),
    ("topic", "string", True),
    ("key", "string", True),
    ("seq", "bigint", True),
    ("seq_to", "bigint", True),
    ("partition", "int", True),
    ("offset", "bigint", True),
    ("related_partition", "int", True),
    ("related_offset", "bigint", True),
    ("member_id", "string", True),
    ("related_member_id", "string", True),
    ("ts", "timestamp", True),
    ("related_ts", "timestamp", True),
    ("attempts", "bigint", True),
    ("detail", "string", True),
)
