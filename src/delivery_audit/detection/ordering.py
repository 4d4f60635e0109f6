"""Order rules (rule 16): write_reorder in the broker, process_reorder in a group."""

from __future__ import annotations

from .. import sqlexpr as S
from ..sqlexpr import X
from .evidence import KEY, anomaly_struct


def write_reorder() -> tuple[X, X]:
    """Within (topic, partition, key) in offset order, a first copy of an identity in the
    partition whose seq is lower than a seq already seen (pass 1, by key: ``max_seen``, the
    running maximum of the key's first copies in the partition before it; every first copy
    counts in it, only judged ones are reported)."""
    return (S.col("judged") & (S.col("seq") < S.col("max_seen")),
            anomaly_struct("write_reorder", topic="topic", key=KEY, seq="seq",
                           partition="partition", offset="offset", ts="timestamp",
                           detail=S.concat(S.lit("written after seq "),
                                           S.col("max_seen").cast("string"))))


def process_reorder() -> tuple[X, X]:
    """Per (group, topic, key), first successful processings by (started_ts, offset): one
    whose offset is lower than an offset already processed in its partition (consumer
    pass: ``first_success``, the running ``max_seen``)."""
    return (S.col("first_success") & S.col("judged") & (S.col("offset") < S.col("max_seen")),
            anomaly_struct("process_reorder", group_id="group_id", topic="topic", key=KEY,
                           seq="seq", partition="partition", offset="offset",
                           related_offset="max_seen", member_id="member_id", ts="started_ts",
                           detail=S.lit("processed after a higher offset of the same key")))
