"""Rule 5: exact duplicate rows are logging artefacts; a repeated broker offset is too.

The first copy (in file order) stays; every later copy is quarantined with a
pointer to the first.
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


def mark_duplicates(parsed: DataFrame, source: str) -> DataFrame:
    """Add _dup_file/_dup_block/_dup_pos (the first copy's position) on later copies."""
    cols = identity_columns(source)
    fingerprint = F.xxhash64(*[F.col(c) for c in cols])
    order = [F.col("_file"), F.col("_block"), F.col("_pos")]
    valid = F.col("_reason").isNull()
    w = Window.partitionBy(valid, fingerprint, *[F.col(c) for c in cols]).orderBy(*order)
    first = F.first(F.struct(*order)).over(w)
    ranked = parsed.select(
        "*",
        F.when(valid, F.row_number().over(w)).alias("_copy"),
        F.when(valid, first).alias("_first"),
    )
    is_dup = F.col("_copy") > 1
    return ranked.select(
        *[c for c in parsed.columns],
        F.when(is_dup, F.col("_first._file")).alias("_dup_file"),
        F.when(is_dup, F.col("_first._block")).alias("_dup_block"),
        F.when(is_dup, F.col("_first._pos")).alias("_dup_pos"),
    )
