"""The input metrics: one aggregated row of figures per source, computed by Spark."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from delivery_audit.collect import collect_all
from delivery_audit.core.window import AuditWindow
from delivery_audit.schemas import FIELDS

from .suites import timestamp_bounds

# What is measured per source (column names of schemas.FIELDS).
TIMESTAMP_COLUMNS: dict[str, tuple[str, ...]] = {
    s: tuple(f.name for f in fields if f.kind == "timestamp") for s, fields in FIELDS.items()}
NULL_COUNTED: dict[str, tuple[str, ...]] = {"sends": ("key",), "broker": ("key", "seq")}
ORDERED_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "sends": (("ack_ts", "send_ts"),), "ledger": (("finished_ts", "started_ts"),)}


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def _count_where(condition: Column) -> Column:
    """Rows where condition holds (null counts as not holding); 0 over no rows."""
    return F.count(F.when(condition, F.lit(1)))


def metric_names(source: str) -> tuple[str, ...]:
    """The names of the columns ``metric_aggregates(source, …)`` returns, in order."""
    names = ["rows"]
    names += [f"{c}_nulls" for c in NULL_COUNTED.get(source, ())]
    for c in TIMESTAMP_COLUMNS[source]:
        names += [f"{c}_outside", f"{c}_earliest_ms", f"{c}_latest_ms"]
    names += [f"{later}_before_{earlier}" for later, earlier in ORDERED_PAIRS.get(source, ())]
    if source == "sends":
        names.append("attempt_below_one")
    return tuple(names)


def metric_aggregates(source: str, window: AuditWindow, config: Any = None) -> list[Column]:
    """Aggregate expressions over a source's valid canonical rows, each aliased by its metric
    name (``metric_names``): evaluate as ``valid_rows.agg(*metric_aggregates(...))``.

    ``rows``; ``<col>_nulls`` (key, and seq in the dump); per timestamp column
    ``<col>_outside`` (rows outside [ts_min, ts_max]) and ``<col>_earliest_ms`` /
    ``<col>_latest_ms`` (epoch ms); ``<later>_before_<earlier>`` (ack_ts < send_ts,
    finished_ts < started_ts); ``attempt_below_one`` (sends)."""
    bounds = timestamp_bounds(window, config)
    lo, hi = _epoch_ms(bounds["ts_min"]), _epoch_ms(bounds["ts_max"])
    aggs = [F.count(F.lit(1)).alias("rows")]
    # a transaction marker (contract §9) has no key or seq of its own: not counted
    data = F.col("control").isNull() if source == "broker" else F.lit(True)
    aggs += [_count_where(F.col(c).isNull() & data).alias(f"{c}_nulls")
             for c in NULL_COUNTED.get(source, ())]
    for c in TIMESTAMP_COLUMNS[source]:
        ms = F.unix_millis(F.col(c))
        aggs += [_count_where((ms < F.lit(lo)) | (ms > F.lit(hi))).alias(f"{c}_outside"),
                 F.min(ms).alias(f"{c}_earliest_ms"), F.max(ms).alias(f"{c}_latest_ms")]
    aggs += [_count_where(F.col(later) < F.col(earlier)).alias(f"{later}_before_{earlier}")
             for later, earlier in ORDERED_PAIRS.get(source, ())]
    if source == "sends":
        aggs.append(_count_where(F.col("attempt") < F.lit(1)).alias("attempt_below_one"))
    return aggs


def input_metrics(frames: Mapping[str, DataFrame], window: AuditWindow,
                  config: Any = None) -> dict[str, dict[str, Any]]:
    """Every source's metric row, computed in ONE Spark action (collect.collect_all), with
    ``rows_valid`` and ``by_topic`` ({topic: valid rows}) added. For callers that hold plain
    frames; the audit aggregates ``metric_aggregates`` in a pass it already makes."""
    tables: dict[str, DataFrame] = {}
    for source, df in frames.items():
        tables[source] = df.agg(*metric_aggregates(source, window, config))
        tables[f"{source}/by_topic"] = (df.filter(F.col("topic").isNotNull())
                                        .groupBy(F.col("topic"))
                                        .agg(F.count(F.lit(1)).alias("rows")))
    collected = collect_all(tables)
    out: dict[str, dict[str, Any]] = {}
    for source in frames:
        row = dict(collected[source][0]) if collected[source] else {}
        row["rows_valid"] = row.get("rows") or 0
        row["by_topic"] = {r["topic"]: int(r["rows"]) for r in collected[f"{source}/by_topic"]}
        out[source] = row
    return out
