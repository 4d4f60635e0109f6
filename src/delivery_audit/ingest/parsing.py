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


def in_years_1_to_9999(ts: X) -> X:
    """The timestamp itself when it lies in years 0001–9999 (UTC), else null. Spark's
    cast takes ISO text of year 0, negative years and years past 9999 ("+10000-…"); the
    same bound as epoch ms applies to them (a Python datetime cannot hold them either)."""
    return S.when(ts.between(S.fn("timestamp_micros", S.lit(_MS_MIN * 1000)),
                             S.fn("timestamp_micros", S.lit(_MS_MAX * 1000 + 999))), ts)


# ISO-8601 (rule 1): a date, a time and an offset, each optional after the date; a sign and
# more year digits are read too, so that such a year is "out of range", not "not a
# timestamp". Spark's cast alone takes more (zone names such as "PST", "Europe/Berlin"):
# those are not ISO-8601 and quarantine the row.
ISO_8601 = (r"^[+-]?[0-9]{4,}-[0-9]{2}-[0-9]{2}"
            r"([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?)?"
            r"([Zz]|[+-][0-9]{2}(:?[0-9]{2}(:?[0-9]{2})?)?)?$")


def _iso_text(kind: X, text: X) -> X:
    """A timestamp's text is ISO-8601 (a native timestamp renders as such)."""
    return (kind == "timestamp") | ((kind == "string") & text.rlike(ISO_8601))


def _timestamp_value(kind: X, text: X, ms_text: X) -> X:
    """Epoch milliseconds (integer or all-digit string) or ISO-8601 text."""
    ms = ms_text.try_cast("long")
    ms_ok = ms.between(S.lit(_MS_MIN), S.lit(_MS_MAX))
    iso = S.when(_iso_text(kind, text) & ms_text.isNull(),
                 in_years_1_to_9999(text.try_cast("timestamp")))
    return S.when(ms_ok, S.fn("timestamp_millis", S.when(ms_ok, ms))).otherwise(iso)


def _timestamp_problem(kind: X, text: X, ms_text: X, value: X) -> X:
    return (
        S.when(kind.isin("bool", "other"), S.concat(S.lit("wrong type ("), kind, S.lit(")")))
        .when(ms_text.isNotNull() & value.isNull(),
              S.concat(S.lit("epoch ms out of range "), _shown(text)))
        .when(value.isNull() & _iso_text(kind, text) & text.try_cast("timestamp").isNotNull(),
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
    """Cross-field rules (rule 3; rule 20: a transaction's rows need their pid)."""
    if source == "sends":
        return [S.when((S.col("status") == "acked")
                       & (S.col("partition").isNull() | S.col("offset").isNull()),
                       S.lit("acked send without partition/offset"))]
    if source == "broker":
        no_pid = S.col("pid").isNull()
        return [S.when(S.col("control").isNotNull() & no_pid,
                       S.lit("control row without pid")),
                S.when(S.col("control").isNull() & S.coalesce(S.col("transactional"),
                                                               S.lit(False)) & no_pid,
                       S.lit("transactional row without pid"))]
    return []


# -- the fast path ---------------------------------------------------------------------
# Most rows are plainly valid: integers as JSON or Parquet integers or digits, timestamps as
# Parquet timestamps, epoch-ms integers or digits, or ISO text starting with a year, strings
# that cannot be mistaken for another JSON kind. For those the typed value is read straight
# from the value as read (its native type, or its text); every other row goes through the
# strict rules above, which decide it. The fast path only ever accepts a value the strict
# rules accept with the same typed value (tests/fuzz/test_fast_path.py checks the two agree on
# hostile rows).

_PLAIN_DIGITS = r"^[0-9]{1,18}$"
# the first characters of text a non-string JSON value renders as (a number, an object, an
# array), and a quote
_OTHER_KIND_START = ("-", *"0123456789", '"', "{", "[")
_TEXT_KINDS = ("string", "jtext")  # jtext: JSON Lines' fast reading (tokens/jsonl.py)


def int_range(f: Field, value: X) -> X:
    """The strict rules' range checks of an integer (rule 3, int and offset bounds)."""
    ok = S.lit(True)
    if f.kind.startswith("nonneg"):
        ok = ok & (value >= 0)
    if f.kind.endswith("int"):
        ok = ok & value.between(_INT_MIN, _INT_MAX)
    if f.kind == "nonneg_long":
        ok = ok & (value <= _OFFSET_MAX)
    return ok


def _fast_value(f: Field, kind: X, cols: dict[str, X]) -> X:
    """A present value's typed value when it is plainly valid, else null (→ the strict
    path). ``cols``: the field's value columns in the token frame, by suffix (a kind
    whose column is absent cannot occur)."""
    branches: list[tuple[X, X]] = []
    text = cols.get("__s")
    textual = kind.isin(*_TEXT_KINDS)
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        if "__i" in cols:
            branches.append(((kind == "int") & int_range(f, cols["__i"]), cols["__i"]))
        if text is not None:
            digits = text.rlike(_PLAIN_DIGITS)
            if f.kind.endswith("int"):
                digits = digits & (S.fn("length", text) < 10)
            branches.append((textual & digits, text.try_cast("long")))
    elif f.kind == "timestamp":
        if "__t" in cols:
            branches.append((kind == "timestamp", in_years_1_to_9999(cols["__t"])))
        if "__i" in cols:
            ms = cols["__i"]
            branches.append(((kind == "int") & ms.between(0, 99_999_999_999_999),
                             S.fn("timestamp_millis", ms)))
        if text is not None:
            digits = text.rlike(_PLAIN_DIGITS) & (S.fn("length", text) < 15)  # < _MS_MAX
            branches += [
                (textual & digits, S.fn("timestamp_millis", text.try_cast("long"))),
                (textual & text.rlike(ISO_8601),
                 in_years_1_to_9999(text.try_cast("timestamp")))]
    elif f.kind == "enum":
        if text is not None:
            lowered = S.fn("lower", text)
            branches += [(textual & text.isin(*f.allowed), text),
                         (textual & lowered.isin(*f.allowed), lowered)]
    elif f.kind == "bool":
        if "__b" in cols:
            branches.append((kind == "bool", cols["__b"]))
        if text is not None:
            lowered = S.fn("lower", text)
            branches.append(((kind == "string") & lowered.isin("true", "false"),
                             lowered == "true"))
    else:  # string, key: any text of kind string; JSON text unless it reads as another
        # kind (digits are a JSON integer's text, which these fields take as it is)
        if text is not None:
            other = (S.fn("substr", text, 1, 1).isin(*_OTHER_KIND_START)
                     | text.isin("true", "false"))
            branches += [(kind == "string", text),
                         ((kind == "jtext") & (~other | text.rlike(_PLAIN_DIGITS)), text)]
        if "__i" in cols:
            branches.append((kind == "int", cols["__i"].cast("string")))
    if not branches:
        return S.lit(None)
    out = S.when(*branches[0])
    for cond, value in branches[1:]:
        out = out.when(cond, value)
    return out


def _missing(kind: X, text: X | None) -> X:
    """Rule 3's "missing": null, or an empty string (the strict and the fast path)."""
    if text is None:
        return kind == "null"
    return (kind == "null") | (kind.isin(*_TEXT_KINDS) & (text == ""))


def _value_columns(f: Field, columns: list[str]) -> dict[str, X]:
    return {x: S.col(f"{f.name}{x}") for x in ("__i", "__t", "__b", "__s")
            if f"{f.name}{x}" in columns}


def _fast_typed(f: Field, columns: list[str]) -> X:
    """A field's value typed from the value as read when it is plainly valid; null when it
    is not, or missing."""
    k, cols = S.col(f"{f.name}__k"), _value_columns(f, columns)
    return S.when(~_missing(k, cols.get("__s")), _fast_value(f, k, cols)).cast(f.spark_type)


def fast_accepted(tokens: DataFrame, source: str) -> DataFrame:
    """Add each field's plainly valid value ``<field>__f`` (each computed once: the flag
    tests it for null) and ``_fast``: the row is plainly valid, and these values are its
    typed fields (:func:`fast_parse`)."""
    fields = FIELDS[source]
    columns = tokens.columns
    valued = S.select(tokens, "*",
                      *[_fast_typed(f, columns).alias(f"{f.name}__f") for f in fields])
    conds = [S.col("_err").isNull()]
    for f in fields:
        k, text = S.col(f"{f.name}__k"), _value_columns(f, columns).get("__s")
        conds.append(S.when(~_missing(k, text), S.col(f"{f.name}__f").isNotNull())
                     .otherwise(S.lit(not f.required)))
    if source == "sends":  # rule 3, as in _source_rules
        conds.append((S.col("status__f") != "acked")
                     | (S.col("partition__f").isNotNull() & S.col("offset__f").isNotNull()))
    if source == "broker":  # rule 20, as in _source_rules
        conds.append(S.col("pid__f").isNotNull()
                     | (S.col("control__f").isNull()
                        & ~S.coalesce(S.col("transactional__f"), S.lit(False))))
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


def parse_tokens(tokens: DataFrame, source: str, carry: tuple[str, ...] = (),
                 skip: str | None = None) -> DataFrame:
    """Token frame → canonical typed columns + position columns + _raw + _reason
    (+ the ``carry`` columns, passed through untouched).

    Three projections (value, then problem, then typed value and reason) keep each
    generated method small: one nested expression per field would repeat every
    sub-expression and outgrow the JVM's method size limit. ``skip``: a boolean column
    naming rows whose result is not needed (typed_rows' plainly valid rows): every step
    is one test of it for them, and their output is null.
    """
    fields = FIELDS[source]

    def g(x: X) -> X:
        return S.when(~S.col(skip), x) if skip else x

    keep = ["_file", "_block", "_pos", "_raw", "_err", *carry]

    def k(f: Field) -> X:
        return S.col(f"{f.name}__k")

    def t(f: Field) -> X:
        return S.col(f"{f.name}__s")

    aux = [g(_epoch_ms_text(k(f), t(f))).alias(f"{f.name}__a") for f in fields
           if f.kind == "timestamp"]
    step0 = S.select(tokens, *keep, *[c for f in fields for c in (k(f), t(f))], *aux)

    def a(f: Field) -> X | None:
        return S.col(f"{f.name}__a") if f.kind == "timestamp" else None

    step1 = S.select(step0, "*", *[g(_value(f, k(f), t(f), a(f))).alias(f"{f.name}__v")
                                for f in fields])
    step2 = S.select(step1,
        *keep,
        *[S.col(f"{f.name}__v") for f in fields],
        *[g(_missing(k(f), t(f))).alias(f"{f.name}__m") for f in fields],
        *[g(_problem(f, k(f), t(f), a(f), S.col(f"{f.name}__v"))).alias(f"{f.name}__p")
          for f in fields],
    )
    typed, reasons = [], [S.col("_err")]
    for f in fields:
        m, p, v = S.col(f"{f.name}__m"), S.col(f"{f.name}__p"), S.col(f"{f.name}__v")
        typed.append(S.when(~m & p.isNull(), v).cast(f.spark_type).alias(f.name))
        reasons.append(
            S.when(m & S.lit(f.required), S.lit(f"missing required field '{f.name}'"))
            .when(~m & p.isNotNull(), S.concat(S.lit(f"field '{f.name}': "), p)))
    stage = S.select(step2, *keep, *typed, g(S.concat_ws("; ", *reasons)).alias("_r1"))
    # a row that is not a JSON object has no fields to complain about
    reason = S.when(S.col("_err").isNotNull(), S.col("_err")).otherwise(
        S.concat_ws("; ", S.col("_r1"), *_source_rules(source)))
    return S.select(stage,
        "_file", "_block", "_pos", "_raw", *carry, *[f.name for f in fields],
        g(S.when(reason != "", reason)).alias("_reason"),
    )


def typed_rows(tokens: DataFrame, source: str, exact) -> DataFrame:
    """One projection chain from tokens to typed rows: each field typed from its text when
    the row is plainly valid (``_fast``), by the strict rules otherwise, as one CASE per
    field: no second scan, no union of two branches.

    ``exact(df)`` gives the strict path its exact kinds (VARIANT for JSON lines), computed
    only for rows that are not plainly valid; for plain rows every step of the strict path
    is one test of ``_fast`` (parse_tokens' ``skip``).
    Columns out: ``_file, _block, _pos, _blank, _raw``, the typed fields, ``_reason``.
    """
    fields = FIELDS[source]
    flagged = fast_accepted(tokens, source)
    carried = ("_fast", "_blank", *[f"{f.name}__f" for f in fields])
    strict = parse_tokens(exact(flagged), source, carry=carried, skip="_fast")
    fast = S.col("_fast")
    return S.select(strict,
        "_file", "_block", "_pos", "_blank", "_raw",
        *[S.when(fast, S.col(f"{f.name}__f")).otherwise(S.col(f.name)).alias(f.name)
          for f in fields],
        S.when(~fast, S.col("_reason")).alias("_reason"),
    )
