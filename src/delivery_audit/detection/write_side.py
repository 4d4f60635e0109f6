"""Producer→broker rules: lost_acked, lost_unacked, written_despite_failure,
dup_write (with its cause), seq_gap and key_partition_split. Counted once (not per group)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .evidence import anomaly_rows, key_value
from .identity import ID, KEY
from .prepared import Prepared


def _judged(p: Prepared) -> DataFrame:
    return p.identities.filter(F.col("judged"))


def lost_acked(p: Prepared) -> DataFrame:
    """Acked, no broker copy, and the acked offset lies inside the dump's range."""
    hit = _judged(p).filter((F.col("n_copies") == 0) & F.col("acked_inside"))
    return anomaly_rows(hit, "lost_acked", topic="topic", key=key_value(), seq="seq",
                        partition=F.col("inside_at.partition"), offset=F.col("inside_at.offset"),
                        ts="first_send_ts", attempts="n_send_rows")


def lost_unacked(p: Prepared) -> DataFrame:
    """No attempt acked and no broker copy."""
    hit = _judged(p).filter((F.col("n_copies") == 0) & ~F.col("any_acked"))
    return anomaly_rows(hit, "lost_unacked", topic="topic", key=key_value(), seq="seq",
                        ts="first_send_ts", attempts="n_send_rows")


def written_despite_failure(p: Prepared) -> DataFrame:
    """Every attempt failed or timed out, yet the broker has the message."""
    hit = _judged(p).filter((F.col("n_send_rows") > 0) & ~F.col("any_acked")
                            & (F.col("n_copies") > 0))
    return anomaly_rows(hit, "written_despite_failure", topic="topic", key=key_value(),
                        seq="seq", partition=F.col("first_copy.partition"),
                        offset=F.col("first_copy.offset"), ts="first_send_ts",
                        attempts="n_send_rows")


def dup_write_cause() -> F.Column:
    """Rule 14, first match wins."""
    return (
        F.when((F.col("n_send_rows") > 1) | (F.col("max_attempt") > 1) | F.col("any_failed"),
               F.lit("producer_retry"))
        .when(F.col("idempotent"), F.lit("idempotence_breach"))
        .otherwise(F.lit("unknown"))
    )


def dup_write(p: Prepared) -> DataFrame:
    """One row per extra broker copy (n − 1) of a judged identity (each copy carries its
    identity's figures)."""
    hit = p.copies.filter(F.col("judged") & (F.col("copy_no") > 1))
    return anomaly_rows(hit, "dup_write", cause=dup_write_cause(), topic="topic",
                        key=key_value(), seq="seq", partition="partition", offset="offset",
                        related_partition=F.col("first_copy.partition"),
                        related_offset=F.col("first_copy.offset"), ts="timestamp",
                        related_ts="first_send_ts", attempts="n_send_rows",
                        detail=F.concat(F.lit("copies: "), F.col("n_copies").cast("string")))


def seq_gap(p: Prepared) -> DataFrame:
    """Values strictly between a key's lowest and highest judged seq carried by no send
    or broker row; one row per missing range, ``units`` = values in it."""
    if not p.config.dense_seq:
        return anomaly_rows(p.identities.limit(0), "seq_gap")
    per_key = Window.partitionBy(*KEY)
    bounded = p.identities.select(
        *ID, "judged",
        F.min(F.when(F.col("judged"), F.col("seq"))).over(per_key).alias("lo"),
        F.max(F.when(F.col("judged"), F.col("seq"))).over(per_key).alias("hi"),
    ).filter(F.col("seq").between(F.col("lo"), F.col("hi")) & (F.col("lo") < F.col("hi")))
    ordered = Window.partitionBy(*KEY).orderBy("seq")
    # seqs are distinct per key, so prev_seq < seq and prev_seq + 1 cannot overflow
    gaps = (
        bounded.select(*ID, F.lag("seq").over(ordered).alias("prev_seq"))
        .filter(F.col("seq") > F.col("prev_seq") + 1)
        .select(*ID, "prev_seq", (F.col("prev_seq") + 1).alias("lo"),
                (F.col("seq") - 1).alias("hi"))
    )
    # a range of more than 2^63 − 1 values (only possible across zero) is reported as two
    # rows split at zero, so that every row's units fit a long
    # (a CASE, so that 2^63 − 1 + lo is computed only for a negative lo)
    too_long = F.when(F.col("lo") < 0, F.col("hi") > F.lit(2**63 - 1) + F.col("lo") - 1) \
        .otherwise(F.lit(False))
    parts = F.when(too_long, F.array(
        F.struct(F.col("lo").alias("lo"), F.lit(-1).cast("long").alias("hi")),
        F.struct(F.lit(0).cast("long").alias("lo"), F.col("hi").alias("hi")),
    )).otherwise(F.array(F.struct(F.col("lo").alias("lo"), F.col("hi").alias("hi"))))
    ranges = gaps.select(*ID, "prev_seq", F.explode(parts).alias("r"))
    lo, hi = F.col("r.lo"), F.col("r.hi")
    return anomaly_rows(ranges, "seq_gap", units=hi - lo + 1,
                        topic="topic", key=key_value(), seq=lo, seq_to=hi,
                        detail=F.concat(F.lit("between seq "), F.col("prev_seq").cast("string"),
                                        F.lit(" and "), F.col("seq").cast("string")))


def key_partition_split(p: Prepared) -> DataFrame:
    """A key counts when one of its judged records sits in another partition than the
    key's previous record (identities in seq order): its records sit in more than one
    partition, and each move is reported in the window that judges it."""
    ordered = Window.partitionBy(*KEY).orderBy("seq", "partition", "offset")
    moves = (
        p.copies.select(*ID, "partition", "offset", "timestamp", "judged",
                        F.lag("partition").over(ordered).alias("prev_partition"))
        .filter(F.col("judged") & F.col("prev_partition").isNotNull()
                & (F.col("partition") != F.col("prev_partition")))
    )
    keys = (
        moves.withColumn("_n", F.row_number().over(ordered))
        .filter(F.col("_n") == 1)
    )
    return anomaly_rows(keys, "key_partition_split", topic="topic", key=key_value(),
                        seq="seq", partition="partition", offset="offset",
                        related_partition="prev_partition", ts="timestamp",
                        detail=F.lit("record moved from the key's previous partition"))
