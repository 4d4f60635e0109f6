"""The report root's ``index.html``: the index document (:mod:`.index`) as one self-contained
page: a table of the windows (newest first, each linking to its report.html and report.json),
the flagged spikes, and a trend chart per anomaly (inline SVG bars, one per window, oldest
first; a flagged window's bar in red).

Like report.html: no JavaScript, nothing fetched at view time; rendered by Jinja2 with
autoescape on (``templates/index.html.j2``), so every value from the data (window ids,
verdict reasons, finding titles, anomaly names) is HTML-escaped; the chart geometry is
computed here as plain numbers.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from importlib import resources
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FunctionLoader, StrictUndefined

from ..anomalies import BY_NAME
from ..core.timefmt import instant

TEMPLATE = "index.html.j2"
SEVERITY_COLOURS = {"critical": "#b91c1c", "high": "#ea580c", "medium": "#ca8a04",
                    "info": "#2563eb", "warning": "#ca8a04"}
BAR, SPIKE = "#2563eb", "#b91c1c"
# one chart: width, height and the plot's margins (left holds the y labels)
W, H, LEFT, RIGHT, TOP, BOTTOM = 560, 130, 52, 8, 10, 22


def _load_template(name: str) -> str:
    return resources.files("delivery_audit").joinpath("templates", name).read_text("utf-8")


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,}" if value == int(value) else f"{value:,.1f}"
    return str(value)


def _env() -> Environment:
    env = Environment(loader=FunctionLoader(_load_template), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    return env




def window_label(row: dict[str, Any]) -> str:
    """'2026-11-19' for a whole UTC day, '2026-11-19 10:00 → 12:00' otherwise."""
    start, end = instant(row.get("start")), instant(row.get("end"))
    if start is None or end is None:
        return row["window_id"]
    if end - start == timedelta(days=1) and start.time() == datetime.min.time():
        return start.strftime("%Y-%m-%d")
    tail = end.strftime("%H:%M") if end.date() == start.date() else end.strftime("%Y-%m-%d %H:%M")
    return f"{start:%Y-%m-%d %H:%M} → {tail}"


def _href(path: str) -> str:
    return quote(path, safe="/=")


def _chart(name: str, rows: list[dict[str, Any]], labels: list[str],
           flags: list[dict[str, dict]]) -> dict[str, Any]:
    counts = [r["anomalies"].get(name, 0) for r in rows]
    top = max(counts) or 1
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    slot = plot_w / max(len(rows), 1)
    width = max(1.0, slot * 0.7)
    bars = []
    for i, count in enumerate(counts):
        h = count / top * plot_h
        flag = flags[i].get(name)
        title = f"{labels[i]}: {name} {count:,}"
        if flag:
            title += (f" — spike: the median of the {flag['previous']} previous windows is "
                      f"{_num(flag['median'])}")
        bars.append({"x": round(LEFT + i * slot + (slot - width) / 2, 1),
                     "y": round(TOP + plot_h - h, 1), "w": round(width, 1),
                     "h": round(h, 1), "colour": SPIKE if flag else BAR, "title": title})
    spec = BY_NAME.get(name)
    severity = spec.severity if spec else None
    return {"name": name, "severity": severity,
            "colour": SEVERITY_COLOURS.get(severity or "", "#475569"),
            "width": W, "height": H, "bars": bars, "max": top, "total": sum(counts),
            "flagged": sum(1 for f in flags if name in f),
            "axis": {"x0": LEFT, "x1": W - RIGHT, "y0": TOP, "y1": TOP + plot_h},
            "first": labels[0] if labels else "", "last": labels[-1] if labels else "",
            "label_y": H - 6}


def page_context(doc: dict[str, Any]) -> dict[str, Any]:
    """What the template draws, from the index document."""
    rows = doc["windows"]
    names = doc["anomalies"]
    shown = [n for n in names if any(r["anomalies"].get(n, 0) for r in rows)]
    labels = [window_label(r) for r in rows]
    flags = [{f["anomaly"]: f for f in r["flags"]} for r in rows]
    table = []
    for i in reversed(range(len(rows))):
        r = rows[i]
        table.append({
            "label": labels[i], "window_id": r["window_id"], "verdict": r.get("verdict"),
            "reasons": r.get("reasons") or [], "judged": r.get("judged"),
            "headline": r.get("headline"), "html": _href(r["links"]["html"]),
            "json": _href(r["links"]["json"]), "flagged": bool(r["flags"]),
            "cells": [{"count": r["anomalies"].get(n, 0), "flag": flags[i].get(n)}
                      for n in shown]})
    spikes = [{"label": labels[i], "html": _href(rows[i]["links"]["html"]), **f}
              for i in reversed(range(len(rows))) for f in rows[i]["flags"]]
    verdicts = Counter(r.get("verdict") or "none" for r in rows)
    return {
        "generated_at": doc["generated_at"], "rule": doc["spike_rule"],
        "count": len(rows), "verdicts": dict(sorted(verdicts.items())),
        "shown": shown, "quiet": [n for n in names if n not in shown],
        "table": table, "spikes": spikes,
        "charts": [_chart(n, rows, labels, flags) for n in shown],
        "first": labels[0] if labels else None, "last": labels[-1] if labels else None,
    }


def render_index_html(doc: dict[str, Any]) -> str:
    return _env().get_template(TEMPLATE).render(**page_context(doc))
