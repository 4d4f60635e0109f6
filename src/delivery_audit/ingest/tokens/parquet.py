"""Parquet into the token frame: files grouped by schema, each value in its native type
(only text is parsed again), text fields UTF-8 validated."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ... import sqlexpr as S
from ...schemas import FIELDS
from ...sqlexpr import X
from .columns import VALUE_COLUMNS, input_error, known_kind, quoted, token_columns, union_all
from .text import utf8_problem


def _parquet_kind(dtype: T.DataType) -> str:
    if isinstance(dtype, T.StringType | T.VarcharType | T.CharType):
        return "string"
    if isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return "int"
    if isinstance(dtype, T.FloatType | T.DoubleType | T.DecimalType):
        return "number"
    if isinstance(dtype, T.BooleanType):
        return "bool"
    if isinstance(dtype, T.TimestampType | T.TimestampNTZType | T.DateType):
        return "timestamp"
    return "other"


class ParquetGroup(NamedTuple):
    frame: DataFrame  # the group's files read with their own column types
    rows: int  # the group's rows, by the files' footers


def _parquet_groups(files: list[str]) -> dict[str, tuple[pa.Schema, list[str], list[int]]]:
    """Group Parquet files by schema: each group is read on its own and the token frames
    are unioned, so files that type a column differently (``partition`` int in one,
    string in another) are each parsed by their own types instead of failing Spark's
    schema merge. Each file's footer is read once: its schema and its row count."""
    groups: dict[str, tuple[pa.Schema, list[str], list[int]]] = {}
    for path in files:
        try:
            meta = pq.read_metadata(path)
            schema = meta.schema.to_arrow_schema()
        except Exception as exc:  # pyarrow raises several types for a bad footer
            raise input_error(f"{path}: not a readable Parquet file: {exc}") from exc
        group = groups.setdefault(str(schema.remove_metadata()), (schema, [], []))
        group[1].append(path)
        group[2].append(meta.num_rows)
    return groups


def _spark_type(t: pa.DataType) -> T.DataType | None:
    """The type Spark's own Parquet schema inference gives a column of this Arrow type,
    where it is unambiguous; None otherwise (a timestamp without a time zone may be INT96,
    which Spark reads as TIMESTAMP, or TIMESTAMP_NTZ; nested and unsigned types)."""
    simple = {pa.int8(): T.ByteType(), pa.int16(): T.ShortType(), pa.int32(): T.IntegerType(),
              pa.int64(): T.LongType(), pa.float32(): T.FloatType(),
              pa.float64(): T.DoubleType(), pa.bool_(): T.BooleanType(),
              pa.string(): T.StringType(), pa.large_string(): T.StringType(),
              pa.date32(): T.DateType()}
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t) and t.tz is not None and t.unit in ("ms", "us"):
        return T.TimestampType()
    if pa.types.is_decimal128(t):
        return T.DecimalType(t.precision, t.scale)
    return None


def _read_schema(schema: pa.Schema) -> T.StructType | None:
    """The Spark schema to read a group with, from the footer pyarrow already read: Spark
    then reads no footer itself (a Spark job per group); None when a column's type is not
    unambiguous (Spark infers it)."""
    fields = []
    for f in schema:
        t = _spark_type(f.type)
        if t is None:
            return None
        fields.append(T.StructField(f.name, t, True))
    return T.StructType(fields)


def read_groups(spark: SparkSession, files: list[str]) -> list[ParquetGroup]:
    """Each group of files with one schema (:func:`_parquet_groups`) read with its own
    column types, with its row count."""
    frames = []
    for schema, group, rows in _parquet_groups(files).values():
        given = _read_schema(schema)
        try:
            reader = spark.read if given is None else spark.read.schema(given)
            frames.append(ParquetGroup(reader.parquet(*group), sum(rows)))
        except Exception as exc:  # a schema Spark cannot read (duplicate or odd columns)
            first = (str(exc).splitlines() or [""])[0][:300]
            names = ", ".join(group[:3]) + (" …" if len(group) > 3 else "")
            raise input_error(f"{names}: cannot be read as Parquet: {first}") from exc
    return frames


def tokens_of(frames: list[DataFrame], source: str) -> DataFrame:
    """The groups' token frames, unioned: a field's value columns are those of every kind
    it has in some group."""
    suffixes: dict[str, set[str]] = defaultdict(set)
    for df in frames:
        for name, dtype in column_types(df).items():
            suffixes[name].add(VALUE_COLUMNS.get(_parquet_kind(dtype), "__s"))
    return union_all([_parquet_tokens(df, source, suffixes) for df in frames])


def read_parquet(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """Parquet, each group of files with one schema read with its own column types: a
    value keeps its native type (a long, a timestamp, a boolean) and only text is parsed.
    The groups' token frames are unioned (:func:`tokens_of`)."""
    return tokens_of([g.frame for g in read_groups(spark, files)], source)


def column_types(df: DataFrame) -> dict[str, T.DataType]:
    """A Parquet scan's data columns (not Spark's ``_metadata``) and their Spark types."""
    return {f.name: f.dataType for f in df.schema.fields if not f.name.startswith("_")}


def _parquet_tokens(df: DataFrame, source: str, suffixes: dict[str, set[str]]) -> DataFrame:
    types = column_types(df)
    meta = df.metadataColumn("_metadata")
    df = df.select(
        *[quoted(c) for c in types],
        meta.getField("file_path").alias("_file"),
        F.lit(-1).cast("long").alias("_block"),  # _pos is the row index: row = _pos + 1
        meta.getField("row_index").alias("_pos"),
        _raw_json(list(types)).alias("_raw"),
    )
    cols: list[X] = []
    problems = [utf8_problem(S.col(f.name), f"field '{f.name}'") for f in FIELDS[source]
                if f.name in types and _parquet_kind(types[f.name]) == "string"]
    for f in FIELDS[source]:
        if f.name not in types:
            cols += token_columns(f, S.lit("null"), {}, tuple(suffixes.get(f.name, ())))
            continue
        c = S.col(f.name)
        kind = _parquet_kind(types[f.name])
        if kind in VALUE_COLUMNS:
            values = {VALUE_COLUMNS[kind]: c}
        elif kind == "other":
            values = {"__s": S.fn("to_json", S.fn("struct", c))}
        else:  # string, number
            values = {"__s": c}
        cols += token_columns(f, known_kind(c, kind), values, tuple(suffixes[f.name]))
    err = S.coalesce(*problems) if problems else S.lit(None)
    return S.select(df, "_file", "_block", "_pos", S.lit(False).alias("_blank"), "_raw",
                    err.cast("string").alias("_err"), *cols)


def _raw_json(columns: list[str]) -> Column:
    """The row as a JSON object of its data columns, for the quarantine table."""
    if not columns:
        return F.lit("{}")
    return F.to_json(F.struct(*[quoted(c) for c in columns]))
