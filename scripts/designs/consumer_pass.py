"""Two designs of the consumer pass (today's pass 2, the costliest part of detection: the
ledger's attempts ordered per record and per key), measured side by side. Not wired into
the engine: a prototype for issue 30 (docs/plan-redesign.md, S2).

Rules covered: redelivery (units: successes − 1 per (group, record)), retry_after_failure
(an attempt whose previous attempt on the record failed) and process_reorder (per (group,
topic, partition, key), a first success by (started_ts, offset) at an offset below one
already processed), each counted for judged identities only, and the judged identities
themselves (the S1 aggregation of identity_pass.py's design a, shared by both designs).

Both designs read the same narrow rows, in S2's layout: ledger rows of the consumer groups
and broker records, **co-partitioned by (topic, partition)** (one exchange each; the ledger ⋈
broker join by record of rule 10 needs none of its own); rule 5's exact duplicates are
dropped in the same partitioning. Identities travel as ``h`` = xxhash64(topic, key, seq).

* ``sql`` (design a): the join and the ordered rules as windows per record (group, topic,
  partition, offset) and per key, not over the whole partition: each window buffers one
  record's attempts or one key's first successes.
* ``arrow`` (design b): the joined rows sorted within each task by (group, topic,
  partition, offset, start, finish, member) and streamed through ``mapInArrow``: a batch at
  a time (the last record's rows carried to the next batch), redelivery and retries
  vectorised over the sorted arrays (numpy); the first successes kept per task and ordered
  by key and start at the end for process_reorder (a segmented running maximum).

``python scripts/designs/consumer_pass.py DATA DESIGN`` runs one design in this process
and prints ``RESULT {json}``; ``python scripts/designs/consumer_pass.py DATA`` runs each in
its own process, checks the counts against truth.json and prints a table (DESIGNS=base,…
adds ``base``: the shared reads, join and judged identities with no rule, whose counts are
not the rules').
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import identity_pass  # noqa: E402
import skeleton  # noqa: E402

RULES = ("redelivery", "retry_after_failure", "process_reorder")
TP = ["topic", "partition"]
CANDIDATES = "rule string, h long, units long"


def judged(spark: SparkSession, data: Path, fmt: str) -> DataFrame:
    """The judged identities' ``h`` (identity_pass.py's one aggregation by h)."""
    rows = identity_pass.narrow(spark, data, fmt)
    first = F.expr(f"coalesce(min(IF({identity_pass._bit(identity_pass.SEND)}, ts, NULL)), "
                   f"min(IF(NOT {identity_pass._bit(identity_pass.SEND)}, ts, NULL)))")
    return (rows.groupBy("h").agg(first.alias("first"))
            .filter(F.col("first").between(identity_pass.START_MS, identity_pass.END_MS - 1))
            .select("h"))


def joined(spark: SparkSession, data: Path, fmt: str) -> DataFrame:
    """The consumer groups' ledger rows, rule 10 resolved (a row without seq takes key and
    seq from the broker record at its offset), each with its identity's ``h`` (null:
    unresolved), co-partitioned by (topic, partition) with the broker records; rule 5's
    exact duplicates dropped there."""
    groups = sorted({g for g, _ in skeleton.group_topics(data)})
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    ledger = (skeleton.read(spark, data, "ledger", fmt)
              .filter(F.col("group_id").isin(*groups))
              .repartition(parts, *[F.col(c) for c in TP]).dropDuplicates())
    broker = skeleton.read(spark, data, "broker", fmt)
    if "control" in broker.columns:  # a Parquet day without transactions has no such column
        broker = broker.filter(F.col("control").isNull())
    broker = (broker
              .select(*TP, "offset", F.col("key").alias("b_key"), F.col("seq").alias("b_seq"))
              .repartition(parts, *[F.col(c) for c in TP]))
    j = ledger.join(broker, on=[*TP, "offset"], how="left")
    key = F.when(F.col("seq").isNull(), F.col("b_key")).otherwise(F.col("key"))
    seq = F.coalesce(F.col("seq"), F.col("b_seq"))
    h = F.when(seq.isNotNull(), F.xxhash64(F.col("topic"), key, seq))
    return j.select(h.alias("h"), "group_id", *TP, "offset", key.alias("key"), "member_id",
                    F.unix_millis("started_ts").alias("s"),
                    F.unix_millis("finished_ts").alias("f"), "outcome")


def _counted(candidates: DataFrame, ids: DataFrame) -> dict[str, int]:
    out = (candidates.join(ids, on="h", how="left_semi").groupBy("rule")
           .agg(F.sum("units").alias("n")).collect())
    got = {r["rule"]: int(r["n"]) for r in out}
    return {k: got.get(k, 0) for k in RULES}


def design_sql(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    rows = joined(spark, data, fmt).filter(F.col("h").isNotNull())
    rec = Window.partitionBy("group_id", *TP, "offset").orderBy(
        "s", "f", "member_id", "outcome")
    ok = F.col("outcome") == "success"
    rows = rows.select("*", F.lag("outcome").over(rec).alias("prev"),
                       F.sum(ok.cast("int")).over(rec.rowsBetween(Window.unboundedPreceding, 0))
                       .alias("succ_no"))
    retries = rows.filter(F.col("prev") == "failure").select(
        F.lit("retry_after_failure").alias("rule"), "h", F.lit(1).cast("long").alias("units"))
    repeats = rows.filter(ok & (F.col("succ_no") > 1)).select(
        F.lit("redelivery").alias("rule"), "h", F.lit(1).cast("long").alias("units"))
    by_key = (Window.partitionBy("group_id", *TP, "key").orderBy("s", "offset")
              .rowsBetween(Window.unboundedPreceding, -1))
    firsts = rows.filter(ok & (F.col("succ_no") == 1))
    reorder = (firsts.select("h", "offset", F.max("offset").over(by_key).alias("seen"))
               .filter(F.col("offset") < F.col("seen"))
               .select(F.lit("process_reorder").alias("rule"), "h",
                       F.lit(1).cast("long").alias("units")))
    return _counted(retries.unionByName(repeats).unionByName(reorder),
                    judged(spark, data, fmt))


def _same_as_previous(t: pa.Table, columns: list[str]) -> np.ndarray:
    """Per row of ``t``: whether it equals the row before it on ``columns`` (the first row:
    no)."""
    same = np.zeros(len(t), dtype=bool)
    same[1:] = True
    for c in columns:
        a = t[c].to_numpy(zero_copy_only=False)
        same[1:] &= a[1:] == a[:-1]
    return same


def _record_rules(t: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.Table]:
    """One batch of whole records, sorted by (group, topic, partition, offset, start, …):
    the ``h`` of each retry and each repeat, and the record's first successes."""
    n = len(t)
    h = t["h"].to_numpy(zero_copy_only=False)
    same = _same_as_previous(t, ["group_id", "topic", "partition", "offset"])
    ok = pc.equal(t["outcome"], "success").to_numpy(zero_copy_only=False)
    failed = pc.equal(t["outcome"], "failure").to_numpy(zero_copy_only=False)
    retry = np.zeros(n, dtype=bool)
    retry[1:] = same[1:] & failed[:-1]
    # successes before this row on its record: a running count reset at each record
    starts = ~same
    seg = np.cumsum(starts) - 1
    cum = np.cumsum(ok)
    base = (cum - ok)[starts][seg]  # successes before the record's first row
    before = cum - ok - base
    repeat = ok & (before > 0)
    first = ok & (before == 0)
    return h[retry], h[repeat], t.filter(pa.array(first)).select(
        ["h", "group_id", "topic", "partition", "key", "s", "offset"])


def _reorders(firsts: pa.Table) -> np.ndarray:
    """Per (group, topic, partition, key) by (start, offset): the first successes below the
    running maximum offset (a segmented running maximum over the sorted rows)."""
    if len(firsts) == 0:
        return np.zeros(0, dtype=np.int64)
    t = firsts.sort_by([("group_id", "ascending"), ("topic", "ascending"),
                        ("partition", "ascending"), ("key", "ascending"),
                        ("s", "ascending"), ("offset", "ascending")])
    n = len(t)
    new = ~_same_as_previous(t, ["group_id", "topic", "partition", "key"])
    seg = np.cumsum(new)
    off = t["offset"].to_numpy()
    # offsets < 2^40 on these days: segment-major keys make one running maximum serve all
    keyed = seg.astype(np.int64) * (1 << 40) + off
    run = np.maximum.accumulate(keyed)
    prev = np.empty(n, dtype=np.int64)
    prev[0] = -1
    prev[1:] = run[:-1]
    below = (~new) & (keyed < prev)
    return t["h"].to_numpy()[below]


def _per_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    retries: list[np.ndarray] = []
    repeats: list[np.ndarray] = []
    firsts: list[pa.Table] = []
    for t in harness.whole_groups(batches, ["group_id", "topic", "partition", "offset"]):
        r, p, f = _record_rules(t)
        retries.append(r)
        repeats.append(p)
        firsts.append(f)
    reorder = _reorders(pa.concat_tables(firsts)) if firsts else np.zeros(0, np.int64)
    for rule, hs in (("retry_after_failure", retries), ("redelivery", repeats),
                     ("process_reorder", [reorder])):
        h = np.concatenate(hs) if hs else np.zeros(0, np.int64)
        if len(h):
            yield pa.RecordBatch.from_arrays(
                [pa.array([rule] * len(h)), pa.array(h, pa.int64()),
                 pa.array(np.ones(len(h), np.int64))], names=["rule", "h", "units"])


def design_arrow(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    rows = (joined(spark, data, fmt).filter(F.col("h").isNotNull())
            .sortWithinPartitions("group_id", *TP, "offset", "s", "f", "member_id", "outcome"))
    candidates = rows.mapInArrow(_per_task, CANDIDATES)
    return _counted(candidates, judged(spark, data, fmt))


def design_base(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    """What both designs share (the co-partitioned join, rule 5, the judged identities),
    with no rule: every resolved row counted as a candidate of each rule."""
    rows = joined(spark, data, fmt).filter(F.col("h").isNotNull())
    candidates = rows.select(F.explode(F.array(*[F.lit(r) for r in RULES])).alias("rule"),
                             "h", F.lit(1).cast("long").alias("units"))
    return _counted(candidates, judged(spark, data, fmt))


DESIGNS = {"sql": design_sql, "arrow": design_arrow, "base": design_base}


def main() -> None:
    harness.main(__file__, DESIGNS, "sql,arrow", RULES)


if __name__ == "__main__":
    main()
