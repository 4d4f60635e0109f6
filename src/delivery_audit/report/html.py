"""The self-contained HTML report: one file, inline CSS, inline SVG charts drawn server-side.

No JavaScript and nothing fetched at view time. The template is rendered with autoescape on,
so every value from the data (keys, member ids, topics, error texts) is HTML-escaped; the
chart geometry is computed here as plain numbers and the template writes the SVG elements.

Size: the page's view models, one function per section (timelines, evidence tables,
transactions, latency against the SLA); the markup is in templates/.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined

from delivery_audit.anomalies import ANOMALIES, BY_NAME, SEVERITIES, STATES

from ..core.timefmt import instant

SEVERITY_COLOURS = {"critical": "#b91c1c", "high": "#ea580c", "medium": "#ca8a04",
                    "warning": "#d97706", "info": "#2563eb"}
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




# --------------------------------------------------------------------------- charts


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
        for name, units in sorted(parts, key=lambda p: _anomaly_index(p[0])):
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
                           "label": _num(round(ymax * frac))})
    grace = None
    if window_end is not None and start < window_end < end:
        grace = {"x": round(x_of(window_end), 2),
                 "w": round(left + plot_w - x_of(window_end), 2)}
    names = sorted({n for parts in per_hour.values() for n, _ in parts}, key=_anomaly_index)
    for f in findings:
        at, until = f["at_ts"], f["until_ts"]
        f["on_chart"] = start <= at < end
        if f["on_chart"]:
            f["x"] = round(x_of(at), 2)
            f["band_w"] = round(x_of(min(until, end)) - f["x"], 2) \
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
        dump = None
        if p.get("log_start") is not None and p.get("end") is not None:
            dump = {"x": x_of(int(p["log_start"])),
                    "w": round(x_of(int(p["end"])) - x_of(int(p["log_start"])), 2)}
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
                     "below_start": dump["x"] if dump and dump["x"] > 0 else 0,
                     "log_start": p.get("log_start"), "end": p.get("end"),
                     "counts": [(str(lane["anomaly"]), int(lane["units"])) for lane in lanes]})
    return {"width": width, "rows": rows,
            "legend": [{"name": n, "colour": ANOMALY_COLOURS.get(n, "#475569")}
                       for n in sorted(names, key=_anomaly_index)],
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


def _group_anomalies(groups: list[dict]) -> list[str]:
    """The per-group anomalies with a count in some group, in catalogue order."""
    names = {k for g in groups for k, v in g["anomalies"].items() if v}
    return sorted(names, key=_anomaly_index)


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


_SHOWN_LISTS = ("evictions", "advice", "timeline")
MAX_REBALANCES_LISTED = 50


def _label(key: str) -> str:
    """A figure's name in words; a duration's unit goes with its value (``_figure``)."""
    return (key[:-3] if key.endswith("_ms") else key).replace("_", " ")


def _figure(key: str, value: Any) -> str:
    if key.endswith("_ms") and isinstance(value, int | float) and not isinstance(value, bool):
        return _ms(value)
    return _num(value)


def _rebalance_rows(report: dict) -> list[dict]:
    """Per group: its figures on one line, the evictions and the advice as tables (shown
    whenever they exist), the rebalance timeline (collapsed) and any other list."""
    out = []
    for gid, r in sorted((report.get("rebalances") or {}).items()):
        if not isinstance(r, dict):
            out.append({"group_id": gid, "figures": [("value", _num(r))], "evictions": [],
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
                settings.append((k, _num(v.get("value")), str(v.get("from") or "")))
            else:
                settings.append((k, _num(v), ""))
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


def _remediation(report: dict) -> dict | None:
    """report.json's ``remediation`` with the commands the page shows (the offset resets'
    dry runs and the settings to change)."""
    from delivery_audit.remediation.commands import reset_command

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


# --------------------------------------------------------------------------- contract §9

MAX_OPEN_SHOWN = 20  # open transactions listed per partition on the page


def _transactions(report: dict) -> list[dict]:
    """report.json's ``transactions`` per (topic, partition) for the page: the counts, the
    open transactions (hanging ones first flagged) and how many hang."""
    out = []
    for t in report.get("transactions") or []:
        if not isinstance(t, dict):
            continue
        opened = [o for o in t.get("open_transactions") or [] if isinstance(o, dict)]
        out.append({
            "topic": t.get("topic"), "partition": t.get("partition"),
            **{k: {"transactions": _num((t.get(k) or {}).get("transactions")),
                   "records": _num((t.get(k) or {}).get("records"))}
               for k in ("committed", "aborted", "open")},
            "last_stable_offset": t.get("last_stable_offset"),
            "oldest_open": _ms(t.get("oldest_open_age_ms"))
            if t.get("oldest_open_age_ms") is not None else "–",
            "last_record_ts": t.get("last_record_ts"),
            # all of the partition's, not only the listed ones (report.json lists 100)
            "hanging": int(t.get("hanging_transactions")
                           or sum(1 for o in opened if o.get("hanging"))),
            "open_rows": [{"pid": o.get("pid"), "epoch": _num(o.get("producer_epoch")),
                           "first_offset": o.get("first_offset"),
                           "last_offset": o.get("last_offset"), "records": _num(o.get("records")),
                           "first_ts": o.get("first_ts") or "–",
                           "age": _ms(o.get("age_ms")), "lso": o.get("last_stable_offset"),
                           "hanging": bool(o.get("hanging"))} for o in opened[:MAX_OPEN_SHOWN]],
            "open_listed": len(opened),
        })
    return out


def _latency_sla(report: dict, insights: dict) -> list[dict]:
    """Per group with a latency SLA (or late deliveries): the SLA, its late_delivery count
    and the end-to-end latency figures of insights (broker timestamp → processed)."""
    e2e = (insights.get("latency") or {}).get("end_to_end_ms_by_group") or {}
    out = []
    for g, s in sorted((report.get("latency_sla") or {}).items()):
        if not isinstance(s, dict) or (s.get("sla_ms") is None and not s.get("late")):
            continue
        lat = e2e.get(g) or {}
        judged = ((report.get("groups") or {}).get(g) or {}).get("judged")
        late = int(s.get("late") or 0)
        out.append({"group_id": g, "sla": _ms(s.get("sla_ms")), "late": late,
                    "share": f"{late / judged:.2%}" if judged else "–",
                    "count": _num(lat.get("count")),
                    **{k: _ms(lat.get(k)) for k in ("p50", "p95", "p99", "max")},
                    "over": lat.get("p99") is not None and s.get("sla_ms") is not None
                    and float(lat["p99"]) > float(s["sla_ms"])})
    return out


def _at(e: dict) -> str:
    return f"{e.get('topic')} [{e.get('partition')}]" if e.get("partition") is not None \
        else str(e.get("topic") or "–")


def _opt(value: Any) -> str:
    return "–" if value is None else _num(value)


def _key(e: dict) -> str:
    return "–" if e.get("seq") is None else f"{e.get('key')} #{e.get('seq')}"


# per §9 anomaly: its evidence columns (label, the cell from report/transactions.evidence)
_EVIDENCE_COLUMNS: dict[str, list[tuple[str, Any]]] = {
    "aborted_read": [
        ("group", lambda e: e.get("group_id") or "–"), ("partition", _at),
        ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("pid", lambda e: _opt(e.get("pid"))), ("epoch", lambda e: _opt(e.get("epoch"))),
        ("marker offset", lambda e: _opt(e.get("marker_offset"))),
        ("isolation", lambda e: (e.get("isolation") or "unknown")
         + (f" ({e['isolation_from']})" if e.get("isolation_from") else "")),
        ("processed at", lambda e: e.get("ts") or "–")],
    "hanging_transaction": [
        ("partition", _at), ("pid", lambda e: _opt(e.get("pid"))),
        ("epoch", lambda e: _opt(e.get("epoch"))),
        ("first offset (last stable offset)", lambda e: _opt(e.get("first_offset"))),
        ("last offset", lambda e: _opt(e.get("last_offset"))),
        ("records", lambda e: _opt(e.get("records"))),
        ("first record", lambda e: e.get("ts") or "–"),
        ("age", lambda e: _ms(e.get("age_ms")))],
    "zombie_write": [
        ("partition", _at), ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("pid", lambda e: _opt(e.get("pid"))),
        ("epoch (fenced)", lambda e: _opt(e.get("epoch"))),
        ("newer epoch", lambda e: _opt(e.get("newer_epoch"))),
        ("newer epoch first at offset", lambda e: _opt(e.get("newer_offset"))),
        ("transaction", lambda e: e.get("outcome") or "–"),
        ("written at", lambda e: e.get("ts") or "–")],
    "late_delivery": [
        ("group", lambda e: e.get("group_id") or "–"), ("partition", _at),
        ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("judged at (sent)", lambda e: e.get("ts") or "–"),
        ("first processed", lambda e: e.get("processed_ts") or "–"),
        ("delay", lambda e: _ms(e.get("delay_ms"))), ("SLA", lambda e: _ms(e.get("sla_ms")))],
}


def _txn_evidence(insights: dict) -> list[dict]:
    """insights' ``transaction_evidence`` (report/transactions.py) as tables: per §9
    anomaly with rows, its evidence columns and the rows shown of its total."""
    data = insights.get("transaction_evidence") or {}
    out = []
    for name, cols in _EVIDENCE_COLUMNS.items():
        d = data.get(name)
        if not isinstance(d, dict) or not d.get("rows"):
            continue
        spec = BY_NAME.get(name)
        out.append({"name": name, "severity": spec.severity if spec else "info",
                    "columns": [c for c, _ in cols],
                    "rows": [[str(f(e)) for _, f in cols] for e in d["rows"]],
                    "total": int(d.get("total") or len(d["rows"]))})
    return out


def render_html(report: dict, insights: dict | None = None) -> str:
    """The report as one self-contained HTML document."""
    insights = insights or {}
    verdict = report.get("verdict") or {}
    if not isinstance(verdict, dict):
        verdict = {"verdict": str(verdict), "reasons": []}
    rows = anomaly_rows(report)
    groups = _group_rows(report)
    narrative = report.get("narrative") if isinstance(report.get("narrative"), list) else None
    txn_evidence = _txn_evidence(insights)
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
        "groups": groups,
        "group_anomalies": _group_anomalies(groups),
        "state_bars": state_bars(report),
        "rebalances": _rebalance_rows(report),
        "timeline": timeline_chart(insights, narrative=narrative),
        "offsets": offset_strips(insights),
        "remediation": _remediation(report),
        "heatmap": heatmap_chart(insights),
        "latency": latency_bars(insights),
        "latency_by_group": (insights.get("latency") or {}).get("end_to_end_ms_by_group") or {},
        "transactions": _transactions(report),
        "latency_sla": _latency_sla(report, insights),
        "txn_evidence": txn_evidence,
        # the Transactions section: the report has transactions, or transaction anomalies
        "txn_section": bool(report.get("transactions")) or any(
            a["name"] != "late_delivery" for a in txn_evidence),
        "top_keys": insights.get("top_keys") or [],
        "outputs": report.get("outputs") or {},
        "judged": report.get("judged"),
        "balance_ok": report.get("balance_ok"),
    }
    return _env().get_template(TEMPLATE).render(**ctx)
