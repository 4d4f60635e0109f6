"""How report.html writes its values and colours them: numbers and durations as text
(the template's ``num`` and ``ms`` filters), the colours of severities, delivery states and
anomalies, and the catalogue order the page lists anomalies in."""

from __future__ import annotations

import math
from typing import Any

from ..anomalies import ANOMALIES

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


def num_text(value: Any) -> str:
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


def ms_text(value: Any) -> str:
    if value is None:
        return "–"
    v = float(value)
    if abs(v) >= 60_000:
        return f"{v / 60_000:,.1f} min"
    if abs(v) >= 1000:
        return f"{v / 1000:,.2f} s"
    return f"{v:,.1f} ms"


def anomaly_index(name: str) -> int:
    names = [a.name for a in ANOMALIES]
    return names.index(name) if name in names else len(names)
