"""concurrent_processing (rule 17): an attempt overlapping, on the same (group, topic,
partition), an attempt by a different member — a zombie still working after revocation.

An attempt is [started_ts, finished_ts); without finished_ts it is the instant
started_ts, which overlaps an attempt whose interval contains it (two instants
never overlap: there is no duration to share). Both sides count, any outcome;
attempts of one member never count against each other.

The consumer pass keeps only the attempts that overlap some attempt, of any member
(consumer.py); here, among those, members whose activity spans overlap are paired, each
pair's attempts (only those inside the other member's span) are swept in start order,
and an attempt overlaps the other member when that member's latest end before it is
later than its start, or its next start after it comes before its end. The candidates
arrive partitioned by (group, topic, partition) (``_r1``, ``_r2``, ``_r3``): no join or
window here needs another exchange.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .. import sqlexpr as S
from .evidence import KEY, anomaly_rows

_PART = ["_r1", "_r2", "_r3"]
_ATTEMPT = ["group_id", "topic", "partition", "offset", "member_id", "started_ts",
            "finished_ts", "outcome", "key_null", "key_v", "seq", "resolved", "judged"]


def _us(col: str) -> F.Column:
    return F.unix_micros(F.col(col))


def overlapping_attempts(candidates: DataFrame) -> DataFrame:
    attempts = candidates.select(
        *_PART, *_ATTEMPT, F.coalesce(F.col("finished_ts"), F.col("started_ts")).alias("end_ts"))
    spans = attempts.groupBy(*_PART, "member_id").agg(
        F.min("started_ts").alias("span_start"), F.max("end_ts").alias("span_end"))
    a, b = spans.alias("a"), spans.alias("b")
    member_pairs = a.join(
        b,
        on=[F.col("a." + c) == F.col("b." + c) for c in _PART]
        + [F.col("a.member_id") < F.col("b.member_id"),
           F.col("a.span_start") <= F.col("b.span_end"),
           F.col("b.span_start") <= F.col("a.span_end")],
        how="inner",
    ).select(*[F.col("a." + c).alias(c) for c in _PART],
             F.col("a.member_id").alias("m1"), F.col("b.member_id").alias("m2"),
             F.col("a.span_start").alias("s1"), F.col("a.span_end").alias("e1"),
             F.col("b.span_start").alias("s2"), F.col("b.span_end").alias("e2"))
    # each attempt of m1 inside m2's span, and of m2 inside m1's span
    side1 = attempts.join(
        member_pairs.withColumnRenamed("m1", "member_id"), on=[*_PART, "member_id"],
        how="inner",
    ).filter((F.col("started_ts") <= F.col("e2")) & (F.col("end_ts") >= F.col("s2"))
             ).select(*_PART, *_ATTEMPT, "end_ts", F.col("member_id").alias("m1"), "m2")
    side2 = attempts.join(
        member_pairs.withColumnRenamed("m2", "member_id"), on=[*_PART, "member_id"],
        how="inner",
    ).filter((F.col("started_ts") <= F.col("e1")) & (F.col("end_ts") >= F.col("s1"))
             ).select(*_PART, *_ATTEMPT, "end_ts", "m1", F.col("member_id").alias("m2"))
    both = side1.unionByName(side2).withColumn("s_us", _us("started_ts")).withColumn(
        "e_us", _us("end_ts"))
    pair = Window.partitionBy(*_PART, "m1", "m2").orderBy("s_us")
    upto = pair.rangeBetween(Window.unboundedPreceding, 0)
    onward = pair.rangeBetween(0, Window.unboundedFollowing)
    is1 = F.col("member_id") == F.col("m1")
    swept = both.select(
        "*",
        F.max(F.when(is1, F.col("e_us"))).over(upto).alias("m1_end_upto"),
        F.max(F.when(~is1, F.col("e_us"))).over(upto).alias("m2_end_upto"),
        F.min(F.when(is1, F.col("s_us"))).over(onward).alias("m1_start_onward"),
        F.min(F.when(~is1, F.col("s_us"))).over(onward).alias("m2_start_onward"),
    )
    other_end = F.when(is1, F.col("m2_end_upto")).otherwise(F.col("m1_end_upto"))
    other_start = F.when(is1, F.col("m2_start_onward")).otherwise(F.col("m1_start_onward"))
    overlaps = (other_end > F.col("s_us")) | (other_start < F.col("e_us"))
    return (
        swept.filter(overlaps)
        .select(*_PART, *_ATTEMPT, F.when(is1, F.col("m2")).otherwise(F.col("m1")).alias("other"))
        .groupBy(*_PART, *_ATTEMPT)
        .agg(F.min("other").alias("other_member"), F.count(F.lit(1)).alias("n_others"))
    )


def concurrent_processing(candidates: DataFrame) -> DataFrame:
    hit = overlapping_attempts(candidates).filter(F.col("resolved") & F.col("judged"))
    return anomaly_rows(hit, "concurrent_processing", group_id="group_id", topic="topic",
                        key=KEY, seq="seq", partition="partition", offset="offset",
                        member_id="member_id", related_member_id="other_member",
                        ts="started_ts", related_ts="finished_ts",
                        detail=S.raw("concat('outcome ', outcome, '; overlaps ', "
                                     "CAST(n_others AS STRING), ' other member(s)')"))
