"""Small aggregates for the HTML report, computed with Spark; only small results are collected.

``compute_insights`` returns a JSON-safe dict:

* ``timeline``: anomaly units per hour and anomaly name (from ``anomalies.ts``), clipped to
  ``[window.start, window.read_until)``; rows without a ts are counted in ``undated_units``.
* ``rebalance_markers``: events rows with event in revoked/assigned/lost/left_group/
  commit_failed, per group and minute (event counts, member count), inside the same range.
* ``heatmap``: units per (topic, partition) × anomaly, for the ``max_partitions`` partitions
  with the most units.
* ``latency``: produce latency (``ack_ts − send_ts`` of acked sends judged in the window) and
  end-to-end latency (first successful ``finished_ts`` per group and record − broker
  ``timestamp``, for records whose timestamp is in the window), p50/p95/p99/max in ms,
  overall and per group.
* ``top_keys``: the ``top_n`` (topic, key) with the most anomaly units, per-anomaly units and
  up to 3 evidence rows each (worst severity first, then earliest).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from delivery_audit.anomalies import SEVERITIES
from delivery_audit.report.summary import sum_units
from delivery_audit.window import AuditWindow

REBALANCE_EVENTS: tuple[str, ...] = ("revoked", "assigned", "lost", "left_group",
                                     "commit_failed")
PERCENTILES: tuple[float, ...] = (0.5, 0.95, 0.99)
EXAMPLES_PER_KEY = 3
_MAX_TIMELINE_ROWS = 20_000
_MAX_MARKERS = 2_000
_EVIDENCE_COLUMNS = (
    "anomaly", "severity", "cause", "units", "group_id", "topic", "key", "seq", "seq_to",
    "partition", "offset", "related_partition", "related_offset", "member_id",
    "related_member_id", "ts", "related_ts", "attempts", "detail",
)


def _iso(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


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


def _latency_stats(df: DataFrame, value: str, by: str | None = None) -> Any:
    """Overall stats, or with ``by`` a pair (overall, {by value: stats}) from one rollup."""
    aggs = [
        F.count(F.col(value)).alias("count"),
        F.percentile_approx(F.col(value), list(PERCENTILES), 10_000).alias("pcts"),
        F.max(F.col(value)).alias("max"),
        F.min(F.col(value)).alias("min"),
    ]
    if by:
        rows = df.rollup(by).agg(*aggs, F.grouping(by).alias("_total")).collect()
    else:
        rows = df.agg(*aggs).collect()

    def one(r: Any) -> dict[str, Any]:
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


def _timeline(anomalies: DataFrame, window: AuditWindow) -> dict[str, Any]:
    ts = F.col("ts")
    where = (F.when(ts.isNull(), F.lit("undated"))
             .when(_in_range(ts, window), F.lit("in")).otherwise(F.lit("outside")))
    hour = F.when(where == "in", _us(F.date_trunc("hour", ts)))
    rows = (anomalies.groupBy(where.alias("where"), hour.alias("hour"), F.col("anomaly"))
            .agg(sum_units().alias("units"))
            .orderBy("where", "hour", "anomaly").limit(_MAX_TIMELINE_ROWS).collect())
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


def _rebalance_markers(events: DataFrame | None, window: AuditWindow) -> list[dict[str, Any]]:
    if events is None:
        return []
    ev = events.where(F.lower(F.col("event")).isin(*REBALANCE_EVENTS)
                      & F.col("ts").isNotNull() & _in_range(F.col("ts"), window))
    minute = _us(F.date_trunc("minute", F.col("ts"))).alias("minute")
    grouped = (ev.groupBy(F.col("group_id"), minute, F.lower(F.col("event")).alias("event"))
               .agg(F.count(F.lit(1)).alias("n"),
                    F.collect_set("member_id").alias("members")))
    per_minute = (grouped.groupBy("group_id", "minute")
                  .agg(F.map_from_entries(F.collect_list(F.struct("event", "n"))).alias("events"),
                       F.array_distinct(F.flatten(F.collect_list("members"))).alias("members"))
                  .orderBy("minute", "group_id").limit(_MAX_MARKERS).collect())
    out = []
    for r in per_minute:
        members = sorted(m for m in (r["members"] or []) if m is not None)
        out.append({"group_id": r["group_id"], "minute": _iso_us(r["minute"]),
                    "events": {k: int(v) for k, v in sorted((r["events"] or {}).items())},
                    "members": members[:10], "member_count": len(members)})
    return out


def _heatmap(anomalies: DataFrame, max_partitions: int) -> dict[str, Any]:
    cells = (anomalies.where(F.col("partition").isNotNull())
             .groupBy("topic", "partition", "anomaly").agg(sum_units().alias("units")))
    # one job: rank partitions by their total units (the aggregated table is small)
    ranked = (cells
              .withColumn("total", F.sum("units").over(Window.partitionBy("topic", "partition")))
              .withColumn("rk", F.dense_rank().over(
                  Window.orderBy(F.desc("total"), F.col("topic").asc_nulls_first(),
                                 F.col("partition"))))
              .withColumn("n_partitions", F.max("rk").over(Window.partitionBy())))
    rows = (ranked.where(F.col("rk") <= max_partitions)
            .orderBy("topic", "partition", "anomaly").collect())
    n_partitions = int(rows[0]["n_partitions"]) if rows else 0
    return {
        "cells": [{"topic": r["topic"], "partition": int(r["partition"]),
                   "anomaly": r["anomaly"], "units": int(r["units"])} for r in rows],
        "partitions_total": n_partitions,
        "partitions_shown": min(n_partitions, max_partitions),
    }


def _latency(frames: dict[str, DataFrame], window: AuditWindow) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sends = frames.get("sends")
    if sends is not None:
        produce = (sends.where((F.lower(F.col("status")) == "acked")
                               & F.col("ack_ts").isNotNull() & F.col("send_ts").isNotNull()
                               & (F.col("send_ts") >= F.lit(window.start))
                               & (F.col("send_ts") < F.lit(window.end)))
                   .select(_ms_between(F.col("ack_ts"), F.col("send_ts")).alias("ms")))
        out["produce_ms"] = _latency_stats(produce, "ms")
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
        e2e = (first_done.join(written, ["topic", "partition", "offset"])
               .select("group_id", _ms_between(F.col("finished_ts"), F.col("timestamp"))
                       .alias("ms")))
        out["end_to_end_ms"], out["end_to_end_ms_by_group"] = _latency_stats(
            e2e, "ms", by="group_id")
    return out


def _top_keys(anomalies: DataFrame, top_n: int) -> list[dict[str, Any]]:
    if top_n <= 0:
        return []
    per_key = (anomalies.groupBy("topic", "key")
               .agg(sum_units().alias("units"), F.count(F.lit(1)).alias("rows")))
    top_rows = per_key.orderBy(F.desc("units"), "topic", "key").limit(top_n).collect()
    if not top_rows:
        return []
    spark = anomalies.sparkSession
    top = spark.createDataFrame([(r["topic"], r["key"], i) for i, r in enumerate(top_rows)],
                                "t_topic string, t_key string, rank int")
    cond = (F.col("topic").eqNullSafe(F.col("t_topic"))
            & F.col("key").eqNullSafe(F.col("t_key")))
    hits = anomalies.join(F.broadcast(top), cond)
    sev_rank = F.coalesce(
        F.array_position(F.array(*[F.lit(s) for s in SEVERITIES]), F.col("severity")),
        F.lit(len(SEVERITIES) + 1))
    w = Window.partitionBy("rank").orderBy(sev_rank, F.col("ts").asc_nulls_last(),
                                           F.col("anomaly"), F.col("partition"), F.col("offset"))
    ts_cols = {f.name for f in anomalies.schema.fields if f.dataType.typeName() == "timestamp"}
    cols = [_us(c).alias(c) if c in ts_cols else F.col(c)
            for c in _EVIDENCE_COLUMNS if c in anomalies.columns]
    # one job: the first EXAMPLES_PER_KEY rows per key, plus one row per (key, anomaly)
    # carrying that anomaly's units for the key
    w_anomaly = Window.partitionBy("rank", "anomaly")
    picked = (hits.withColumn("_n", F.row_number().over(w))
              .withColumn("_na", F.row_number().over(w_anomaly.orderBy(F.col("_n"))))
              .withColumn("_units", sum_units().over(w_anomaly))
              .where((F.col("_n") <= EXAMPLES_PER_KEY) | (F.col("_na") == 1))
              .select("rank", "_n", "_na", "_units", *cols).orderBy("rank", "_n").collect())
    out = [{"topic": r["topic"], "key": r["key"], "units": int(r["units"]),
            "rows": int(r["rows"]), "anomalies": {}, "examples": []} for r in top_rows]
    per_anomaly = sorted((r["rank"], -int(r["_units"]), r["anomaly"]) for r in picked
                         if r["_na"] == 1)
    for rank, neg_units, name in per_anomaly:
        out[rank]["anomalies"][name] = -neg_units
    for r in picked:
        if r["_n"] > EXAMPLES_PER_KEY:
            continue
        ex = {k: (_iso_us(v) if k in ts_cols else v) for k, v in r.asDict().items()
              if k not in ("rank", "_n", "_na", "_units") and v is not None}
        out[r["rank"]]["examples"].append(ex)
    return out


def compute_insights(anomalies: DataFrame, frames: dict[str, DataFrame], window: AuditWindow,
                     top_n: int = 10, max_partitions: int = 40) -> dict:
    """The HTML report's aggregates (see the module docstring); JSON-safe."""
    cached_here = not anomalies.is_cached
    if cached_here:
        anomalies = anomalies.cache()
    try:
        return {
            "timeline": _timeline(anomalies, window),
            "rebalance_markers": _rebalance_markers(frames.get("events"), window),
            "heatmap": _heatmap(anomalies, max_partitions),
            "latency": _latency(frames, window),
            "top_keys": _top_keys(anomalies, top_n),
        }
    finally:
        if cached_here:
            anomalies.unpersist()
