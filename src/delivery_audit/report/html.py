"""The self-contained HTML report: one file, inline CSS, inline SVG charts drawn server-side.

No JavaScript and nothing fetched at view time. The template is rendered with autoescape on,
so every value from the data (keys, member ids, topics, error texts) is HTML-escaped; the
chart geometry is computed here as plain numbers and the template writes the SVG elements.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined

from delivery_audit.anomalies import ANOMALIES, BY_NAME, SEVERITIES, STATES

SEVERITY_COLOURS = {"critical": "#b91c1c", "high": "#ea580c", "medium": "#ca8a04",
                    "info": "#2563eb"}
STATE_COLOURS = {
    "delivered_once": "#16a34a", "delivered_duplicate": "#f59e0b", "lost_acked": "#7f1d1d",
    "lost_unacked": "#dc2626", "skipped": "#9333ea", "expired_unconsumed": "#be185d",
    "pending": "#64748b",
}
PALETTE = ("#b91c1c", "#f97316", "#eab308", "#0ea5e9", "#7c3aed", "#db2777", "#14b8a6",
           "#84cc16", "#6366f1", "#f43f5e", "#0891b2", "#a16207", "#4d7c0f", "#9333ea",
           "#475569", "#be123c")
ANOMALY_COLOURS = {a.name: PALETTE[i % len(PALETTE)] for i, a in enumerate(ANOMALIES)}
TEMPLATE = "report.html.j2"


def _load_template(name: str) -> str:
    return resources.files("delivery_audit").joinpath("templates", name).read_text("utf-8")


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"
    return str(value)


def _ms(value: Any) -> str:
    if value is None:
        return "–"
    v = float(value)
    if abs(v) >= 60_000:
        return f"{v / 60_000:,.1f} min"
    if abs(v) >= 1000:
        return f"{v / 1000:,.2f} s"
    return f"{v:,.1f} ms"


def _env() -> Environment:
    env = Environment(loader=FunctionLoader(_load_template), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["ms"] = _ms
    return env


def _parse_ts(value: Any) -> datetime | None:
    """An aware UTC datetime (naive values are taken as UTC), or None."""
    if isinstance(value, datetime):
        dt = value
    elif not value:
        return None
    else:
        try:
            s = str(value)
            dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


# --------------------------------------------------------------------------- charts


def timeline_chart(insights: dict, width: int = 1100, height: int = 260) -> dict | None:
    """Stacked bars of anomaly units per hour, with rebalance markers as vertical lines."""
    tl = insights.get("timeline") or {}
    start, end = _parse_ts(tl.get("start")), _parse_ts(tl.get("read_until") or tl.get("end"))
    window_end = _parse_ts(tl.get("end"))
    if start is None or end is None or end <= start:
        return None
    left, right, top, bottom = 56, 12, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    hours = max(1, math.ceil((end - start).total_seconds() / 3600))
    bar_w = plot_w / hours

    def x_of(ts: datetime) -> float:
        return left + (ts - start).total_seconds() / 3600 * bar_w

    per_hour: dict[datetime, list[tuple[str, int]]] = {}
    for s in tl.get("series") or []:
        h = _parse_ts(s.get("hour"))
        if h is not None:
            per_hour.setdefault(h, []).append((str(s.get("anomaly")), int(s.get("units") or 0)))
    ymax = max([sum(u for _, u in v) for v in per_hour.values()] or [0])
    scale = plot_h / ymax if ymax else 0
    bars = []
    for h, parts in sorted(per_hour.items()):
        y = top + plot_h
        for name, units in sorted(parts, key=lambda p: _anomaly_index(p[0])):
            bh = units * scale
            y -= bh
            bars.append({"x": round(x_of(h) + 1, 2), "y": round(y, 2),
                         "w": round(max(bar_w - 2, 1), 2), "h": round(max(bh, 0.5), 2),
                         "colour": ANOMALY_COLOURS.get(name, "#475569"),
                         "title": f"{h:%Y-%m-%d %H:00} UTC — {name}: {units:,}"})
    markers = []
    for m in insights.get("rebalance_markers") or []:
        ts = _parse_ts(m.get("minute"))
        if ts is None or not (start <= ts < end):
            continue
        events = ", ".join(f"{k}×{v}" for k, v in (m.get("events") or {}).items())
        members = ", ".join(m.get("members") or [])
        markers.append({"x": round(x_of(ts), 2),
                        "title": f"{ts:%Y-%m-%d %H:%M} UTC — group {m.get('group_id')}: "
                                 f"{events}" + (f" (members: {members})" if members else "")})
    step = max(1, math.ceil(hours / 12))
    ticks = []
    for i in range(0, hours + 1, step):
        ts = start + timedelta(hours=i)
        ticks.append({"x": round(left + i * bar_w, 2),
                      "label": f"{ts:%H:%M}" if i % 24 or i == 0 else f"{ts:%m-%d}"})
    yticks = []
    if ymax:
        for frac in (0, 0.5, 1):
            yticks.append({"y": round(top + plot_h - frac * plot_h, 2),
                           "label": _num(round(ymax * frac))})
    grace = None
    if window_end is not None and start < window_end < end:
        grace = {"x": round(x_of(window_end), 2),
                 "w": round(left + plot_w - x_of(window_end), 2)}
    names = sorted({n for parts in per_hour.values() for n, _ in parts}, key=_anomaly_index)
    return {"width": width, "height": height, "left": left, "top": top, "plot_w": plot_w,
            "plot_h": plot_h, "bars": bars, "markers": markers, "ticks": ticks,
            "yticks": yticks, "grace": grace, "empty": not bars,
            "legend": [{"name": n, "colour": ANOMALY_COLOURS.get(n, "#475569")} for n in names],
            "undated": int(tl.get("undated_units") or 0),
            "outside": int(tl.get("outside_units") or 0)}


def _anomaly_index(name: str) -> int:
    names = [a.name for a in ANOMALIES]
    return names.index(name) if name in names else len(names)


def heatmap_chart(insights: dict) -> dict | None:
    hm = insights.get("heatmap") or {}
    cells = hm.get("cells") or []
    if not cells:
        return None
    rows = sorted({(str(c["topic"]), int(c["partition"])) for c in cells},
                  key=lambda r: (r[0], r[1]))
    cols = sorted({str(c["anomaly"]) for c in cells}, key=_anomaly_index)
    value = {(str(c["topic"]), int(c["partition"]), str(c["anomaly"])): int(c["units"])
             for c in cells}
    vmax = max(value.values()) or 1
    label_w, header_h, cw, ch = 180, 120, 46, 20
    out_cells = []
    for i, (topic, part) in enumerate(rows):
        for j, name in enumerate(cols):
            v = value.get((topic, part, name), 0)
            t = math.log1p(v) / math.log1p(vmax) if v else 0.0
            out_cells.append({
                "x": label_w + j * cw, "y": header_h + i * ch, "w": cw - 2, "h": ch - 2,
                "fill": _heat(t), "value": v, "dark": t > 0.55,
                "title": f"{topic} [{part}] — {name}: {v:,}"})
    return {
        "width": label_w + len(cols) * cw + 10, "height": header_h + len(rows) * ch + 10,
        "label_w": label_w, "header_h": header_h, "cw": cw, "ch": ch,
        "rows": [{"y": header_h + i * ch + ch / 2 + 4, "label": f"{t} [{p}]"}
                 for i, (t, p) in enumerate(rows)],
        "cols": [{"x": label_w + j * cw + cw / 2, "label": n} for j, n in enumerate(cols)],
        "cells": out_cells,
        "partitions_total": hm.get("partitions_total", len(rows)),
        "partitions_shown": hm.get("partitions_shown", len(rows)),
    }


def _heat(t: float) -> str:
    """White → amber → dark red."""
    if t <= 0:
        return "#f8fafc"
    stops = [(0.0, (254, 243, 199)), (0.5, (249, 115, 22)), (1.0, (127, 29, 29))]
    for (t0, c0), (t1, c1) in zip(stops, stops[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            r, g, b = (round(a + (b_ - a) * f) for a, b_ in zip(c0, c1, strict=True))
            return f"#{r:02x}{g:02x}{b:02x}"
    return "#7f1d1d"


def state_bars(report: dict, width: int = 420, height: int = 16) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for gid, g in (report.get("groups") or {}).items():
        states = g.get("states") or {}
        total = sum(int(v or 0) for v in states.values())
        x = 0.0
        segs = []
        for s in list(STATES) + sorted(k for k in states if k not in STATES):
            v = int(states.get(s) or 0)
            if v <= 0 or not total:
                continue
            w = v / total * width
            segs.append({"x": round(x, 2), "w": round(max(w, 0.5), 2),
                         "colour": STATE_COLOURS.get(s, "#94a3b8"),
                         "title": f"{s}: {v:,} ({v / total:.1%})"})
            x += w
        out[str(gid)] = segs
    return out


def latency_bars(insights: dict, width: int = 360) -> list[dict]:
    lat = insights.get("latency") or {}
    out = []
    for key, label in (("produce_ms", "Produce (send → ack)"),
                       ("end_to_end_ms", "End to end (broker timestamp → processed)")):
        stats = lat.get(key)
        if not stats or not stats.get("count"):
            continue
        vmax = max(float(stats.get(k) or 0) for k in ("p50", "p95", "p99", "max")) or 1.0
        bars = []
        for i, k in enumerate(("p50", "p95", "p99", "max")):
            v = stats.get(k)
            w = max(float(v or 0), 0) / vmax * (width - 140)
            bars.append({"y": 4 + i * 22, "w": round(max(w, 1), 2), "label": k,
                         "value": _ms(v)})
        out.append({"key": key, "label": label, "stats": stats, "bars": bars,
                    "width": width, "height": 4 + 4 * 22})
    return out


# --------------------------------------------------------------------------- tables


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


def _topic_matrix(report: dict, rows: list[dict]) -> dict:
    active = [r["name"] for r in rows if r["count"] > 0]
    topics = sorted(set(report.get("judged_by_topic") or {})
                    | {t for r in rows for t in r["by_topic"]})
    return {"anomalies": active, "topics": [
        {"topic": t, "judged": (report.get("judged_by_topic") or {}).get(t),
         "counts": [int((next(r for r in rows if r["name"] == a)["by_topic"]).get(t) or 0)
                    for a in active]} for t in topics]}


def _group_rows(report: dict) -> list[dict]:
    out = []
    for gid, g in sorted((report.get("groups") or {}).items()):
        states = g.get("states") or {}
        total = sum(int(v or 0) for v in states.values())
        out.append({"group_id": gid, "topics": g.get("topics") or [],
                    "judged": g.get("judged"), "states": states, "states_sum": total,
                    "balance_ok": g.get("balance_ok"),
                    "anomalies": {k: v for k, v in (g.get("anomalies") or {}).items() if v}})
    return out


def _rebalance_rows(report: dict) -> list[dict]:
    out = []
    for gid, r in sorted((report.get("rebalances") or {}).items()):
        if isinstance(r, dict):
            scalars = {k: v for k, v in r.items() if isinstance(v, str | int | float | bool)
                       or v is None}
            lists = {k: v for k, v in r.items() if isinstance(v, list)}
            out.append({"group_id": gid, "scalars": scalars,
                        "lists": {k: (len(v), v[:10]) for k, v in lists.items()}})
        else:
            out.append({"group_id": gid, "scalars": {"value": r}, "lists": {}})
    return out


def render_html(report: dict, insights: dict | None = None) -> str:
    """The report as one self-contained HTML document."""
    insights = insights or {}
    verdict = report.get("verdict") or {}
    if not isinstance(verdict, dict):
        verdict = {"verdict": str(verdict), "reasons": []}
    rows = anomaly_rows(report)
    ctx = {
        "report": report,
        "run": report.get("run") or {},
        "window": report.get("window") or {},
        "verdict": verdict.get("verdict") or "unknown",
        "reasons": verdict.get("reasons") or [],
        "inputs": report.get("inputs") or {},
        "anomaly_rows": rows,
        "severities": SEVERITIES,
        "severity_colours": SEVERITY_COLOURS,
        "state_names": STATES,
        "state_colours": STATE_COLOURS,
        "topic_matrix": _topic_matrix(report, rows),
        "groups": _group_rows(report),
        "state_bars": state_bars(report),
        "rebalances": _rebalance_rows(report),
        "timeline": timeline_chart(insights),
        "heatmap": heatmap_chart(insights),
        "latency": latency_bars(insights),
        "latency_by_group": (insights.get("latency") or {}).get("end_to_end_ms_by_group") or {},
        "top_keys": insights.get("top_keys") or [],
        "outputs": report.get("outputs") or {},
        "judged": report.get("judged"),
        "balance_ok": report.get("balance_ok"),
    }
    return _env().get_template(TEMPLATE).render(**ctx)
