"""One identity's story (:class:`Story`): its send attempts, broker copies and
processings, the anomaly rows that name it, and its groups' events, rebalances and
evictions around it; a rebalance tied to two processings as the report ties redeliveries
to rebalances (rebalance/linking.py). :meth:`Story.timeline` puts all of it in time
order."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..anomalies import PER_ANOMALY
from ..core.timefmt import instant
from .reading import Published, rows
from .selecting import Identity
from .text import clock, jsonable, ms_text

SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "info": 3}
KIND_RANK = {"send": 0, "broker": 1, "event": 2, "eviction": 3, "rebalance": 4,
             "processing": 5}


@dataclass
class Story:
    topic: str
    key: str | None
    seq: int
    sends: list[dict[str, Any]] = field(default_factory=list)
    copies: list[dict[str, Any]] = field(default_factory=list)
    processings: list[dict[str, Any]] = field(default_factory=list)  # with "n" per group
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    rebalances: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    other_events: list[dict[str, Any]] = field(default_factory=list)  # counted per kind
    note: str | None = None

    def timeline(self) -> list[dict[str, Any]]:
        """Everything that has a time, in time order: at, kind, what, who, where, detail."""
        out: list[dict[str, Any]] = []
        for s in self.sends:
            detail = []
            if s["end_ts"]:
                detail.append(f"{'ack' if s['status'] == 'acked' else 'answer'} at "
                              f"{clock(s['end_ts'])}")
            if s["detail"]:
                detail.append(f"error {s['detail']}")
            if s["idempotent"] is not None:
                detail.append("idempotent" if s["idempotent"] else "not idempotent")
            attempt = f" attempt {s['attempt']}" if s["attempt"] is not None else ""
            out.append(_entry(s["ts"], "send", f"send{attempt}: {s['status']}",
                              s["producer_id"], _where(s), detail))
        for c in self.copies:
            # a transactional copy's outcome (contract §9), from the evidence's status
            txn = [f"transaction {c['status']}"] if c.get("status") else []
            out.append(_entry(c["ts"], "broker", "written to the log", c["producer_id"],
                              _where(c), txn))
        for p in self.processings:
            detail = [f"until {clock(p['end_ts'])} ({ms_text(p['ts'], p['end_ts'])})"
                      if p["end_ts"] else "no finish recorded"]
            if p["generation"] is not None:
                detail.append(f"generation {p['generation']}")
            out.append(_entry(p["ts"], "processing", f"{p['group_id']} processing #{p['n']}: "
                              f"{p['status']}", p["member_id"], _where(p), detail))
        for e in self.events:
            detail = [f"generation {e['generation']}"] if e["generation"] is not None else []
            if e["detail"]:
                detail.append(e["detail"])
            out.append(_entry(e["ts"], "event", f"{e['group_id']}: {e['status']}",
                              e["member_id"], _where(e), detail))
        for o in self.other_events:
            out.append(_entry(o["first"], "event", f"{o['group_id']}: {o['n']} {o['status']} "
                              "at other offsets", ", ".join(o["members"]), "",
                              [f"until {clock(o['last'])}"]))
        for r in self.rebalances:
            who = [f"out: {', '.join(r['members_out'])}"] if r.get("members_out") else []
            if r.get("members_in"):
                who.append(f"in: {', '.join(r['members_in'])}")
            detail = [f"until {clock(instant(r['end']))} ({r['duration_ms']:,} ms)",
                      r.get("trigger") or ""]
            if r.get("relation"):
                detail.append(r["relation"])
            gen = f" → generation {r['generation']}" if r.get("generation") is not None else ""
            out.append(_entry(instant(r["start"]), "rebalance",
                              f"{r['group_id']}: rebalance{gen}", "; ".join(who), "",
                              [d for d in detail if d]))
        for v in self.evictions:
            out.append(_entry(instant(v["left_at"]), "eviction",
                              f"{v['group_id']}: {v['member_id']} evicted "
                              f"({v.get('diagnosis') or 'no diagnosis'})", v["member_id"], "",
                              [v.get("evidence") or ""]))
        return sorted(out, key=lambda e: (e["at"] is None, e["at"] or _EPOCH,
                                          KIND_RANK[e["kind"]]))

    def to_json(self) -> dict[str, Any]:
        return jsonable({
            "topic": self.topic, "key": self.key, "seq": self.seq, "note": self.note,
            "sends": self.sends, "copies": self.copies, "processings": self.processings,
            "anomalies": self.anomalies, "events": self.events,
            "rebalances": self.rebalances, "evictions": self.evictions,
            "other_events": self.other_events, "timeline": self.timeline()})


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _entry(at: datetime | None, kind: str, what: str, who: str | None, where: str,
           detail: list[str]) -> dict[str, Any]:
    return {"at": at, "kind": kind, "what": what, "who": who or "", "where": where,
            "detail": "; ".join(d for d in detail if d)}


def _where(r: dict[str, Any]) -> str:
    if r.get("partition") is None:
        return ""
    at = f"@{r['offset']}" if r.get("offset") is not None else ""
    return f"{r['topic']}-{r['partition']}{at}"


def compose(pub: Published, identity: Identity, around: timedelta) -> Story:
    """The story of one identity: its rows, its anomalies, and its groups' events,
    rebalances and evictions from ``around`` before its first to ``around`` after its last
    instant."""
    topic, key, seq = identity
    mine = [r for r in rows(pub.evidence, topic=topic, seq=seq) if r["key"] == key]
    story = Story(topic, key, seq)
    story.sends = sorted((r for r in mine if r["source"] == "sends"),
                         key=lambda r: (r["ts"] or _EPOCH, r["attempt"] or 0))
    story.copies = sorted((r for r in mine if r["source"] == "broker"),
                          key=lambda r: (r["partition"], r["offset"]))
    processed = sorted((r for r in mine if r["source"] == "ledger"),
                       key=lambda r: (r["group_id"], r["ts"] or _EPOCH, r["member_id"]))
    counts: dict[str, int] = {}
    for p in processed:
        counts[p["group_id"]] = counts.get(p["group_id"], 0) + 1
        story.processings.append({**p, "n": counts[p["group_id"]]})
    story.anomalies = sorted(
        (r for r in rows(pub.anomalies, topic=topic, seq=seq) if r["key"] == key
         and r["anomaly"] != "seq_gap"),
        key=lambda r: (SEVERITY_RANK.get(r["severity"], 9), r["anomaly"],
                       r["group_id"] or "", r["ts"] or _EPOCH))
    if not mine:
        story.note = ("the anomalies name this message, but the published evidence holds "
                      f"none of its rows (it keeps those of the first {PER_ANOMALY:,} rows "
                      "of each anomaly)")
    instants = [t for r in [*mine, *story.anomalies] for t in (r.get("ts"), r.get("end_ts"),
                                                             r.get("related_ts")) if t]
    if not instants:
        return story
    lo, hi = min(instants) - around, max(instants) + around
    groups = sorted({r["group_id"] for r in [*processed, *story.anomalies] if r["group_id"]})
    partitions = {r["partition"] for r in mine if r["partition"] is not None} | {
        r["partition"] for r in story.anomalies if r["partition"] is not None}
    # an event at an offset (commit_failed) tells of this record at its offset or the next
    # (a commit names the next offset to read); the others are counted, not listed
    near = {(r["partition"], r["offset"] + d) for r in mine
            if r["partition"] is not None and r["offset"] is not None for d in (0, 1)}
    others: dict[tuple[str, str], dict[str, Any]] = {}
    for e in sorted((e for e in rows(pub.evidence, source="events")
                     if e["group_id"] in groups and e["ts"] is not None and lo <= e["ts"] <= hi
                     and (e["partition"] is None
                          or (e["topic"] == topic and e["partition"] in partitions))),
                    key=lambda e: (e["ts"], e["group_id"], e["member_id"] or "")):
        if e["offset"] is None or (e["partition"], e["offset"]) in near:
            story.events.append(e)
            continue
        o = others.setdefault((e["group_id"], e["status"]), {
            "group_id": e["group_id"], "status": e["status"], "n": 0, "first": e["ts"],
            "members": []})
        o["n"] += 1
        o["last"] = e["ts"]
        if e["member_id"] not in o["members"]:
            o["members"].append(e["member_id"])
    story.other_events = list(others.values())
    for g in groups:
        section = (pub.report.get("rebalances") or {}).get(g) or {}
        mine_g = [p for p in story.processings if p["group_id"] == g]
        interval = ((section.get("settings") or {}).get("max.poll.interval.ms") or {}) \
            .get("value")
        for r in section.get("timeline") or []:
            start, end = instant(r["start"]), instant(r["end"]) or instant(r["start"])
            names = set(r.get("partitions") or [])
            touches = not names or "…" in names or any(
                f"{topic}-{p}" in names for p in partitions)
            if start and end >= lo and start <= hi and touches:
                story.rebalances.append({"group_id": g, **r,
                                         "relation": _relation(start, mine_g, interval)})
        story.evictions += [{"group_id": g, **v} for v in section.get("evictions") or []
                            if (t := instant(v.get("left_at"))) and lo <= t <= hi]
    return story


def _relation(start: datetime, processings: list[dict[str, Any]],
              interval_ms: int | None) -> str | None:
    """How a rebalance stands to a group's processings of the message: between two of them
    (or linked to them as the report links redeliveries), or none."""
    slack = timedelta(milliseconds=interval_ms or 0)
    ordered = [p for p in processings if p["ts"] is not None]
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a["ts"] <= start <= b["ts"]:
            return (f"between processing #{a['n']} by {a['member_id']} and #{b['n']} by "
                    f"{b['member_id']}")
        if a["ts"] - slack <= start <= b["ts"]:
            return (f"linked to processings #{a['n']} by {a['member_id']} and #{b['n']} by "
                    f"{b['member_id']} (it began {ms_text(start, a['ts'])} before #{a['n']})")
    return None
