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
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import sqlexpr as S
from ..schemas import FIELDS, Field
from ..sqlexpr import X


def _variant_kind(type_col: X) -> X:
    return (
        S.when(type_col.isNull() | (type_col == S.lit("VOID")), S.lit("null"))
        .when(type_col == S.lit("STRING"), S.lit("string"))
        .when(type_col.isin("BIGINT", "INT", "SMALLINT", "TINYINT"), S.lit("int"))
        .when(type_col.startswith("DECIMAL") | type_col.isin("DOUBLE", "FLOAT"), S.lit("number"))
        .when(type_col == S.lit("BOOLEAN"), S.lit("bool"))
        .otherwise(S.lit("other"))
    )


def quoted(name: str) -> str:
    """A column name as a Spark identifier (names may hold dots or backticks)."""
    return "`" + name.replace("`", "``") + "`"


def _data_columns(df: DataFrame) -> list[str]:
    """The file's own columns, without those whose names start with "_": they could
    collide with the token frame's columns (``_file``, ``_pos`` …) or hide Spark's
    ``_metadata`` column; no canonical field starts with "_"."""
    return [c for c in df.columns if not c.startswith("_")]


def _with_position(df: DataFrame) -> DataFrame:
    """Keep the data columns and add _file/_block/_pos right above the scan, before
    anything can reorder rows. ``metadataColumn`` reaches the file metadata even when
    the file has a column named ``_metadata``."""
    meta = df.metadataColumn("_metadata")
    return df.select(
        *[F.col(quoted(c)) for c in _data_columns(df)],
        meta.getField("file_path").alias("_file"),
        meta.getField("file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_pos"),
    )


def _raw_json(columns: list[str]) -> Column:
    """The row as a JSON object of its data columns, for the quarantine table."""
    if not columns:
        return F.lit("{}")
    return F.to_json(F.struct(*[F.col(quoted(c)) for c in columns]))


_ADAPTER_FIELDS = ("__file", "__line", "__raw", "__error")
INTEGER_KINDS = ("long", "nonneg_long", "int", "nonneg_int")
# the typed value column of each native kind; every other kind travels as text (``__s``)
VALUE_COLUMNS = {"int": "__i", "timestamp": "__t", "bool": "__b"}
_VALUE_TYPES = {"__i": "bigint", "__t": "timestamp", "__b": "boolean", "__s": "string"}


def token_columns(f: Field, kind: X, values: dict[str, X],
                  columns: tuple[str, ...] | None = None) -> list[X]:
    """A field's token columns: its kind and its value columns (``values`` by suffix,
    ``"__s"`` for text). Only the value columns given (or named in ``columns``, null
    where not given) exist: the fast path tests the kinds whose columns it finds."""
    names = columns if columns is not None else tuple(values)
    return [kind.alias(f"{f.name}__k"),
            *[(values[x] if x in values else S.lit(None)).cast(_VALUE_TYPES[x])
              .alias(f"{f.name}{x}") for x in _VALUE_TYPES if x in names]]


def text_columns(f: Field, columns: list[str]) -> dict[str, X]:
    """A field's value columns present in a token frame, by suffix."""
    return {x: S.col(f"{f.name}{x}") for x in _VALUE_TYPES if f"{f.name}{x}" in columns}


def _known_kind(value: X, kind: str) -> X:
    return S.when(value.isNull(), S.lit("null")).otherwise(S.lit(kind))


def _json_type(f: Field) -> str:
    """The type the fast JSON reading gives a field: JSON integers and booleans are typed
    by Spark's own JSON parser (any other JSON kind there marks the row corrupt: the strict
    path decides it); every other field is read as text (``jtext``)."""
    if f.kind in INTEGER_KINDS:
        return "BIGINT"
    return "BOOLEAN" if f.kind == "bool" else "STRING"


def read_jsonl(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """JSON Lines, parsed once by Spark's JSON parser (``from_json``): integer and boolean
    fields typed by it, the others as text whose JSON kind is not known (``jtext``: a
    string, or the text of a number, object or array).

    This is the cheap reading: it serves the fast path (parsing.fast_accepted). Rows it
    does not accept are read again, exactly, through VARIANT (:func:`exact_for`).
    ``_err`` is set when Spark's JSON parser marks the line corrupt (not JSON, not an
    object, a value of another JSON kind than the field's typed one) or when the line
    is not one flat object ending the line (Spark's JSON parsers ignore what follows the
    first value: ``{…} {…}``, ``{…} x``); ``_text`` keeps the line for the exact reading.

    Lines written by an adapter (adapters/) carry where they came from: ``__file``
    and ``__line`` (the original file and line), ``__raw`` (the original text) and
    ``__error`` (why the adapter could not parse it); such rows get ``_block`` −1 and
    ``_pos`` = line − 1, so their row number is known without the split table. These
    fields are honoured only in files an adapter wrote in this process: in a user's
    file they are ordinary unknown fields (a row cannot claim another file or line).

    A line of spaces and tabs is blank (not a row)."""
    from ..adapters.common import written_by_adapter

    adapter_output = bool(files) and all(written_by_adapter(f) for f in files)
    fields = FIELDS[source]
    ddl = [f"{quoted(f.name)} {_json_type(f)}" for f in fields]
    if adapter_output:
        ddl += [f"{quoted(n)} STRING" for n in _ADAPTER_FIELDS]
    ddl.append("`_corrupt` STRING")
    options = ("map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt', "
               "'allowSingleQuotes', 'false', 'allowNonNumericNumbers', 'false')")
    raw = _with_position(spark.read.text(files))
    parsed = S.select(raw, "_file", "_block", "_pos", S.col("value").alias("_text"),
                      S.raw(f"from_json(value, {S.lit(', '.join(ddl)).sql}, {options})")
                      .alias("_j"))

    def j(n: str) -> X:
        return S.col(f"_j.{n}")

    failed = S.col("_j").isNull() | j("_corrupt").isNotNull()
    # one flat object ending the line: its first "}" is its last character (a brace
    # inside a string, a nested value or blanks after the object send the line to the
    # exact reading, which decides it)
    # (a regex: the string functions that count characters cost three times as much)
    flat = S.col("_text").rlike(r"^[^}]*+\}$")
    origin_line = j("__line").try_cast("bigint")
    adapted = j("__file").isNotNull() & origin_line.isNotNull()
    adapter_error = j("__error") if adapter_output else S.lit(None).cast("string")
    err = S.when(failed | ~flat, S.lit("rejected by the fast reader")).otherwise(adapter_error)
    cols: list[X] = []
    for f in fields:
        v = j(f.name)
        if f.kind in INTEGER_KINDS:
            cols += token_columns(f, _known_kind(v, "int"), {"__i": v})
        elif f.kind == "bool":
            cols += token_columns(f, _known_kind(v, "bool"), {"__b": v})
        else:
            cols += token_columns(f, _known_kind(v, "jtext"), {"__s": v})
    position: list[str | X] = ["_file", "_block", "_pos"]
    if adapter_output:
        position = [
            S.when(adapted, j("__file")).otherwise(S.col("_file")).alias("_file"),
            S.when(adapted, S.lit(-1).cast("bigint")).otherwise(S.col("_block")).alias("_block"),
            S.when(adapted, origin_line - 1).otherwise(S.col("_pos")).alias("_pos")]
    return S.select(
        parsed, *position,
        S.when(failed, S.col("_text").rlike(r"^[ \t]*$")).otherwise(S.lit(False))
        .alias("_blank"),
        (S.coalesce(j("__raw"), S.col("_text")) if adapter_output else S.col("_text"))
        .alias("_raw"),
        "_text", adapter_error.alias("_aerr"), err.alias("_err"), *cols)


def _variant_error() -> X:
    """Why a JSON line (``_text``, parsed as ``_v``) is not a row, or the adapter's error.

    ``try_parse_json`` stops after the first JSON value and ignores what follows it
    (``{…} {…}``, two records glued by a lost line break, would lose the second one
    silently): a line is one object only if, wrapped as ``[line]`` and ``[line,0]``, it
    is an array of 1 and of 2 elements (content after the object would either make them
    invalid or change one of the lengths)."""
    one_value = S.coalesce(
        (S.raw("json_array_length('[' || _text || ']')") == 1)
        & (S.raw("json_array_length('[' || _text || ',0]')") == 2), S.lit(False))
    return (
        S.when(S.col("_v").isNull(), S.lit("not valid JSON"))
        .when(~S.col("_text").rlike(r"^[ \t]*\{"), S.lit("not a JSON object"))
        .when(~one_value, S.lit("not valid JSON: content after the object"))
        .otherwise(S.col("_aerr"))
    )


def _input_error(message: str) -> Exception:
    from .files import InputError

    return InputError(message)


def _csv_groups(files: list[str]) -> dict[str, list[str]]:
    """Group CSV files by their header line, so each group is read with its own columns."""
    import gzip
    import zlib

    groups: dict[str, list[str]] = defaultdict(list)
    for path in files:
        opener = gzip.open if path.lower().endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                header = fh.readline().strip()
        except (OSError, EOFError, zlib.error) as exc:
            raise _input_error(f"{path}: cannot be read: {exc}") from exc
        groups[header].append(path)
    return groups


# univocity's default (20,480) aborts the whole file on one line with more fields, and a
# count does not parse the columns, so the failure would surface late, outside the
# read's error handling; a row with more fields is still a bad row, not a bad file
_CSV_MAX_COLUMNS = "1000000"


def read_csv(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """CSV: every value is text of kind string (an empty cell is null)."""
    frames = []
    for _header, group in _csv_groups(files).items():
        df = (
            spark.read.option("header", "true").option("inferSchema", "false")
            .option("mode", "PERMISSIVE").option("multiLine", "false")
            .option("maxColumns", _CSV_MAX_COLUMNS)
            .csv(group)
        )
        data_cols = _data_columns(df)
        present = set(data_cols)
        df = _with_position(df)
        cols: list[X] = []
        for f in FIELDS[source]:
            v = S.col(f.name) if f.name in present else S.lit(None).cast("string")
            cols += token_columns(f, _known_kind(v, "string"), {"__s": v})
        frames.append(S.select(
            df.select("*", _raw_json(data_cols).alias("_raw")),
            "_file", "_block", "_pos", S.lit(False).alias("_blank"), "_raw",
            S.lit(None).cast("string").alias("_err"), *cols,
        ))
    return _union(frames)


def _union(frames: list[DataFrame]) -> DataFrame:
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


def _parquet_groups(files: list[str]) -> dict[str, list[str]]:
    """Group Parquet files by schema: each group is read on its own and the token frames
    are unioned, so files that type a column differently (``partition`` int in one,
    string in another) are each parsed by their own types instead of failing Spark's
    schema merge."""
    import pyarrow.parquet as pq

    groups: dict[str, list[str]] = defaultdict(list)
    for path in files:
        try:
            schema = pq.read_schema(path)
        except Exception as exc:  # pyarrow raises several types for a bad footer
            raise _input_error(f"{path}: not a readable Parquet file: {exc}") from exc
        groups[str(schema.remove_metadata())].append(path)
    return groups


def read_parquet(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """Parquet, each group of files with one schema read with its own column types: a
    value keeps its native type (a long, a timestamp, a boolean) and only text is parsed.
    The groups' token frames are unioned: a field's value columns are those of every kind
    it has in some group."""
    frames = []
    for group in _parquet_groups(files).values():
        try:
            frames.append(spark.read.parquet(*group))
        except Exception as exc:  # a schema Spark cannot read (duplicate or odd columns)
            first = (str(exc).splitlines() or [""])[0][:300]
            names = ", ".join(group[:3]) + (" …" if len(group) > 3 else "")
            raise _input_error(f"{names}: cannot be read as Parquet: {first}") from exc
    suffixes: dict[str, set[str]] = defaultdict(set)
    for df in frames:
        for name, dtype in _types(df).items():
            suffixes[name].add(VALUE_COLUMNS.get(_parquet_kind(dtype), "__s"))
    return _union([_parquet_tokens(df, source, suffixes) for df in frames])


def _types(df: DataFrame) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in df.schema.fields if not f.name.startswith("_")}


def _parquet_tokens(df: DataFrame, source: str, suffixes: dict[str, set[str]]) -> DataFrame:
    types = _types(df)
    meta = df.metadataColumn("_metadata")
    df = df.select(
        *[F.col(quoted(c)) for c in types],
        meta.getField("file_path").alias("_file"),
        F.lit(0).cast("long").alias("_block"),
        meta.getField("row_index").alias("_pos"),
        _raw_json(list(types)).alias("_raw"),
    )
    cols: list[X] = []
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
        cols += token_columns(f, _known_kind(c, kind), values, tuple(suffixes[f.name]))
    return S.select(df, "_file", "_block", "_pos", S.lit(False).alias("_blank"), "_raw",
                    S.lit(None).cast("string").alias("_err"), *cols)


READERS = {"jsonl": read_jsonl, "csv": read_csv, "parquet": read_parquet}


def read_tokens(spark: SparkSession, fmt: str, files: list[str], source: str) -> DataFrame:
    return READERS[fmt](spark, list(files), source)


def _exact_variant(df: DataFrame, source: str) -> DataFrame:
    """The exact reading of JSON lines (``_text``): each field's JSON kind from Spark's
    VARIANT (``try_parse_json`` + ``schema_of_variant``), so ``1.5``, ``true`` and
    objects are told apart from strings; why a line is not a row in ``_err``
    (:func:`_variant_error`). Parsed only for rows that are not plainly valid (``_fast``):
    plain rows get every kind "null"."""
    slow = ~S.col("_fast")
    names = {f"{f.name}__{x}" for f in FIELDS[source] for x in ("k", "s")}
    rest = [c for c in df.columns if c not in names and c != "_err"]
    parsed = S.select(df, *rest, S.when(slow, S.raw("try_parse_json(_text)")).alias("_v"))
    err = _variant_error()
    cols: list[X] = []
    for f in FIELDS[source]:
        path = f"$.{f.name}"
        kind = _variant_kind(S.raw(f"schema_of_variant(variant_get(_v, '{path}'))"))
        cols.append(S.when(slow, kind).otherwise(S.lit("null")).alias(f"{f.name}__k"))
        cols.append(S.when(slow, S.raw(f"try_variant_get(_v, '{path}', 'string')"))
                    .alias(f"{f.name}__s"))
    return S.select(parsed, *rest, S.when(slow, err).alias("_err"), *cols)


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
        return lambda df: _exact_variant(df, source)
    return lambda df: _exact_as_read(df, source)


def exact_tokens(fmt: str, rows: DataFrame, source: str) -> DataFrame:
    """Tokens with exact kinds for every row (the strict path alone, as tests compare it):
    :func:`exact_for` with no row taken as plainly valid."""
    return exact_for(fmt, source)(rows.withColumn("_fast", F.lit(False)))


def uses_row_index(fmt: str) -> bool:
    """Parquet rows carry their index; text formats need the split table for line numbers."""
    return fmt == "parquet"
