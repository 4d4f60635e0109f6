"""Rule 5: exact duplicate rows are logging artefacts; a repeated broker offset is too.

The first copy (in file order) stays; every later copy is quarantined with a
pointer to the first.

Duplicates are rare, so rows are not all shuffled and sorted: a 64-bit fingerprint of
the compared columns is counted per value (a shuffle of longs), only rows whose
fingerprint occurs more than once are ranked exactly (and marked in place), the others
pass through unmarked.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..schemas import FIELDS

# the columns that make two rows "the same" for each source
BROKER_IDENTITY = ("topic", "partition", "offset")


def identity_columns(source: str) -> tuple[str, ...]:
    if source == "broker":
        return BROKER_IDENTITY
    return tuple(f.name for f in FIELDS[source])


def with_fingerprint(parsed: DataFrame, source: str) -> DataFrame:
    """Add ``_fp``: a hash of the compared columns for valid rows (null for invalid ones)."""
    cols = [F.col(c) for c in identity_columns(source)]
    return parsed.withColumn(
        "_fp", F.when(F.col("_reason").isNull(), F.xxhash64(*cols)))


def mark_duplicates(fingerprinted: DataFrame, source: str) -> DataFrame:
    """Add the first copy's position (``_dup_file``/``_dup_block``/``_dup_pos``, null for a
    row that is not a later copy).

    Only rows whose fingerprint repeats are ranked, and their marks are computed on those
    rows themselves, never joined back by position: a position is not a row's identity
    (an adapter writes several rows for one original line, e.g. one event per partition
    of a revoke line, all at that line), and a join on it would mark the wrong rows and
    multiply them (rows_read ≠ rows_valid + rows_quarantined)."""
    cols = identity_columns(source)
    repeated = (
        fingerprinted.filter(F.col("_fp").isNotNull())
        .groupBy("_fp").agg(F.count(F.lit(1)).alias("_n"))
        .filter(F.col("_n") > 1)
        .select("_fp")
    )
    suspects = fingerprinted.join(repeated, on="_fp", how="left_semi")
    others = fingerprinted.join(repeated, on="_fp", how="left_anti")  # null _fp stays
    order = [F.col("_file"), F.col("_block"), F.col("_pos")]
    w = Window.partitionBy("_fp", *[F.col(c) for c in cols]).orderBy(*order)
    later = F.row_number().over(w) > 1
    first = F.first(F.struct(*order)).over(w)
    ranked = suspects.select(
        *fingerprinted.columns,
        F.when(later, first["_file"]).alias("_dup_file"),
        F.when(later, first["_block"]).alias("_dup_block"),
        F.when(later, first["_pos"]).alias("_dup_pos"),
    )
    none = others.select(
        *fingerprinted.columns,
        F.lit(None).cast("string").alias("_dup_file"),
        F.lit(None).cast("long").alias("_dup_block"),
        F.lit(None).cast("long").alias("_dup_pos"),
    )
    return none.unionByName(ranked)
