"""The geometry of report.html's inline SVG charts, computed here as plain numbers (the
template writes the SVG elements): the anomaly timeline with its rebalance and finding
markers, the partition × anomaly heatmap, the offset strips, the delivery-state bars and
the latency bars."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from ..anomalies import STATES
from ..core.timefmt import instant
from .html_style import (
    ANOMALY_COLOURS,
    SEVERITY_COLOURS,
    STATE_COLOURS,
    anomaly_index,
    ms_text,
    num_text,
)


def timeline_chart(insights: dict, width: int = 1180, height: int = 260,
                   narrative: list | None = None) -> dict | None:
    """Stacked bars of anomaly units per hour, with rebalance markers as vertical lines and
    the narrative's findings (those with an ``at``) as labelled markers above the plot."""
    tl = insights.get("timeline") or {}
    start, end = instant(tl.get("start")), instant(tl.get("read_until") or tl.get("end"))
    window_end = instant(tl.get("end"))
    if start is None or end is None or end <= start:
        return None
    findings = narrative_markers(narrative)
    left, right, top, bottom = 56, 12, 30 if findings else 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    hours = max(1, math.ceil((end - start).total_seconds() / 3600))
    bar_w = plot_w / hours

    def x_of(ts: datetime) -> float:
        return left + (ts - start).total_seconds() / 3600 * bar_w

    per_hour: dict[datetime, list[tuple[str, int]]] = {}
    for s in tl.get("series") or []:
        h = instant(s.get("hour"))
        if h is not None:
            per_hour.setdefault(h, []).append((str(s.get("anomaly")), int(s.get("units") or 0)))
    ymax = max([sum(u for _, u in v) for v in per_hour.values()] or [0])
    scale = plot_h / ymax if ymax else 0
    bars = []
    for h, parts in sorted(per_hour.items()):
        y = top + plot_h
        for name, units in sorted(parts, key=lambda p: anomaly_index(p[0])):
            bh = units * scale
            y -= bh
            bars.append({"x": round(x_of(h) + 1, 2), "y": round(y, 2),
                         "w": round(max(bar_w - 2, 1), 2), "h": round(max(bh, 0.5), 2),
                         "colour": ANOMALY_COLOURS.get(name, "#475569"),
                         "title": f"{h:%Y-%m-%d %H:00} UTC — {name}: {units:,}"})
    markers = []
    for m in insights.get("rebalance_markers") or []:
        ts = instant(m.get("minute"))
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
                           "label": num_text(round(ymax * frac))})
    grace = None
    if window_end is not None and start < window_end < end:
        grace = {"x": round(x_of(window_end), 2),
                 "w": round(left + plot_w - x_of(window_end), 2)}
    names = sorted({n for parts in per_hour.values() for n, _ in parts}, key=anomaly_index)
    for f in findings:
        at, until = f["at_ts"], f["until_ts"]
        f["on_chart"] = start <= at < end
        if f["on_chart"]:
            f["x"] = round(x_of(at), 2)
            f["band_w"] = round(x_of(min(until, end)) - f["x"], 2)\
                if until is not None and until > at else 0
    lane_x: list[float] = []  # labels a few pixels apart go up a row
    for f in (f for f in findings if f["on_chart"]):
        row = sum(1 for x in lane_x if abs(x - f["x"]) < 22)
        f["label_y"] = top - 18 + 9 * (row % 2)
        lane_x.append(f["x"])
    return {"width": width, "height": height, "left": left, "top": top, "plot_w": plot_w,
            "plot_h": plot_h, "bars": bars, "markers": markers, "ticks": ticks,
            "yticks": yticks, "grace": grace, "empty": not bars, "findings": findings,
            "legend": [{"name": n, "colour": ANOMALY_COLOURS.get(n, "#475569")} for n in names],
            "undated": int(tl.get("undated_units") or 0),
            "outside": int(tl.get("outside_units") or 0)}


def narrative_markers(narrative: list | None) -> list[dict]:
    """The findings of report.json's ``narrative`` that have a parseable ``at``, in time
    order: id, severity (and its colour), the instant, ``until``, the title."""
    out = []
    for i, f in enumerate(narrative or []):
        if not isinstance(f, dict):
            continue
        at = instant(f.get("at"))
        if at is None:
            continue
        sev = str(f.get("severity") or "info")
        out.append({"id": str(f.get("id") or f"f{i + 1}"), "severity": sev,
                    "colour": SEVERITY_COLOURS.get(sev, "#475569"),
                    "at_ts": at, "until_ts": instant(f.get("until")),
                    "at": f"{at:%H:%M:%S}", "day": f"{at:%Y-%m-%d}",
                    "title": str(f.get("title") or f.get("cause") or ""),
                    "cause": str(f.get("cause") or "")})
    return sorted(out, key=lambda f: (f["at_ts"], f["id"]))


def heatmap_chart(insights: dict) -> dict | None:
    hm = insights.get("heatmap") or {}
    cells = hm.get("cells") or []
    if not cells:
        return None
    rows = sorted({(str(c["topic"]), int(c["partition"])) for c in cells},
                  key=lambda r: (r[0], r[1]))
    cols = sorted({str(c["anomaly"]) for c in cells}, key=anomaly_index)
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
        "width": label_w + len(cols) * cw + 70, "height": header_h + len(rows) * ch + 10,
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


def offset_strips(insights: dict, width: int = 1000, lane_h: int = 7, gap: int = 2
                  ) -> dict | None:
    """The offset strips' geometry from ``insights["offsets"]`` (report/offsets.py): per
    partition an SVG ``width`` units wide (scaled to the page), a lane per anomaly, the dump's
    range as the background and each bin of marked offsets as a mark."""
    data = insights.get("offsets") or {}
    parts = data.get("partitions") or []
    if not parts:
        return None
    bins = int(data.get("bins") or 240)
    unit = width / bins
    rows, names = [], set()
    for p in parts:
        lo, hi = int(p["lo"]), int(p["hi"])
        span = max(hi - lo, 1)

        def x_of(offset: int, lo: int = lo, span: int = span) -> float:
            return round((offset - lo) / span * width, 2)

        lanes = p.get("lanes") or []
        height = max(len(lanes), 1) * (lane_h + gap) + gap
        dump, start_x = None, 0.0
        if p.get("log_start") is not None and p.get("end") is not None:
            first = int(p.get("read_from", p["log_start"]))  # an offsets file's read (rule 26)
            dump = {"x": x_of(first), "w": round(x_of(int(p["end"])) - x_of(first), 2)}
            start_x = x_of(int(p["log_start"]))
        marks = []
        for i, lane in enumerate(lanes):
            name = str(lane["anomaly"])
            names.add(name)
            y = gap + i * (lane_h + gap)
            for b in lane.get("bins") or []:
                groups = ", ".join(b.get("groups") or [])
                if b.get("group_count", 0) > len(b.get("groups") or []):
                    groups += f" and {b['group_count'] - len(b['groups'])} more"
                where = (f"offset {b['from']:,}" if b["from"] == b["to"]
                         else f"offsets {b['from']:,}–{b['to']:,}")
                marks.append({"x": round(int(b["bin"]) * unit, 2), "y": y,
                              "w": round(max(unit, 2.0), 2), "h": lane_h,
                              "colour": ANOMALY_COLOURS.get(name, "#475569"),
                              "title": f"{name}{f' ({groups})' if groups else ''}: "
                                       f"{int(b['units']):,} at {where}"})
        rows.append({"topic": p["topic"], "partition": p["partition"], "lo": lo, "hi": hi,
                     "height": height, "dump": dump, "marks": marks,
                     "below_start": start_x if dump and start_x > 0 else 0,
                     "log_start": p.get("log_start"), "end": p.get("end"),
                     "read_from": p.get("read_from", p.get("log_start")),
                     "counts": [(str(lane["anomaly"]), int(lane["units"])) for lane in lanes]})
    return {"width": width, "rows": rows,
            "legend": [{"name": n, "colour": ANOMALY_COLOURS.get(n, "#475569")}
                       for n in sorted(names, key=anomaly_index)],
            "partitions_total": int(data.get("partitions_total") or len(rows))}


def state_bars(report: dict, width: int = 160, height: int = 14) -> dict[str, list[dict]]:
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
                         "value": ms_text(v)})
        out.append({"key": key, "label": label, "stats": stats, "bars": bars,
                    "width": width, "height": 4 + 4 * 22})
    return out
