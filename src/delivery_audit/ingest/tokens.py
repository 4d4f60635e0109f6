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


# A text line (JSON Lines) or CSV record longer than this is quarantined unparsed, with its
# own reason: parsing it (Jackson, VARIANT) would hold several copies of it in memory.
MAX_LINE_BYTES = 8 * 1024 * 1024
# a BOM opens a UTF-8 file; at the start of a line it is where a file began (files joined
# with cat): ignored there as at a file's start. Anywhere else it is a character.
BOM = "\ufeff"


def utf8_problem(text: X, where: str) -> X:
    """Null when ``text`` holds valid UTF-8, else why not, naming the byte offset of the
    first invalid byte (0-based, within ``where``). Spark keeps the bytes it read (its text
    reader, which JSON Lines and CSV go through, and Parquet): they are validated here,
    never decoded lossily (contract rule 4). The offset: the valid prefix before the first
    replacement character ``make_valid_utf8`` puts in, after any U+FFFD of the text itself
    is swapped for another 3-byte character (so it is not mistaken for one)."""
    fixed = S.fn("make_valid_utf8", S.fn("replace", text, S.lit("\ufffd"), S.lit("\u2603")))
    prefix = S.fn("substring", fixed, 1, S.fn("instr", fixed, S.lit("\ufffd")) - 1)
    return S.when(~S.fn("is_valid_utf8", text), S.concat(
        S.lit("not valid UTF-8 (byte offset "), S.fn("octet_length", prefix).cast("string"),
        S.lit(f" of {where})")))


def shown_text(text: X) -> X:
    """Text as the quarantine table shows it: invalid UTF-8 replaced (for display only)."""
    return S.when(S.fn("is_valid_utf8", text), text).otherwise(S.fn("make_valid_utf8", text))


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
    lines = _text_lines(spark, files)
    # a line over the size limit or not UTF-8 is not parsed at all (its reason in _lerr)
    lined = S.select(lines, "_file", "_block", "_pos", "_text",
                     _unusable(S.col("value"), "line").alias("_lerr"))
    parsed = S.select(lined, "_file", "_block", "_pos", "_text", "_lerr", S.raw(
        f"from_json(CASE WHEN _lerr IS NULL THEN _text END, {S.lit(', '.join(ddl)).sql}, "
        f"{options})").alias("_j"))

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
    lerr = S.col("_lerr")
    err = (S.when(lerr.isNotNull(), lerr)
           .when(failed | ~flat, S.lit("rejected by the fast reader")).otherwise(adapter_error))
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
    line = _shown_line(S.col("_text"), lerr)
    return S.select(
        parsed, *position,
        S.when(failed & lerr.isNull(), S.col("_text").rlike(r"^[ \t]*$"))
        .otherwise(S.lit(False)).alias("_blank"),
        (S.coalesce(j("__raw"), line) if adapter_output else line).alias("_raw"),
        "_text", "_lerr", adapter_error.alias("_aerr"), err.alias("_err"), *cols)


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
        S.when(S.col("_lerr").isNotNull(), S.col("_lerr"))
        .when(S.col("_v").isNull(), S.lit("not valid JSON"))
        .when(~S.col("_text").rlike(r"^[ \t]*\{"), S.lit("not a JSON object"))
        .when(~one_value, S.lit("not valid JSON: content after the object"))
        .otherwise(S.col("_aerr"))
    )


def _input_error(message: str) -> Exception:
    from .files import InputError

    return InputError(message)


def _csv_header(path: str) -> tuple[str, ...]:
    """A CSV file's column names: its first record, read as RFC 4180 (a BOM at the start
    dropped; invalid bytes in a name replaced: no canonical name holds them)."""
    import csv
    import gzip
    import zlib

    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
            return tuple(next(csv.reader(fh), []))
    except (OSError, EOFError, zlib.error, csv.Error) as exc:
        raise _input_error(f"{path}: cannot be read: {exc}") from exc


def _csv_groups(files: list[str]) -> dict[tuple[str, ...], list[str]]:
    """Group CSV files by their header, so each group is read with its own columns."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path in files:
        groups[_csv_header(path)].append(path)
    return groups


def _text_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """Text files as lines with their position, the bytes as read (Hadoop's line reader:
    ``\n``, ``\r\n`` or ``\r`` end a line); ``_text``: the line without a BOM opening it
    (where a file began), ``value``: the line as read."""
    raw = _with_position(spark.read.text(files))
    value = S.col("value")
    text = S.when(S.fn("startswith", value, S.lit(BOM)), S.fn("substr", value, 2)).otherwise(value)
    return S.select(raw, "_file", "_block", "_pos", "value", text.alias("_text"))


def _unusable(text: X, what: str) -> X:
    """Why a line or record cannot be parsed at all (over the size limit, not UTF-8; never
    parsed then), or null."""
    size = S.fn("octet_length", text)
    return S.when(size > MAX_LINE_BYTES, S.concat(
        S.lit(f"{what} of "), size.cast("string"),
        S.lit(f" bytes, over the {MAX_LINE_BYTES >> 20} MiB limit"))
    ).otherwise(utf8_problem(text, f"the {what}"))


def _shown_line(text: X, err: X) -> X:
    """A line (record) as the quarantine shows it: invalid bytes replaced, one over the size
    limit cut to its first 1,000 characters."""
    return (S.when(err.isNull(), text)
            .when(S.fn("octet_length", text) > MAX_LINE_BYTES,
                  S.concat(S.fn("substring", shown_text(text), 1, 1000), S.lit("…")))
            .otherwise(shown_text(text)))


# A quote that opens or closes a quoted field (RFC 4180): at a line's start or end, or next
# to a comma (each quote counted once: "," is a closing and an opening quote), once doubled
# quotes ("" inside a quoted field) are removed. A line with an odd number of them ends
# inside a quoted field: the record goes on on the next line. A quote inside an unquoted
# field (ab"c, not RFC 4180 but common) is not one of them.
_FIELD_QUOTE = r'(?<=^|,)"|"(?=,|$)'


def _csv_records(lines: DataFrame) -> DataFrame:
    """Lines of CSV files → records (RFC 4180: a quoted field may hold line breaks), with
    the physical line each starts at (``_line_no``, 1-based) and its number in the file
    (``_rec``, the header is 1). One shuffle and one sort: lines are ordered per file by
    the windows, and a record's lines are contiguous in that order (no second exchange)."""
    structural = S.fn("regexp_count",
                      S.fn("regexp_replace", S.col("_text"), S.lit('""'), S.lit("")),
                      S.lit(_FIELD_QUOTE))
    odd = S.fn("pmod", structural, S.lit(2))
    order = ["_block", "_pos"]
    numbered = S.select(
        lines, "_file", *order, "_text",
        S.over("row_number()", ["_file"], order).alias("_n"),
        S.coalesce(S.over(f"sum({odd.sql})", ["_file"], order, S.BEFORE), S.lit(0))
        .alias("_open"))
    # the same order as above: Spark sorts the lines once for both windows
    starts = S.select(numbered, "*", S.over(
        "sum(CASE WHEN pmod(_open, 2) = 1 THEN 0 ELSE 1 END)", ["_file"], order, S.UPTO)
        .alias("_rec"))
    return (starts.groupBy("_file", "_rec").agg(
        F.min("_n").alias("_line_no"), F.count(F.lit(1)).alias("_lines"),
        F.expr("array_join(transform(sort_array(collect_list(struct(_n, _text))), "
               "x -> x._text), '\n')").alias("_text")))


# univocity's default (20,480) fails the whole task on one record with more cells; such a
# record is a bad row ("cells do not match the header"), not a bad file
_CSV_MAX_COLUMNS = 1_000_000


def read_csv(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """CSV as RFC 4180 (contract §2): a header row, fields quoted with ``"`` when they hold
    commas, quotes or line breaks, a quote inside a quoted field doubled, any line ending;
    an empty cell is null. Every value is text of kind string.

    Lines are read as bytes (:func:`_text_lines`: UTF-8 validated, never decoded lossily),
    joined into records where a quoted field spans lines (:func:`_csv_records`), and each
    record parsed by Spark's ``from_csv``. A record's row number is the line it starts at,
    as for JSON Lines; the header and blank lines are not rows. A record whose cells do not
    match the header is quarantined (RFC 4180: every record has the header's fields)."""
    frames = []
    for header, group in _csv_groups(files).items():
        names = [n for n in header if header.count(n) == 1]  # a repeated name: ambiguous
        cell = {n: f"_c{i}" for i, n in enumerate(header) if n in names}
        ddl = ", ".join([f"_c{i} STRING" for i in range(len(header))] + ["_corrupt STRING"])
        options = ("map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt', "
                   f"'quote', '\"', 'escape', '\"', 'maxColumns', '{_CSV_MAX_COLUMNS}', "
                   "'ignoreLeadingWhiteSpace', 'false', 'ignoreTrailingWhiteSpace', 'false')")
        records = _csv_records(_text_lines(spark, group))
        records = S.select(records, "*", _unusable(S.col("_text"), "record").alias("_lerr"))
        blank = (S.col("_rec") == 1) | (
            (S.col("_lines") == 1) & S.col("_lerr").isNull() & S.col("_text").rlike(r"^[ \t]*$"))
        parsed = S.select(
            records, "_file", "_line_no", "_text", "_lerr", blank.alias("_blank"),
            S.raw(f"from_csv(CASE WHEN _lerr IS NULL AND NOT ({blank.sql}) THEN _text END, "
                  f"{S.lit(ddl).sql}, {options})").alias("_r"))
        lerr = S.col("_lerr")
        err = (S.when(S.col("_blank"), S.lit(None))
               .when(lerr.isNotNull(), lerr)
               .when(S.col("_r._corrupt").isNotNull(),
                     S.lit(f"cells do not match the header's {len(header)} columns")))
        cols: list[X] = []
        for f in FIELDS[source]:
            # (canonical names are ASCII: no invalid bytes in them)
            v = S.col(f"_r.{cell[f.name]}") if f.name in cell else S.lit(None).cast("string")
            cols += token_columns(f, _known_kind(v, "string"), {"__s": v})
        frames.append(S.select(
            parsed, "_file", S.lit(-1).cast("bigint").alias("_block"),
            (S.col("_line_no") - 1).cast("bigint").alias("_pos"), "_blank",
            _shown_line(S.col("_text"), lerr).alias("_raw"),
            err.cast("string").alias("_err"), *cols,
        ))
    return union_all(frames)


def union_all(frames: list[DataFrame]) -> DataFrame:
    """Frames of the same columns, by name, as one."""
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
    return union_all([_parquet_tokens(df, source, suffixes) for df in frames])


def _types(df: DataFrame) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in df.schema.fields if not f.name.startswith("_")}


def _parquet_tokens(df: DataFrame, source: str, suffixes: dict[str, set[str]]) -> DataFrame:
    types = _types(df)
    meta = df.metadataColumn("_metadata")
    df = df.select(
        *[F.col(quoted(c)) for c in types],
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
        cols += token_columns(f, _known_kind(c, kind), values, tuple(suffixes[f.name]))
    err = S.coalesce(*problems) if problems else S.lit(None)
    return S.select(df, "_file", "_block", "_pos", S.lit(False).alias("_blank"), "_raw",
                    err.cast("string").alias("_err"), *cols)


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
    usable = slow & S.col("_lerr").isNull()
    parsed = S.select(df, *rest, S.when(usable, S.raw("try_parse_json(_text)")).alias("_v"))
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
