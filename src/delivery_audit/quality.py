"""Great Expectations (1.x) suites over small aggregates: no Spark job of their own.

Each input source is reduced to ONE row of metrics inside a Spark aggregation the audit already
runs (``metric_aggregates``: counts of rows with timestamps outside the plausible range, of
acks before their send, of null keys …, all built-in Spark functions). The driver adds the
ingestion figures (``rows_read``, ``rows_quarantined``, ``duplicates_quarantined``,
``by_topic``), derives shares from them, and GX validates those few numbers with a pandas
data source: ``expectations/<source>.json`` over the metric row (and, for expectations whose
``meta.table`` is ``"by_topic"``, over one row per topic the config names), and
``expectations/results.json`` over the report's small results table (``results_rows``).

Strict parsing (contract §2, §8) already guarantees required fields, enum values,
non-negative partitions/offsets, partition/offset of acked sends and unique broker offsets
on the valid rows; the suites check only what can still be wrong on valid rows.

Suite parameters (``$PARAMETER``): ``ts_min`` / ``ts_max`` (the plausible timestamp range:
window start − 3650 days, never before 2000-01-01, to read_until + 366 days; applied when the
metrics are aggregated) and the thresholds in ``THRESHOLD_DEFAULTS``; ``config.raw["quality"]``
overrides any of them. One ephemeral GX context serves the whole process (``_runner``); each
validation adds its own uniquely named asset, suite and validation definition, and removes
them afterwards.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from delivery_audit.anomalies import BY_NAME
from delivery_audit.schemas import FIELDS
from delivery_audit.window import AuditWindow, parse_instant

from .core.timefmt import iso_z_ms

log = logging.getLogger("delivery_audit.quality")

INPUT_SUITES: tuple[str, ...] = ("sends", "broker", "ledger", "events")
RESULTS_SUITE = "results"
EXPECTATIONS_ENV = "DELIVERY_AUDIT_EXPECTATIONS"
_TS_FLOOR = datetime(2000, 1, 1, tzinfo=UTC)
_UNBOUNDED = 2**62
_MAX_EXAMPLES = 5

# Suite parameters with their defaults; config.raw["quality"][name] overrides each.
THRESHOLD_DEFAULTS: dict[str, float] = {
    "null_key_share_max": 0.5,  # sends, broker: null keys / valid rows
    "null_seq_share_max": 0.5,  # broker: records without seq / valid rows
    "duplicate_share_max": 0.05,  # rule-5 duplicates / rows read
    "quarantined_share_max": 0.1,  # quarantined / rows read
    "topic_rows_min": 1,  # valid rows of every topic the config names for a group
}

# What is measured per source (column names of schemas.FIELDS).
TIMESTAMP_COLUMNS: dict[str, tuple[str, ...]] = {
    s: tuple(f.name for f in fields if f.kind == "timestamp") for s, fields in FIELDS.items()}
NULL_COUNTED: dict[str, tuple[str, ...]] = {"sends": ("key",), "broker": ("key", "seq")}
ORDERED_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "sends": (("ack_ts", "send_ts"),), "ledger": (("finished_ts", "started_ts"),)}
VOLUME_SOURCES: tuple[str, ...] = ("sends", "broker", "ledger")

RESULTS_COLUMNS: tuple[str, ...] = ("check", "subject", "states_sum", "judged",
                                    "topics_judged", "count", "by_topic_sum", "fail_limit",
                                    "critical_count")


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


def thresholds(config: Any = None) -> dict[str, float]:
    """The threshold suite parameters: THRESHOLD_DEFAULTS, overridden by config quality.*."""
    quality = _quality_cfg(config)
    out: dict[str, float] = {}
    for name, default in THRESHOLD_DEFAULTS.items():
        value = quality.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"quality.{name} must be a number, got {value!r}")
        out[name] = value
    return out


def suite_parameters(window: AuditWindow, config: Any = None) -> dict[str, Any]:
    """Every input-suite parameter: the timestamp bounds and the thresholds."""
    return {**timestamp_bounds(window, config), **thresholds(config)}


# --------------------------------------------------------------------------- metrics (Spark)


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
    aggs += [_count_where(F.col(c).isNull()).alias(f"{c}_nulls")
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
    from delivery_audit.collect import collect_all

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


# --------------------------------------------------------------------------- tables (pandas)


def _share(part: Any, whole: Any) -> float | None:
    """part / whole, or None when either is unknown or whole is 0."""
    if part is None or not whole:
        return None
    return float(part) / float(whole)


def _iso_ms(ms: Any) -> str | None:
    if ms is None:
        return None
    return iso_z_ms(ms)


def source_facts(source: str, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The one-row table a source's suite checks: the metric row, the ingestion figures and
    the shares derived from them (None where the figures are unknown; GX skips nulls)."""
    m = dict(metrics)
    rows = m.get("rows") if m.get("rows") is not None else m.get("rows_valid")
    facts: dict[str, Any] = {"source": source}
    facts.update({n: m.get(n) for n in metric_names(source) if not n.endswith("_ms")})
    facts["rows_read"] = m.get("rows_read")
    facts["rows_valid"] = m.get("rows_valid", rows)
    facts["rows_quarantined"] = m.get("rows_quarantined")
    facts["duplicates_quarantined"] = m.get("duplicates_quarantined")
    facts["quarantined_share"] = _share(m.get("rows_quarantined"), m.get("rows_read"))
    facts["duplicate_share"] = _share(m.get("duplicates_quarantined"), m.get("rows_read"))
    for c in NULL_COUNTED.get(source, ()):
        facts[f"{c}_null_share"] = _share(m.get(f"{c}_nulls"), rows)
    for c in TIMESTAMP_COLUMNS[source]:
        facts[f"{c}_earliest"] = _iso_ms(m.get(f"{c}_earliest_ms"))
        facts[f"{c}_latest"] = _iso_ms(m.get(f"{c}_latest_ms"))
    return facts


def expected_topics(config: Any, topics: Iterable[str] | None = None) -> list[str]:
    """Topics the config names for its groups (``groups.<id>.topics``), within ``topics``
    (the audited topics) when given."""
    named = {t for g in (getattr(config, "groups", None) or ()) for t in g.topics}
    if topics:
        named &= set(topics)
    return sorted(named)


def topic_facts(source: str, metrics: Mapping[str, Any],
                topics: list[str]) -> list[dict[str, Any]]:
    """One row per expected topic: its valid rows in this source (None if by_topic is
    unknown: nothing to judge). Only sends, broker and ledger are judged per topic."""
    if source not in VOLUME_SOURCES:
        return []
    by_topic = metrics.get("by_topic")
    return [{"topic": t, "topic_rows_valid":
             int(by_topic.get(t) or 0) if isinstance(by_topic, Mapping) else None}
            for t in topics]


def _pandas(rows: list[dict[str, Any]], columns: Iterable[str]):
    """A pandas frame of these rows; numeric columns as nullable Int64/Float64 so a missing
    value stays a null (GX skips it) and an integer stays an integer."""
    import pandas as pd

    columns = list(columns)
    pdf = pd.DataFrame(rows, columns=columns)
    for c in columns:
        values = [r.get(c) for r in rows]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            pdf[c] = pd.array(values, dtype="Int64")
        elif not present or all(isinstance(v, int | float) and not isinstance(v, bool)
                                for v in present):
            pdf[c] = pd.array(values, dtype="Float64")
    return pdf


# --------------------------------------------------------------------------- GX plumbing


class _Runner:
    """One ephemeral GX context with a pandas data source, shared by every validation of
    the process; each run adds uniquely named objects and removes them when done."""

    def __init__(self) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        logging.getLogger("great_expectations").setLevel(logging.WARNING)
        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        try:
            self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
            self.context.enable_analytics(False)
        except Exception:  # noqa: BLE001 - cosmetic only
            pass
        self.data_source = self.context.data_sources.add_pandas(name="delivery_audit")
        self._lock = threading.Lock()
        self._runs = 0

    def run(self, label: str, expectations: list[dict], pdf: Any, parameters: dict[str, Any],
            index_columns: list[str]) -> Any:
        """Validate ``pdf`` against these expectations (result format COMPLETE, unexpected
        rows named by ``index_columns``)."""
        from great_expectations.core.expectation_suite import ExpectationSuite

        with self._lock:
            self._runs += 1
            name = f"{label}-{self._runs}"
            asset = self.data_source.add_dataframe_asset(name=name)
            try:
                batch_definition = asset.add_batch_definition_whole_dataframe(f"{name}-whole")
                suite = self.context.suites.add(ExpectationSuite(name=name,
                                                                 expectations=expectations))
                vd = self.context.validation_definitions.add(
                    self.gx.ValidationDefinition(name=name, data=batch_definition, suite=suite))
                try:
                    return vd.run(batch_parameters={"dataframe": pdf},
                                  expectation_parameters=parameters,
                                  result_format={"result_format": "COMPLETE",
                                                 "unexpected_index_column_names": index_columns,
                                                 "partial_unexpected_count": _MAX_EXAMPLES})
                finally:
                    self.context.validation_definitions.delete(name)
                    self.context.suites.delete(name)
            finally:
                self.data_source.delete_asset(name)


_RUNNER: _Runner | None = None
_RUNNER_LOCK = threading.Lock()


def _runner() -> _Runner:
    """The process's GX runner, created on first use."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = _Runner()
        return _RUNNER


_PREPARING: threading.Thread | None = None


def prepare_in_background() -> None:
    """Import GX and make its context in a thread, once per process: seconds of Python
    imports that overlap the Spark JVM's start (call it before the session) instead of
    adding to the audit (the first validation waits for it through the runner's lock)."""
    global _PREPARING

    def prepare() -> None:
        try:
            _runner()
        except Exception:  # noqa: BLE001 - the validation itself raises it, in its place
            log.debug("preparing GX in the background failed", exc_info=True)

    with _RUNNER_LOCK:
        if _PREPARING is not None or _RUNNER is not None:
            return
        _PREPARING = threading.Thread(target=prepare, name="gx-prepare", daemon=True)
    _PREPARING.start()


def _plain(value: Any) -> Any:
    """JSON-safe, short (numpy and pandas scalars as Python values, NaN/NA as None)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return _plain(value.item())
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return str(value)


def _whole(value: Any) -> Any:
    """An integral float as an int (3.0 → 3), anything else unchanged."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _summarise(vr: Any, facts: list[dict[str, Any]], index_columns: list[str],
               parameters: dict[str, Any]) -> dict[str, Any]:
    """A failed expectation for people: which metric, the observed value(s), the allowed
    range, why it matters, and the rows (topic, or check/subject) that broke it."""
    cfg = vr.expectation_config
    meta = {k: v for k, v in (cfg.meta or {}).items() if not k.startswith("_")}
    kwargs = {k: _plain(v) for k, v in (cfg.kwargs or {}).items() if k != "batch_id"}
    result = dict(vr.result or {})
    out: dict[str, Any] = {"expectation": cfg.type}
    column = kwargs.get("column")
    if column:
        out["metric"] = column
    if meta.get("why"):
        out["why"] = meta["why"]
    if "min_value" in kwargs or "max_value" in kwargs:  # GX gives them back as floats
        out["allowed"] = {"min": _whole(kwargs.get("min_value")),
                          "max": _whole(kwargs.get("max_value"))}
    one_row = len(facts) == 1 and index_columns == ["source"]
    where = _plain(result.get("unexpected_index_list") or [])[:_MAX_EXAMPLES]
    if column and one_row:
        out["observed"] = _plain(facts[0].get(column))
    elif column and len(index_columns) == 1:
        out["observed"] = {str(w.get(index_columns[0])): w.get(column) for w in where}
    out["kwargs"] = kwargs
    for k in ("element_count", "unexpected_count", "observed_value", "details"):
        if result.get(k) is not None and not (one_row and k.endswith("_count")):
            out[k] = _plain(result[k])
    if result.get("partial_unexpected_list") and not one_row:
        out["examples"] = _plain(result["partial_unexpected_list"][:_MAX_EXAMPLES])
    if where and not one_row:
        out["where"] = where
    context = meta.get("context") or []
    if context and one_row:
        out["context"] = {name: _plain(facts[0].get(name, parameters.get(name)))
                          for name in context}
    info = vr.exception_info or {}
    if info.get("raised_exception"):
        out["exception"] = str(info.get("exception_message"))
    return out


def _validate_tables(label: str, suite: dict, tables: dict[str, tuple[list[dict], list[str]]],
                     parameters: dict[str, Any]) -> dict[str, Any]:
    """Run a suite whose expectations name their table in ``meta.table`` (default
    "metrics") over ``tables`` ({table: (rows, index columns)}), one GX validation per
    table; failures in suite order."""
    t0 = time.monotonic()
    indexed = [dict(e, meta={**(e.get("meta") or {}), "_index": i})
               for i, e in enumerate(suite.get("expectations") or [])]
    results: list[tuple[int, Any, str]] = []  # (suite position, result, table)
    for table, (rows, index_columns) in tables.items():
        exps = [e for e in indexed if (e["meta"].get("table") or "metrics") == table]
        if not exps:
            continue
        columns = dict.fromkeys(index_columns)
        for r in rows:
            columns.update(dict.fromkeys(r))
        for e in exps:
            kw = e.get("kwargs") or {}
            columns.update(dict.fromkeys(c for c in (kw.get("column"), kw.get("column_A"),
                                                      kw.get("column_B")) if c))
        res = _runner().run(f"{label}-{table}", exps, _pandas(rows, columns), parameters,
                            index_columns)
        results += [(int(r.expectation_config.meta.get("_index", -1)), r, table)
                    for r in res.results]
    results.sort(key=lambda x: x[0])
    failed = [_summarise(r, *tables[table], parameters)
              for _, r, table in results if not r.success]
    evaluated = len(results)
    statistics = {"evaluated_expectations": evaluated,
                  "successful_expectations": evaluated - len(failed),
                  "unsuccessful_expectations": len(failed),
                  "success_percent": 100.0 * (evaluated - len(failed)) / evaluated
                  if evaluated else None}
    return {"success": not failed, "failed": failed, "statistics": statistics,
            "seconds": round(time.monotonic() - t0, 3), "parameters": _plain(parameters)}


# --------------------------------------------------------------------------- public API


def validate_inputs(metrics: Mapping[str, Any], window: AuditWindow, config: Any = None,
                    sources: tuple[str, ...] = INPUT_SUITES, *,
                    topics: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run each input source's suite on its metrics (no Spark job).

    ``metrics[source]``: the collected ``metric_aggregates`` row plus ``rows_read``,
    ``rows_valid``, ``rows_quarantined``, ``duplicates_quarantined`` and ``by_topic``
    ({topic: valid rows}); a figure left out leaves the expectations on it unjudged (plain
    frames: ``input_metrics`` computes their metrics in one Spark action). ``topics``: the audited
    topics, if the audit is restricted to some (expected topics outside them are not judged).

    Returns {source: {"success", "failed": [summaries], "statistics", "seconds",
    "parameters"}}; a source absent from metrics is reported as skipped (success true,
    "skipped": reason).
    """
    params = suite_parameters(window, config)
    wanted = expected_topics(config, topics)
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        m = metrics.get(source)
        if m is None:
            out[source] = {"success": True, "failed": [], "statistics": {}, "seconds": 0.0,
                           "skipped": "no metrics for this source"}
            continue
        tables = {"metrics": ([source_facts(source, m)], ["source"]),
                  "by_topic": (topic_facts(source, m, wanted), ["topic"])}
        out[source] = _validate_tables(source, load_suite_dict(source, config), tables,
                                       params)
        log.info("GX suite %s: success=%s in %.3fs", source, out[source]["success"],
                 out[source]["seconds"])
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


def validate_results(report: dict, config: Any, spark: Any = None) -> dict[str, Any]:
    """Run the results suite on the report's results table (pandas; no Spark job).

    Checks: per group the states sum to judged (and judged equals its topics' judged), counts
    are non-negative and equal their per-topic sums, every count within its fail threshold,
    critical anomalies = 0 unless ``allow_critical``. ``spark`` is unused (kept for callers).
    """
    rows = [dict(zip(RESULTS_COLUMNS, r, strict=True)) for r in results_rows(report, config)]
    params = {"critical_max": _UNBOUNDED if getattr(config, "allow_critical", False) else 0}
    return _validate_tables(RESULTS_SUITE, load_suite_dict(RESULTS_SUITE, config),
                            {"metrics": (rows, ["check", "subject"])}, params)


def write_results(results: dict, path: str | Path) -> Path:
    """Write validation results as JSON (creating the parent folder); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(_plain(results), indent=2, sort_keys=True) + "\n",
                   encoding="utf-8")
    os.replace(tmp, p)
    return p
