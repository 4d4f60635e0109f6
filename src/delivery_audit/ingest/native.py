"""Parquet columns already of their field's type: typed straight from the scan.

A Parquet file whose columns have their canonical fields' types (a string for a string,
key or enum field, an integer for an integer field, a timestamp with a time zone for a
timestamp, a boolean for a boolean) needs no token frame for its plainly valid rows: the
value as read is the typed value once the fast path's checks hold (parsing.fast_accepted:
UTF-8, present when required, ranges, allowed values, years 1–9999, rule 3 and rule 20).
Those checks are a few comparisons per column, and such rows go from the scan to the
staged write in one projection. Every other row of the file (and every file with another
type anywhere) goes through the token frame and the strict rules as before
(parsing.typed_rows): the same rows, the same typed values, the same reasons. For an
all-native group those rows are deferred (deferred.py): the staged write counts the
plain rows it writes, and only a group with fewer than its footers' rows is scanned again
for the others, in one more job; a clean day never plans the strict rules for it.

Why: on a 1M-message Parquet day the token chain (kinds as text, a value column per kind,
a dozen projections each materialising every row) made staging 37–61 s against 18–20 s for
the typed columns alone; now 23–24 s (docs/plan-redesign.md, fifth session).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import sqlexpr as S
from ..fields import Field
from ..schemas import FIELDS
from ..sqlexpr import X
from .deferred import Deferred, counted
from .parsing import in_years_1_to_9999, int_range, typed_rows
from .tokens import exact_for
from .tokens.columns import union_all
from .tokens.parquet import column_types, read_groups, tokens_of
from .tokens.text import utf8_problem

_INTEGERS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_NATIVE = {"string": (T.StringType,), "key": (T.StringType,), "enum": (T.StringType,),
           "long": _INTEGERS, "nonneg_long": _INTEGERS, "int": _INTEGERS,
           "nonneg_int": _INTEGERS, "timestamp": (T.TimestampType,),
           "bool": (T.BooleanType,)}


def is_native(source: str, types: dict[str, T.DataType]) -> bool:
    """Every field of ``source`` in these columns (``types``: name → Spark type) has its
    canonical type, or is absent."""
    return all(isinstance(types[f.name], _NATIVE[f.kind]) for f in FIELDS[source]
               if f.name in types)


def _missing(f: Field, present: bool) -> X:
    """Rule 3's "missing": absent, null, or an empty string."""
    if not present:
        return S.lit(True)
    c = S.col(f.name)
    if f.kind in ("string", "key", "enum"):
        return c.isNull() | (c == "")
    return c.isNull()


def _value(f: Field) -> X:
    """A present value's typed value when it is plainly valid, else null (parsing's
    ``_fast_value`` for a value of its field's own type)."""
    c = S.col(f.name)
    if f.kind == "enum":
        lowered = S.fn("lower", c)
        return S.when(c.isin(*f.allowed), c).when(lowered.isin(*f.allowed), lowered)
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        return S.when(int_range(f, c.cast("long")), c.cast("long"))
    if f.kind == "timestamp":
        return in_years_1_to_9999(c)
    return c  # string, key, bool


def _typed(source: str, types: dict[str, T.DataType]) -> dict[str, X]:
    present = {f.name for f in FIELDS[source] if f.name in types}
    return {f.name: S.when(~_missing(f, f.name in present), _value(f)).cast(f.spark_type)
            if f.name in present else S.lit(None).cast(f.spark_type)
            for f in FIELDS[source]}


def plain(source: str, types: dict[str, T.DataType]) -> X:
    """The row is plainly valid and its typed values are :func:`_typed`'s (parsing's
    ``_fast`` for values of their own types): UTF-8 text, every present value plainly
    valid, every required one present, and rules 3 and 20."""
    typed = _typed(source, types)
    conds: list[X] = [utf8_problem(S.col(f.name), f"field '{f.name}'").isNull()
                      for f in FIELDS[source]
                      if f.name in types and isinstance(types[f.name], T.StringType)]
    for f in FIELDS[source]:
        missing = _missing(f, f.name in types)
        conds.append(S.when(~missing, typed[f.name].isNotNull())
                     .otherwise(S.lit(not f.required)))
    if source == "sends":  # rule 3, as in parsing.fast_accepted
        conds.append((typed["status"] != "acked")
                     | (typed["partition"].isNotNull() & typed["offset"].isNotNull()))
    if source == "broker":  # rule 20, as in parsing.fast_accepted
        conds.append(typed["pid"].isNotNull()
                     | (typed["control"].isNull()
                        & ~S.coalesce(typed["transactional"], S.lit(False))))
    ok = S.lit(True)
    for c in conds:
        ok = ok & S.coalesce(c, S.lit(False))
    return ok


def plain_rows(df: DataFrame, source: str) -> DataFrame:
    """The rows of ``df`` (a Parquet scan, every column native: :func:`is_native`) that
    are plainly valid, typed: the columns of parsing.typed_rows (``_raw`` and ``_reason``
    null)."""
    types = column_types(df)
    typed = _typed(source, types)
    meta = df.metadataColumn("_metadata")
    return df.filter(plain(source, types).sql).select(
        meta.getField("file_path").alias("_file"), F.lit(-1).cast("long").alias("_block"),
        meta.getField("row_index").alias("_pos"), F.lit(False).alias("_blank"),
        F.lit(None).cast("string").alias("_raw"),
        *[S.column(typed[f.name]).alias(f.name) for f in FIELDS[source]],
        F.lit(None).cast("string").alias("_reason"))


def _not_plain(df: DataFrame, source: str) -> DataFrame:
    """The rows of an all-native group that are not plain."""
    return df.filter((~plain(source, column_types(df))).sql)


def parquet_rows(spark: SparkSession, files: list[str], source: str
                 ) -> tuple[DataFrame, Deferred | None]:
    """Parquet files as parsing.typed_rows gives them, but for each group of files with
    one schema whose columns are all native: its plain rows straight from the scan
    (:func:`plain_rows`); the other rows of those groups deferred (deferred.Deferred: the
    groups whose plain rows were fewer than their footers' rows, scanned again, through
    one strict chain). The other groups go through the token frame and the strict rules'
    chain whole."""
    native, parts, others = [], [], []
    for df, rows in read_groups(spark, files):
        if not is_native(source, column_types(df)):
            others.append(df)
            continue
        written, n = counted(plain_rows(df, source))
        parts.append(written)
        native.append((df, rows, n))
    if others:
        parts.append(typed_rows(tokens_of(others, source), source,
                                exact_for("parquet", source)))

    def left() -> list[DataFrame]:
        return [_not_plain(df, source) for df, rows, n in native if rows > n()]

    deferred = Deferred(lambda: bool(left()), lambda: typed_rows(
        tokens_of(left(), source), source, exact_for("parquet", source))) if native else None
    return union_all(parts), deferred
