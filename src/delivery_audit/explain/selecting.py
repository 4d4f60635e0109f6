"""The question explain answers (:class:`Query`: a message by topic, key and seq, or a
record by topic, partition and offset) and the identities it names in a published
report: those with rows in the evidence, those only the anomaly table names, and the
key's seq_gap rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .reading import ExplainError, Published, rows


@dataclass(frozen=True)
class Query:
    """A message by (topic, key[, seq]) or a record by (topic, partition, offset)."""

    topic: str
    key: str | None = None
    seq: int | None = None
    partition: int | None = None
    offset: int | None = None

    def describe(self) -> str:
        if self.key is not None:
            seq = f" seq {self.seq}" if self.seq is not None else ""
            return f"key {self.key!r}{seq} of topic {self.topic}"
        return f"record {self.topic}:{self.partition}@{self.offset}"


def parse_partition(text: str) -> tuple[str, int]:
    """``TOPIC:PARTITION`` (a topic may hold ':'; the last one splits)."""
    topic, sep, part = text.rpartition(":")
    if not sep or not topic or not part.isdigit():
        raise ExplainError(f"--partition takes TOPIC:PARTITION, not {text!r}")
    return topic, int(part)


Identity = tuple[str, str | None, int]  # (topic, key, seq)


def select(pub: Published, q: Query) -> tuple[list[Identity], list[Identity]]:
    """The identities a query names: (those with rows in the evidence, those only the
    anomaly table names), each sorted by seq. A record names the identities of the rows at
    its (topic, partition, offset)."""
    if q.key is not None:
        found = rows(pub.evidence, topic=q.topic, key=q.key, seq=q.seq)
        named = rows(pub.anomalies, topic=q.topic, key=q.key, seq=q.seq)
    else:
        at = dict(topic=q.topic, partition=q.partition, offset=q.offset)
        found, named = rows(pub.evidence, **at), rows(pub.anomalies, **at)
    in_evidence = {(r["topic"], r["key"], r["seq"]) for r in found
                   if r["source"] != "events" and r["seq"] is not None}
    only_named = {(r["topic"], r["key"], r["seq"]) for r in named
                  if r["seq"] is not None and r["anomaly"] != "seq_gap"} - in_evidence

    def order(i: Identity) -> tuple:
        return (i[0], i[1] is not None, i[1] or "", i[2])

    return sorted(in_evidence, key=order), sorted(only_named, key=order)


def gaps(pub: Published, q: Query) -> list[dict[str, Any]]:
    """The key's seq_gap rows (with ``seq``: the one holding it): seq values never sent."""
    if q.key is None:
        return []
    out = rows(pub.anomalies, anomaly="seq_gap", topic=q.topic, key=q.key)
    if q.seq is not None:
        out = [r for r in out if r["seq"] <= q.seq <= (r["seq_to"] or r["seq"])]
    return sorted(out, key=lambda r: r["seq"])
