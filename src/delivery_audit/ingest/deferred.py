"""Rows the staged write leaves for later: the strict rules run only when a day has rows
that are not plainly valid.

Most rows of a day are plainly valid (parsing.fast_accepted; for native Parquet columns,
native.plain). The staged write takes only those, typed in a few projections, and counts
the others as it goes (an ``Observation``, :class:`Deferred`). Only when that count is
not zero are the others read again and typed by the strict rules (parsing.typed_rows), in
one more, appending write (staging.stage_sources). A clean day never plans the strict
rules: their projections (a dozen per field, over the code generator's method size, each
materialising every row) were most of staging's time (docs/plan-redesign.md).

The rows read again are the same rows with the same positions: ``_file``, ``_block`` and
``_pos`` come from the scan itself (a file's path, its split, the row's index or
``monotonically_increasing_id`` right above the scan, before any filter), which a second
scan of the same files in the same session gives again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ..schemas import FIELDS
from .parsing import fast_accepted, typed_rows
from .tokens import exact_for


@dataclass
class Deferred:
    """A group of files whose staged write took its plain rows only. ``left``: how many
    rows that write left (known once it ran: an observation); :meth:`strict_rows` types
    them."""

    source: str
    left: Callable[[], int]
    strict: Callable[[], DataFrame]

    @property
    def complete(self) -> bool:
        """Every row of the group was plain (and is written)."""
        return self.left() == 0

    def strict_rows(self) -> DataFrame:
        """The group's rows that are not plain, as parsing.typed_rows gives them."""
        return self.strict()


def counted(df: DataFrame, rows: Column) -> tuple[DataFrame, Callable[[], int]]:
    """``df`` observed: ``rows`` (a condition) counted as they pass; the count, once an
    action ran."""
    seen = Observation()
    return (df.observe(seen, F.count_if(rows).alias("n")),
            lambda: int(seen.get.get("n", 0)))


def token_rows(tokens: Callable[[], DataFrame], fmt: str, source: str
               ) -> tuple[DataFrame, Deferred]:
    """A token frame's plain rows typed by the fast path alone (parsing.typed_rows'
    columns, ``_raw`` and ``_reason`` null), and its other rows deferred. ``tokens``
    builds the frame (each call a new scan of the same files)."""
    flagged, left = counted(fast_accepted(tokens(), source), ~F.col("_fast"))
    plain = flagged.filter(F.col("_fast")).select(
        "_file", "_block", "_pos", F.lit(False).alias("_blank"),
        F.lit(None).cast("string").alias("_raw"),
        *[F.col(f"{f.name}__f").alias(f.name) for f in FIELDS[source]],
        F.lit(None).cast("string").alias("_reason"))

    def strict() -> DataFrame:
        rows = tokens()
        rest = fast_accepted(rows, source).filter(~F.col("_fast")).select(*rows.columns)
        return typed_rows(rest, source, exact_for(fmt, source))

    return plain, Deferred(source, left, strict)
