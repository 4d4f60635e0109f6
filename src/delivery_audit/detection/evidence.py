"""Anomaly rows: every detection rule emits rows of one schema (schemas.ANOMALY_SCHEMA)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..anomalies import BY_NAME
from ..schemas import ANOMALY_SCHEMA


def anomaly_rows(df: DataFrame, anomaly: str, **columns: Column | str | int | None) -> DataFrame:
    """Select ``df`` into the anomaly table's schema: a column name, a Column or a literal
    per evidence field; unnamed fields are null. Everything but Columns goes to Spark as
    SQL text (one call per field instead of four: plan building is py4j round trips in a
    classic session)."""
    given = {"units": S.lit(1), "anomaly": S.lit(anomaly),
             "severity": S.lit(BY_NAME[anomaly].severity), **columns}
    out: list[Column] = []
    for field in ANOMALY_SCHEMA.fields:
        value = given.get(field.name)
        if isinstance(value, Column):
            out.append(value.cast(field.dataType).alias(field.name))
            continue
        text = value if isinstance(value, S.X) else (
            S.col(value) if isinstance(value, str) else S.lit(value))
        out.append(F.expr(text.cast(field.dataType).alias(field.name).sql))
    return df.select(*out)


def key_value() -> Column:
    """The record key, rebuilt from the identity's null flag and text."""
    return F.when(F.col("key_null"), F.lit(None).cast("string")).otherwise(F.col("key_v"))
