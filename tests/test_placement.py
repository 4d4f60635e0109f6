"""routes.placement: the routing ints that put each (group, topic, partition) on a task of
its own in Spark's hash partitioning (the consumer side's pass; 26 keys hashed into 44
tasks put 2–3 Kafka partitions in some tasks at 10M and spilled their sorts)."""

from __future__ import annotations

from pyspark.sql import functions as F

from delivery_audit import sqlexpr as S
from delivery_audit.detection import routes


def test_spark_hash_int_is_sparks_hash(spark):
    values = [0, 1, -1, 7, 12345, 2**31 - 1, -(2**31)]
    got = [r[0] for r in spark.createDataFrame([(v,) for v in values], "v int")
           .select(F.hash("v")).collect()]
    assert got == [routes.spark_hash_int(v) for v in values]


def test_each_key_lands_on_the_task_placed_for_it(spark):
    weights = {("g1", "t", p): 1000 - p for p in range(12)} | {("g2", "t", p): 10 for p in
                                                               range(12)}
    tasks = 16
    placements = routes.placement(weights, tasks)
    rows = [(g, t, p, n) for (g, t, p) in weights for n in range(3)]
    df = spark.createDataFrame(rows, "group_id string, topic string, partition int, n int")
    routed = S.select(df, "*", S.lit(None).cast("string").alias("_r1"),
                      S.lit(None).cast("string").alias("_r2"),
                      routes.placed(placements, S.col("group_id"), S.col("topic"),
                                    S.col("partition")).cast("int").alias("_r3"))
    tasks_of = (routed.repartition(tasks, "_r1", "_r2", "_r3")
                .select("group_id", "partition", F.spark_partition_id().alias("task"))
                .distinct().collect())
    per_task: dict[int, set] = {}
    for r in tasks_of:
        per_task.setdefault(r["task"], set()).add((r["group_id"], r["partition"]))
    # 24 keys, 16 tasks: the 12 heavy ones alone, the 12 light ones 3 by 3 on the other 4
    assert len(per_task) == tasks
    alone = [next(iter(keys)) for keys in per_task.values() if len(keys) == 1]
    assert {k for k in alone if k[0] == "g1"} == {("g1", p) for p in range(12)}
    assert max(len(keys) for keys in per_task.values()) == 3
    # a key not placed still gets a task (its own hash)
    other = S.select(spark.createDataFrame([("g9", "t", 1)], "g string, t string, p int"),
                     routes.placed(placements, S.col("g"), S.col("t"), S.col("p")).alias("r"))
    assert other.collect()[0]["r"] is not None
