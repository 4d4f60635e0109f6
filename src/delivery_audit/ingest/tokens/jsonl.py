"""JSON Lines into the token frame: the fast reading (Spark's JSON parser) every line goes
through, and the exact reading (VARIANT) of the lines the fast path does not accept."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from ... import sqlexpr as S
from ...adapters.writer import written_by_adapter
from ...schemas import FIELDS, Field
from ...sqlexpr import X
from .columns import INTEGER_KINDS, known_kind, quoted, token_columns
from .text import shown_line, text_lines, unusable

_ADAPTER_FIELDS = ("__file", "__line", "__raw", "__error")


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
    return jsonl_tokens(text_lines(spark, files), source, adapter_output(files))


def adapter_output(files: list[str]) -> bool:
    """Every file was written by an adapter in this process (:func:`read_jsonl`)."""
    return bool(files) and all(written_by_adapter(f) for f in files)


def jsonl_tokens(lines: DataFrame, source: str, from_adapter: bool,
                 keep_line: bool = False) -> DataFrame:
    """Lines (tokens.text.text_lines' columns) parsed as :func:`read_jsonl` describes;
    ``keep_line``: the line as read (``value``) kept too."""
    fields = FIELDS[source]
    ddl = [f"{quoted(f.name)} {_json_type(f)}" for f in fields]
    if from_adapter:
        ddl += [f"{quoted(n)} STRING" for n in _ADAPTER_FIELDS]
    ddl.append("`_corrupt` STRING")
    options = ("map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt', "
               "'allowSingleQuotes', 'false', 'allowNonNumericNumbers', 'false')")
    line = ["value"] if keep_line else []
    # a line over the size limit or not UTF-8 is not parsed at all (its reason in _lerr)
    lined = S.select(lines, "_file", "_block", "_pos", "_text", *line,
                     unusable(S.col("value"), "line").alias("_lerr"))
    parsed = S.select(lined, "_file", "_block", "_pos", "_text", *line, "_lerr", S.raw(
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
    adapter_error = j("__error") if from_adapter else S.lit(None).cast("string")
    lerr = S.col("_lerr")
    err = (S.when(lerr.isNotNull(), lerr)
           .when(failed | ~flat, S.lit("rejected by the fast reader")).otherwise(adapter_error))
    cols: list[X] = []
    for f in fields:
        v = j(f.name)
        if f.kind in INTEGER_KINDS:
            cols += token_columns(f, known_kind(v, "int"), {"__i": v})
        elif f.kind == "bool":
            cols += token_columns(f, known_kind(v, "bool"), {"__b": v})
        else:
            cols += token_columns(f, known_kind(v, "jtext"), {"__s": v})
    position: list[str | X] = ["_file", "_block", "_pos"]
    if from_adapter:
        position = [
            S.when(adapted, j("__file")).otherwise(S.col("_file")).alias("_file"),
            S.when(adapted, S.lit(-1).cast("bigint")).otherwise(S.col("_block")).alias("_block"),
            S.when(adapted, origin_line - 1).otherwise(S.col("_pos")).alias("_pos")]
    shown = shown_line(S.col("_text"), lerr)
    return S.select(
        parsed, *position, *line,
        S.when(failed & lerr.isNull(), S.col("_text").rlike(r"^[ \t]*$"))
        .otherwise(S.lit(False)).alias("_blank"),
        (S.coalesce(j("__raw"), shown) if from_adapter else shown).alias("_raw"),
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


def _variant_kind(type_col: X) -> X:
    return (
        S.when(type_col.isNull() | (type_col == S.lit("VOID")), S.lit("null"))
        .when(type_col == S.lit("STRING"), S.lit("string"))
        .when(type_col.isin("BIGINT", "INT", "SMALLINT", "TINYINT"), S.lit("int"))
        .when(type_col.startswith("DECIMAL") | type_col.isin("DOUBLE", "FLOAT"), S.lit("number"))
        .when(type_col == S.lit("BOOLEAN"), S.lit("bool"))
        .otherwise(S.lit("other"))
    )


def exact_variant(df: DataFrame, source: str) -> DataFrame:
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
