"""Rule 5: exact duplicate rows are logging artefacts; a repeated broker offset is too.

The first copy (in file order) stays; every later copy is quarantined with a
pointer to the first.

Duplicates are rare, so rows are not all shuffled and sorted: a 64-bit fingerprint of
the compared columns is counted per value (a shuffle of longs), only rows whose
fingerprint occurs more than once are ranked exactly, and the marks are joined back.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..schemas import FIELDS

# the columns that make two rows "the same" for each source
BROKER_IDENTITY = ("topic", "partition", "offset")
_MARKS = ("_dup_file", "_dup_block", "_dup_pos")


def identity_columns(source: str) -> tuple[str, ...]:
    if source == "broker":
        return BROKER_IDENTITY
    return tuple(f.name for f in FIELDS[source])


def with_fingerprint(parsed: DataFrame, source: str) -> DataFrame:
    """Add ``_fp``: a hash of the compared columns for valid rows (null for invalid ones)."""
    cols = [F.col(c) for c in identity_columns(source)]
    return parsed.withColumn(
        "_fp", F.when(F.col("_reason").isNull(), F.xxhash64(*cols)))


def duplicate_marks(fingerprinted: DataFrame, source: str) -> DataFrame:
    """(_file, _block, _pos) of each later copy with the first copy's position."""
    cols = identity_columns(source)
    repeated = (
        fingerprinted.filter(F.col("_fp").isNotNull())
        .groupBy("_fp").agg(F.count(F.lit(1)).alias("_n"))
        .filter(F.col("_n") > 1)
        .select("_fp")
    )
    suspects = fingerprinted.join(repeated, on="_fp", how="left_semi")
    order = [F.col("_file"), F.col("_block"), F.col("_pos")]
    w = Window.partitionBy("_fp", *[F.col(c) for c in cols]).orderBy(*order)
    return (
        suspects.select("_file", "_block", "_pos", F.row_number().over(w).alias("_copy"),
                        F.first(F.struct(*order)).over(w).alias("_first"))
        .filter(F.col("_copy") > 1)
        .select("_file", "_block", "_pos",
                F.col("_first._file").alias("_dup_file"),
                F.col("_first._block").alias("_dup_block"),
                F.col("_first._pos").alias("_dup_pos"))
    )


def mark_duplicates(fingerprinted: DataFrame, source: str) -> DataFrame:
    """Join the duplicate marks onto the rows (null marks: not a later copy)."""
    marks = duplicate_marks(fingerprinted, source)
    return fingerprinted.join(marks, on=["_file", "_block", "_pos"], how="left")
