"""Anomaly rows: every rule emits rows of one schema (schemas.ANOMALY_SCHEMA), built as SQL
text (detection builds its plan in a few ``selectExpr`` calls: plan building is py4j round
trips in a classic session)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..anomalies import BY_NAME
from ..schemas import ANOMALY_SCHEMA
from ..sqlexpr import X

ANOMALY_TYPE = ANOMALY_SCHEMA.simpleString()
KEY = S.raw("IF(key_null, CAST(NULL AS STRING), key_v)")  # the record key, from its parts


def _value(v: Any) -> X:
    if isinstance(v, X):
        return v
    return S.col(v) if isinstance(v, str) else S.lit(v)


def anomaly_struct(anomaly: str, **columns: X | str | int | None) -> X:
    """One anomaly row as a struct of the anomaly table's schema: a column name, an
    expression or a literal per evidence field; fields not named are null. Fact rows of
    the detection output (``__state`` …, see detection.outputs) use the same schema."""
    severity = BY_NAME[anomaly].severity if anomaly in BY_NAME else "info"
    given = {"units": S.lit(1), "anomaly": S.lit(anomaly), "severity": S.lit(severity),
             **columns}
    parts = []
    for f in ANOMALY_SCHEMA.fields:
        parts += [S.lit(f.name), _value(given.get(f.name)).cast(f.dataType)]
    return S.fn("named_struct", *parts)


def anomaly_rows(df: DataFrame, anomaly: str, **columns: X | str | int | None) -> DataFrame:
    """``df`` selected into the anomaly table's columns (see :func:`anomaly_struct`)."""
    return S.select(df, anomaly_struct(anomaly, **columns).alias("_a")).selectExpr("_a.*")


def null_anomaly() -> X:
    return S.raw(f"CAST(NULL AS {ANOMALY_TYPE})")
