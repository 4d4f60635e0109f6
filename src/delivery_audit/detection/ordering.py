"""Order rules (rule 16): write_reorder in the broker, process_reorder in a group."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .evidence import anomaly_rows, key_value
from .identity import ID, KEY
from .prepared import Prepared

_BEFORE = (Window.unboundedPreceding, -1)


def write_reorder(p: Prepared) -> DataFrame:
    """Within (topic, partition, key) in offset order, a first copy whose seq is lower
    than a seq already seen; the running max spans all first copies, only judged ones count."""
    first_copies = p.copies.filter(
        F.col("prev_copy_partition").isNull()
        | (F.col("prev_copy_partition") != F.col("partition"))
    )
    w = Window.partitionBy("topic", "partition", "key_null", "key_v").orderBy("offset")
    seen = first_copies.select(
        *ID, "partition", "offset", "timestamp", "judged",
        F.max("seq").over(w.rowsBetween(*_BEFORE)).alias("max_seen"),
    )
    hit = seen.filter(F.col("judged") & (F.col("seq") < F.col("max_seen")))
    return anomaly_rows(hit, "write_reorder", topic="topic", key=key_value(), seq="seq",
                        partition="partition", offset="offset", ts="timestamp",
                        detail=F.concat(F.lit("written after seq "),
                                        F.col("max_seen").cast("string")))


def first_successes(p: Prepared) -> DataFrame:
    """The first successful processing of each (group, topic, partition, offset)."""
    w = Window.partitionBy("group_id", "topic", "partition", "offset").orderBy(
        "started_ts", "finished_ts")
    return (
        p.ledger.filter(F.col("outcome") == "success")
        .withColumn("_n", F.row_number().over(w))
        .filter(F.col("_n") == 1)
        .drop("_n")
    )


def process_reorder(p: Prepared) -> DataFrame:
    """Per (group, topic, key), first successful processings by (started_ts, offset): one
    whose offset is lower than an offset already processed in its partition."""
    firsts = first_successes(p).filter(F.col("resolved"))
    w = Window.partitionBy("group_id", *KEY, "partition").orderBy("started_ts", "offset")
    seen = firsts.select(
        "group_id", *ID, "partition", "offset", "member_id", "started_ts", "judged",
        F.max("offset").over(w.rowsBetween(*_BEFORE)).alias("max_seen"),
    )
    hit = seen.filter(F.col("judged") & (F.col("offset") < F.col("max_seen")))
    return anomaly_rows(hit, "process_reorder", group_id="group_id", topic="topic",
                        key=key_value(), seq="seq", partition="partition", offset="offset",
                        related_offset="max_seen", member_id="member_id", ts="started_ts",
                        detail=F.lit("processed after a higher offset of the same key"))
