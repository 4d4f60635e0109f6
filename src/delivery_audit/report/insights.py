"""Small aggregates for the HTML report, computed with Spark; only small results are collected.

``compute_insights`` returns a JSON-safe dict:

* ``timeline``: anomaly units per hour and anomaly name (from ``anomalies.ts``), clipped to
  ``[window.start, window.read_until)``; rows without a ts are counted in ``undated_units``.
* ``rebalance_markers``: events rows with event in ``group_events.MARKER_EVENTS``
  (revoked/assigned/lost/left_group/commit_failed), per group and minute (event counts,
  member count), inside the same range.
* ``heatmap``: units per (topic, partition) × anomaly, for the ``max_partitions`` partitions
  with the most units.
* ``latency``: produce latency (``ack_ts − send_ts`` of acked sends judged in the window) and
  end-to-end latency (first successful ``finished_ts`` per group and record − broker
  ``timestamp``, for records whose timestamp is in the window), p50/p95/p99/max in ms,
  overall and per group.
* ``top_keys``: the ``top_n`` (topic, key) with the most anomaly units, per-anomaly units and
  up to 3 evidence rows each (worst severity first, then earliest).

Tables, then build: ``insight_tables`` gives the small tables (no Spark action),
``collect.collect_all`` collects them (with any other tables of the report) in one action,
and ``build_insights`` turns the rows into the dict above. ``compute_insights`` does the
three: one Spark job.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from delivery_audit.anomalies import SEVERITIES
from delivery_audit.collect import collect_all
from delivery_audit.core.window import AuditWindow
from delivery_audit.group_events import MARKER_EVENTS
from delivery_audit.report.summary import sum_units
from delivery_audit.schemas import ANOMALY_SCHEMA

from ..core.timefmt import iso_z

PERCENTILES: tuple[float, ...] = (0.5, 0.95, 0.99)
EXAMPLES_PER_KEY = 3
_MAX_TIMELINE_ROWS = 20_000
_MAX_MARKERS = 2_000
_EVIDENCE_COLUMNS = (
    "anomaly", "severity", "cause", "units", "group_id", "topic", "key", "seq", "seq_to",
    "partition", "offset", "related_partition", "related_offset", "member_id",
    "related_member_id", "ts", "related_ts", "attempts", "detail",
)
# evidence columns that are timestamps: they travel as epoch microseconds
_TS_COLUMNS = frozenset(f.name for f in ANOMALY_SCHEMA.fields
                        if f.dataType.typeName() == "timestamp")


def _iso(value: Any) -> Any:
    return iso_z(value) if isinstance(value, datetime) else value


def _us(col: Column | str) -> Column:
    """A timestamp as epoch microseconds: collected timestamps would come back as naive
    datetimes in the Python process's local zone, so they travel as numbers instead."""
    return F.unix_micros(F.col(col) if isinstance(col, str) else col)


def _iso_us(value: Any) -> str | None:
    if value is None:
        return None
    return _iso(datetime.fromtimestamp(int(value) / 1_000_000, UTC))


def _in_range(col: Column, window: AuditWindow) -> Column:
    return (col >= F.lit(window.start)) & (col < F.lit(window.read_until))


def _ms_between(later: Column, earlier: Column) -> Column:
    return (F.unix_micros(later) - F.unix_micros(earlier)).cast("double") / F.lit(1000.0)


def _latency_table(df: DataFrame, value: str, by: str | None = None) -> DataFrame:
    """Overall stats, or with ``by`` one rollup: a row per ``by`` value and a total row
    (``_total`` 1)."""
    aggs = [
        F.count(F.col(value)).alias("count"),
        F.percentile_approx(F.col(value), list(PERCENTILES), 10_000).alias("pcts"),
        F.max(F.col(value)).alias("max"),
        F.min(F.col(value)).alias("min"),
    ]
    if by:
        return df.rollup(by).agg(*aggs, F.grouping(by).alias("_total"))
    return df.agg(*aggs)


def _latency_stats(rows: list[dict[str, Any]], by: str | None = None) -> Any:
    """Overall stats, or with ``by`` a pair (overall, {by value: stats})."""

    def one(r: dict[str, Any]) -> dict[str, Any]:
        pcts = r["pcts"] or [None] * len(PERCENTILES)
        out = {"count": int(r["count"] or 0)}
        for p, v in zip(PERCENTILES, pcts, strict=True):
            out[f"p{round(p * 100)}"] = None if v is None else round(float(v), 3)
        out["max"] = None if r["max"] is None else round(float(r["max"]), 3)
        out["min"] = None if r["min"] is None else round(float(r["min"]), 3)
        return out

    if by:
        total = next((one(r) for r in rows if r["_total"]), {"count": 0})
        return total, {str(r[by]): one(r) for r in sorted(
            (r for r in rows if not r["_total"]), key=lambda r: str(r[by]))}
    return one(rows[0]) if rows else {"count": 0}


def _nulls_first(*values: Any) -> tuple:
    """A sort key ordering like Spark's ascending sort: nulls first."""
    return tuple((v is not None, v) for v in values)


# --------------------------------------------------------------------------- the tables


def _timeline_table(anomalies: DataFrame, window: AuditWindow) -> DataFrame:
    ts = F.col("ts")
    where = (F.when(ts.isNull(), F.lit("undated"))
             .when(_in_range(ts, window), F.lit("in")).otherwise(F.lit("outside")))
    hour = F.when(where == "in", _us(F.date_trunc("hour", ts)))
    return (anomalies.groupBy(where.alias("where"), hour.alias("hour"), F.col("anomaly"))
            .agg(sum_units().alias("units"))
            .orderBy("where", "hour", "anomaly").limit(_MAX_TIMELINE_ROWS))


def _markers_table(events: DataFrame, window: AuditWindow) -> DataFrame:
    ev = events.where(F.lower(F.col("event")).isin(*MARKER_EVENTS)
                      & F.col("ts").isNotNull() & _in_range(F.col("ts"), window))
    minute = _us(F.date_trunc("minute", F.col("ts"))).alias("minute")
    grouped = (ev.groupBy(F.col("group_id"), minute, F.lower(F.col("event")).alias("event"))
               .agg(F.count(F.lit(1)).alias("n"),
                    F.collect_set("member_id").alias("members")))
    return (grouped.groupBy("group_id", "minute")
            .agg(F.map_from_entries(F.collect_list(F.struct("event", "n"))).alias("events"),
                 F.array_distinct(F.flatten(F.collect_list("members"))).alias("members"))
            .orderBy("minute", "group_id").limit(_MAX_MARKERS))


def _heatmap_table(anomalies: DataFrame, max_partitions: int) -> DataFrame:
    cells = (anomalies.where(F.col("partition").isNotNull())
             .groupBy("topic", "partition", "anomaly").agg(sum_units().alias("units")))
    # rank partitions by their total units (the aggregated table is small)
    ranked = (cells
              .withColumn("total", F.sum("units").over(Window.partitionBy("topic", "partition")))
              .withColumn("rk", F.dense_rank().over(
                  Window.orderBy(F.desc("total"), F.col("topic").asc_nulls_first(),
                                 F.col("partition"))))
              .withColumn("n_partitions", F.max("rk").over(Window.partitionBy())))
    return ranked.where(F.col("rk") <= max_partitions).select(
        "topic", "partition", "anomaly", "units", "n_partitions")


def _latency_tables(frames: dict[str, DataFrame], window: AuditWindow
                    ) -> dict[str, DataFrame]:
    out: dict[str, DataFrame] = {}
    sends = frames.get("sends")
    if sends is not None:
        produce = (sends.where((F.lower(F.col("status")) == "acked")
                               & F.col("ack_ts").isNotNull() & F.col("send_ts").isNotNull()
                               & (F.col("send_ts") >= F.lit(window.start))
                               & (F.col("send_ts") < F.lit(window.end)))
                   .select(_ms_between(F.col("ack_ts"), F.col("send_ts")).alias("ms")))
        out["insights_produce_latency"] = _latency_table(produce, "ms")
    broker, ledger = frames.get("broker"), frames.get("ledger")
    if broker is not None and ledger is not None:
        first_done = (ledger.where((F.lower(F.col("outcome")) == "success")
                                   & F.col("finished_ts").isNotNull())
                      .groupBy("group_id", "topic", "partition", "offset")
                      .agg(F.min("finished_ts").alias("finished_ts")))
        written = (broker.where(F.col("timestamp").isNotNull()
                                & (F.col("timestamp") >= F.lit(window.start))
                                & (F.col("timestamp") < F.lit(window.end)))
                   .select("topic", "partition", "offset", "timestamp"))
        # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
        e2e = (first_done.join(written.hint("merge"), ["topic", "partition", "offset"])
               .select("group_id", _ms_between(F.col("finished_ts"), F.col("timestamp"))
                       .alias("ms")))
        out["insights_e2e_latency"] = _latency_table(e2e, "ms", by="group_id")
    return out


def _top_keys_table(anomalies: DataFrame, top_n: int) -> DataFrame:
    """The ``top_n`` (topic, key) with the most units, in one query: per key its units,
    rows and rank (0 = most units), with its first EXAMPLES_PER_KEY rows (worst severity
    first, then earliest) plus one row per (key, anomaly) carrying that anomaly's units
    for the key. The keys are picked by an ordered limit (a top-k per partition, then
    merged), not by ranking every key in one partition."""
    sev_rank = F.coalesce(
        F.array_position(F.array(*[F.lit(s) for s in SEVERITIES]), F.col("severity")),
        F.lit(len(SEVERITIES) + 1))
    order = [F.desc("_key_units"), F.col("topic").asc_nulls_first(),
             F.col("key").asc_nulls_first()]
    top = (anomalies.groupBy("topic", "key")
           .agg(sum_units().alias("_key_units"), F.count(F.lit(1)).alias("_key_rows"))
           .orderBy(*order).limit(top_n)
           .select(F.col("topic").alias("t_topic"), F.col("key").alias("t_key"),
                   "_key_units", "_key_rows",
                   (F.row_number().over(Window.orderBy(*order)) - 1).alias("_rank")))
    on_key = (F.col("topic").eqNullSafe(F.col("t_topic"))
              & F.col("key").eqNullSafe(F.col("t_key")))
    # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
    hits = anomalies.join(top.hint("merge"), on=on_key, how="inner")
    by_anomaly = Window.partitionBy("_rank", "anomaly")
    examples_first = Window.partitionBy("_rank").orderBy(
        sev_rank, F.col("ts").asc_nulls_last(), F.col("anomaly"), F.col("partition"),
        F.col("offset"))
    ts_cols = {f.name for f in anomalies.schema.fields if f.dataType.typeName() == "timestamp"}
    cols = [_us(c).alias(c) if c in ts_cols else F.col(c)
            for c in _EVIDENCE_COLUMNS if c in anomalies.columns]
    picked = (hits
              .select("*", F.row_number().over(examples_first).alias("_n"),
                      sum_units().over(by_anomaly).alias("_units"))
              .withColumn("_na", F.row_number().over(by_anomaly.orderBy(F.col("_n"))))
              .where((F.col("_n") <= EXAMPLES_PER_KEY) | (F.col("_na") == 1)))
    return picked.select("_rank", "_key_units", "_key_rows", "_n", "_na", "_units", *cols)


def insight_tables(anomalies: DataFrame, frames: dict[str, DataFrame], window: AuditWindow,
                   top_n: int = 10, max_partitions: int = 40) -> dict[str, DataFrame]:
    """The small tables behind the insights (no Spark action): collect them with
    ``collect.collect_all``, alone or with other tables, and pass the result to
    ``build_insights`` (same ``window``, ``top_n`` and ``max_partitions``).

    * ``insights_timeline`` — units per (``where`` in/outside/undated, ``hour`` epoch µs,
      anomaly).
    * ``insights_markers`` — per (group_id, ``minute`` epoch µs): ``events`` {event: n},
      ``members``; only when ``frames`` has events.
    * ``insights_heatmap`` — units per (topic, partition, anomaly) of the ``max_partitions``
      partitions with the most units, ``n_partitions`` with any.
    * ``insights_produce_latency`` / ``insights_e2e_latency`` — count, ``pcts``, max, min
      (ms); the second per group_id with a total row (``_total`` 1); when ``frames`` has
      sends / broker and ledger.
    * ``insights_top_keys`` — the rows of the ``top_n`` keys (``_rank``, ``_key_units``,
      ``_key_rows``): examples (``_n`` ≤ EXAMPLES_PER_KEY) and one row per anomaly
      (``_na`` 1, its ``_units``); evidence columns, timestamps as epoch µs.
    """
    tables = {"insights_timeline": _timeline_table(anomalies, window)}
    events = frames.get("events")
    if events is not None:
        tables["insights_markers"] = _markers_table(events, window)
    tables["insights_heatmap"] = _heatmap_table(anomalies, max_partitions)
    tables.update(_latency_tables(frames, window))
    if top_n > 0:
        tables["insights_top_keys"] = _top_keys_table(anomalies, top_n)
    return tables


# --------------------------------------------------------------------------- the insights


def _timeline(rows: list[dict[str, Any]], window: AuditWindow) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: _nulls_first(r["where"], r["hour"], r["anomaly"]))
    return {
        "bucket": "hour",
        "start": _iso(window.start),
        "end": _iso(window.end),
        "read_until": _iso(window.read_until),
        "series": [{"hour": _iso_us(r["hour"]), "anomaly": r["anomaly"], "units": int(r["units"])}
                   for r in rows if r["where"] == "in"],
        "undated_units": sum(int(r["units"]) for r in rows if r["where"] == "undated"),
        "outside_units": sum(int(r["units"]) for r in rows if r["where"] == "outside"),
    }


def _rebalance_markers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in sorted(rows, key=lambda r: _nulls_first(r["minute"], r["group_id"])):
        members = sorted(m for m in (r["members"] or []) if m is not None)
        out.append({"group_id": r["group_id"], "minute": _iso_us(r["minute"]),
                    "events": {k: int(v) for k, v in sorted((r["events"] or {}).items())},
                    "members": members[:10], "member_count": len(members)})
    return out


def _heatmap(rows: list[dict[str, Any]], max_partitions: int) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: _nulls_first(r["topic"], r["partition"], r["anomaly"]))
    n_partitions = int(rows[0]["n_partitions"]) if rows else 0
    return {
        "cells": [{"topic": r["topic"], "partition": int(r["partition"]),
                   "anomaly": r["anomaly"], "units": int(r["units"])} for r in rows],
        "partitions_total": n_partitions,
        "partitions_shown": min(n_partitions, max_partitions),
    }


def _latency(results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "insights_produce_latency" in results:
        out["produce_ms"] = _latency_stats(results["insights_produce_latency"])
    if "insights_e2e_latency" in results:
        out["end_to_end_ms"], out["end_to_end_ms_by_group"] = _latency_stats(
            results["insights_e2e_latency"], by="group_id")
    return out


def _top_keys(rows: list[dict[str, Any]], top_n: int) -> list[dict[str, Any]]:
    if top_n <= 0 or not rows:
        return []
    keys: dict[int, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["_rank"]):
        keys.setdefault(r["_rank"], {"topic": r["topic"], "key": r["key"],
                                     "units": int(r["_key_units"]),
                                     "rows": int(r["_key_rows"]), "anomalies": {},
                                     "examples": []})
    out = [keys[rank] for rank in sorted(keys)]
    per_anomaly = sorted((r["_rank"], -int(r["_units"]), r["anomaly"]) for r in rows
                         if r["_na"] == 1)
    for rank, neg_units, name in per_anomaly:
        keys[rank]["anomalies"][name] = -neg_units
    for r in sorted(rows, key=lambda r: (r["_rank"], r["_n"])):
        if r["_n"] > EXAMPLES_PER_KEY:
            continue
        ex = {k: (_iso_us(r[k]) if k in _TS_COLUMNS else r[k]) for k in _EVIDENCE_COLUMNS
              if r.get(k) is not None}
        keys[r["_rank"]]["examples"].append(ex)
    return out


def build_insights(results: dict[str, list[dict[str, Any]]], window: AuditWindow,
                   top_n: int = 10, max_partitions: int = 40) -> dict:
    """The HTML report's aggregates (see the module docstring; JSON-safe) from the
    collected ``insight_tables``. Plain Python: no Spark."""
    return {
        "timeline": _timeline(results.get("insights_timeline", []), window),
        "rebalance_markers": _rebalance_markers(results.get("insights_markers", [])),
        "heatmap": _heatmap(results.get("insights_heatmap", []), max_partitions),
        "latency": _latency(results),
        "top_keys": _top_keys(results.get("insights_top_keys", []), top_n),
    }


def compute_insights(anomalies: DataFrame, frames: dict[str, DataFrame], window: AuditWindow,
                     top_n: int = 10, max_partitions: int = 40) -> dict:
    """The HTML report's aggregates (see the module docstring); JSON-safe. One Spark
    action: ``build_insights(collect_all(insight_tables(...)))``."""
    return build_insights(
        collect_all(insight_tables(anomalies, frames, window, top_n, max_partitions)),
        window, top_n, max_partitions)
