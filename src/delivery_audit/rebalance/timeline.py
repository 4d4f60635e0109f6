"""The rebalance timeline on the driver: round 1's collected tables (sources.py) as each
group's rebalances — the state machine over its events, or its ledger handovers clustered
(the rules: the package docstring) — with the members each rebalance lets go."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..group_events import ZOMBIE_EVENTS
from .units import iso

INFER_GAP_MS = 30_000  # ledger handovers further apart than this are separate rebalances
MAX_LISTED = 50  # members/partitions listed per timeline entry


@dataclass
class Rebalance:
    group_id: str
    start: int
    end: int | None = None
    kind: str = "rebalance"  # rebalance | initial
    inferred: bool = False
    trigger: str = ""
    generation: int | None = None
    events: int = 0
    zombie_events: int = 0
    out: list[str] = field(default_factory=list)  # members that left / lost all
    left: dict[str, dict] = field(default_factory=dict)  # member -> its leave event
    assigned: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    owners_before: set[str] = field(default_factory=set)
    members_in: list[str] = field(default_factory=list)
    members_out: list[str] = field(default_factory=list)
    partitions: set[str] = field(default_factory=set)
    redeliveries: int = 0

    def entry(self) -> dict[str, Any]:
        dur = None if self.end is None else self.end - self.start
        parts = sorted(self.partitions)
        return {
            "start": iso(self.start), "end": iso(self.end), "duration_ms": dur,
            "kind": self.kind, "inferred": self.inferred, "generation": self.generation,
            "trigger": self.trigger, "members_in": self.members_in[:MAX_LISTED],
            "members_out": self.members_out[:MAX_LISTED], "events": self.events,
            "zombie_events": self.zombie_events,
            "partitions": parts[:MAX_LISTED] + (["…"] if len(parts) > MAX_LISTED else []),
            "redeliveries": self.redeliveries,
        }


def _describe(e: dict) -> str:
    who = e.get("member_id") or "coordinator"
    text = f"{e['event']} by {who}"
    if e.get("detail"):
        d = str(e["detail"])
        text += f" ({d[:120]}{'…' if len(d) > 120 else ''})"
    return text


def _close(r: Rebalance, owners: set[str]) -> set[str]:
    """Members in/out of a finished rebalance; returns the owners after it."""
    before = set(r.owners_before)
    gone = set(r.left) | (r.revoked - r.assigned)
    after = (before - gone) | r.assigned
    r.members_in = sorted(after - before)
    r.members_out = sorted((before - after) | set(r.left))
    if r.kind == "initial":
        r.members_out = []
    return after


def cluster_events(group_id: str, rows: list[dict]) -> list[Rebalance]:
    """The state machine of the package docstring (**timeline**) over one group's compact
    events."""
    order = {e: i for i, e in enumerate(("left_group", "lost", "commit_failed", "revoked",
                                         "joined_group", "assigned"))}
    rows = sorted(rows, key=lambda e: (e["t"], order.get(e["event"], 9),
                                       e.get("member_id") or ""))
    out: list[Rebalance] = []
    cur: Rebalance | None = None
    assigning = False
    owners: set[str] = set()
    departed: set[str] = set()  # left and not given partitions since
    for e in rows:
        ev, m, t = e["event"], e.get("member_id"), e["t"]
        if ev in ZOMBIE_EVENTS and m and m in departed and out and (cur is None or assigning):
            target = out[-1] if cur is None or not assigning else cur
            target.zombie_events += int(e.get("n") or 1)
            continue
        if ev == "assigned":
            if cur is None:
                cur = Rebalance(group_id, t, kind="initial" if not owners else "rebalance",
                                trigger=_describe(e), owners_before=set(owners))
            cur.end = t if cur.end is None else max(cur.end, t)
            assigning = True
            if m:
                cur.assigned.add(m)
                departed.discard(m)
        else:
            if cur is not None and assigning:
                owners = _close(cur, owners)
                out.append(cur)
                cur, assigning = None, False
            if cur is None:
                cur = Rebalance(group_id, t, trigger=_describe(e), owners_before=set(owners))
            if m:
                if ev in ("left_group", "lost"):
                    cur.left.setdefault(m, e)
                    departed.add(m)
                elif ev == "revoked":
                    cur.revoked.add(m)
                elif ev == "joined_group":
                    departed.discard(m)
        cur.events += int(e.get("n") or 1)
        if e.get("generation") is not None:
            cur.generation = max(cur.generation or e["generation"], e["generation"])
        cur.partitions.update(x for x in (e.get("tps") or []) if x)
    if cur is not None:
        owners = _close(cur, owners)
        if not assigning and not cur.assigned:
            cur.kind = "stop"  # the data ends with members leaving and no new assignment
        out.append(cur)
    return out


def leavers(r: Rebalance) -> dict[str, dict]:
    """Members of a rebalance to diagnose, with the event that marks their leave. In a
    final 'stop' (the group shutting down) only explicit leaves/losses count."""
    out = dict(r.left)
    if r.kind != "stop":
        for m in r.members_out:
            out.setdefault(m, {"event": "revoked", "t": r.start, "detail": None})
    return out


def cluster_handovers(group_id: str, rows: list[dict]) -> list[Rebalance]:
    """Ledger-inferred rebalances: handovers closer than INFER_GAP_MS form one."""
    out: list[Rebalance] = []
    cur: Rebalance | None = None
    last_t = None
    for h in sorted(rows, key=lambda h: (h["t"], h["member_id"])):
        start = h["prev_f"] if h.get("prev_f") is not None else h["t"]
        if cur is None or h["t"] - last_t > INFER_GAP_MS:
            cur = Rebalance(group_id, min(start, h["t"]), inferred=True,
                            trigger=f"partition handed from {h['prev']} to {h['member_id']}")
            out.append(cur)
        cur.start = min(cur.start, start)
        cur.end = max(cur.end or h["t"], h["t"])
        cur.events += 1
        cur.revoked.add(h["prev"])
        cur.assigned.add(h["member_id"])
        cur.partitions.update(h.get("tps") or [])
        last_t = h["t"]
    for r in out:
        r.members_out = sorted(r.revoked - r.assigned)
        r.members_in = sorted(r.assigned - r.revoked)
        for m in r.members_out:
            r.left[m] = {"event": "handover", "member_id": m, "t": r.start, "detail": None}
    return out


@dataclass
class Clusters:
    """Round 1 on the driver: every group's rebalances (in ``groups`` order), where its
    timeline comes from, and its processing stats."""

    groups: list[str]
    rebalances: dict[str, list[Rebalance]]
    source: dict[str, str]
    stats: dict[str, dict[str, int]]

    def leaves(self) -> list[tuple[str, str, int]]:
        """(group, member, leave ms) of every member to diagnose."""
        return sorted({(g, m, leave["t"]) for g, rs in self.rebalances.items() for r in rs
                       for m, leave in leavers(r).items()})

    def counted(self) -> list[tuple[str, int, Rebalance]]:
        """(group, index in its list, rebalance) of the counted rebalances."""
        return [(g, i, r) for g in self.groups for i, r in enumerate(self.rebalances[g])
                if r.kind == "rebalance"]


def cluster_groups(groups: list[str], round1: dict[str, list[dict]]) -> Clusters:
    """The collected round-1 tables (``rebalance_tables``) as each group's rebalances."""
    stats = {r["group_id"]: {"p50": int(r["q"][0]), "p99": int(r["q"][1]),
                             "max": int(r["mx"]), "attempts": int(r["n"])}
             for r in round1.get("rebalance_stats", [])}
    by_group: dict[str, list[dict]] = {}
    for e in round1.get("rebalance_events", []):
        by_group.setdefault(e["group_id"], []).append(e)
    handovers: dict[str, list[dict]] = {}
    for h in round1.get("rebalance_handovers", []):
        if h["group_id"] not in by_group:
            handovers.setdefault(h["group_id"], []).append(h)
    rebalances: dict[str, list[Rebalance]] = {}
    source: dict[str, str] = {}
    for g in groups:
        if g in by_group:
            rebalances[g], source[g] = cluster_events(g, by_group[g]), "events"
        elif g in handovers:
            rebalances[g] = cluster_handovers(g, handovers[g])
            source[g] = "inferred from ledger member changes"
        else:
            rebalances[g], source[g] = [], "none"
    return Clusters(list(groups), rebalances, source, stats)

