"""Pass 1's leaves: the send and broker rows (one leaf) and the ledger rows with rule 12's
``skipped`` marks (the other), each side's rows in the leaf's columns, hash partitioned by
key and sorted by (identity, partition, offset, side). Rule 10: a ledger row without seq
takes key and seq from the broker record at its offset."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...sqlexpr import X
from .. import routes, transactions
from ..facts import Facts
from .layout import (
    BROKER,
    ID,
    KEY,
    LEDGER,
    MARK,
    MASK_BITS,
    ORDER,
    SEND,
    SUCCESS,
    TPO,
    group_slot,
)

_KEY_PARTS = {"key_null": S.col("key").isNull(), "key_v": S.coalesce(S.col("key"), S.lit(""))}
# the last fields of each leaf (ack_ts, producer_id, error; generation) only travel to the
# published evidence (evidence_table.py)
_SB = {"send_ts": "timestamp", "attempt": "int", "status": "string", "idempotent": "boolean",
       "inside": "boolean", "below": "boolean", "timestamp": "timestamp",
       "ack_ts": "timestamp", "producer_id": "string", "error": "string",
       # a broker row's transaction (transactions.py): outcome, pid, epoch, closing marker,
       # and the higher epoch its pid wrote before it (zombie_write)
       "txn": "string", "pid": "bigint", "producer_epoch": "int",
       **{k: v for k, v in transactions.TXN_COLUMNS.items() if k != "txn"}}
_LM = {"group_id": "string", "member_id": "string", "started_ts": "timestamp",
       "finished_ts": "timestamp", "outcome": "string", "_mask": "int", "_mark": "bigint",
       "generation": "int", "isolation": "string"}


def _aligned(df: DataFrame, side: int, columns: dict[str, str], given: dict[str, X]) -> DataFrame:
    """One side's rows in a leaf's columns (the other sides' columns null)."""
    out = [given.get(c, S.col(c)).alias(c) for c in (*ID, "partition", "offset")]
    out.append(S.lit(side).cast("tinyint").alias("_side"))
    for name, dtype in columns.items():
        out.append(given.get(name, S.lit(None)).cast(dtype).alias(name))
    return S.select(df, *out)


def send_rows(sends: DataFrame, facts: Facts) -> DataFrame:
    """The send rows, each acked one with whether its offset lies inside the dump range
    (``inside``) or below the partition's log start (``below``: rule 11; with an offsets
    file the log start is its ``log_start``, rule 26, and an offset in [log_start,
    read_from) is neither)."""
    ranges = S.map_literal(
        [(S.struct(t=t, p=p), S.struct(lo=S.lit(lo).cast("bigint"), hi=S.lit(hi).cast("bigint"),
                                       start=S.lit(facts.log_start(t, p)).cast("bigint")))
         for (t, p), (lo, hi) in sorted(facts.ranges.items())],
        "map<struct<t:string,p:int>,struct<lo:bigint,hi:bigint,start:bigint>>")
    r = S.fn("element_at", ranges, S.raw("named_struct('t', topic, 'p', partition)"))
    acked = S.col("status") == "acked"
    return _aligned(sends, SEND, _SB, {
        **_KEY_PARTS,
        "send_ts": S.col("send_ts"), "attempt": S.col("attempt"), "status": S.col("status"),
        "idempotent": S.col("idempotent"), "ack_ts": S.col("ack_ts"),
        "producer_id": S.col("producer_id"), "error": S.col("error"),
        "inside": acked & (S.col("offset") >= S.raw(f"{r.sql}.lo"))
        & (S.col("offset") < S.raw(f"{r.sql}.hi")),
        "below": acked & (S.col("offset") < S.raw(f"{r.sql}.start")),
    })


def broker_rows(broker: DataFrame) -> DataFrame:
    """The data rows that form an identity (a control row forms none: rule 20), with their
    transaction (``broker``: transactions.outcomes' rows); aborted ones included (they
    judge an identity, rule 25, and may be zombie writes; they are no copies, rule 22)."""
    return _aligned(broker.filter(F.col("seq").isNotNull() & F.col("control").isNull()),
                    BROKER, _SB,
                    {**_KEY_PARTS, "timestamp": S.col("timestamp"),
                     "producer_id": S.col("producer_id"), "txn": S.col("txn"),
                     "pid": S.col("pid"), "producer_epoch": S.col("producer_epoch"),
                     "marker": S.col("marker"), "higher": S.col("higher")})


_LEDGER = ("group_id", "member_id", "started_ts", "finished_ts", "outcome", "generation",
           "isolation")


def _ledger_given(key_null: X, key_v: X, seq: X) -> dict[str, X]:
    # an unresolved row (no seq: no broker record at its offset) forms no identity; its own
    # "key" spreads such rows by offset instead of piling them on one task
    spread = S.raw("concat('#', CAST(offset AS STRING))")
    return {"key_null": S.when(seq.isNull(), S.lit(True)).otherwise(key_null),
            "key_v": S.when(seq.isNull(), spread).otherwise(key_v), "seq": seq,
            **{c: S.col(c) for c in _LEDGER}}


def _mark_bits(facts: Facts) -> tuple[X, X]:
    """A ``skipped`` row's (mask column, bit) for its (topic, group): its group slot's."""
    slot = group_slot(facts)
    return (S.raw(f"({slot.sql}) DIV {MASK_BITS}").cast("int"),
            S.fn("shiftleft", S.lit(1).cast("bigint"), S.raw(f"({slot.sql}) % {MASK_BITS}")))


def ledger_rows(ledger: DataFrame, broker: DataFrame, facts: Facts) -> DataFrame:
    """The ledger rows of the pass (rule 10: a row without seq takes key and seq from the
    broker record at its offset; unresolved without one) and the marks of rule 12 (a row
    with outcome ``skipped`` marks the broker record at its offset, whatever key and seq it
    names itself). Without such rows (``facts`` counted them) the broker is not looked up."""
    plain = facts.rows_without_seq == 0 and facts.skipped_rows == 0
    own = ledger if plain else ledger.filter(F.col("seq").isNotNull())
    rows = _aligned(own, LEDGER, _LM, _ledger_given(*_KEY_PARTS.values(), S.col("seq")))
    if plain:
        return rows
    need = ledger.filter(F.col("seq").isNull() | (F.col("outcome") == "skipped"))
    # a control row's key and seq are ignored (rule 20): a row at a marker is unresolved
    record = broker.select("topic", "partition", "offset", F.col("key").alias("b_key"),
                           F.when(F.col("control").isNull(), F.col("seq")).alias("b_seq"))
    looked = need.join(record.hint("merge"), on=["topic", "partition", "offset"], how="left")
    b_null, b_v = S.col("b_key").isNull(), S.coalesce(S.col("b_key"), S.lit(""))
    as_ledger = _aligned(looked.filter(F.col("seq").isNull()), LEDGER, _LM,
                         _ledger_given(b_null, b_v, S.col("b_seq")))
    chunk, bit = _mark_bits(facts)
    marks = _aligned(
        looked.filter((F.col("outcome") == "skipped") & F.col("b_seq").isNotNull()), MARK, _LM,
        {"key_null": b_null, "key_v": b_v, "seq": S.col("b_seq"),
         "group_id": S.col("group_id"), "_mask": chunk, "_mark": bit})
    return rows.unionByName(as_ledger).unionByName(marks)


def success_rows(lm: DataFrame, sb: DataFrame, facts: Facts) -> DataFrame:
    """The successful processings of identities (layout.SUCCESS) in the leaf's
    partitioning and order (``lm``: the ledger leaf; ``sb``: the send and broker leaf). A
    success at an aborted record (rule 22) is none: it is an aborted read (only a
    transactional dump has such records)."""
    rows = lm.filter((F.col("_side") == LEDGER) & (F.col("outcome") == "success")
                     & F.col("seq").isNotNull())
    if facts.transactional:
        aborted = sb.filter((F.col("_side") == BROKER) & (F.col("txn") == "aborted"))
        rows = rows.join(aborted.select(*TPO).hint("shuffle_hash"), on=TPO, how="left_anti")
    return rows.select(*SUCCESS)


def leaf(df: DataFrame) -> DataFrame:
    """Rows hash partitioned by key and sorted by (identity, partition, offset, side): a
    leaf whose order every step of the pass streams over."""
    return routes.checkpoint(df.repartition(*[F.col(c) for c in KEY])
                             .sortWithinPartitions(*ORDER))
