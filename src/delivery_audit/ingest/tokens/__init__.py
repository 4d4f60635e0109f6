"""Read raw files into a token frame: per canonical field, its native value and kind.

Every reader yields the same columns, so one parser (parsing.py) applies the
contract's typing rules to all formats:

* ``_file``, ``_block``, ``_pos``: where the row came from; ``_pos`` orders rows
  inside one split (monotonically increasing id) or is the row index (Parquet);
* ``_blank``: a blank JSON line (not a row, but it counts as a line);
* ``_raw``: the row as text, for the quarantine table;
* ``_err``: a reason the whole row is unusable (not JSON, not an object), or null;
* ``<field>__k``: the value's kind as read: null, string, int, number, bool, timestamp,
  other, or ``jtext`` (JSON Lines' fast reading: a JSON value rendered as text whose
  JSON kind is not known; see :func:`read_jsonl`);
* the value itself, in the column of its kind: ``<field>__i`` (long: kind int),
  ``<field>__t`` (timestamp: kind timestamp), ``<field>__b`` (boolean: kind bool), and
  ``<field>__s`` (text: kinds string, jtext, number and other).

Values keep their native type: a Parquet long or timestamp, a JSON integer or boolean
is typed by the reader itself, and only text is parsed again. The strict rules
(parsing.parse_tokens) read a value's kind and text (``__k``, ``__s``): for rows the fast
path does not take, :func:`exact_for` renders the typed values as text (CSV, Parquet) or
reads the JSON line again through VARIANT for its exact kinds.

The readers, one module per format: jsonl.py, csv.py, parquet.py; the columns they share:
columns.py; lines, the size limit, UTF-8 validation and the quarantine's text: text.py.
Here: the reader of each format and its exact reading (:func:`read_tokens`,
:func:`exact_for`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...schemas import FIELDS, Field
from ...sqlexpr import X
from .columns import VALUE_COLUMNS, text_columns, union_all
from .csv import read_csv
from .jsonl import exact_variant, read_jsonl
from .parquet import read_parquet

__all__ = ["READERS", "exact_for", "exact_tokens", "read_tokens", "union_all"]

READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}


def read_tokens(spark: SparkSession, fmt: str, files: list[str], source: str) -> DataFrame:
    return READERS[fmt](spark, list(files), source)


def _text_of(f: Field, columns: list[str]) -> X:
    """A value as the strict rules read it: typed values rendered as text."""
    k, have = S.col(f"{f.name}__k"), text_columns(f, columns)
    render = {"__i": lambda c: c.cast("string"),
              "__t": lambda c: S.fn("date_format", c, "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"),
              "__b": lambda c: c.cast("string")}
    text: X = have.get("__s", S.lit(None).cast("string"))
    for kind, x in VALUE_COLUMNS.items():
        if x in have:
            text = S.when(k == kind, render[x](have[x])).otherwise(text)
    return text


def _exact_as_read(df: DataFrame, source: str) -> DataFrame:
    """CSV and Parquet kinds are exact as read (their text rendered for the rows that are
    not plainly valid); plain rows get every kind "null"."""
    slow = ~S.col("_fast")
    names = {f"{f.name}__{x}" for f in FIELDS[source] for x in ("k", "s")}
    rest = [c for c in df.columns if c not in names]
    cols: list[X] = []
    for f in FIELDS[source]:
        cols.append(S.when(slow, S.col(f"{f.name}__k")).otherwise(S.lit("null"))
                    .alias(f"{f.name}__k"))
        cols.append(S.when(slow, _text_of(f, df.columns)).alias(f"{f.name}__s"))
    return S.select(df, *rest, *cols)


def exact_for(fmt: str, source: str):
    """The strict path's exact reading for a format, as a DataFrame → DataFrame function over
    rows flagged ``_fast`` (see parsing.typed_rows)."""
    if fmt == "jsonl":
        return lambda df: exact_variant(df, source)
    return lambda df: _exact_as_read(df, source)


def exact_tokens(fmt: str, rows: DataFrame, source: str) -> DataFrame:
    """Tokens with exact kinds for every row (the strict path alone, as tests compare it):
    :func:`exact_for` with no row taken as plainly valid."""
    return exact_for(fmt, source)(rows.withColumn("_fast", F.lit(False)))
