"""Order rules (rule 16): write_reorder in the broker, process_reorder in a group."""

from __future__ import annotations

from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..sqlexpr import BEFORE, X
from .evidence import KEY, anomaly_rows, anomaly_struct


def write_reorder(first_copies: DataFrame) -> DataFrame:
    """Within (topic, partition, key) in offset order, a first copy whose seq is lower
    than a seq already seen; the running max spans all first copies, only judged ones
    count. ``first_copies``: pass 1's first copy of each identity in each partition, routed
    by (topic, partition)."""
    # a running maximum of (key, seq) over the partition in (key, offset) order: it stays
    # within the key when it names the same key
    seen = S.select(first_copies, "*", S.over(
        "max(named_struct('key_null', key_null, 'key_v', key_v, 'seq', seq))",
        ["_r1", "_r2", "_r3"], ["key_null", "key_v", "offset", "seq"], BEFORE).alias("_seen"))
    same_key = ((S.col("_seen.key_null") == S.col("key_null"))
                & (S.col("_seen.key_v") == S.col("key_v")))
    seen = S.select(seen, "*", S.when(same_key, S.col("_seen.seq")).alias("max_seen"))
    hit = seen.filter((S.col("judged") & (S.col("seq") < S.col("max_seen"))).sql)
    return anomaly_rows(hit, "write_reorder", topic="topic", key=KEY, seq="seq",
                        partition="partition", offset="offset", ts="timestamp",
                        detail=S.concat(S.lit("written after seq "),
                                        S.col("max_seen").cast("string")))


def process_reorder() -> tuple[X, X]:
    """Per (group, topic, key), first successful processings by (started_ts, offset): one
    whose offset is lower than an offset already processed in its partition (consumer
    pass: ``first_success``, the running ``max_seen``)."""
    return (S.col("first_success") & S.col("judged") & (S.col("offset") < S.col("max_seen")),
            anomaly_struct("process_reorder", group_id="group_id", topic="topic", key=KEY,
                           seq="seq", partition="partition", offset="offset",
                           related_offset="max_seen", member_id="member_id", ts="started_ts",
                           detail=S.lit("processed after a higher offset of the same key")))
