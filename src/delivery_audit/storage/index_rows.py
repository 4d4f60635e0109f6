"""The report root's index, its model: one row per published window and the spike rule.

``index.json`` is ``{"schema_version": "1.0", "generated_at", "spike_rule",
"anomalies": [names], "windows": [rows]}``, one row per window (key: the window id), sorted by
window start. A row's figures are copied from the window's ``report.json``: ``verdict`` and
``reasons`` (``verdict.*``), ``judged``, ``anomalies`` (name → ``anomalies.<name>.count``),
``headline`` (the first finding of ``narrative``: severity and title, or null); with
``start``, ``end``, ``relative_dir``, ``run_id`` and ``published_at`` (the manifest's
``written_at``), ``links`` (``html``, ``json``: relative to the root) and ``flags``.

**Spikes.** A window is flagged for an anomaly when its count is at least
:data:`SPIKE_FACTOR` × the median of the same anomaly over the up to :data:`SPIKE_HISTORY`
previous windows of the same length (at least :data:`SPIKE_MIN_HISTORY` of them), and at least
:data:`SPIKE_MIN_COUNT` (so 0 → 1 is not a spike, 0 → 5 is). Flags are derived: recomputed
over all rows at every write, so a backfill of an earlier window re-judges the later ones.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from ..core.timefmt import instant, now_z

SCHEMA_VERSION = "1.0"
SPIKE_FACTOR = 5  # a count ≥ this × the trailing median …
SPIKE_MIN_COUNT = 5  # … and at least this many (0 → 1 is not a spike)
SPIKE_HISTORY = 7  # the trailing median is over up to this many previous windows …
SPIKE_MIN_HISTORY = 3  # … of which at least this many (fewer: not judged)


class IndexUnreadable(ValueError):
    """index.json is not an index this version can read (it is then rebuilt)."""


def row_from_report(report: Any, rel: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The index row of a published window: its report.json's figures, its manifest's ids."""
    if not isinstance(report, dict):
        raise ValueError("report.json is not an object")
    window = _dict(report.get("window"))
    verdict = _dict(report.get("verdict"))
    anomalies = {str(name): _int(entry.get("count")) or 0
                 for name, entry in _dict(report.get("anomalies")).items()
                 if isinstance(entry, dict)}
    narrative = report.get("narrative")
    first = narrative[0] if isinstance(narrative, list) and narrative else None
    headline = ({"severity": _str(first.get("severity")), "title": _str(first.get("title"))}
                if isinstance(first, dict) else None)
    reasons = verdict.get("reasons")
    return {
        "window_id": str(manifest["window_id"]),
        "start": _str(window.get("start")),
        "end": _str(window.get("end")),
        "relative_dir": rel,
        "verdict": _str(verdict.get("verdict")),
        "reasons": [str(r) for r in reasons] if isinstance(reasons, list) else [],
        "judged": _int(report.get("judged")),
        "anomalies": anomalies,
        "headline": headline,
        "run_id": str(manifest["run_id"]),
        "published_at": str(manifest["written_at"]),
        "links": {"html": f"{rel}/report.html", "json": f"{rel}/report.json"},
        "flags": [],
    }


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _order(row: dict[str, Any]) -> tuple:
    start, end = instant(row.get("start")), instant(row.get("end"))
    return (start is None, start.timestamp() if start else 0.0,
            end.timestamp() if end else 0.0, row["window_id"])


def merge(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """rows with `row` in place of the row of its window (or added), sorted by window start."""
    return sorted([r for r in rows if r["window_id"] != row["window_id"]] + [row], key=_order)


def _length(row: dict[str, Any]) -> float | None:
    start, end = instant(row.get("start")), instant(row.get("end"))
    return (end - start).total_seconds() if start and end else None


def flag_spikes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """rows (sorted by start) with their ``flags``: [{anomaly, count, median, previous}]."""
    out = []
    for i, row in enumerate(rows):
        length = _length(row)
        previous = [r for r in rows[:i] if _length(r) == length][-SPIKE_HISTORY:]
        flags = []
        if len(previous) >= SPIKE_MIN_HISTORY:
            for name, count in row["anomalies"].items():
                median = statistics.median(r["anomalies"].get(name, 0) for r in previous)
                if count >= SPIKE_MIN_COUNT and count >= SPIKE_FACTOR * median:
                    flags.append({"anomaly": name, "count": count,
                                  "median": int(median) if median == int(median) else median,
                                  "previous": len(previous)})
        out.append({**row, "flags": flags})
    return out


def build_index(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The index document of these rows (flags recomputed)."""
    rows = flag_spikes(sorted(rows, key=_order))
    names: dict[str, None] = {}  # first appearance: report.json lists the catalogue's order
    for row in rows:
        names.update(dict.fromkeys(row["anomalies"]))
    return {"schema_version": SCHEMA_VERSION, "generated_at": now_z(),
            "spike_rule": {"factor": SPIKE_FACTOR, "min_count": SPIKE_MIN_COUNT,
                           "history": SPIKE_HISTORY, "min_history": SPIKE_MIN_HISTORY,
                           "compared_with": "previous windows of the same length"},
            "anomalies": list(names), "windows": rows}


def parse_rows(text: str | bytes) -> list[dict[str, Any]]:
    """The rows of an index.json; :class:`IndexUnreadable` unless it is one (1.x)."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexUnreadable(f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema_version", "")).startswith("1."):
        raise IndexUnreadable("not a 1.x index document")
    rows = doc.get("windows")
    if not isinstance(rows, list):
        raise IndexUnreadable("no list of windows")
    for i, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("window_id"), str)
                and isinstance(row.get("relative_dir"), str)
                and isinstance(row.get("anomalies"), dict)
                and all(_int(v) is not None for v in row["anomalies"].values())):
            raise IndexUnreadable(f"windows[{i}] is not an index row")
    if len({r["window_id"] for r in rows}) != len(rows):
        raise IndexUnreadable("a window is listed twice")
    return rows
