"""Delivery states (rule 11) per judged identity and group, and the per-group
anomalies they imply: skipped, pending, expired_unconsumed, dup_effect.

Precedence: k successful processings over all copies — k ≥ 2
``delivered_duplicate``, k = 1 ``delivered_once``; else with a broker copy,
``skipped`` if the group went past every copy (rule 12), else ``pending``; else
(no copy) an acked offset inside the dump range → ``lost_acked``, below the log
start → ``expired_unconsumed``, acked elsewhere → ``pending``; never acked →
``lost_unacked``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .evidence import anomaly_rows, key_value
from .identity import ID
from .prepared import Prepared, by_key


def successes_per_group(p: Prepared) -> DataFrame:
    """Successful processings per (group, identity): the by-key pass (no exchange)."""
    return (
        p.keyed_ledger.filter(F.col("outcome") == "success")
        .groupBy("group_id", *ID)
        .agg(F.count(F.lit(1)).alias("k"))
    )


def went_past_every_copy(p: Prepared, unprocessed: DataFrame) -> DataFrame:
    """(group, identity) pairs, among ``unprocessed``, whose every broker copy the group
    went past: it attempted a higher offset, committed beyond it, or recorded
    outcome ``skipped`` on it."""
    skipped_marks = (
        p.ledger.filter(F.col("outcome") == "skipped")
        .select("group_id", "topic", "partition", "offset", F.lit(True).alias("marked"))
        .groupBy("group_id", "topic", "partition", "offset")
        .agg(F.max("marked").alias("marked"))
    )
    per_copy = (
        unprocessed.join(p.copies.select(*ID, "partition", "offset"), on=ID, how="inner")
        .join(F.broadcast(p.progress), on=["group_id", "topic", "partition"], how="left")
        .join(skipped_marks, on=["group_id", "topic", "partition", "offset"], how="left")
        .select(
            "group_id", *ID,
            (F.coalesce(F.col("max_attempted") > F.col("offset"), F.lit(False))
             | F.coalesce(F.col("max_committed") > F.col("offset"), F.lit(False))
             | F.coalesce(F.col("marked"), F.lit(False))).alias("past"),
        )
    )
    # grouped by key, like the identities these pairs come from: the states' join needs
    # no exchange of every identity
    return by_key(per_copy).groupBy("group_id", *ID).agg(F.min("past").alias("past_every_copy"))


def states(p: Prepared) -> DataFrame:
    """One row per (group, judged identity on a topic the group consumes)."""
    judged = p.identities.filter(F.col("judged"))
    pairs = (
        judged.join(F.broadcast(p.group_topics), on="topic", how="inner")
        .join(successes_per_group(p), on=["group_id", *ID], how="left")
        .withColumn("k", F.coalesce(F.col("k"), F.lit(0)))
    )
    unprocessed = pairs.filter((F.col("k") == 0) & (F.col("n_copies") > 0)).select(
        "group_id", *ID)
    past = went_past_every_copy(p, unprocessed)
    state = (
        F.when(F.col("k") >= 2, F.lit("delivered_duplicate"))
        .when(F.col("k") == 1, F.lit("delivered_once"))
        .when((F.col("n_copies") > 0) & F.coalesce(F.col("past_every_copy"), F.lit(False)),
              F.lit("skipped"))
        .when(F.col("n_copies") > 0, F.lit("pending"))
        .when(F.col("acked_inside"), F.lit("lost_acked"))
        .when(F.col("acked_below"), F.lit("expired_unconsumed"))
        .when(F.col("any_acked"), F.lit("pending"))
        .otherwise(F.lit("lost_unacked"))
    )
    return pairs.join(past, on=["group_id", *ID], how="left").select(
        "group_id", *ID, state.alias("state"), F.col("k").alias("successes"),
        "n_copies", "first_copy", "acked_at", "below_at", "first_send_ts", "judged_ts",
    )


def state_anomalies(st: DataFrame) -> list[DataFrame]:
    """skipped, pending and expired_unconsumed: one row per (group, identity) in that state."""
    pending_cause = F.when(F.col("n_copies") > 0, F.lit("lag")).otherwise(
        F.lit("acked beyond the dump"))
    common = dict(group_id="group_id", topic="topic", key=key_value(), seq="seq",
                  ts="judged_ts")
    return [
        anomaly_rows(st.filter(F.col("state") == "skipped"), "skipped",
                     partition=F.col("first_copy.partition"), offset=F.col("first_copy.offset"),
                     detail=F.lit("the group went past every copy without processing it"),
                     **common),
        anomaly_rows(st.filter(F.col("state") == "pending"), "pending", cause=pending_cause,
                     partition=F.coalesce(F.col("first_copy.partition"),
                                          F.col("acked_at.partition")),
                     offset=F.coalesce(F.col("first_copy.offset"), F.col("acked_at.offset")),
                     **common),
        anomaly_rows(st.filter(F.col("state") == "expired_unconsumed"), "expired_unconsumed",
                     partition=F.col("below_at.partition"), offset=F.col("below_at.offset"),
                     detail=F.lit("acked below the dump's log start offset; never processed"),
                     **common),
    ]


def dup_effect(p: Prepared) -> DataFrame:
    """One row per extra successful processing (k − 1) of a judged identity by a group."""
    w = Window.partitionBy("group_id", *ID).orderBy("started_ts", "finished_ts", "partition",
                                                    "offset")
    extra = (
        p.keyed_ledger.filter(F.col("outcome") == "success")
        .select("group_id", *ID, "partition", "offset", "member_id", "started_ts", "judged",
                F.row_number().over(w).alias("_n"),
                F.first(F.struct("member_id", "partition", "offset", "started_ts"))
                .over(w).alias("first"))
        .filter(F.col("judged") & (F.col("_n") > 1))
    )
    return anomaly_rows(extra, "dup_effect", group_id="group_id", topic="topic",
                        key=key_value(), seq="seq", partition="partition", offset="offset",
                        related_partition=F.col("first.partition"),
                        related_offset=F.col("first.offset"), member_id="member_id",
                        related_member_id=F.col("first.member_id"), ts="started_ts",
                        related_ts=F.col("first.started_ts"), attempts="_n")
