"""tally.collect_tallies: many small tables in one aggregation, equal to one groupBy each."""

from __future__ import annotations

from job_count import spark_jobs
from pyspark.sql import functions as F

from delivery_audit.tally import Tally, collect_tallies, count_where, one

ROWS = [("a", 1, 10, "x"), ("a", 1, 12, None), ("a", 2, 7, "x"), ("b", 1, None, "y"),
        ("b", 1, 3, "y")]


def _frame(spark):
    return spark.createDataFrame(ROWS, "topic string, partition int, offset bigint, tag string")


def test_tallies_equal_one_group_by_each_in_one_job(spark):
    df = _frame(spark)
    other = spark.createDataFrame([("g", 5), ("g", 6), ("h", 1)], "group_id string, offset bigint")
    got, jobs = spark_jobs(spark, lambda: collect_tallies([
        Tally("ranges", df, keys={"topic": F.col("topic")},
              int_keys={"partition": F.col("partition")},
              sums={"n": one(), "tagged": count_where(F.col("tag") == "x")},
              mins={"lo": F.col("offset")}, maxs={"hi": F.col("offset")}),
        Tally("tags", df, F.col("offset") > 5, keys={"tag": F.col("tag")}, sums={"n": one()}),
        Tally("groups", other, keys={"group_id": F.col("group_id")}, sums={"n": one()},
              maxs={"reach": F.col("offset")}, at_least=("n", 2)),
        Tally("everything", df, sums={"rows": one()}, maxs={"hi": F.col("offset")}),
        Tally("nothing", df, F.lit(False), sums={"rows": one()}, mins={"lo": F.col("offset")}),
    ]))
    assert jobs == 1
    want = (df.groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("n"),
                 F.count(F.when(F.col("tag") == "x", 1)).alias("tagged"),
                 F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect())
    assert sorted(tuple(sorted(r.items())) for r in got["ranges"]) == sorted(
        tuple(sorted(r.asDict().items())) for r in want)
    # a null key is a group, as in SQL; a null condition counts as false
    assert sorted(got["tags"], key=lambda r: str(r["tag"])) == [
        {"tag": None, "n": 1}, {"tag": "x", "n": 2}]
    assert got["groups"] == [{"group_id": "g", "n": 2, "reach": 6}]
    # a table without keys has one row, even over no rows (counts 0, extremes None)
    assert got["everything"] == [{"rows": 5, "hi": 12}]
    assert got["nothing"] == [{"rows": 0, "lo": None}]


def test_two_tallies_of_one_name_are_refused(spark):
    df = _frame(spark)
    try:
        collect_tallies([Tally("t", df, sums={"n": one()}), Tally("t", df, sums={"n": one()})])
    except ValueError as exc:
        assert "share a name" in str(exc)
    else:
        raise AssertionError("two tallies named t were accepted")


def test_a_narrow_tally_equals_the_shared_aggregation_in_the_same_job(spark):
    """A ``narrow`` table (aggregated on its own, in rows of its own columns) gives the rows
    the shared aggregation gives, HAVING, null keys and a keyless table included, and costs
    no Spark job of its own."""
    df = _frame(spark)

    def tallies(narrow: bool) -> list[Tally]:
        return [
            Tally("ranges", df, keys={"topic": F.col("topic")},
                  int_keys={"partition": F.col("partition")}, sums={"n": one()},
                  mins={"lo": F.col("offset")}, maxs={"hi": F.col("offset")}),
            Tally("repeated", df, F.col("offset").isNotNull(), keys={"tag": F.col("tag")},
                  int_keys={"len": F.length("topic")}, sums={"n": one()},
                  mins={"lo": F.col("offset")}, at_least=("n", 2), narrow=narrow),
            Tally("tags", df, keys={"tag": F.col("tag")}, sums={"n": one()}, narrow=narrow),
            Tally("rows", df, F.col("tag").isNull(), sums={"n": one()},
                  maxs={"hi": F.col("offset")}, narrow=narrow),
            Tally("none", df, F.lit(False), sums={"n": one()}, narrow=narrow),
        ]

    want = collect_tallies(tallies(False))
    got, jobs = spark_jobs(spark, lambda: collect_tallies(tallies(True)))
    assert jobs == 1
    assert got["repeated"] == [{"tag": "x", "len": 1, "n": 2, "lo": 7}]
    assert sorted(got["tags"], key=str) == [{"tag": "x", "n": 2}, {"tag": "y", "n": 2},
                                            {"tag": None, "n": 1}]
    assert got["rows"] == [{"n": 1, "hi": 12}]
    assert got["none"] == [{"n": 0}]
    assert {k: sorted(v, key=str) for k, v in got.items()} == {
        k: sorted(v, key=str) for k, v in want.items()}


def test_one_aggregation_per_frame_or_per_where_give_the_same_tables(spark):
    """A small input (one shuffle partition) puts a frame's tables in one aggregation, a
    large one in one per ``where``: the same rows either way, and one Spark job."""
    df = _frame(spark)
    other = spark.createDataFrame([("g", 5), ("g", 6), ("h", 1)], "group_id string, offset bigint")

    def tallies() -> list[Tally]:
        return [
            Tally("split", df, keys={"topic": F.col("topic")}, sums={"n": one()},
                  mins={"lo": F.col("offset")}),
            Tally("ranges", df, F.col("tag").isNotNull(), keys={"topic": F.col("topic")},
                  int_keys={"partition": F.col("partition")}, maxs={"hi": F.col("offset")}),
            Tally("tags", df, F.col("offset") > 5, keys={"tag": F.col("tag")}, sums={"n": one()}),
            Tally("big", df, F.col("offset") > 5, keys={"tag": F.col("tag")},
                  sums={"n": one()}, at_least=("n", 2)),
            Tally("metrics", df, F.col("offset").isNotNull(), sums={"rows": one()},
                  maxs={"hi": F.col("offset")}),
            Tally("none", df, F.lit(False), keys={"tag": F.col("tag")}, sums={"n": one()}),
            Tally("groups", other, keys={"group_id": F.col("group_id")}, sums={"n": one()},
                  at_least=("n", 2), narrow=True),
        ]

    before = spark.conf.get("spark.sql.shuffle.partitions")
    got = {}
    try:
        for n in ("1", "3"):
            spark.conf.set("spark.sql.shuffle.partitions", n)
            got[n], jobs = spark_jobs(spark, lambda: collect_tallies(tallies()))
            assert jobs == 1, n
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    rows = {n: {k: sorted(v, key=str) for k, v in t.items()} for n, t in got.items()}
    assert rows["1"] == rows["3"]
    assert rows["1"]["ranges"] == [{"topic": "a", "partition": 1, "hi": 10},
                                   {"topic": "a", "partition": 2, "hi": 7},
                                   {"topic": "b", "partition": 1, "hi": 3}]
    assert rows["1"]["split"] == [{"topic": "a", "n": 3, "lo": 7}, {"topic": "b", "n": 2, "lo": 3}]
    assert rows["1"]["big"] == [{"tag": "x", "n": 2}]
    assert rows["1"]["metrics"] == [{"rows": 4, "hi": 12}]
    assert rows["1"]["none"] == []
    assert rows["1"]["groups"] == [{"group_id": "g", "n": 2}]
