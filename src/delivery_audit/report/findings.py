"""A finding of the narrative: the shared schema (report.json ``narrative``), how findings
are ordered, and the prose helpers every finding's text uses (numbers, instants, offsets).

A finding::

    {"id": "f1", "severity": "critical|warning|info", "at": ISO Z | None, "until": ISO Z | None,
     "cause": "eviction|rebalance_storm|producer_retry|acks_loss|...",
     "anomalies": {"redelivery": 101, ...}, "group": str | None, "topic": str | None,
     "members": [...], "title": "one line", "text": "the sentences with the numbers",
     "fix": str | None, "evidence": [{"label": ..., "href": "#anchor" | "relative/path"}],
     "breakdown": [{"group": ..., "topic": ..., "anomalies": {...}}]}

``severity`` is the catalogue severity of the finding's worst anomaly as the verdict reads
it: critical fails the run (critical), high warns (warning), medium and info pass (medium
is still a warning here: it asks for a change; info does not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..anomalies import BY_NAME, SEVERITIES
from ..core.timefmt import epoch_ms, iso_z_ms

FINDING_SEVERITY = {"critical": "critical", "high": "warning", "medium": "warning",
                    "info": "info"}

# report.html's sections a finding points to (ids of templates/report.html.j2)
SECTION = {"anomalies": "#anomalies", "topics": "#topics", "groups": "#groups",
           "timeline": "#timeline", "partitions": "#heatmap", "keys": "#top-keys"}
ANOMALY_ROWS = "anomalies/"  # the published anomaly table, beside report.html


@dataclass
class Finding:
    cause: str
    anomalies: dict[str, int]
    title: str
    text: str
    fix: str | None = None
    at: int | None = None  # epoch ms
    until: int | None = None
    group: str | None = None
    topic: str | None = None
    members: list[str] = field(default_factory=list)
    evidence: list[tuple[str, str]] = field(default_factory=list)
    breakdown: list[dict[str, Any]] = field(default_factory=list)
    floor: str = "info"  # the lowest catalogue severity, whatever the anomalies

    def rank(self) -> int:
        """The catalogue severity rank (0 critical … 3 info) of its worst anomaly."""
        ranks = [SEVERITIES.index(BY_NAME[a].severity) for a, n in self.anomalies.items()
                 if n and a in BY_NAME]  # an anomaly outside the catalogue: by ``floor``
        return min([*ranks, SEVERITIES.index(self.floor)])

    def order(self) -> tuple:
        return (self.rank(), self.at is None, self.at or 0, self.cause, self.group or "",
                self.topic or "")

    def as_dict(self, number: int) -> dict[str, Any]:
        return {
            "id": f"f{number}",
            "severity": FINDING_SEVERITY[SEVERITIES[self.rank()]],
            "at": iso(self.at), "until": iso(self.until), "cause": self.cause,
            "anomalies": {k: int(v) for k, v in self.anomalies.items() if v},
            "group": self.group, "topic": self.topic, "members": list(self.members),
            "title": self.title, "text": self.text, "fix": self.fix,
            "evidence": [{"label": label, "href": href} for label, href in self.evidence],
            "breakdown": self.breakdown,
        }


def ordered(findings: list[Finding]) -> list[dict[str, Any]]:
    """The findings as report.json's list: by severity, then time; ids f1, f2, …"""
    return [f.as_dict(i) for i, f in enumerate(sorted(findings, key=Finding.order), 1)]


# ---------------------------------------------------------------------------- prose


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return iso_z_ms(ms, "milliseconds")


def ms_of(value: Any) -> int | None:
    """An ISO-8601 instant (``Z`` or an offset; naive = UTC) as epoch ms; None if not one."""
    return epoch_ms(value)


class Clock:
    """Instants for prose: the time of day on the window's first day, else date and time."""

    def __init__(self, window_start: Any) -> None:
        ms = ms_of(window_start)
        self.day = None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).date()

    def __call__(self, ms: int | None) -> str:
        if ms is None:
            return "?"
        dt = datetime.fromtimestamp(ms / 1000, UTC)
        return f"{dt:%H:%M:%S}" if dt.date() == self.day else f"{dt:%Y-%m-%d %H:%M:%S}"

    def span(self, first: int | None, last: int | None) -> str:
        """' at 16:29:11' or ' from 01:10:39 to 21:56:16' ('' when unknown)."""
        if first is None:
            return ""
        if last is None or last // 1000 == first // 1000:
            return f" at {self(first)}"
        return f" from {self(first)} to {self(last)}"


def n(value: float | int | None) -> str:
    """A count for prose: thousands separated; one decimal when not whole."""
    if value is None:
        return "?"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def seconds(ms: float | int | None) -> str:
    """Milliseconds as seconds for prose: '300 s', '764.5 s', '0.5 s'."""
    if ms is None:
        return "?"
    return f"{n(round(ms / 1000, 1))} s"


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{n(count)} {one if count == 1 else (many or one + 's')}"


def parts(units: dict[Any, int], limit: int = 6) -> str:
    """'orders 15, payments 23' (largest first; the rest as '… 3 more')."""
    items = [(k, v) for k, v in units.items() if v]
    text = ", ".join(f"{k} {n(v)}" for k, v in items[:limit])
    if len(items) > limit:
        text += f", … {len(items) - limit} more"
    return text


def names(values: list[Any], limit: int = 4) -> str:
    vals = [str(v) for v in values if v is not None]
    text = ", ".join(vals[:limit])
    if len(vals) > limit:
        text += f" and {len(vals) - limit} more"
    return text


def where(ranges: list[dict[str, Any]]) -> str:
    """'payments-1 offsets 4283129–4283132, orders-5 offset 1439933' (Kafka's
    topic-partition names; offsets unseparated, as tools take them)."""
    out = []
    for r in ranges:
        tp = f"{r['topic']}-{r['partition']}"
        if r["from"] == r["to"]:
            out.append(f"{tp} offset {r['from']}")
        else:
            out.append(f"{tp} offsets {r['from']}–{r['to']}")
    return ", ".join(out)
