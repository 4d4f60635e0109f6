"""Rows the staged write leaves for later: the strict rules run only when a day has rows
that are not plainly valid.

Most rows of a day are plainly valid (parsing.fast_accepted; for native Parquet columns,
native.plain). The staged write takes only those, typed in a few projections
(:class:`Deferred`). Only when it left any others are they read again and typed by the
strict rules (parsing.typed_rows), in one more, appending write (staging.stage_sources).
A clean day never plans the strict
rules: their projections (a dozen per field, over the code generator's method size, each
materialising every row) were most of staging's time (docs/plan-redesign.md).

Where the others come from then:

* native Parquet (native.py): a second scan of the group's files, filtered to the rows
  that are not plain. Their positions (file, row index) are the scan's own, the same in
  any scan; one strict chain for all of a source's groups with rows left (the footers'
  rows more than the plain rows the write counted: an ``Observation``).
* JSON Lines (:func:`jsonl_rows`): the staged write keeps each such line as it was read,
  with its position, in a status folder of its own (:data:`DEFERRED`); the strict rules
  read that folder, not the files again (a day of mostly hostile lines parses each line
  once with the fast reader and then only the hostile ones again). Rows left: the folder
  exists. It is removed once their typed rows are written.
* CSV and Parquet of other column types: no deferral; their token frame goes through the
  strict rules' chain whole (parsing.typed_rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..schemas import FIELDS
from .parsing import fast_accepted, typed_rows
from .tokens import exact_for
from .tokens.jsonl import adapter_output, jsonl_tokens
from .tokens.text import text_lines, with_text

# a deferred line as the staged write keeps it: where it was read, and its text as read
LINE_SCHEMA = T.StructType([T.StructField("_file", T.StringType()),
                            T.StructField("_block", T.LongType()),
                            T.StructField("_pos", T.LongType()),
                            T.StructField("_raw", T.StringType())])


@dataclass(frozen=True)
class Deferred:
    """Rows a staged write left for later: whether it left any (known once it ran) and
    those rows, as parsing.typed_rows gives them."""

    pending: Callable[[], bool]
    rows: Callable[[], DataFrame]


def counted(df: DataFrame) -> tuple[DataFrame, Callable[[], int]]:
    """``df`` observed: its rows counted as they pass; the count, once an action ran: 0
    when the observation did not come back (a Spark Connect server may not send it), so a
    caller comparing the rows it wrote with those it read errs towards the strict rules."""
    seen = Observation()
    return df.observe(seen, F.count(F.lit(1)).alias("n")), lambda: int(seen.get.get("n", 0))


DEFERRED = "_deferred"  # the staged status folder of JSON lines typed later


def jsonl_rows(spark: SparkSession, files: list[str], source: str, later: Path
               ) -> tuple[DataFrame, Deferred]:
    """JSON Lines files as parsing.typed_rows' columns and ``_later``: a plain row typed by
    the fast path alone (``_raw`` and ``_reason`` null), every other line with
    ``_later`` set and its text as read in ``_raw`` (with its position), for the staged
    write to keep in ``later`` (the status folder :data:`DEFERRED`); and those lines
    deferred: typed by the strict rules from that folder, not from a second scan of the
    files. One frame, so the files are scanned and parsed once."""
    adapted = adapter_output(files)
    tokens = jsonl_tokens(text_lines(spark, files), source, adapted, keep_line=True)
    fast = F.col("_fast")
    rows = fast_accepted(tokens, source).select(
        "_file", "_block", "_pos", F.lit(False).alias("_blank"),
        F.when(~fast, F.col("value")).alias("_raw"),
        *[F.when(fast, F.col(f"{f.name}__f")).alias(f.name) for f in FIELDS[source]],
        F.lit(None).cast("string").alias("_reason"), (~fast).alias("_later"))

    def strict() -> DataFrame:
        kept = spark.read.schema(LINE_SCHEMA).parquet(str(later)).select(
            "_file", "_block", "_pos", F.col("_raw").alias("value"))
        return typed_rows(jsonl_tokens(with_text(kept), source, adapted), source,
                          exact_for("jsonl", source))

    # the folder itself says whether any line was kept (Spark writes none for a status
    # without rows): no count to trust, which a Spark Connect client may not get back
    return rows, Deferred(later.is_dir, strict)
