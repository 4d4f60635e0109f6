"""start_order.sweep (the consumer pass's neighbours in start order and process_reorder's
running maximum per key, streamed in Arrow batches) equals Spark's windows over each whole
(group, topic, partition) and each of its keys, the definitions it replaced, on rows that
put partitions, keys, equal starts and open attempts across batch boundaries."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from delivery_audit import sqlexpr as S
from delivery_audit.detection import consumer, start_order
from delivery_audit.sqlexpr import BEFORE

PART = list(start_order.PART)
ADDED = [c.split()[0] for c in start_order.ADDED.split(", ")]


def _windows(rows):
    """The reference: the figures as windows over the whole partition."""
    order = list(start_order.ORDER)
    end = "coalesce(finished_ts, started_ts)"
    peers = "RANGE BETWEEN CURRENT ROW AND CURRENT ROW"
    return S.select(rows, "*",
                    S.over(f"max({end})", PART, order, BEFORE).alias("before_end"),
                    S.over("lead(started_ts)", PART, order).alias("after_start"),
                    S.over("count(1)", PART, ["started_ts"], peers).alias("peers"),
                    S.over(f"max({end})", PART, ["started_ts"], peers).alias("peers_end"),
                    S.over("lag(member_id)", PART, order).alias("prev_any_member"),
                    S.over(f"lag(unix_millis({end}))", PART, order).alias("prev_any_f"),
                    S.over("max(IF(first_success, offset, NULL))", [*PART, "key_null", "key_v"],
                           ["started_ts", "offset", "finished_ts", "member_id"],
                           BEFORE).alias("max_seen"))


def _rows(seed: int, n: int):
    rnd = random.Random(seed)
    t0 = datetime(2026, 11, 19)
    out = []
    for i in range(n):
        start = t0 + timedelta(milliseconds=rnd.choice([0, 5, 5, 9, 13, 40]) * rnd.randint(0, 6))
        finished = None if rnd.random() < 0.2 else start + timedelta(
            microseconds=rnd.randint(-3, 9000))
        group, topic, part = rnd.choice(["g1", "g2"]), "t", rnd.randint(0, 3)
        key = rnd.choice(["a", "b", "c", "", None])
        out.append((group, topic, part, i, rnd.choice(["m1", "m2", "m3"]), start, finished,
                    key is None, key or "", rnd.random() < 0.6))
    return out


@pytest.mark.parametrize("batch", [1, 3, 7, 10_000])
def test_the_streamed_sweep_equals_the_windows_over_each_partition(spark, batch):
    df = spark.createDataFrame(
        _rows(batch, 400), "group_id string, topic string, partition int, offset bigint, "
        "member_id string, started_ts timestamp, finished_ts timestamp, key_null boolean, "
        "key_v string, first_success boolean").repartition(2, *PART)
    key = [*PART, "offset"]
    want = sorted(tuple(r) for r in _windows(df).select(*key, *ADDED).collect())
    before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
    try:
        got = sorted(tuple(r) for r in consumer._by_partition(df).select(*key, *ADDED).collect())
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
    assert len(got) == 400
    # the rows have equal starts and several partitions: the figures are not trivial
    assert any(r[-5] > 1 for r in got) and any(r[-3] is None for r in got)
    assert any(r[-1] is not None and r[-1] > r[3] for r in got)  # a reorder among them
    assert got == want

