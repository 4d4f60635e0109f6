"""Anomaly rows: every detection rule emits rows of one schema (schemas.ANOMALY_SCHEMA)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..anomalies import BY_NAME
from ..schemas import ANOMALY_SCHEMA


def anomaly_rows(df: DataFrame, anomaly: str, **columns: Column | str | int | None) -> DataFrame:
    """Select ``df`` into the anomaly table's schema; unnamed evidence columns are null.
    Literals and named columns go to Spark as SQL text (one call per column instead of
    four: plan building is py4j round trips in a classic session)."""
    spec = BY_NAME[anomaly]
    given = {"units": 1, "anomaly": anomaly, "severity": spec.severity, **columns}
    out: list[Column] = []
    for field in ANOMALY_SCHEMA.fields:
        value = given.get(field.name)
        target = field.dataType.simpleString()
        if isinstance(value, Column):
            out.append(value.cast(field.dataType).alias(field.name))
            continue
        text = S.col(value) if isinstance(value, str) and field.name not in (
            "anomaly", "severity") else S.lit(value)
        out.append(F.expr(text.cast(target).alias(field.name).sql))
    return df.select(*out)


def key_value() -> Column:
    """The record key, rebuilt from the identity's null flag and text."""
    return F.when(F.col("key_null"), F.lit(None).cast("string")).otherwise(F.col("key_v"))
