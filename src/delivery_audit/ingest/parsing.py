"""The contract's parsing rules (§8 rules 1–4) as Spark column expressions.

``parse_tokens`` turns a token frame into typed canonical columns plus
``_reason``: null for a valid row, else every problem found, joined by "; ".
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..schemas import FIELDS, Field

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
# epoch ms beyond year 9999 (or before year 1) cannot be a Spark timestamp
_MS_MIN, _MS_MAX = -62_135_596_800_000, 253_402_300_799_999
_DIGITS = r"^[0-9]+$"
_INTEGRAL_NUMBER = r"^-?[0-9]+(\.0+)?$"


def _shown(text: Column) -> Column:
    """A value as quoted in a reason: at most 40 characters."""
    return F.concat(
        F.lit("'"),
        F.substring(text, 1, 40),
        F.when(F.length(text) > 40, F.lit("…")).otherwise(F.lit("")),
        F.lit("'"),
    )


def _integer(kind: Column, text: Column) -> tuple[Column, Column]:
    """(value as long, problem) for an integer field: a JSON integer, an integral
    number, or an all-digit string."""
    integral = F.regexp_extract(text, r"^(-?[0-9]+)(\.0+)?$", 1)
    value = (
        F.when(kind == "int", text.try_cast("long"))
        .when((kind == "number") & text.rlike(_INTEGRAL_NUMBER), integral.try_cast("long"))
        .when((kind == "string") & text.rlike(_DIGITS), text.try_cast("long"))
    )
    problem = (
        F.when(kind.isin("bool", "other", "timestamp"),
               F.concat(F.lit("wrong type ("), kind, F.lit(")")))
        .when((kind == "number") & ~text.rlike(_INTEGRAL_NUMBER),
              F.concat(F.lit("not an integer "), _shown(text)))
        .when((kind == "string") & ~text.rlike(_DIGITS),
              F.concat(F.lit("not an integer "), _shown(text)))
        .when(value.isNull(), F.concat(F.lit("integer out of range "), _shown(text)))
    )
    return value, problem


def _timestamp(kind: Column, text: Column) -> tuple[Column, Column]:
    """Epoch milliseconds (integer or all-digit string) or ISO-8601 text."""
    ms_text = F.when(kind == "int", text).when(
        (kind == "number") & text.rlike(_INTEGRAL_NUMBER),
        F.regexp_extract(text, r"^(-?[0-9]+)", 1),
    ).when((kind == "string") & text.rlike(_DIGITS), text)
    ms = ms_text.try_cast("long")
    ms_ok = ms.between(F.lit(_MS_MIN), F.lit(_MS_MAX))
    iso = F.when(kind.isin("string", "timestamp") & ms_text.isNull(), text.try_cast("timestamp"))
    value = F.when(ms_ok, F.timestamp_millis(F.when(ms_ok, ms))).otherwise(iso)
    problem = (
        F.when(kind.isin("bool", "other"), F.concat(F.lit("wrong type ("), kind, F.lit(")")))
        .when(ms_text.isNotNull() & ~F.coalesce(ms_ok, F.lit(False)),
              F.concat(F.lit("epoch ms out of range "), _shown(text)))
        .when((kind == "number") & ms_text.isNull(),
              F.concat(F.lit("not a timestamp "), _shown(text)))
        .when(value.isNull(), F.concat(F.lit("not a timestamp "), _shown(text)))
    )
    return value, problem


def _string(kind: Column, text: Column, allow_int: bool = True) -> tuple[Column, Column]:
    ok = (kind == "string") | ((kind == "int") if allow_int else F.lit(False))
    value = F.when(ok, text)
    problem = F.when(~ok, F.concat(F.lit("wrong type ("), kind, F.lit(")")))
    return value, problem


def _enum(kind: Column, text: Column, allowed: tuple[str, ...]) -> tuple[Column, Column]:
    lowered = F.lower(text)
    value = F.when((kind == "string") & lowered.isin(*allowed), lowered)
    problem = (
        F.when(kind != "string", F.concat(F.lit("wrong type ("), kind, F.lit(")")))
        .when(value.isNull(), F.concat(F.lit("not one of " + "/".join(allowed) + ": "),
                                       _shown(text)))
    )
    return value, problem


def _bool(kind: Column, text: Column) -> tuple[Column, Column]:
    lowered = F.lower(text)
    ok = kind.isin("bool", "string") & lowered.isin("true", "false")
    value = F.when(ok, lowered == "true")
    problem = F.when(~ok, F.concat(F.lit("not a boolean "), _shown(text)))
    return value, problem


def parse_field(f: Field) -> tuple[Column, Column]:
    """(typed value, reason or null) for one canonical field."""
    kind, text = F.col(f"{f.name}__k"), F.col(f"{f.name}__s")
    missing = (kind == "null") | ((kind == "string") & (text == ""))
    if f.kind in ("long", "nonneg_long", "int", "nonneg_int"):
        value, problem = _integer(kind, text)
        if f.kind.startswith("nonneg"):
            problem = F.coalesce(problem, F.when(value < 0, F.concat(
                F.lit("negative "), _shown(text))))
        if f.kind.endswith("int"):
            problem = F.coalesce(problem, F.when(~value.between(_INT_MIN, _INT_MAX), F.concat(
                F.lit("integer out of range "), _shown(text))))
            value = F.when(value.between(_INT_MIN, _INT_MAX), value).cast("int")
    elif f.kind == "timestamp":
        value, problem = _timestamp(kind, text)
    elif f.kind == "enum":
        value, problem = _enum(kind, text, f.allowed)
    elif f.kind == "bool":
        value, problem = _bool(kind, text)
    else:  # string, key
        value, problem = _string(kind, text)
    reason = (
        F.when(missing & F.lit(f.required), F.lit(f"missing required field '{f.name}'"))
        .when(~missing & problem.isNotNull(),
              F.concat(F.lit(f"field '{f.name}': "), problem))
    )
    typed = F.when(~missing & problem.isNull(), value).cast(f.spark_type)
    return typed, reason


def _source_rules(source: str) -> list[Column]:
    """Cross-field rules (rule 3)."""
    if source == "sends":
        return [F.when((F.col("status") == "acked")
                       & (F.col("partition").isNull() | F.col("offset").isNull()),
                       F.lit("acked send without partition/offset"))]
    return []


def parse_tokens(tokens: DataFrame, source: str) -> DataFrame:
    """Token frame → canonical typed columns + position columns + _raw + _reason."""
    typed, reasons = [], [F.col("_err")]
    for f in FIELDS[source]:
        value, reason = parse_field(f)
        typed.append(value.alias(f.name))
        reasons.append(reason)
    stage = tokens.select("_file", "_block", "_pos", "_raw", *typed,
                          F.concat_ws("; ", *reasons).alias("_r1"), F.col("_err"))
    # a row that is not a JSON object has no fields to complain about
    rule_reasons = [F.col("_r1"), *_source_rules(source)]
    reason = F.when(F.col("_err").isNotNull(), F.col("_err")).otherwise(
        F.concat_ws("; ", *rule_reasons))
    return stage.select(
        "_file", "_block", "_pos", "_raw", *[f.name for f in FIELDS[source]],
        F.when(reason != "", reason).alias("_reason"),
    )
