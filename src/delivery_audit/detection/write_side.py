"""Producer→broker rules: lost_acked, lost_unacked, written_despite_failure, seq_gap,
dup_write (with its cause) and key_partition_split. Counted once (not per group).

Each rule is a condition on a row of pass 1 (detection/keyed/) and the anomaly row it
emits: identity rules read an identity's row (its figures, aggregated), copy rules a broker
row joined with its identity and the key's previous copy (``prev``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..config import AuditConfig
from ..sqlexpr import X
from .evidence import KEY, anomaly_struct

_IDENTITY = S.col("judged")
_LONG_MAX = 2**63 - 1


def lost_acked() -> tuple[X, X]:
    """Acked, no broker copy, and the acked offset lies inside the dump's range."""
    return (_IDENTITY & (S.col("n_copies") == 0) & S.col("acked_inside"),
            anomaly_struct("lost_acked", topic="topic", key=KEY, seq="seq",
                           partition=S.col("inside_at.partition"),
                           offset=S.col("inside_at.offset"), ts="first_send_ts",
                           attempts="n_send_rows"))


def lost_unacked() -> tuple[X, X]:
    """No attempt acked and no broker copy."""
    return (_IDENTITY & (S.col("n_copies") == 0) & ~S.coalesce(S.col("any_acked"),
                                                               S.lit(False)),
            anomaly_struct("lost_unacked", topic="topic", key=KEY, seq="seq",
                           ts="first_send_ts", attempts="n_send_rows"))


def written_despite_failure() -> tuple[X, X]:
    """Every attempt failed or timed out, yet the broker has the message."""
    return (_IDENTITY & (S.col("n_send_rows") > 0) & ~S.col("any_acked")
            & (S.col("n_copies") > 0),
            anomaly_struct("written_despite_failure", topic="topic", key=KEY, seq="seq",
                           partition=S.col("first_copy.partition"),
                           offset=S.col("first_copy.offset"), ts="first_send_ts",
                           attempts="n_send_rows"))


def dup_write_cause() -> X:
    """Rule 14, first match wins."""
    return (S.when((S.col("n_send_rows") > 1) | (S.col("max_attempt") > 1)
                   | S.coalesce(S.col("any_failed"), S.lit(False)), S.lit("producer_retry"))
            .when(S.coalesce(S.col("any_idempotent"), S.lit(False)),
                  S.lit("idempotence_breach"))
            .otherwise(S.lit("unknown")))


def dup_write() -> tuple[X, X]:
    """One row per extra broker copy (n − 1) of a judged identity: every copy but the first
    in (partition, offset) order."""
    at = S.raw("named_struct('partition', partition, 'offset', offset)")
    return (S.col("judged") & (at != S.col("first_copy")),
            anomaly_struct("dup_write", cause=dup_write_cause(), topic="topic", key=KEY,
                           seq="seq", partition="partition", offset="offset",
                           related_partition=S.col("first_copy.partition"),
                           related_offset=S.col("first_copy.offset"), ts="timestamp",
                           related_ts="first_send_ts", attempts="n_send_rows",
                           detail=S.concat(S.lit("copies: "), S.col("n_copies").cast("string"))))


def key_move() -> tuple[X, X]:
    """A judged copy in another partition than the key's previous copy (records in (seq,
    partition, offset) order): a candidate of key_partition_split (:func:`first_move`)."""
    return (S.col("judged") & S.col("prev.partition").isNotNull()
            & (S.col("partition") != S.col("prev.partition")),
            anomaly_struct("key_partition_split", topic="topic", key=KEY, seq="seq",
                           partition="partition", offset="offset",
                           related_partition=S.col("prev.partition"), ts="timestamp",
                           detail=S.lit("record moved from the key's previous partition")))


def first_move(moves: DataFrame) -> DataFrame:
    """key_partition_split: a key counts once, by its first judged move (its records sit in
    more than one partition, each move reported in the window that judges it). ``moves``:
    pass 1's moves, routed by key."""
    first = S.over("row_number()", ["_r1", "_r2", "_r3", "key_null", "key_v"],
                   ["seq", "partition", "offset"])
    return (S.select(moves, "anomaly", first.alias("_n")).filter("_n = 1")
            .selectExpr("anomaly.*"))


def seq_gap() -> list[tuple[X, X]]:
    """Values strictly between a key's lowest and highest judged seq (``lo``, ``hi``)
    carried by no send or broker row: per identity in that range, the values between it
    and the key's previous identity (``prev_seq``); ``units`` = values in the range. A
    range of more than 2^63 − 1 values (only possible across zero) is two rows split at
    zero, so that every row's units fit a long."""
    seq, prev = S.col("seq"), S.col("prev_seq")
    gap = ((S.col("lo") < S.col("hi"))
           & seq.between(S.col("lo"), S.col("hi")) & (prev >= S.col("lo"))
           & (seq > prev + 1))
    lo, hi = prev + 1, seq - 1  # seqs are distinct per key: prev + 1 cannot overflow
    # (sizes in decimal: Spark may evaluate them before the conditions that guard them)
    too_long = _size(lo, hi) > S.lit(_LONG_MAX)
    detail = S.concat(S.lit("between seq "), prev.cast("string"), S.lit(" and "),
                      seq.cast("string"))

    def part(a: X, b: X) -> X:
        return anomaly_struct("seq_gap", units=_size(a, b), topic="topic", key=KEY, seq=a,
                              seq_to=b, detail=detail)

    # (CASEs: the ranges' arithmetic is evaluated on gaps only, where it cannot overflow)
    split = S.when(gap, too_long).otherwise(S.lit(False))
    whole = S.when(gap, ~too_long).otherwise(S.lit(False))
    return [(whole, part(lo, hi)),
            (split, part(lo, S.lit(-1).cast("bigint"))),
            (split, part(S.lit(0).cast("bigint"), hi))]


def _size(lo: X, hi: X) -> X:
    """The number of values in [lo, hi], exactly (a decimal: no long overflows)."""
    return hi.cast("decimal(20,0)") - lo + 1


def identity_rules(config: AuditConfig) -> list[tuple[X, X]]:
    """The rules on an identity's row, as (condition, anomaly row)."""
    rules = [lost_acked(), lost_unacked(), written_despite_failure()]
    if config.dense_seq:
        rules += seq_gap()
    return rules
