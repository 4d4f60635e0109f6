"""Two designs of the identity pass (pass 1's costliest part: sends and broker copies by
identity), measured against the skeleton's plain join of the same rules. Not wired into the
engine: a prototype for issue 30 (docs/plan-redesign.md).

Rules covered (mixed days carry no transactions, so no copy is aborted): lost_acked,
lost_unacked, written_despite_failure and dup_write (units: copies − 1), each over the
judged identities (first send, else first copy, inside the window).

Both designs read the same narrow rows: per send attempt or broker copy, ``h`` =
xxhash64(topic, key, seq) (a null key encoded apart from every value), ``h2`` = a second,
independent 32-bit hash of the identity (the collision check: two identities sharing ``h``
show two values of ``h2`` with probability 1 − 2⁻³²; a real engine falls back to the full
keys for those few hashes), the time in epoch ms and four flag bits. 21 bytes a row
instead of the routed rows' hundreds.

* ``sql`` (design a): one aggregation by ``h`` over the union of both sides (one exchange;
  no join: an identity's sends and copies meet in the aggregation), then the counts.
* ``arrow`` (design b): one exchange by ``h`` (repartition + a sort within each partition,
  which Spark spills when it must), then ``mapInArrow``: each task streams its sorted
  record batches through pyarrow.compute (a group_by per batch; the rows of the batch's last
  hash are held back and prepended to the next batch, so a task holds one batch and one
  group at a time: memory bounded however large the partition) and returns its counts.
* ``skeleton``: the skeleton's way (scripts/skeleton.py): sends and copies aggregated by the
  string identity, full outer joined.

``python scripts/designs/identity_pass.py DATA DESIGN`` runs one design in this process and
prints ``RESULT {json}`` (seconds, counts, jobs, tasks, exchanges, shuffle, spill);
``python scripts/designs/identity_pass.py DATA`` runs each in its own process, checks the
counts against truth.json (the audit's counts equal it on the bench days) and prints a table.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import skeleton  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

RULES = ("lost_acked", "lost_unacked", "written_despite_failure", "dup_write")
SEND, ACKED, INSIDE = 1, 2, 4
START_MS = int(skeleton.START.timestamp() * 1000)
END_MS = int(skeleton.END.timestamp() * 1000)
COUNTS = "lost_acked long, lost_unacked long, written_despite_failure long, dup_write long, " \
         "collisions long, identities long"


def narrow(spark: SparkSession, data: Path, fmt: str) -> DataFrame:
    """Every send attempt and broker copy as (h, h2, ts_ms, flags)."""
    sends = skeleton.read(spark, data, "sends", fmt)
    broker = skeleton.read(spark, data, "broker", fmt)
    ranges = broker.groupBy("topic", "partition").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi"))
    ident = [F.col("topic"), F.col("key"), F.col("seq")]
    acked = F.col("status") == "acked"
    inside = acked & (F.col("offset") >= F.col("lo")) & (F.col("offset") <= F.col("hi"))
    s = sends.join(F.broadcast(ranges), on=["topic", "partition"], how="left").select(
        F.xxhash64(*ident).alias("h"), F.hash(*ident).alias("h2"),
        F.unix_millis("send_ts").alias("ts"),
        (F.lit(SEND) + F.when(acked, ACKED).otherwise(0)
         + F.when(F.coalesce(inside, F.lit(False)), INSIDE).otherwise(0)).cast("byte")
        .alias("flags"))
    b = broker.filter(F.col("seq").isNotNull()).select(
        F.xxhash64(*ident).alias("h"), F.hash(*ident).alias("h2"),
        F.unix_millis("timestamp").alias("ts"), F.lit(0).cast("byte").alias("flags"))
    return s.unionByName(b)


def _bit(bit: int) -> str:
    return f"(flags & {bit}) = {bit}"


def design_sql(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    rows = narrow(spark, data, fmt)
    ids = rows.groupBy("h").agg(
        F.expr("min(h2) <> max(h2)").alias("collision"),
        F.expr(f"min(IF({_bit(SEND)}, ts, NULL))").alias("first_send"),
        F.expr(f"min(IF(NOT {_bit(SEND)}, ts, NULL))").alias("first_copy"),
        F.expr(f"count(IF({_bit(SEND)}, 1, NULL))").alias("n_sends"),
        F.expr(f"count(IF(NOT {_bit(SEND)}, 1, NULL))").alias("n_copies"),
        F.expr(f"max({_bit(ACKED)})").alias("acked"),
        F.expr(f"max({_bit(INSIDE)})").alias("inside"))
    judged = F.expr(f"coalesce(first_send, first_copy) BETWEEN {START_MS} AND {END_MS - 1}")
    ids = ids.filter(judged)
    out = ids.agg(
        F.expr("count(IF(n_copies = 0 AND inside, 1, NULL))").alias("lost_acked"),
        F.expr("count(IF(n_copies = 0 AND NOT acked, 1, NULL))").alias("lost_unacked"),
        F.expr("count(IF(n_sends > 0 AND NOT acked AND n_copies > 0, 1, NULL))")
        .alias("written_despite_failure"),
        F.expr("sum(IF(n_copies > 1, n_copies - 1, 0))").alias("dup_write"),
        F.expr("count(IF(collision, 1, NULL))").alias("collisions"),
        F.count(F.lit(1)).alias("identities")).collect()[0]
    return {k: int(out[k] or 0) for k in out.asDict()}


def _aggregate(table: pa.Table) -> pa.Table:
    """Per hash: the identity's figures (pyarrow.compute)."""
    send = pc.equal(pc.bit_wise_and(table["flags"], SEND), SEND)
    t = table.append_column("send_ts", pc.if_else(send, table["ts"], None)) \
        .append_column("copy_ts", pc.if_else(send, None, table["ts"])) \
        .append_column("is_send", pc.cast(send, pa.int64())) \
        .append_column("is_copy", pc.cast(pc.invert(send), pa.int64())) \
        .append_column("acked", pc.equal(pc.bit_wise_and(table["flags"], ACKED), ACKED)) \
        .append_column("inside", pc.equal(pc.bit_wise_and(table["flags"], INSIDE), INSIDE))
    return t.group_by("h").aggregate([
        ("h2", "min"), ("h2", "max"), ("send_ts", "min"), ("copy_ts", "min"),
        ("is_send", "sum"), ("is_copy", "sum"), ("acked", "any"), ("inside", "any")])


def _counts(ids: pa.Table) -> dict[str, int]:
    first = pc.coalesce(ids["send_ts_min"], ids["copy_ts_min"])
    judged = pc.and_(pc.greater_equal(first, START_MS), pc.less(first, END_MS))
    ids = ids.filter(judged)
    none = pc.equal(ids["is_copy_sum"], 0)
    acked = pc.fill_null(ids["acked_any"], False)

    def n(mask) -> int:
        return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)

    extra = pc.max_element_wise(pc.subtract(ids["is_copy_sum"], 1), 0)
    return {
        "lost_acked": n(pc.and_(none, pc.fill_null(ids["inside_any"], False))),
        "lost_unacked": n(pc.and_(none, pc.invert(acked))),
        "written_despite_failure": n(pc.and_(pc.and_(pc.greater(ids["is_send_sum"], 0),
                                                     pc.invert(acked)), pc.invert(none))),
        "dup_write": int(pc.sum(extra).as_py() or 0),
        "collisions": n(pc.not_equal(ids["h2_min"], ids["h2_max"])),
        "identities": len(ids)}


def _per_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One task: its batches sorted by ``h``; a batch at a time, the last hash's rows held
    back for the next one (bounded memory), the counts summed."""
    total = dict.fromkeys((*RULES, "collisions", "identities"), 0)
    for t in harness.whole_groups(batches, ["h"]):
        for k, v in _counts(_aggregate(t)).items():
            total[k] += v
    yield pa.RecordBatch.from_pylist([total])


def design_arrow(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    rows = narrow(spark, data, fmt).repartition(parts, "h").sortWithinPartitions("h")
    out = rows.mapInArrow(_per_task, COUNTS).collect()
    return {k: sum(int(r[k]) for r in out) for k in out[0].asDict()}


def design_skeleton(spark: SparkSession, data: Path, fmt: str) -> dict[str, int]:
    sends = skeleton.read(spark, data, "sends", fmt)
    broker = skeleton.read(spark, data, "broker", fmt)
    ranges = broker.groupBy("topic", "partition").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi"))
    acked = F.col("status") == "acked"
    ident = ["topic", "key", "seq"]
    s_id = (sends.join(F.broadcast(ranges), on=["topic", "partition"], how="left")
            .groupBy(*ident).agg(
                F.min("send_ts").alias("first_send"), F.count(F.lit(1)).alias("n_sends"),
                F.max(acked).alias("acked"),
                F.max(acked & (F.col("offset") >= F.col("lo"))
                      & (F.col("offset") <= F.col("hi"))).alias("inside")))
    b_id = broker.filter(F.col("seq").isNotNull()).groupBy(*ident).agg(
        F.count(F.lit(1)).alias("n_copies"), F.min("timestamp").alias("first_copy"))
    ids = s_id.join(b_id, on=ident, how="full_outer").selectExpr(
        "coalesce(n_copies, 0) AS n_copies", "coalesce(n_sends, 0) AS n_sends",
        "coalesce(acked, false) AS acked", "coalesce(inside, false) AS inside",
        "unix_millis(coalesce(first_send, first_copy)) AS first")
    out = ids.filter(f"first BETWEEN {START_MS} AND {END_MS - 1}").agg(
        F.expr("count(IF(n_copies = 0 AND inside, 1, NULL))").alias("lost_acked"),
        F.expr("count(IF(n_copies = 0 AND NOT acked, 1, NULL))").alias("lost_unacked"),
        F.expr("count(IF(n_sends > 0 AND NOT acked AND n_copies > 0, 1, NULL))")
        .alias("written_despite_failure"),
        F.expr("sum(IF(n_copies > 1, n_copies - 1, 0))").alias("dup_write"),
        F.lit(0).alias("collisions"), F.count(F.lit(1)).alias("identities")).collect()[0]
    return {k: int(out[k] or 0) for k in out.asDict()}


DESIGNS = {"skeleton": design_skeleton, "sql": design_sql, "arrow": design_arrow}


def main() -> None:
    harness.main(__file__, DESIGNS, "skeleton,sql,arrow", RULES, ("collisions", "identities"),
                 exact=lambda c: c["collisions"] == 0)


if __name__ == "__main__":
    main()
