"""Rebalance incidents for the narrative: report.json's ``rebalances`` (contract §5) read as
stories, one finding per incident.

An incident is a chain of a group's rebalances that starts with a notable one (a member
evicted — ``poll_interval_exceeded`` or ``session_timeout`` — or records processed again
because of it) and goes on while the next rebalance starts within ``max.poll.interval.ms``
of the previous one's end (the evicted member rejoining, further evictions). Its numbers:
the redeliveries the rebalance section linked to its rebalances, and the
``concurrent_processing`` rows of the group from one interval before its start to one
interval after its end (a zombie's overlapping attempts), from the anomaly table
(digest.py). Cause ``rebalance_storm`` for a chain of three rebalances or more, or of two
evictions or more; ``eviction`` for one eviction; ``rebalance`` when nobody was evicted.

What the incidents leave of a group's rebalance-caused redeliveries and overlapping
attempts becomes a ``rebalance`` and a ``zombie`` finding.
"""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc

from .digest import Digest
from .findings import (
    ANOMALY_ROWS,
    SECTION,
    Clock,
    Finding,
    ms_of,
    n,
    names,
    plural,
    seconds,
)

EVICTED = ("poll_interval_exceeded", "session_timeout")


def _settings(rb: dict[str, Any]) -> dict[str, int | None]:
    out = {}
    for k, v in (rb.get("settings") or {}).items():
        out[k] = v.get("value") if isinstance(v, dict) else v
    return out


def _evidence(group: str) -> list[tuple[str, str]]:
    return [(f"rebalances of {group}", SECTION["groups"]), ("timeline", SECTION["timeline"]),
            ("anomaly rows (Parquet)", ANOMALY_ROWS)]


def _chains(rb: dict[str, Any], interval: int) -> list[list[dict[str, Any]]]:
    """The group's incidents: chains of timeline entries (the package docstring)."""
    evictions = [(ms_of(e.get("left_at")), e) for e in rb.get("evictions") or []
                 if e.get("diagnosis") in EVICTED]
    chains: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    prev_end = None
    for entry in rb.get("timeline") or []:
        if entry.get("kind") == "initial":
            continue
        start = ms_of(entry.get("start"))
        if start is None:
            continue
        end = ms_of(entry.get("end")) or start
        evicted = any(t is not None and start <= t <= end for t, _ in evictions)
        notable = evicted or int(entry.get("redeliveries") or 0) > 0
        if current is not None and prev_end is not None and start - prev_end <= interval:
            current.append(entry)
        elif notable:
            current = [entry]
            chains.append(current)
        else:
            current = None
        prev_end = end
    return chains


def _partitions(chain: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for e in chain:
        for p in e.get("partitions") or []:
            if p != "…" and p not in seen:
                seen.append(p)
    return sorted(seen)


def _advised(rb: dict[str, Any], setting: str) -> dict[str, Any] | None:
    return next((a for a in rb.get("advice") or [] if a.get("setting") == setting
                 and a.get("ok") is False), None)


def _fix(rb: dict[str, Any], kinds: set[str], members: list[str], st: dict) -> str:
    interval, session = st.get("max.poll.interval.ms"), st.get("session.timeout.ms")
    p99 = (rb.get("processing_ms") or {}).get("p99") or rb.get("p99_processing_ms")
    fixes = []
    if "poll_interval_exceeded" in kinds:
        raise_interval = _advised(rb, "max.poll.interval.ms")
        records = _advised(rb, "max.poll.records")
        if raise_interval:
            fixes.append(f"raise max.poll.interval.ms to at least {n(raise_interval['advised'])}"
                         f" ms and poll one record at a time (or move the work off the poll "
                         f"thread)")
        elif records:
            fixes.append(f"max.poll.records ≤ {n(records['advised'])} (floor({n(interval)} / 2"
                         f" / p99 {n(p99)} ms): a batch under half of max.poll.interval.ms), "
                         f"or raise max.poll.interval.ms above the batch time")
        else:
            fixes.append(f"find what blocked the poll loop of {names(members)}: p99 "
                         f"processing ({n(p99)} ms per record) fits max.poll.interval.ms")
    if "session_timeout" in kinds:
        fixes.append(f"find what stopped the heartbeats of {names(members)} for longer than "
                     f"session.timeout.ms {seconds(session)} (a long GC pause, a stalled "
                     f"host); raise session.timeout.ms if such pauses are expected")
        heartbeat = _advised(rb, "heartbeat.interval.ms")
        if heartbeat:
            fixes.append(f"heartbeat.interval.ms ≤ {n(heartbeat['advised'])} ms "
                         f"(session.timeout.ms / 3)")
    if not fixes:
        fixes.append("commit processed offsets when partitions are revoked "
                     "(ConsumerRebalanceListener.onPartitionsRevoked); the cooperative-sticky "
                     "assignor and static membership (group.instance.id) move fewer partitions")
    fixes.append("make processing idempotent so a record processed twice does no harm")
    return "; ".join(fixes) + "."


def _why(e: dict[str, Any], rb: dict[str, Any], st: dict) -> str:
    """Why one member was evicted, with the batch arithmetic when it explains it."""
    interval, session = st.get("max.poll.interval.ms"), st.get("session.timeout.ms")
    if e.get("diagnosis") == "poll_interval_exceeded":
        text = f"went longer than max.poll.interval.ms {seconds(interval)} without a poll"
        p99 = (rb.get("processing_ms") or {}).get("p99")
        mpr = st.get("max.poll.records")
        if p99 and mpr and interval and p99 * mpr > interval:
            text += (f" (a batch of up to {n(mpr)} records × p99 {n(p99)} ms/record = "
                     f"{seconds(p99 * mpr)} > {seconds(interval)})")
    else:
        text = f"sent no heartbeat for longer than session.timeout.ms {seconds(session)}"
    if e.get("evidence"):
        text += f"; {e['evidence']}"
    return text


def _incident(group: str, chain: list[dict[str, Any]], rb: dict[str, Any], st: dict,
              digest: Digest, since: int, until: int, clock: Clock) -> Finding:
    start = ms_of(chain[0]["start"])
    end = max(ms_of(e.get("end")) or ms_of(e["start"]) for e in chain)
    evs = [e for e in rb.get("evictions") or [] if e.get("diagnosis") in EVICTED
           and start <= (ms_of(e.get("left_at")) or -1) <= end]
    evicted = sorted({e["member_id"] for e in evs})
    redelivered = sum(int(e.get("redeliveries") or 0) for e in chain)
    overlaps = digest.where("concurrent_processing", group=group, since=since, until=until)
    again = digest.where("redelivery", group=group, since=since, until=until)
    takers = [m for m in again.values("member_id") if m not in evicted] or again.values(
        "member_id")
    before = again.values("related_member_id")
    topics = sorted(set(overlaps.values("topic")) | set(again.values("topic")))
    parts = _partitions(chain)
    anomalies = {"redelivery": redelivered, "concurrent_processing": overlaps.units()}
    storm = len(chain) >= 3 or len(evs) >= 2
    cause = "rebalance_storm" if storm else "eviction" if evs else "rebalance"

    sentences = []
    for e in evs[:5]:
        sentences.append(f"{clock(ms_of(e.get('left_at')))} {e['member_id']} ({group}) "
                         f"{_why(e, rb, st)}.")
    if len(evs) > 5:
        sentences.append(f"{plural(len(evs) - 5, 'more eviction')}.")
    if not evs:
        first = chain[0]
        sentences.append(f"{clock(start)} {group} rebalanced: {first.get('trigger') or '?'}.")
    moved = (f"{plural(len(parts), 'partition')} ({names(parts, 3)})" if parts
             else "its partitions")
    duration = chain[0].get("duration_ms")
    sentence = f"The rebalance{f' ({seconds(duration)})' if duration else ''} "
    new_owners = [m for m in takers if m not in evicted]
    if new_owners and evicted:
        sentence += f"moved {moved} to {names(new_owners)}"
    elif evicted:
        sentence += (f"gave {moved} back to {names(evicted)} when "
                     f"{'it' if len(evicted) == 1 else 'they'} rejoined")
    else:
        sentence += f"moved {moved}"
    sentences.append(sentence + ".")
    if redelivered:
        if new_owners and before:
            who = f" by {names(new_owners)} after {names(before)} had processed them"
        elif takers:
            who = f", again by {names(takers)} after the rebalance"
        else:
            who = ""
        sentences.append(f"{plural(redelivered, 'record was', 'records were')} processed "
                         f"twice{who}.")
    if anomalies["concurrent_processing"]:
        zombie = names(evicted) if evicted else "a member that had lost its partitions"
        sentences.append(f"{plural(anomalies['concurrent_processing'], 'processing attempt')} "
                         f"overlapped while {zombie} kept working after its partitions had "
                         f"been reassigned.")
    if len(chain) > 1:
        sentences.append(f"The group rebalanced {plural(len(chain), 'time')} before it "
                         f"settled at {clock(end)}.")
    if cause == "rebalance_storm":
        title = (f"Rebalance storm in {group}: {plural(len(chain), 'rebalance')}, "
                 f"{plural(len(evs), 'eviction')}")
    elif evs:
        how = ("max.poll.interval.ms exceeded" if evs[0]["diagnosis"] ==
               "poll_interval_exceeded" else "session timeout")
        title = f"{evs[0]['member_id']} ({group}) evicted: {how}"
    else:
        title = f"Rebalance of {group} at {clock(start)}"
    if redelivered:
        title += f" — {plural(redelivered, 'record')} processed twice"
    return Finding(
        cause, anomalies, title, " ".join(sentences),
        fix=_fix(rb, {e["diagnosis"] for e in evs}, evicted or takers, st), at=start,
        until=end, group=group, topic=topics[0] if len(topics) == 1 else None,
        members=sorted(set(evicted) | set(takers)), evidence=_evidence(group),
        breakdown=[{"group": group, "topic": topics[0] if len(topics) == 1 else None,
                    "anomalies": {k: v for k, v in anomalies.items() if v}}],
        floor="high" if evs else "info")


def _leftover(group: str, digest: Digest, used: list[tuple[int, int]], linked: int,
              clock: Clock) -> list[Finding]:
    """The group's rebalance-caused redeliveries and overlapping attempts no incident took."""
    out = []
    again = digest.where("redelivery", cause="rebalance", group=group)
    rest = again.units() - linked
    if rest > 0:
        first, last = again.span()
        out.append(Finding(
            "rebalance", {"redelivery": rest},
            f"{plural(rest, 'record')} of {group} processed again after partitions moved",
            f"{plural(rest, 'record was', 'records were')} processed again by {group} after "
            f"their partition changed hands or a rebalance event came between the two "
            f"processings{clock.span(first, last)}, outside the rebalances the timeline "
            f"links them to.",
            fix="commit processed offsets when partitions are revoked "
                "(ConsumerRebalanceListener.onPartitionsRevoked) and make processing "
                "idempotent.",
            at=first, until=last, group=group, members=again.values("member_id"),
            evidence=_evidence(group),
            breakdown=[{"group": s["group"], "topic": s["topic"],
                        "anomalies": {"redelivery": s["units"]}} for s in again.by_scope()]))
    rows = digest.where("concurrent_processing", group=group)
    for a, b in used:  # keep what no incident's interval covers
        rows = Digest(rows.table.filter(_outside(rows, a, b)))
    if rows.units() > 0:
        first, last = rows.span()
        members = sorted(set(rows.values("member_id")) | set(rows.values("related_member_id")))
        out.append(Finding(
            "zombie", {"concurrent_processing": rows.units()},
            f"Zombie consumer in {group}: {plural(rows.units(), 'overlapping attempt')}",
            f"{plural(rows.units(), 'processing attempt')} of {group} overlapped an attempt "
            f"by another member on the same partition{clock.span(first, last)} "
            f"({names(members)}), outside any rebalance the events show: a member kept "
            f"processing after losing its partitions.",
            fix="stop processing and drop the in-flight batch in onPartitionsRevoked / "
                "onPartitionsLost; check that the poll loop notices a failed commit "
                "(CommitFailedException) and stops.",
            at=first, until=last, group=group, members=members, evidence=_evidence(group),
            breakdown=[{"group": s["group"], "topic": s["topic"],
                        "anomalies": {"concurrent_processing": s["units"]}}
                       for s in rows.by_scope()]))
    return out


def _outside(rows: Digest, a: int, b: int):
    t = rows.table["t"]
    inside = pc.fill_null(pc.and_(pc.greater_equal(t, a), pc.less_equal(t, b)), False)
    return pc.invert(inside)


def rebalance_findings(report: dict[str, Any], digest: Digest, clock: Clock) -> list[Finding]:
    """Every group's incidents and leftovers (the module docstring)."""
    out: list[Finding] = []
    for group, rb in sorted((report.get("rebalances") or {}).items()):
        if not isinstance(rb, dict):
            continue
        st = _settings(rb)
        interval = int(st.get("max.poll.interval.ms") or 300_000)
        used: list[tuple[int, int]] = []
        linked = 0
        for chain in _chains(rb, interval):
            start = ms_of(chain[0]["start"])
            end = max(ms_of(e.get("end")) or ms_of(e["start"]) for e in chain)
            since = start - interval
            if used:
                since = max(since, used[-1][1] + 1)
            until = end + interval
            finding = _incident(group, chain, rb, st, digest, since, until, clock)
            used.append((since, until))
            linked += finding.anomalies["redelivery"]
            if any(finding.anomalies.values()) or finding.cause != "rebalance":
                out.append(finding)
        out += _leftover(group, digest, used, linked, clock)
    return out
