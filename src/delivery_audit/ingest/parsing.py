"""The contract's parsing rules (§8 rules 1–4) as Spark column expressions.

``parse_tokens`` turns a token frame into typed canonical columns plus
``_reason``: null for a valid row, else every problem found, joined by "; ".
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..schemas import FIELDS, Field
from ..sqlexpr import X

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# Offsets (the nonneg_long fields) stop one short of the long range: a log's end offset
# (last offset + 1) must be a long too, so Kafka never writes 2^63 − 1, and the auditor
# computes that end offset (an offset of 2^63 − 1 overflowed it and stopped the run)
_OFFSET_MAX = 2**63 - 2
# epoch ms beyond year 9999 (or before year 1) cannot be a Spark timestamp
_MS_MIN, _MS_MAX = -62_135_596_800_000, 253_402_300_799_999
_DIGITS = r"^[0-9]+$"
_INTEGRAL_NUMBER = r"^-?[0-9]+(\.0+)?$"


def _shown(text: X) -> X:
    """A value as quoted in a reason: at most 40 characters."""
    return S.concat(
        S.lit("'"),
        S.fn("substring", text, 1, 40),
        S.when(S.fn("length", text) > 40, S.lit("…")).otherwise(S.lit("")),
        S.lit("'"),
    )


def _integer_value(kind: X, text: X) -> X:
    """A JSON integer, an integral number, or an all-digit string, as a long."""
    integral = S.fn("regexp_extract", text, r"^(-?[0-9]+)(\.0+)?$", 1)
    return (
        S.when(kind == "int", text.try_cast("long"))
        .when((kind == "number") & text.rlike(_INTEGRAL_NUMBER), integral.try_cast("long"))
        .when((kind == "string") & text.rlike(_DIGITS), text.try_cast("long"))
    )


def _integer_problem(kind: X, text: X, value: X) -> X:
    return (
        S.when(kind.isin("bool", "other", "timestamp"),
               S.concat(S.lit("wrong type ("), kind, S.lit(")")))
        .when(((kind == "number") & ~text.rlike(_INTEGRAL_NUMBER))
              | ((kind == "string") & ~text.rlike(_DIGITS)),
              S.concat(S.lit("not an integer "), _shown(text)))
        .when(value.isNull(), S.concat(S.lit("integer out of range "), _shown(text)))
    )


def _epoch_ms_text(kind: X, text: X) -> X:
    return (
        S.when(kind == "int", text)
        .when((kind == "number") & text.rlike(_INTEGRAL_NUMBER),
              S.fn("regexp_extract", text, r"^(-?[0-9]+)", 1))
        .when((kind == "string") & text.rlike(_DIGITS), text)
    )


def _in_years_1_to_9999(ts: X) -> X:
    """The timestamp itself when it lies in years 0001–9999 (UTC), else null. Spark's
    cast takes ISO text of year 0, negative years and years past 9999 ("+10000-…"); the
    same bound as epoch ms applies to them (a Python datetime cannot hold them either)."""
    return S.when(ts.between(S.fn("timestamp_micros", S.lit(_MS_MIN * 1000)),
                             S.fn("timestamp_micros", S.lit(_MS_MAX * 1000 + 999))), ts)


def _timestamp_value(kind: X, text: X, ms_text: X) -> X:
    """Epoch milliseconds (integer or all-digit string) or ISO-8601 text."""
    ms = ms_text.try_cast("long")
    ms_ok = ms.between(S.lit(_MS_MIN), S.lit(_MS_MAX))
    iso = S.when(kind.isin("string", "timestamp") & ms_text.isNull(),
                 _in_years_1_to_9999(text.try_cast("timestamp")))
    return S.when(ms_ok, S.fn("timestamp_millis", S.when(ms_ok, ms))).otherwise(iso)


def _timestamp_problem(kind: X, text: X, ms_text: X, value: X) -> X:
    return (
        S.when(kind.isin("bool", "other"), S.concat(S.lit("wrong type ("), kind, S.lit(")")))
        .when(ms_text.isNotNull() & value.isNull(),
              S.concat(S.lit("epoch ms out of range "), _shown(text)))
        .when(value.isNull() & kind.isin("string", "timestamp")
              & text.try_cast("timestamp").isNotNull(),
              S.concat(S.lit("timestamp out of range (years 1-9999) "), _shown(text)))
        .when(value.isNull(), S.concat(S.lit("not a timestamp "), _shown(text)))
    )


def _value(f: Field, kind: X, text: X, aux: X | None) -> X:
    """Step 1: the candidate value (null when it cannot be had)."""
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        return _integer_value(kind, text)
    if f.kind == "timestamp":
        return _timestamp_value(kind, text, aux)
    if f.kind == "enum":
        lowered = S.fn("lower", text)
        return S.when((kind == "string") & lowered.isin(*f.allowed), lowered)
    if f.kind == "bool":
        lowered = S.fn("lower", text)
        return S.when(kind.isin("bool", "string") & lowered.isin("true", "false"),
                      lowered == "true")
    return S.when(kind.isin("string", "int"), text)  # string, key: an integer is its text


def _problem(f: Field, kind: X, text: X, aux: X | None,
             value: X) -> X:
    """Step 2: what is wrong with a present value, or null."""
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        problem = _integer_problem(kind, text, value)
        if f.kind.startswith("nonneg"):
            problem = S.coalesce(problem, S.when(value < 0, S.concat(
                S.lit("negative "), _shown(text))))
        if f.kind.endswith("int"):
            problem = S.coalesce(problem, S.when(~value.between(_INT_MIN, _INT_MAX), S.concat(
                S.lit("integer out of range "), _shown(text))))
        if f.kind == "nonneg_long":
            problem = S.coalesce(problem, S.when(value > _OFFSET_MAX, S.concat(
                S.lit("offset out of range "), _shown(text))))
        return problem
    if f.kind == "timestamp":
        return _timestamp_problem(kind, text, aux, value)
    if f.kind == "enum":
        return (S.when(kind != "string", S.concat(S.lit("wrong type ("), kind, S.lit(")")))
                .when(value.isNull(), S.concat(
                    S.lit("not one of " + "/".join(f.allowed) + ": "), _shown(text))))
    if f.kind == "bool":
        return S.when(value.isNull(), S.concat(S.lit("not a boolean "), _shown(text)))
    return S.when(value.isNull(), S.concat(S.lit("wrong type ("), kind, S.lit(")")))


def _source_rules(source: str) -> list[X]:
    """Cross-field rules (rule 3)."""
    if source == "sends":
        return [S.when((S.col("status") == "acked")
                       & (S.col("partition").isNull() | S.col("offset").isNull()),
                       S.lit("acked send without partition/offset"))]
    return []


# -- the fast path ---------------------------------------------------------------------
# Most rows are plainly valid: integers as digits, timestamps as epoch-ms digits or ISO
# text starting with a year, strings that cannot be mistaken for another JSON kind. For
# those the typed value is read straight from the value's text (whatever its JSON kind);
# every other row goes through the strict rules above, which decide it. The fast path
# only ever accepts a value the strict rules accept with the same typed value
# (tests/test_fast_path.py checks the two agree on hostile rows).

_PLAIN_DIGITS = r"^[0-9]{1,18}$"
_ISO_START = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ]"
# text a non-string JSON value can render as: a number (also "Infinity" quoted),
# a boolean, an object or an array
_OTHER_KIND_TEXT = r'^[-0-9"{\[]|^(true|false)$'
# The kinds the fast path looks at, per field kind. The JSON fast reader and CSV give
# every present value the kind "string" (the text rules above then tell a JSON number
# from a string); Parquet gives the column's own kind, and a value of any other kind
# goes to the strict path: a double NaN renders as "NaN", which the text rules would
# take for a string.
_FAST_KINDS = {
    "long": ("string", "int"), "nonneg_long": ("string", "int"),
    "int": ("string", "int"), "nonneg_int": ("string", "int"),
    "timestamp": ("string", "int", "timestamp"),
    "enum": ("string",),
    "bool": ("string", "bool"),
    "string": ("string", "int"), "key": ("string", "int"),
}


def _fast_value(f: Field, kind: X, text: X) -> tuple[X, X]:
    """(accepted, value) for a present value; not accepted, or a null value → the strict
    path."""
    kind_ok = kind.isin(*_FAST_KINDS[f.kind])
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        ok = text.rlike(_PLAIN_DIGITS)
        value = text.try_cast("long")
        if f.kind.endswith("int"):
            ok = ok & (S.fn("length", text) < 10)
        return kind_ok & ok, value
    if f.kind == "timestamp":
        digits = text.rlike(_PLAIN_DIGITS)
        iso = S.when(~digits & text.rlike(_ISO_START),
                     _in_years_1_to_9999(text.try_cast("timestamp")))
        ms_ok = digits & (S.fn("length", text) < 15)  # below _MS_MAX
        value = S.when(ms_ok, S.fn("timestamp_millis", S.when(ms_ok, text.try_cast("long")))) \
            .otherwise(iso)
        return kind_ok, value  # accepted when the value is not null
    if f.kind == "enum":
        lowered = S.fn("lower", text)
        ok = lowered.isin(*f.allowed)
        return kind_ok & ok, lowered
    if f.kind == "bool":
        lowered = S.fn("lower", text)
        return kind_ok & lowered.isin("true", "false"), lowered == "true"
    ok = ~text.rlike(_OTHER_KIND_TEXT) | text.rlike(_PLAIN_DIGITS)  # string, key
    return kind_ok & ok, text


def _missing(kind: X, text: X) -> X:
    """Rule 3's "missing": null, or an empty string (the strict and the fast path)."""
    return (kind == "null") | ((kind == "string") & (text == ""))


def _fast_typed(f: Field) -> X:
    """A field's value typed from its text when it is plainly valid; null when it is not,
    or missing."""
    k, t = S.col(f"{f.name}__k"), S.col(f"{f.name}__s")
    accepted, value = _fast_value(f, k, t)
    return S.when(~_missing(k, t) & accepted, value).cast(f.spark_type)


def fast_accepted(tokens: DataFrame, source: str) -> DataFrame:
    """Add each field's plainly valid value ``<field>__f`` (each computed once: the flag
    tests it for null) and ``_fast``: the row is plainly valid, and these values are its
    typed fields (:func:`fast_parse`)."""
    fields = FIELDS[source]
    valued = S.select(tokens, "*", *[_fast_typed(f).alias(f"{f.name}__f") for f in fields])
    conds = [S.col("_err").isNull()]
    for f in fields:
        k, t = S.col(f"{f.name}__k"), S.col(f"{f.name}__s")
        conds.append(S.when(~_missing(k, t), S.col(f"{f.name}__f").isNotNull())
                     .otherwise(S.lit(not f.required)))
    if source == "sends":  # rule 3, as in _source_rules
        present = {n: ~_missing(S.col(f"{n}__k"), S.col(f"{n}__s"))
                   for n in ("status", "partition", "offset")}
        conds.append((S.fn("lower", S.col("status__s")) != "acked")
                     | (present["partition"] & present["offset"]))
    ok = conds[0]
    for c in conds[1:]:
        ok = ok & S.coalesce(c, S.lit(False))
    return S.select(valued, "*", ok.alias("_fast"))


def fast_parse(flagged: DataFrame, source: str) -> DataFrame:
    """Rows of :func:`fast_accepted` with ``_fast`` → the same columns as
    :func:`parse_tokens` (``_reason`` null)."""
    typed = [S.col(f"{f.name}__f").alias(f.name) for f in FIELDS[source]]
    return S.select(flagged, "_file", "_block", "_pos", "_raw", *typed,
                    S.lit(None).cast("string").alias("_reason"))


def parse_tokens(tokens: DataFrame, source: str, carry: tuple[str, ...] = ()) -> DataFrame:
    """Token frame → canonical typed columns + position columns + _raw + _reason
    (+ the ``carry`` columns, passed through untouched).

    Three projections (value, then problem, then typed value and reason) keep each
    generated method small: one nested expression per field would repeat every
    sub-expression and outgrow the JVM's method size limit.
    """
    fields = FIELDS[source]
    keep = ["_file", "_block", "_pos", "_raw", "_err", *carry]

    def k(f: Field) -> X:
        return S.col(f"{f.name}__k")

    def t(f: Field) -> X:
        return S.col(f"{f.name}__s")

    aux = [_epoch_ms_text(k(f), t(f)).alias(f"{f.name}__a") for f in fields
           if f.kind == "timestamp"]
    step0 = S.select(tokens, *keep, *[c for f in fields for c in (k(f), t(f))], *aux)

    def a(f: Field) -> X | None:
        return S.col(f"{f.name}__a") if f.kind == "timestamp" else None

    step1 = S.select(step0, "*", *[_value(f, k(f), t(f), a(f)).alias(f"{f.name}__v")
                                for f in fields])
    step2 = S.select(step1,
        *keep,
        *[S.col(f"{f.name}__v") for f in fields],
        *[_missing(k(f), t(f)).alias(f"{f.name}__m") for f in fields],
        *[_problem(f, k(f), t(f), a(f), S.col(f"{f.name}__v")).alias(f"{f.name}__p")
          for f in fields],
    )
    typed, reasons = [], [S.col("_err")]
    for f in fields:
        m, p, v = S.col(f"{f.name}__m"), S.col(f"{f.name}__p"), S.col(f"{f.name}__v")
        typed.append(S.when(~m & p.isNull(), v).cast(f.spark_type).alias(f.name))
        reasons.append(
            S.when(m & S.lit(f.required), S.lit(f"missing required field '{f.name}'"))
            .when(~m & p.isNotNull(), S.concat(S.lit(f"field '{f.name}': "), p)))
    stage = S.select(step2, *keep, *typed, S.concat_ws("; ", *reasons).alias("_r1"))
    # a row that is not a JSON object has no fields to complain about
    reason = S.when(S.col("_err").isNotNull(), S.col("_err")).otherwise(
        S.concat_ws("; ", S.col("_r1"), *_source_rules(source)))
    return S.select(stage,
        "_file", "_block", "_pos", "_raw", *carry, *[f.name for f in fields],
        S.when(reason != "", reason).alias("_reason"),
    )


def typed_rows(tokens: DataFrame, source: str, exact) -> DataFrame:
    """One projection chain from tokens to typed rows: each field typed from its text when
    the row is plainly valid (``_fast``), by the strict rules otherwise, as one CASE per
    field: no second scan, no union of two branches.

    ``exact(df)`` gives the strict path its exact kinds (VARIANT for JSON lines), computed
    only for rows that are not plainly valid; for plain rows the strict path sees every
    field as missing (cheap: its tests short-circuit on the kind) and its result is unused.
    Columns out: ``_file, _block, _pos, _blank, _raw``, the typed fields, ``_reason``.
    """
    fields = FIELDS[source]
    flagged = fast_accepted(tokens, source)
    carried = ("_fast", "_blank", *[f"{f.name}__f" for f in fields])
    strict = parse_tokens(exact(flagged), source, carry=carried)
    fast = S.col("_fast")
    return S.select(strict,
        "_file", "_block", "_pos", "_blank", "_raw",
        *[S.when(fast, S.col(f"{f.name}__f")).otherwise(S.col(f.name)).alias(f.name)
          for f in fields],
        S.when(~fast, S.col("_reason")).alias("_reason"),
    )
