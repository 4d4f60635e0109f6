"""The skeleton of an exact audit in plain PySpark: the shuffles the audit cannot avoid, and
nothing else (no strict typing, quarantine, evidence, rebalances or report tables).

What it computes (issue 30's table), from the three sources' Parquet/JSON Lines files:

* sends and broker copies aggregated by identity (topic, key, seq) and full-outer joined:
  judged (first send, else first copy, inside the window), lost_acked / lost_unacked (no
  copy; an acked offset inside the dump's partition range, or no ack), dup_write (copies − 1),
  the first copy;
* ledger ⋈ broker by record (topic, partition, offset): each processing's identity (rule 10:
  from the record when the row names no seq);
* one exchange of the processings by (group, topic, partition), then windows on it (Spark
  reuses the hash partitioning): each record's first success, and per key by start time the
  highest offset already processed: process_reorder;
* skipped: the broker records below the group's highest processed offset that no attempt of
  the group names (an anti-join, as bit masks of the groups per record: the ledger aggregated
  by record, joined with the broker records), an identity counting when every copy is such a
  record and the group never processed it successfully;
* dup_effect: successes per (group, identity), k − 1 each;
* the few candidate rows joined back with the identities (judged, copies) only there;
* one anomaly write (rows with their units), counted afterwards with pyarrow (no Spark job).

``run(spark, data, out, fmt)`` returns the counts per anomaly; ``python scripts/skeleton.py
DATA_DIR`` runs it alone and prints the counts next to the generator's truth.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

START = datetime(2026, 11, 19, tzinfo=UTC)
END = datetime(2026, 11, 20, tzinfo=UTC)
READ_UNTIL = END + timedelta(minutes=60)  # rule 6: end + grace (the bench's days: 60 min)
TIME_COLUMN = {"sends": "send_ts", "broker": "timestamp", "ledger": "started_ts",
               "events": "ts"}
ID = ["topic", "key", "seq"]
REC = ["topic", "partition", "offset"]
GTP = ["group_id", "topic", "partition"]
# the anomalies the skeleton decides (the rest of the catalogue is the audit's alone)
COVERED = ("lost_acked", "lost_unacked", "dup_write", "process_reorder", "skipped",
           "dup_effect")


def read(spark: SparkSession, data: Path, source: str, fmt: str) -> DataFrame:
    """A source's rows up to the read bound (rule 6)."""
    path = str(data / source / "*")
    if fmt == "parquet":
        df = spark.read.parquet(path)
    else:
        from delivery_audit.schemas import canonical_schema

        df = spark.read.schema(canonical_schema(source)).json(path)
    until = F.lit(READ_UNTIL.replace(tzinfo=None)).cast("timestamp")
    df = df.filter(F.col(TIME_COLUMN[source]) < until)
    if "key" not in df.columns:
        return df
    # a null key is a key of its own (equal to itself): "n" for null, "v…" for a value
    return df.withColumn("key", F.coalesce(F.concat(F.lit("v"), F.col("key")), F.lit("n")))


def group_topics(data: Path) -> list[tuple[str, str]]:
    """(group, topic) pairs the day's config.yaml names."""
    from delivery_audit.config import load_config

    return [(g.group_id, t) for g in load_config(data / "config.yaml").groups for t in g.topics]


def plan(spark: SparkSession, data: Path, fmt: str = "parquet") -> DataFrame:
    """Every anomaly row of the covered rules: (anomaly, group_id, topic, key, seq,
    partition, offset, units)."""
    start = F.lit(START.replace(tzinfo=None)).cast("timestamp")
    end = F.lit(END.replace(tzinfo=None)).cast("timestamp")
    pairs = spark.createDataFrame(group_topics(data), "group_id string, topic string")
    sends = read(spark, data, "sends", fmt).select(
        *ID, "send_ts", "status", "partition", "offset")
    all_broker = read(spark, data, "broker", fmt)
    broker = all_broker.filter(F.col("seq").isNotNull()).select(*REC, "key", "seq", "timestamp")
    ledger = read(spark, data, "ledger", fmt).join(
        F.broadcast(pairs.select("group_id").distinct()), on="group_id", how="left_semi"
    ).select(*GTP, "offset", "member_id", "key", "seq", "started_ts", "outcome")

    # -- identities: sends and copies aggregated by identity, full outer joined --------
    ranges = all_broker.groupBy("topic", "partition").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi"))
    acked = F.col("status") == "acked"
    s_id = (sends.join(F.broadcast(ranges), on=["topic", "partition"], how="left")
            .groupBy(*ID).agg(
                F.min("send_ts").alias("first_send_ts"),
                F.max(acked).alias("any_acked"),
                F.max(acked & (F.col("offset") >= F.col("lo"))
                      & (F.col("offset") <= F.col("hi"))).alias("acked_inside")))
    b_id = broker.groupBy(*ID).agg(
        F.count(F.lit(1)).alias("n_copies"), F.min("timestamp").alias("first_copy_ts"),
        F.min(F.struct("partition", "offset")).alias("first_copy"))
    judged_ts = F.coalesce(F.col("first_send_ts"), F.col("first_copy_ts"))
    # computed once (a lazy local checkpoint), not once per branch that reads it (lost,
    # dup_write, the candidates' join-back): 40.4-40.8 s against 44.5 s at 1M Parquet
    ids = (s_id.join(b_id, on=ID, how="full_outer")
           .withColumn("n_copies", F.coalesce(F.col("n_copies"), F.lit(0)))
           .withColumn("judged", (judged_ts >= start) & (judged_ts < end))
           .localCheckpoint(eager=False))
    lost = ids.filter(F.col("judged") & (F.col("n_copies") == 0)).select(
        F.when(F.coalesce(F.col("acked_inside"), F.lit(False)), F.lit("lost_acked"))
        .when(~F.coalesce(F.col("any_acked"), F.lit(False)), F.lit("lost_unacked"))
        .alias("anomaly"), *ID)
    lost = lost.filter(F.col("anomaly").isNotNull()).select(
        "anomaly", F.lit(None).cast("string").alias("group_id"), *ID,
        F.lit(None).cast("int").alias("partition"), F.lit(None).cast("bigint").alias("offset"),
        F.lit(1).cast("bigint").alias("units"))
    dup_write = ids.filter(F.col("judged") & (F.col("n_copies") > 1)).select(
        F.lit("dup_write").alias("anomaly"), F.lit(None).cast("string").alias("group_id"), *ID,
        F.col("first_copy.partition").alias("partition"),
        F.col("first_copy.offset").alias("offset"),
        (F.col("n_copies") - 1).cast("bigint").alias("units"))

    # -- processings: ledger ⋈ broker by record (rule 10), one exchange by (g, t, p) ----
    record = broker.select(*REC, F.col("key").alias("b_key"), F.col("seq").alias("b_seq"))
    proc = (ledger.join(record, on=REC, how="left")
            .select(*GTP, "offset", "member_id", "started_ts", "outcome",
                    F.when(F.col("seq").isNull(), F.col("b_key")).otherwise(F.col("key"))
                    .alias("key"),
                    F.coalesce(F.col("seq"), F.col("b_seq")).alias("seq"))
            .repartition(*[F.col(c) for c in GTP])
            # rule 5: an exact duplicate row counts once (no exchange: the rows are
            # already hash partitioned by a subset of the columns)
            .dropDuplicates())
    success = (F.col("outcome") == "success") & F.col("seq").isNotNull()
    by_record = Window.partitionBy(*GTP, "offset").orderBy("started_ts", "member_id")
    firsts = (proc.filter(success)
              .withColumn("_n", F.row_number().over(by_record)).filter("_n = 1"))
    by_key = (Window.partitionBy(*GTP, "key").orderBy("started_ts", "offset")
              .rowsBetween(Window.unboundedPreceding, -1))
    reorder = (firsts.withColumn("max_seen", F.max("offset").over(by_key))
               .filter(F.col("offset") < F.col("max_seen"))
               .select(F.lit("process_reorder").alias("anomaly"), "group_id", "topic", "key",
                       "seq", "partition", "offset", F.lit(1).cast("bigint").alias("units")))

    # -- dup_effect: successes per (group, identity) ----------------------------------
    successes = proc.filter(success).groupBy("group_id", *ID).agg(
        F.count(F.lit(1)).alias("k"))
    dup_effect = successes.filter("k > 1").select(
        F.lit("dup_effect").alias("anomaly"), "group_id", *ID,
        F.lit(None).cast("int").alias("partition"), F.lit(None).cast("bigint").alias("offset"),
        (F.col("k") - 1).cast("bigint").alias("units"))

    # -- skipped: records below the group's highest processed offset no attempt names --
    # rule 12: a group went past offset o when it attempted or committed beyond it
    commits = read(spark, data, "events", fmt).filter(
        (F.col("event") == "commit") & F.col("offset").isNotNull()).select(*GTP, "offset")
    reach = ledger.select(*GTP, "offset").unionByName(commits).groupBy(*GTP).agg(
        F.max("offset").alias("reach"))
    # per record, the groups that attempted it and the groups whose ``skipped`` row marks it
    # passed (attempted or not), as bit masks over the config's groups: one aggregation of
    # the ledger by record, joined with the broker records by record (the anti-join of rule
    # 12 without a row per group on either side of the shuffle)
    names = sorted({g for g, _ in group_topics(data)})
    listed = ", ".join("'" + g.replace("'", "''") + "'" for g in names)
    bit = F.expr(f"shiftleft(1L, CAST(array_position(array({listed}), group_id) - 1 AS INT))")
    by_record = ledger.groupBy(*REC).agg(
        F.bit_or(bit).alias("attempted"),
        F.bit_or(F.when(F.col("outcome") == "skipped", bit).otherwise(F.lit(0).cast("bigint")))
        .alias("marked"))
    group_bits = spark.createDataFrame(
        [(g, t, 1 << names.index(g)) for g, t in group_topics(data)],
        "group_id string, topic string, bit bigint")
    passed = (broker.join(by_record, on=REC, how="left")
              .join(F.broadcast(group_bits), on="topic", how="inner")
              .join(F.broadcast(reach), on=GTP, how="inner")
              .filter(((F.col("offset") < F.col("reach"))
                       & (F.coalesce(F.col("attempted"), F.lit(0)).bitwiseAND(F.col("bit")) == 0))
                      | (F.coalesce(F.col("marked"), F.lit(0)).bitwiseAND(F.col("bit")) != 0))
              .groupBy("group_id", *ID).agg(F.count(F.lit(1)).alias("passed"),
                                            F.min("partition").alias("partition"),
                                            F.min("offset").alias("offset")))
    skipped = (passed.join(successes.select("group_id", *ID), on=["group_id", *ID],
                           how="left_anti")
               .select(F.lit("skipped").alias("anomaly"), "group_id", *ID, "partition",
                       "offset", F.col("passed").cast("bigint").alias("units")))

    # -- the candidates joined back with their identities (judged; every copy passed) ---
    candidates = skipped.unionByName(reorder).unionByName(dup_effect)
    judged = candidates.join(ids.select(*ID, "judged", "n_copies"), on=ID, how="inner").filter(
        F.col("judged") & ((F.col("anomaly") != "skipped") | (F.col("units") == F.col("n_copies"))))
    judged = judged.select("anomaly", "group_id", *ID, "partition", "offset",
                           F.when(F.col("anomaly") == "skipped", F.lit(1).cast("bigint"))
                           .otherwise(F.col("units")).alias("units"))
    return lost.unionByName(dup_write).unionByName(judged)


def run(spark: SparkSession, data: Path, out: Path, fmt: str = "parquet") -> dict[str, int]:
    """Plan, write the anomaly rows once (one Spark job), count them with pyarrow."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    target = out / "skeleton-anomalies"
    # settings that fit the data, as the audit's own (spark.py): no adaptive execution
    # below 1 GiB staged (it runs each shuffle stage as a job of its own: 36 jobs instead
    # of 1 at 1M), a few shuffle partitions for 2 cores
    spark.conf.set("spark.sql.adaptive.enabled",
                   os.environ.get("SKELETON_ADAPTIVE", "false"))
    spark.conf.set("spark.sql.shuffle.partitions",
                   os.environ.get("SKELETON_PARTITIONS", "4"))
    plan(spark, data, fmt).write.mode("overwrite").parquet(str(target))
    table = ds.dataset(str(target), format="parquet").to_table(columns=["anomaly", "units"])
    grouped = table.group_by("anomaly").aggregate([("units", "sum")]).to_pylist()
    counts = {name: 0 for name in COVERED}
    counts.update({r["anomaly"]: int(r["units_sum"]) for r in grouped})
    del pc
    return counts


def compare(counts: dict[str, int], truth: dict[str, int]) -> str:
    return ", ".join(f"{k} {counts.get(k, 0)}/{truth.get(k)}"
                     + ("" if counts.get(k, 0) == truth.get(k) else " DIFF") for k in COVERED)


def main() -> None:
    from delivery_audit.spark import get_spark

    data = Path(sys.argv[1])
    fmt = sys.argv[2] if len(sys.argv) > 2 else "parquet"
    spark = get_spark("skeleton", conf={"spark.sql.shuffle.partitions": "16"})
    t0 = time.perf_counter()
    counts = run(spark, data, Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp"), fmt)
    truth = json.loads((data / "truth.json").read_text())["anomalies"]
    print(f"skeleton {time.perf_counter() - t0:.1f} s; skeleton/truth: {compare(counts, truth)}")


if __name__ == "__main__":
    main()
