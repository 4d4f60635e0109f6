"""Great Expectations (1.x) suites run inside the Spark job on the audit's DataFrames.

The suites are JSON files (``expectations/<source>.json`` and ``expectations/results.json``),
loaded into an ephemeral GX context: a Spark data source, one DataFrame asset and one
whole-DataFrame batch definition per suite, and a ValidationDefinition run with
``batch_parameters={"dataframe": df}``.

Timestamp bounds are suite parameters (``$PARAMETER``) set from the window:
``ts_min`` = window start − 3650 days (never before 2000-01-01), ``ts_max`` = read_until +
366 days; ``config.raw["quality"]`` may override them with ``ts_min`` / ``ts_max``.
GX runs Spark jobs per metric batch, so each suite is kept short; an uncached frame is cached
for the duration of its suite. Each result carries the suite's elapsed ``seconds``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from delivery_audit.anomalies import BY_NAME
from delivery_audit.window import AuditWindow, parse_instant

log = logging.getLogger("delivery_audit.quality")

INPUT_SUITES: tuple[str, ...] = ("sends", "broker", "ledger", "events")
RESULTS_SUITE = "results"
EXPECTATIONS_ENV = "DELIVERY_AUDIT_EXPECTATIONS"
_TS_FLOOR = datetime(2000, 1, 1, tzinfo=UTC)
_UNBOUNDED = 2**62
_MAX_EXAMPLES = 5

RESULTS_SCHEMA = T.StructType([
    T.StructField("check", T.StringType(), False),
    T.StructField("subject", T.StringType(), False),
    T.StructField("states_sum", T.LongType(), True),
    T.StructField("judged", T.LongType(), True),
    T.StructField("topics_judged", T.LongType(), True),
    T.StructField("count", T.LongType(), True),
    T.StructField("by_topic_sum", T.LongType(), True),
    T.StructField("fail_limit", T.LongType(), True),
    T.StructField("critical_count", T.LongType(), True),
])


# --------------------------------------------------------------------------- suites


def expectations_dir(config: Any = None) -> Path:
    """Where the suite files are: config quality.expectations_dir, $DELIVERY_AUDIT_EXPECTATIONS,
    the project's ``expectations/`` folder, or ./expectations."""
    quality = _quality_cfg(config)
    candidates = [quality.get("expectations_dir"), os.environ.get(EXPECTATIONS_ENV),
                  Path(__file__).resolve().parents[2] / "expectations",
                  Path.cwd() / "expectations"]
    for c in candidates:
        if c and (Path(c) / "results.json").is_file():
            return Path(c)
    raise FileNotFoundError(
        "no Great Expectations suites found (looked for results.json in quality.expectations_dir,"
        f" ${EXPECTATIONS_ENV}, the project's expectations/ and ./expectations)")


def load_suite_dict(name: str, config: Any = None) -> dict:
    path = expectations_dir(config) / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"expectation suite file {path} is missing") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"expectation suite file {path} is not valid JSON: {exc}") from exc


def _quality_cfg(config: Any) -> dict:
    raw = getattr(config, "raw", None) or {}
    q = raw.get("quality") if isinstance(raw, dict) else None
    return q if isinstance(q, dict) else {}


def timestamp_bounds(window: AuditWindow, config: Any = None) -> dict[str, str]:
    """The ``ts_min`` / ``ts_max`` suite parameters (ISO-8601, UTC)."""
    quality = _quality_cfg(config)
    lo = max(window.start - timedelta(days=3650), _TS_FLOOR)
    hi = window.read_until + timedelta(days=366)
    if quality.get("ts_min"):
        lo = parse_instant(quality["ts_min"])
    if quality.get("ts_max"):
        hi = parse_instant(quality["ts_max"])
    return {"ts_min": lo.isoformat(), "ts_max": hi.isoformat()}


# --------------------------------------------------------------------------- GX plumbing


class _Runner:
    """One ephemeral GX context with a Spark data source; one asset per suite."""

    def __init__(self) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        try:
            self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        except Exception:  # noqa: BLE001 - cosmetic only
            pass
        self.data_source = self.context.data_sources.add_spark(name="delivery_audit")

    def run(self, name: str, suite_dict: dict, df: DataFrame, parameters: dict[str, Any],
            result_format: Any = "BOOLEAN_ONLY") -> Any:
        from great_expectations.core.expectation_suite import ExpectationSuite

        asset = self.data_source.add_dataframe_asset(name=name)
        batch_definition = asset.add_batch_definition_whole_dataframe(f"{name}_whole")
        data = {k: v for k, v in suite_dict.items() if k in ("name", "expectations", "meta",
                                                               "notes")}
        data["name"] = f"{data.get('name') or name}:{name}"
        suite = self.context.suites.add(ExpectationSuite(**data))
        vd = self.context.validation_definitions.add(
            self.gx.ValidationDefinition(name=f"{name}_validation", data=batch_definition,
                                         suite=suite))
        return vd.run(batch_parameters={"dataframe": df}, expectation_parameters=parameters,
                      result_format=result_format)

    def validate(self, name: str, suite_dict: dict, df: DataFrame, parameters: dict[str, Any],
                 detail_format: Any = "BASIC") -> tuple[Any, list[dict[str, Any]]]:
        """Run the suite with BOOLEAN_ONLY (the fewest Spark jobs), then only the failed
        expectations again with detail_format for their examples."""
        exps = [dict(e, meta={**(e.get("meta") or {}), "_index": i})
                for i, e in enumerate(suite_dict.get("expectations") or [])]
        first = self.run(name, {**suite_dict, "expectations": exps}, df, parameters)
        failed_idx = sorted({int(r.expectation_config.meta.get("_index", -1))
                             for r in first.results if not r.success})
        if not failed_idx:
            return first, []
        redo = [exps[i] for i in failed_idx if 0 <= i < len(exps)]
        detail = self.run(f"{name}_detail", {**suite_dict, "expectations": redo}, df,
                          parameters, result_format=detail_format)
        by_idx = {int(r.expectation_config.meta.get("_index", -1)): r for r in detail.results}
        failed = []
        for r in first.results:
            if r.success:
                continue
            idx = int(r.expectation_config.meta.get("_index", -1))
            failed.append(_summarise(by_idx.get(idx, r)))
        return first, failed


def _plain(value: Any) -> Any:
    """JSON-safe, short."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _summarise(vr: Any) -> dict[str, Any]:
    cfg = vr.expectation_config
    kwargs = {k: _plain(v) for k, v in (cfg.kwargs or {}).items() if k != "batch_id"}
    result = dict(vr.result or {})
    out: dict[str, Any] = {"expectation": cfg.type, "kwargs": kwargs}
    if cfg.meta and cfg.meta.get("why"):
        out["why"] = cfg.meta["why"]
    for k in ("element_count", "unexpected_count", "unexpected_percent", "observed_value",
              "details"):
        if result.get(k) is not None:
            out[k] = _plain(result[k])
    if result.get("partial_unexpected_list"):
        out["examples"] = _plain(result["partial_unexpected_list"][:_MAX_EXAMPLES])
    if result.get("unexpected_index_list"):
        out["where"] = _plain(result["unexpected_index_list"][:_MAX_EXAMPLES])
    info = vr.exception_info or {}
    if info.get("raised_exception"):
        out["exception"] = str(info.get("exception_message"))
    return out


def _outcome(res: Any, failed: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    return {"success": bool(res.success), "failed": failed,
            "statistics": _plain(dict(res.statistics or {})), "seconds": round(seconds, 3)}


# --------------------------------------------------------------------------- public API


def validate_inputs(frames: dict[str, DataFrame], window: AuditWindow, config: Any = None,
                    sources: tuple[str, ...] = INPUT_SUITES) -> dict[str, dict[str, Any]]:
    """Run each input source's suite on its frame of valid canonical rows.

    Returns {source: {"success", "failed": [summaries], "statistics", "seconds"}}; a source
    absent from frames is reported as skipped (success true, "skipped": reason).
    """
    runner = _Runner()
    params = timestamp_bounds(window, config)
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        df = frames.get(source)
        if df is None:
            out[source] = {"success": True, "failed": [], "statistics": {}, "seconds": 0.0,
                           "skipped": "no frame for this source"}
            continue
        suite = load_suite_dict(source, config)
        t0 = time.monotonic()
        cached_here = not df.is_cached
        if cached_here:
            df = df.cache()
        try:
            res, failed = runner.validate(source, suite, df, params)
        finally:
            if cached_here:
                df.unpersist()
        out[source] = _outcome(res, failed, time.monotonic() - t0)
        out[source]["parameters"] = params
        log.info("GX suite %s: success=%s in %.1fs", source, res.success, out[source]["seconds"])
    return out


def results_rows(report: dict, config: Any = None) -> list[tuple]:
    """The small table the results suite checks, one row per (check, subject)."""
    from delivery_audit.report.verdict import threshold_checks

    rows: list[tuple] = []
    judged_by_topic = report.get("judged_by_topic")
    for gid, g in sorted((report.get("groups") or {}).items()):
        states = g.get("states") or {}
        topics_judged = None
        if isinstance(judged_by_topic, dict) and g.get("topics"):
            topics_judged = sum(int(judged_by_topic.get(t) or 0) for t in g["topics"])
        rows.append(("balance", str(gid), sum(int(v or 0) for v in states.values()),
                     int(g.get("judged") or 0), topics_judged, None, None, None, None))
    for name, a in (report.get("anomalies") or {}).items():
        count = int(a.get("count") or 0)
        by_topic = a.get("by_topic")
        by_topic_sum = sum(int(v or 0) for v in by_topic.values()) \
            if isinstance(by_topic, dict) else None
        rows.append(("anomaly", name, None, None, None, count, by_topic_sum, None, None))
        severity = a.get("severity") or getattr(BY_NAME.get(name), "severity", "info")
        if severity == "critical":
            rows.append(("critical", name, None, None, None, None, None, None, count))
    if config is not None:
        for c in threshold_checks(report, config):
            if c.fail is not None:
                subject = c.anomaly if c.scope == "*" else f"{c.anomaly} @ {c.scope}"
                rows.append(("threshold", subject, None, None, None, c.count, None,
                             int(c.fail), None))
    return rows


def validate_results(report: dict, config: Any, spark: SparkSession) -> dict[str, Any]:
    """Run the results suite on a DataFrame built from the report.

    Checks: per group the states sum to judged (and judged equals its topics' judged), counts
    are non-negative and equal their per-topic sums, every count within its fail threshold,
    critical anomalies = 0 unless ``allow_critical``.
    """
    suite = load_suite_dict(RESULTS_SUITE, config)
    rows = results_rows(report, config)
    t0 = time.monotonic()
    df = spark.createDataFrame(rows, RESULTS_SCHEMA).cache()
    try:
        params = {"critical_max": _UNBOUNDED if getattr(config, "allow_critical", False) else 0}
        res, failed = _Runner().validate(RESULTS_SUITE, suite, df, params, detail_format={
            "result_format": "COMPLETE", "unexpected_index_column_names": ["check", "subject"],
            "partial_unexpected_count": _MAX_EXAMPLES})
    finally:
        df.unpersist()
    out = _outcome(res, failed, time.monotonic() - t0)
    out["parameters"] = params
    return out


def write_results(results: dict, path: str | Path) -> Path:
    """Write validation results as JSON (creating the parent folder); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(_plain(results), indent=2, sort_keys=True) + "\n",
                   encoding="utf-8")
    os.replace(tmp, p)
    return p
