"""Reading a detection result of tests/test_rules.py's shape: anomaly units, delivery states
and causes of one topic (shared by the rule tests)."""

from __future__ import annotations

from collections import Counter


def units(result, topic: str, group: str | None = "g") -> Counter:
    """Anomaly units of one topic (for per-group anomalies, of one group)."""
    c: Counter = Counter()
    for r in result["rows"]:
        if r["topic"] == topic and (r["group_id"] in (None, group)):
            c[r["anomaly"]] += r["units"]
    return c


def states(result, topic: str, group: str = "g") -> dict[int, str]:
    return {r["seq"]: r["state"] for r in result["states"]
            if r["topic"] == topic and r["group_id"] == group}


def causes(result, anomaly: str, topic: str) -> Counter:
    return Counter(r["cause"] for r in result["rows"]
                   if r["anomaly"] == anomaly and r["topic"] == topic)
