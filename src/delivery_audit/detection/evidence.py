"""Anomaly rows: every detection rule emits rows of one schema (schemas.ANOMALY_SCHEMA)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..anomalies import BY_NAME
from ..schemas import ANOMALY_SCHEMA


def anomaly_rows(df: DataFrame, anomaly: str, **columns: Column | str | int | None) -> DataFrame:
    """Select ``df`` into the anomaly table's schema; unnamed evidence columns are null."""
    spec = BY_NAME[anomaly]
    given = {"units": F.lit(1), **columns}
    out: list[Column] = []
    for field in ANOMALY_SCHEMA.fields:
        if field.name == "anomaly":
            col = F.lit(anomaly)
        elif field.name == "severity":
            col = F.lit(spec.severity)
        elif field.name in given and given[field.name] is not None:
            value = given[field.name]
            col = F.col(value) if isinstance(value, str) else (
                value if isinstance(value, Column) else F.lit(value))
        else:
            col = F.lit(None)
        out.append(col.cast(field.dataType).alias(field.name))
    return df.select(*out)


def key_value() -> Column:
    """The record key, rebuilt from the identity's null flag and text."""
    return F.when(F.col("key_null"), F.lit(None).cast("string")).otherwise(F.col("key_v"))
