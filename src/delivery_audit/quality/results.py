"""The results suite: the report's small results table, validated by GX; results as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from delivery_audit.anomalies import BY_NAME
from delivery_audit.report.verdict import threshold_checks

from .runner import plain, validate_tables
from .suites import RESULTS_SUITE, load_suite_dict

_UNBOUNDED = 2**62
RESULTS_COLUMNS: tuple[str, ...] = ("check", "subject", "states_sum", "judged",
                                    "topics_judged", "count", "by_topic_sum", "fail_limit",
                                    "critical_count")


def results_rows(report: dict, config: Any = None) -> list[tuple]:
    """The small table the results suite checks, one row per (check, subject)."""
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
    return validate_tables(RESULTS_SUITE, load_suite_dict(RESULTS_SUITE, config),
                           {"metrics": (rows, ["check", "subject"])}, params)


def write_results(results: dict, path: str | Path) -> Path:
    """Write validation results as JSON (creating the parent folder); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(plain(results), indent=2, sort_keys=True) + "\n",
                   encoding="utf-8")
    os.replace(tmp, p)
    return p
