"""Broker GroupCoordinator lines of server.log → events.

* "Preparing to rebalance group G [in state S] with old generation N (…) [(reason: …)]"
  → ``revoked`` for all of G's partitions (no member, no topic/partition), generation N:
  the eager protocol takes every assignment back. A reason "Removing member M on
  heartbeat expiration" / "… on LeaveGroup[; client reason: …]" adds a ``left_group``
  of M ('session timeout' / the client's reason, 'poll timeout' when it says so);
* "Stabilized group G generation N" → ``assigned`` for all partitions, generation N
  (the rebalance ends: members receive their new assignment);
* "Member M in group G has failed, removing it from the group" and "Pending member M in
  group G has been removed after session timeout expiration" → ``left_group`` of M,
  detail 'session timeout (coordinator: member has failed)';
* "Member[…member.id M] has left group G through explicit `LeaveGroup`[; client reason:
  …]" / "Member M has left group G through explicit LeaveGroup …" → ``left_group``;
* "Group G with generation N is now empty" → ``revoked`` for all partitions, gen N.

Member ids are the coordinator's (client id + "-" + UUID); by default
(``adapters.member_uuid: strip``) the UUID is removed so the id matches the client id
used by ledgers and client logs; the full id stays in the detail. Other lines
("Assignment received from leader …", anything else) are skipped.
"""

from __future__ import annotations

import re

from .clock import LogClock
from .framing import framed_lines
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)

_UUID = re.compile(r"-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}$")
_PREPARING = re.compile(r"Preparing to rebalance group (?P<g>\S+)(?: in state \w+)? with old "
                        r"generation (?P<gen>-?\d+)")
_STABILIZED = re.compile(r"Stabilized group (?P<g>\S+) generation (?P<gen>-?\d+)")
_FAILED = re.compile(r"(?:Pending )?[Mm]ember (?P<m>\S+) in group (?P<g>\S+) has (?:failed|been "
                     r"removed after session timeout)")
_LEFT = re.compile(r"Member(?:\[[^\]]*member\.id (?P<m1>[^\],\s]+)[^\]]*\]| (?P<m2>\S+)) has left "
                   r"group (?P<g>\S+) through explicit `?LeaveGroup`?(?:; client reason: "
                   r"(?P<why>.*?))?(?: \(kafka\.[\w.]+\))?$")
_EMPTY = re.compile(r"Group (?P<g>\S+) with generation (?P<gen>-?\d+) is now empty")
_REMOVING = re.compile(r"[Rr]emoving member (?P<m>\S+?) on (?P<how>heartbeat expiration|"
                       r"LeaveGroup)(?:; client reason: (?P<why>[^)]*))?")
_LOGGER_TAIL = re.compile(r"\(kafka\.[\w.]++\)\s*+$")


def _member(raw: str, opts: Options) -> str:
    return _UUID.sub("", raw) if opts.member_uuid == "strip" else raw


def _reason(text: str) -> str | None:
    i = text.find("(reason: ")
    if i < 0:
        return None
    body = text[i + len("(reason: "):]
    tail = _LOGGER_TAIL.search(body)
    if tail:
        body = body[:tail.start()].rstrip()
    return body[:-1] if body.endswith(")") else body


def _leave_detail(why: str | None) -> str:
    why = (why or "").strip().rstrip(".")
    if "poll timeout" in why.lower() or "max.poll.interval" in why.lower():
        return f"poll timeout (LeaveGroup: {why})"
    return f"LeaveGroup: {why}" if why else "LeaveGroup"


def _events(text: str, opts: Options) -> list[dict]:
    m = _PREPARING.search(text)
    if m:
        reason = _reason(text)
        gen = int(m.group("gen"))
        out = [{"group_id": m.group("g"), "event": "revoked", "generation": gen,
                "detail": f"coordinator: preparing to rebalance (old generation {gen})"
                + (f"; reason: {reason}" if reason else "")}]
        r = _REMOVING.search(reason or "")
        if r:
            full = r.group("m")
            detail = ("session timeout (heartbeat expiration)" if r.group("how").startswith(
                "heartbeat") else _leave_detail(r.group("why")))
            out.append({"group_id": m.group("g"), "member_id": _member(full, opts),
                        "event": "left_group", "detail": f"{detail}; member id {full}"})
        return out
    m = _STABILIZED.search(text)
    if m:
        gen = int(m.group("gen"))
        return [{"group_id": m.group("g"), "event": "assigned", "generation": gen,
                 "detail": f"coordinator: stabilized group generation {gen}"}]
    m = _FAILED.search(text)
    if m:
        full = m.group("m")
        return [{"group_id": m.group("g"), "member_id": _member(full, opts),
                 "event": "left_group",
                 "detail": f"session timeout (coordinator: member has failed); "
                           f"member id {full}"}]
    m = _LEFT.search(text)
    if m:
        full = m.group("m1") or m.group("m2")
        return [{"group_id": m.group("g"), "member_id": _member(full, opts),
                 "event": "left_group",
                 "detail": f"{_leave_detail(m.group('why'))}; member id {full}"}]
    m = _EMPTY.search(text)
    if m:
        gen = int(m.group("gen"))
        return [{"group_id": m.group("g"), "event": "revoked", "generation": gen,
                 "detail": f"coordinator: group is now empty (generation {gen})"}]
    return []


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    clock = LogClock(opts)
    for n, line in framed_lines(path, w):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            ts, problem, end = clock.parse(line)
            events = _events(line[end:], opts)
            if not events:
                w.skip(n, "unrelated_log_line")
                continue
            if problem or ts is None:
                w.error(n, problem or "no timestamp at the start of the line", line)
                continue
            for ev in events:
                w.row(n, ts=ts, member_id=ev.get("member_id"), group_id=ev["group_id"],
                      event=ev["event"], generation=ev.get("generation"), detail=ev.get("detail"))
