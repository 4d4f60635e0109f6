"""report.html's tables as view models: the anomalies (with the catalogue's definitions),
the topic × anomaly matrix, the groups, the rebalance forensics per group, and the
remediation commands."""

from __future__ import annotations

from typing import Any

from ..anomalies import ANOMALIES, BY_NAME
from .html_style import anomaly_index, ms_text, num_text


def anomaly_rows(report: dict) -> list[dict]:
    anomalies = report.get("anomalies") or {}
    names = [a.name for a in ANOMALIES if a.name in anomalies] + sorted(
        n for n in anomalies if n not in BY_NAME)
    rows = []
    for n in names:
        a = anomalies.get(n) or {}
        spec = BY_NAME.get(n)
        sev = a.get("severity") or (spec.severity if spec else "info")
        rows.append({
            "name": n, "severity": sev, "count": int(a.get("count") or 0),
            "unit": a.get("unit") or (spec.unit if spec else ""),
            "per_group": bool(a.get("per_group", spec.per_group if spec else False)),
            "definition": spec.definition if spec else "",
            "by_cause": a.get("by_cause") or {},
            "by_topic": a.get("by_topic") or {}, "by_group": a.get("by_group") or {},
        })
    return rows


def topic_matrix(report: dict, rows: list[dict]) -> dict:
    active = [r["name"] for r in rows if r["count"] > 0]
    topics = sorted(set(report.get("judged_by_topic") or {})
                    | {t for r in rows for t in r["by_topic"]})
    return {"anomalies": active, "topics": [
        {"topic": t, "judged": (report.get("judged_by_topic") or {}).get(t),
         "counts": [int((next(r for r in rows if r["name"] == a)["by_topic"]).get(t) or 0)
                    for a in active]} for t in topics]}


def group_anomalies(groups: list[dict]) -> list[str]:
    """The per-group anomalies with a count in some group, in catalogue order."""
    names = {k for g in groups for k, v in g["anomalies"].items() if v}
    return sorted(names, key=anomaly_index)


def group_rows(report: dict) -> list[dict]:
    out = []
    for gid, g in sorted((report.get("groups") or {}).items()):
        states = g.get("states") or {}
        total = sum(int(v or 0) for v in states.values())
        out.append({"group_id": gid, "topics": g.get("topics") or [],
                    "judged": g.get("judged"), "states": states, "states_sum": total,
                    "balance_ok": g.get("balance_ok"),
                    "anomalies": {k: v for k, v in (g.get("anomalies") or {}).items() if v}})
    return out


_SHOWN_LISTS = ("evictions", "advice", "timeline")
MAX_REBALANCES_LISTED = 50


def _label(key: str) -> str:
    """A figure's name in words; a duration's unit goes with its value (``_figure``)."""
    return (key[:-3] if key.endswith("_ms") else key).replace("_", " ")


def _figure(key: str, value: Any) -> str:
    if key.endswith("_ms") and isinstance(value, int | float) and not isinstance(value, bool):
        return ms_text(value)
    return num_text(value)


def rebalance_rows(report: dict) -> list[dict]:
    """Per group: its figures on one line, the evictions and the advice as tables (shown
    whenever they exist), the rebalance timeline (collapsed) and any other list."""
    out = []
    for gid, r in sorted((report.get("rebalances") or {}).items()):
        if not isinstance(r, dict):
            out.append({"group_id": gid, "figures": [("value", num_text(r))], "evictions": [],
                        "advice": [], "timeline": [], "timeline_total": 0, "lists": {},
                        "settings": []})
            continue
        figures = [(_label(k), _figure(k, v)) for k, v in r.items()
                   if isinstance(v, str | int | float | bool) or v is None]
        for k, v in r.items():  # small objects: processing_ms {p50, p99, max}
            if isinstance(v, dict) and k != "settings" and all(
                    not isinstance(x, dict | list) for x in v.values()):
                figures += [(f"{_label(k)} {ik}", _figure(k, iv)) for ik, iv in v.items()]
        settings = []
        for k, v in (r.get("settings") or {}).items():
            if isinstance(v, dict):
                settings.append((k, num_text(v.get("value")), str(v.get("from") or "")))
            else:
                settings.append((k, num_text(v), ""))
        timeline = [t for t in (r.get("timeline") or []) if isinstance(t, dict)]
        out.append({
            "group_id": gid, "figures": figures, "settings": settings,
            "evictions": [e for e in (r.get("evictions") or []) if isinstance(e, dict)],
            "advice": [a for a in (r.get("advice") or []) if isinstance(a, dict)],
            "timeline": timeline[:MAX_REBALANCES_LISTED], "timeline_total": len(timeline),
            "lists": {k: (len(v), v[:10]) for k, v in r.items()
                      if isinstance(v, list) and k not in _SHOWN_LISTS},
        })
    return out


def remediation_section(report: dict) -> dict | None:
    """report.json's ``remediation`` with the commands the page shows (the offset resets'
    dry runs and the settings to change)."""
    # lazily: the remediation package imports pyarrow and, through report/transactions.py,
    # pyspark (1.4 s measured); this module needs none of that anywhere else
    from ..remediation.commands import reset_command

    rem = report.get("remediation")
    if not isinstance(rem, dict):
        return None
    lines = []
    for r in rem.get("offset_resets") or []:
        lines.append(reset_command(r))
    for c in rem.get("config_changes") or []:
        lines.append(f"{c.get('setting')}={c.get('advised')}    "
                     f"# group {c.get('group_id')}, currently {c.get('current')}")
    for c in rem.get("isolation_changes") or []:  # contract §9: aborted reads
        lines.append(f"{c.get('setting')}={c.get('advised')}    # group {c.get('group_id')}, "
                     f"currently {c.get('current')}: {c.get('aborted_reads')} aborted reads")
    for t in rem.get("transaction_commands") or []:  # contract §9: hanging transactions
        lines += [str(t.get("find_hanging")), str(t.get("abort"))]
    return {**rem, "lines": lines}
