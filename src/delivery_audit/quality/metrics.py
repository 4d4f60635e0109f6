"""The input metrics: one aggregated row of figures per source, computed by Spark."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from delivery_audit.core.window import AuditWindow
from delivery_audit.schemas import FIELDS
from delivery_audit.tally import Tally, collect_tallies, count_where, one

from .suites import timestamp_bounds

# What is measured per source (column names of schemas.FIELDS).
TIMESTAMP_COLUMNS: dict[str, tuple[str, ...]] = {
    s: tuple(f.name for f in fields if f.kind == "timestamp") for s, fields in FIELDS.items()}
NULL_COUNTED: dict[str, tuple[str, ...]] = {"sends": ("key",), "broker": ("key", "seq")}
ORDERED_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "sends": (("ack_ts", "send_ts"),), "ledger": (("finished_ts", "started_ts"),)}


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


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


def _metric_values(source: str, window: AuditWindow,
                   config: Any) -> tuple[dict[str, Column], dict[str, Column], dict[str, Column]]:
    """The metrics of ``source`` as the values of a tally: (counts, minima, maxima)."""
    bounds = timestamp_bounds(window, config)
    lo, hi = _epoch_ms(bounds["ts_min"]), _epoch_ms(bounds["ts_max"])
    sums: dict[str, Column] = {"rows": one()}
    mins: dict[str, Column] = {}
    maxs: dict[str, Column] = {}
    # a transaction marker (contract §9) has no key or seq of its own: not counted
    data = F.col("control").isNull() if source == "broker" else F.lit(True)
    sums |= {f"{c}_nulls": count_where(F.col(c).isNull() & data)
             for c in NULL_COUNTED.get(source, ())}
    for c in TIMESTAMP_COLUMNS[source]:
        ms = F.unix_millis(F.col(c))
        sums[f"{c}_outside"] = count_where((ms < F.lit(lo)) | (ms > F.lit(hi)))
        mins[f"{c}_earliest_ms"] = ms
        maxs[f"{c}_latest_ms"] = ms
    sums |= {f"{later}_before_{earlier}": count_where(F.col(later) < F.col(earlier))
             for later, earlier in ORDERED_PAIRS.get(source, ())}
    if source == "sends":
        sums["attempt_below_one"] = count_where(F.col("attempt") < F.lit(1))
    return sums, mins, maxs


def metric_tally(source: str, frame: DataFrame, window: AuditWindow, config: Any = None,
                 where: Column | None = None, name: str | None = None) -> Tally:
    """The metric row of ``source`` over the rows of ``frame`` where ``where`` holds, as a
    tally (``tally.collect_tallies`` computes it with other tables in one job); its
    columns are ``metric_names(source)``."""
    sums, mins, maxs = _metric_values(source, window, config)
    return Tally(name or f"{source}:metrics", frame, where, sums=sums, mins=mins, maxs=maxs)


def metric_aggregates(source: str, window: AuditWindow, config: Any = None) -> list[Column]:
    """The metric row of ``source`` as aggregate expressions over its valid canonical rows,
    each aliased by its metric name (``metric_names``), for
    ``valid_rows.agg(*metric_aggregates(...))``; the same values as :func:`metric_tally`.

    ``rows``; ``<col>_nulls`` (key, and seq in the dump); per timestamp column
    ``<col>_outside`` (rows outside [ts_min, ts_max]) and ``<col>_earliest_ms`` /
    ``<col>_latest_ms`` (epoch ms); ``<later>_before_<earlier>`` (ack_ts < send_ts,
    finished_ts < started_ts); ``attempt_below_one`` (sends)."""
    sums, mins, maxs = _metric_values(source, window, config)
    aggs = {**{n: F.coalesce(F.sum(v), F.lit(0)) for n, v in sums.items()},
            **{n: F.min(v) for n, v in mins.items()}, **{n: F.max(v) for n, v in maxs.items()}}
    return [aggs[n].alias(n) for n in metric_names(source)]


def input_metrics(frames: Mapping[str, DataFrame], window: AuditWindow,
                  config: Any = None) -> dict[str, dict[str, Any]]:
    """Every source's metric row, computed in one() Spark job (tally.collect_tallies), with
    ``rows_valid`` and ``by_topic`` ({topic: valid rows}) added. For callers that hold plain
    frames; the audit tallies ``metric_tally`` with its accounting."""
    tallies: list[Tally] = []
    for source, df in frames.items():
        tallies.append(metric_tally(source, df, window, config, name=source))
        tallies.append(Tally(f"{source}/by_topic", df, F.col("topic").isNotNull(),
                             keys={"topic": F.col("topic")}, sums={"rows": one()}))
    collected = collect_tallies(tallies)
    out: dict[str, dict[str, Any]] = {}
    for source in frames:
        row = {n: collected[source][0][n] for n in metric_names(source)}
        row["rows_valid"] = row.get("rows") or 0
        row["by_topic"] = {r["topic"]: int(r["rows"]) for r in collected[f"{source}/by_topic"]}
        out[source] = row
    return out
