"""A narrative finding over anomaly rows, as the write-side and consumer-side causes
build it (write_findings.py, consumer_findings.py, narrative.py): the units per anomaly,
the first and last instant, the topic and members in scope, the breakdown per (group,
topic) and the evidence links; and the short phrases their texts share (where the rows
sit: per topic, per partition's offsets; was/were, it/them, its/their)."""

from __future__ import annotations

from typing import Any

from .digest import Digest
from .findings import ANOMALY_ROWS, SECTION, Finding, parts, where

_WRITE_EVIDENCE = [("per topic", SECTION["topics"]),
                   ("partitions × anomalies", SECTION["partitions"]),
                   ("anomaly rows (Parquet)", ANOMALY_ROWS)]


def _group_evidence(group: str) -> list[tuple[str, str]]:
    return [(f"delivery states of {group}", SECTION["groups"]),
            ("partitions × anomalies", SECTION["partitions"]),
            ("anomaly rows (Parquet)", ANOMALY_ROWS)]


def _breakdown(pieces: dict[str, Digest]) -> list[dict[str, Any]]:
    """Per (group, topic): each anomaly's units in ``pieces`` (anomaly → its rows)."""
    scopes: dict[tuple, dict[str, int]] = {}
    for name, d in pieces.items():
        for s in d.by_scope():
            scopes.setdefault((s["group"], s["topic"]), {})[name] = s["units"]
    return [{"group": g, "topic": t, "anomalies": a}
            for (g, t), a in sorted(scopes.items(), key=lambda kv: (str(kv[0][0]),
                                                                   str(kv[0][1])))]


def scoped_finding(cause: str, pieces: dict[str, Digest], title: str, text: str, fix: str | None,
             *, group: str | None = None, evidence=None) -> Finding:
    """A finding over the rows of ``pieces`` (anomaly → its rows): their units, span and
    scope."""
    spans = [d.span() for d in pieces.values()]
    firsts = [a for a, _ in spans if a is not None]
    lasts = [b for _, b in spans if b is not None]
    topics = sorted({t for d in pieces.values() for t in d.values("topic")})
    members = sorted({m for d in pieces.values() for m in d.values("member_id")})
    return Finding(cause, {k: d.units() for k, d in pieces.items()}, title, text, fix,
                   at=min(firsts) if firsts else None, until=max(lasts) if lasts else None,
                   group=group, topic=topics[0] if len(topics) == 1 else None,
                   members=members if group else [],
                   evidence=evidence or (_group_evidence(group) if group else _WRITE_EVIDENCE),
                   breakdown=_breakdown(pieces))


def in_topics(d: Digest) -> str:
    """' in payments' / ' in orders 15, payments 23' (by topic)."""
    by = d.by("topic")
    if not by:
        return ""
    if len(by) == 1:
        return f" in {next(iter(by))}"
    return f" in {parts(by)}"


def at_offsets(d: Digest) -> str:
    """' (payments-1 offsets 4283129–4283132, …)': where the rows sit, the partitions
    with the most rows first."""
    r = d.ranges(limit=5)
    if not r:
        return ""
    return f" ({where(r[:4])}{', …' if len(r) > 4 else ''})"


def was_were(k: int) -> str:
    return "was" if k == 1 else "were"


def it_them(k: int) -> str:
    return "it" if k == 1 else "them"


def its_their(k: int) -> str:
    return "its" if k == 1 else "their"
