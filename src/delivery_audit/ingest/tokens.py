"""Read raw files into a token frame: per canonical field, its JSON kind and its text.

Every reader yields the same columns, so one parser (parsing.py) applies the
contract's typing rules to all formats:

* ``_file``, ``_block``, ``_pos``: where the row came from; ``_pos`` orders rows
  inside one split (monotonically increasing id) or is the row index (Parquet);
* ``_blank``: a blank JSON line (not a row, but it counts as a line);
* ``_raw``: the row as text, for the quarantine table;
* ``_err``: a reason the whole row is unusable (not JSON, not an object), or null;
* ``<field>__k``: the value's kind: null, string, int, number, bool, timestamp, other;
* ``<field>__s``: the value as text.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..schemas import FIELDS


def _variant_kind(type_col: Column) -> Column:
    return (
        F.when(type_col.isNull() | (type_col == F.lit("VOID")), F.lit("null"))
        .when(type_col == F.lit("STRING"), F.lit("string"))
        .when(type_col.isin("BIGINT", "INT", "SMALLINT", "TINYINT"), F.lit("int"))
        .when(type_col.startswith("DECIMAL") | type_col.isin("DOUBLE", "FLOAT"), F.lit("number"))
        .when(type_col == F.lit("BOOLEAN"), F.lit("bool"))
        .otherwise(F.lit("other"))
    )


def _with_position(df: DataFrame) -> DataFrame:
    """Add _file/_block/_pos right above the scan, before anything can reorder rows."""
    return df.select(
        "*",
        F.col("_metadata.file_path").alias("_file"),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_pos"),
    )


_ADAPTER_FIELDS = ("__file", "__line", "__raw", "__error")


def read_jsonl(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """JSON Lines, read natively with every field as text (kinds are "null" or "string").

    This is the cheap reading: it serves the fast path (parsing.fast_accepted), which
    looks at a value's text only. Rows it does not accept are read again, exactly, by
    :func:`variant_tokens`. ``_err`` is set when Spark's JSON reader rejects the line;
    ``_text`` keeps the line for that second reading.

    Lines written by an adapter (adapters/) may carry where they came from: ``__file``
    and ``__line`` (the original file and line), ``__raw`` (the original text) and
    ``__error`` (why the adapter could not parse it); such rows get ``_block`` −1 and
    ``_pos`` = line − 1, so their row number is known without the split table."""
    names = [f.name for f in FIELDS[source]] + list(_ADAPTER_FIELDS) + ["_corrupt"]
    schema = T.StructType([T.StructField(n, T.StringType()) for n in names])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt",
               "allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}
    raw = _with_position(spark.read.text(files))
    parsed = raw.select("_file", "_block", "_pos", F.col("value").alias("_text"),
                        F.from_json(F.col("value"), schema, options).alias("_j"))
    j = {n: F.col(f"_j.{n}") for n in names}
    origin_line = j["__line"].try_cast("bigint")
    adapted = j["__file"].isNotNull() & origin_line.isNotNull()
    err = (
        F.when(F.col("_j").isNull() | j["_corrupt"].isNotNull()
               | ~F.ltrim(F.col("_text")).startswith("{"), F.lit("rejected by the fast reader"))
        .otherwise(j["__error"])
    )
    cols: list[Column] = []
    for f in FIELDS[source]:
        cols.append(F.when(j[f.name].isNull(), F.lit("null")).otherwise(F.lit("string"))
                    .alias(f"{f.name}__k"))
        cols.append(j[f.name].alias(f"{f.name}__s"))
    return parsed.select(
        F.when(adapted, j["__file"]).otherwise(F.col("_file")).alias("_file"),
        F.when(adapted, F.lit(-1)).otherwise(F.col("_block")).alias("_block"),
        F.when(adapted, origin_line - 1).otherwise(F.col("_pos")).alias("_pos"),
        (F.trim(F.col("_text")) == F.lit("")).alias("_blank"),
        F.coalesce(j["__raw"], F.col("_text")).alias("_raw"),
        "_text", err.alias("_err"), *cols)


def variant_tokens(rows: DataFrame, source: str) -> DataFrame:
    """The exact reading of JSON lines (``_text``): each field's JSON kind from Spark's
    VARIANT (``try_parse_json`` + ``schema_of_variant``), so ``1.5``, ``true`` and
    objects are told apart from strings. Keeps the position columns and ``_raw``."""
    v = F.expr("try_parse_json(_text)")
    parsed = rows.select("_file", "_block", "_pos", "_blank", "_raw", "_text", v.alias("_v"))
    err = (
        F.when(F.col("_v").isNull(), F.lit("not valid JSON"))
        .when(~F.ltrim(F.col("_text")).startswith("{"), F.lit("not a JSON object"))
        .otherwise(F.expr("try_variant_get(_v, '$.__error', 'string')"))
    )
    cols: list[Column] = []
    for f in FIELDS[source]:
        path = f"$.{f.name}"
        cols.append(_variant_kind(F.expr(f"schema_of_variant(variant_get(_v, '{path}'))"))
                    .alias(f"{f.name}__k"))
        cols.append(F.expr(f"try_variant_get(_v, '{path}', 'string')").alias(f"{f.name}__s"))
    return parsed.select("_file", "_block", "_pos", "_blank", "_raw", err.alias("_err"), *cols)


def _csv_groups(files: list[str]) -> dict[str, list[str]]:
    """Group CSV files by their header line, so each group is read with its own columns."""
    import gzip

    groups: dict[str, list[str]] = defaultdict(list)
    for path in files:
        opener = gzip.open if path.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            header = fh.readline().strip()
        groups[header].append(path)
    return groups


def read_csv(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    frames = []
    for _header, group in _csv_groups(files).items():
        df = (
            spark.read.option("header", "true").option("inferSchema", "false")
            .option("mode", "PERMISSIVE").option("multiLine", "false")
            .csv(group)
        )
        present = set(df.columns)
        df = _with_position(df)
        cols: list[Column] = []
        for f in FIELDS[source]:
            s = F.col(f"`{f.name}`") if f.name in present else F.lit(None).cast("string")
            cols.append(F.when(s.isNull(), F.lit("null")).otherwise(F.lit("string"))
                        .alias(f"{f.name}__k"))
            cols.append(s.alias(f"{f.name}__s"))
        data_cols = [c for c in df.columns if not c.startswith("_")]
        raw = F.to_json(F.struct(*[F.col(f"`{c}`") for c in data_cols]))
        frames.append(df.select(
            "_file", "_block", "_pos", F.lit(False).alias("_blank"), raw.alias("_raw"),
            F.lit(None).cast("string").alias("_err"), *cols,
        ))
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


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


def read_parquet(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    df = spark.read.option("mergeSchema", "true").parquet(*files)
    types = {f.name: f.dataType for f in df.schema.fields}
    df = df.select(
        "*",
        F.col("_metadata.file_path").alias("_file"),
        F.lit(0).cast("long").alias("_block"),
        F.col("_metadata.row_index").alias("_pos"),
    )
    cols: list[Column] = []
    for f in FIELDS[source]:
        if f.name not in types:
            cols += [F.lit("null").alias(f"{f.name}__k"),
                     F.lit(None).cast("string").alias(f"{f.name}__s")]
            continue
        c = F.col(f"`{f.name}`")
        kind = _parquet_kind(types[f.name])
        if kind == "timestamp":
            text = F.date_format(c, "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX")
        elif kind == "other":
            text = F.to_json(F.struct(c)).cast("string")
        else:
            text = c.cast("string")
        cols.append(F.when(c.isNull(), F.lit("null")).otherwise(F.lit(kind))
                    .alias(f"{f.name}__k"))
        cols.append(text.alias(f"{f.name}__s"))
    data_cols = [c for c in types if not c.startswith("_")]
    raw = F.to_json(F.struct(*[F.col(f"`{c}`") for c in data_cols]))
    return df.select("_file", "_block", "_pos", F.lit(False).alias("_blank"), raw.alias("_raw"),
                     F.lit(None).cast("string").alias("_err"), *cols)


READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}


def read_tokens(spark: SparkSession, fmt: str, files: list[str], source: str) -> DataFrame:
    return READERS[fmt](spark, list(files), source)


def exact_tokens(fmt: str, rows: DataFrame, source: str) -> DataFrame:
    """Tokens with exact kinds for the strict path: JSON lines are read again through
    VARIANT; CSV and Parquet kinds are exact already."""
    return variant_tokens(rows, source) if fmt == "jsonl" else rows


def uses_row_index(fmt: str) -> bool:
    """Parquet rows carry their index; text formats need the split table for line numbers."""
    return fmt == "parquet"
