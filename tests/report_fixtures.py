"""Builders of report dicts (the shape report/summary.py produces) for the report-side tests."""

from __future__ import annotations

import copy
from typing import Any

from delivery_audit.anomalies import ANOMALIES, STATES

EVIL = "<script>alert(1)</script>"


def make_report(*, counts: dict[str, int] | None = None,
                by_topic: dict[str, dict[str, int]] | None = None,
                groups: dict[str, dict[str, Any]] | None = None,
                topics: tuple[str, ...] = ("orders",), judged: int = 100,
                balance_ok: bool | None = None, verdict: dict | None = None) -> dict:
    """A consistent report: every catalogue anomaly present; counts on the first topic unless
    by_topic says otherwise; one group 'g1' that delivered everything once by default."""
    counts = counts or {}
    by_topic = by_topic or {}
    anomalies = {}
    for a in ANOMALIES:
        n = int(counts.get(a.name, 0))
        bt = by_topic.get(a.name) or ({topics[0]: n} if n else {})
        entry: dict[str, Any] = {"count": n, "severity": a.severity, "unit": a.unit,
                                 "per_group": a.per_group, "by_topic": bt}
        if a.per_group:
            entry["by_group"] = {"g1": n} if n else {}
        if a.name == "dup_write":
            entry["by_cause"] = {"producer_retry": n, "idempotence_breach": 0, "unknown": 0}
        if a.name == "redelivery":
            entry["by_cause"] = {"rebalance": n, "other": 0}
        anomalies[a.name] = entry
    per_topic = judged // len(topics)
    judged_by_topic = {t: per_topic for t in topics}
    judged_by_topic[topics[0]] += judged - per_topic * len(topics)
    if groups is None:
        states = {s: 0 for s in STATES}
        states["delivered_once"] = judged
        groups = {"g1": {"topics": list(topics), "judged": judged, "states": states,
                         "balance_ok": True,
                         "anomalies": {a.name: int(counts.get(a.name, 0))
                                       for a in ANOMALIES if a.per_group}}}
    if balance_ok is None:
        balance_ok = all(g.get("balance_ok", True) for g in groups.values())
    report = {
        "schema_version": "1.0",
        "run": {"run_id": "run-1", "started_at": "2025-01-02T01:05:00Z",
                "finished_at": "2025-01-02T01:06:00Z", "duration_s": 60.2,
                "tool_version": "0.1.0"},
        "window": {"start": "2025-01-01T00:00:00Z", "end": "2025-01-02T00:00:00Z",
                   "grace_minutes": 60.0, "id": "20250101T000000Z_20250102T000000Z",
                   "read_until": "2025-01-02T01:00:00Z"},
        "inputs": {src: {"rows_read": 10, "rows_valid": 9, "rows_quarantined": 1,
                         "rows_after_window": 0, "files": [f"/data/{src}.jsonl"]}
                   for src in ("sends", "broker", "ledger", "events")},
        "judged": judged,
        "judged_by_topic": judged_by_topic,
        "anomalies": anomalies,
        "groups": groups,
        "balance_ok": balance_ok,
        "verdict": verdict or {"verdict": "pass", "reasons": []},
        "outputs": {"report_json": "report.json", "report_html": "report.html"},
    }
    return report


def evil_report() -> dict:
    """A report whose data-derived strings (topic, group, member, key, reason) are markup."""
    r = make_report(counts={"dup_write": 2, "lost_acked": 1}, topics=(EVIL,))
    g = r["groups"].pop("g1")
    r["groups"][EVIL] = g
    r["verdict"] = {"verdict": "fail", "reasons": [f"lost_acked on topic {EVIL} = 1"]}
    r["rebalances"] = {EVIL: {"count": 2, "members_left": [EVIL]}}
    r["inputs"]["sends"]["files"] = [f"/data/{EVIL}.jsonl"]
    return r


def evil_insights() -> dict:
    return {
        "timeline": {"bucket": "hour", "start": "2025-01-01T00:00:00Z",
                     "end": "2025-01-02T00:00:00Z", "read_until": "2025-01-02T01:00:00Z",
                     "series": [{"hour": "2025-01-01T03:00:00Z", "anomaly": "dup_write",
                                 "units": 2},
                                {"hour": "2025-01-01T03:00:00Z", "anomaly": "lost_acked",
                                 "units": 1},
                                {"hour": "2025-01-01T07:00:00Z", "anomaly": "dup_write",
                                 "units": 5}],
                     "undated_units": 0, "outside_units": 0},
        "rebalance_markers": [{"group_id": EVIL, "minute": "2025-01-01T05:30:00Z",
                               "events": {"revoked": 2, "assigned": 2},
                               "members": [EVIL], "member_count": 1}],
        "heatmap": {"cells": [{"topic": EVIL, "partition": 0, "anomaly": "dup_write",
                               "units": 2},
                              {"topic": EVIL, "partition": 1, "anomaly": "lost_acked",
                               "units": 1}],
                    "partitions_total": 2, "partitions_shown": 2},
        "latency": {"produce_ms": {"count": 10, "p50": 4.0, "p95": 12.5, "p99": 40.0,
                                   "max": 88.0, "min": 1.0},
                    "end_to_end_ms": {"count": 9, "p50": 150.0, "p95": 1200.0, "p99": 4000.0,
                                      "max": 9000.0, "min": -3.0},
                    "end_to_end_ms_by_group": {EVIL: {"count": 9, "p50": 150.0, "p95": 1200.0,
                                                      "p99": 4000.0, "max": 9000.0,
                                                      "min": -3.0}}},
        "top_keys": [{"topic": EVIL, "key": EVIL, "units": 3, "rows": 3,
                      "anomalies": {"dup_write": 2, "lost_acked": 1},
                      "examples": [{"anomaly": "lost_acked", "severity": "critical",
                                    "units": 1, "member_id": EVIL, "partition": 1,
                                    "offset": 7, "detail": EVIL}]},
                     {"topic": "orders", "key": None, "units": 1, "rows": 1,
                      "anomalies": {"dup_write": 1}, "examples": []}],
    }


def with_(report: dict, **changes: Any) -> dict:
    r = copy.deepcopy(report)
    r.update(changes)
    return r
