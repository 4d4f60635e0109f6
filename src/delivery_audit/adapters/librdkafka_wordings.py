"""librdkafka's consumer-group wordings (see librdkafka_log.py): what a message states, for
one member whose state (current assignment, pending delegations, how it last left) the
reader keeps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GROUP = re.compile(r'Group "(?P<g>[^"]*)"')
_MAXPOLL = re.compile(r"Application maximum poll interval \((?P<max>\d+)ms\) exceeded by "
                      r"(?P<by>\d+)ms")
_MAXPOLL_ERR = re.compile(r"Maximum application poll interval \(max\.poll\.interval\.ms\) "
                          r"exceeded")
_SESSION = re.compile(r"Consumer group session timed out \(in join-state (?P<js>[^)]*)\) after "
                      r"(?P<ms>\d+) ms without a successful response from the group "
                      r"coordinator(?: \((?P<why>[^()]*(?:\([^()]*\)[^()]*)*)\))?")
_CGRP_LINE = re.compile(r'\s*(?:\S+: )?Group "')
# 'Group "G": leave' (0.9 – 0.11.3), '… leave (in state S)' (0.11.4+)
_LEAVE = re.compile(r'Group "[^"]*": leave(?: \(in state (?P<st>[^)]*)\))?(?=\s*$|:)')
_DELEGATE = re.compile(r'Group "[^"]*": delegating (?P<inc>incremental )?(?P<kind>assign|revoke) '
                       r"of (?P<n>\d+) partition\(s\) to application(?: rebalance callback)?"
                       r"(?: on queue (?P<q>[^:]*))?(?:: (?P<why>.*))?")
_NEW_ASSIGNMENT = re.compile(r'Group "[^"]*": new assignment of (?P<n>\d+) partition\(s\)')
_UNASSIGNING = re.compile(r'Group "[^"]*": unassigning (?P<n>\d+) partition\(s\)')
_CLEARING = re.compile(r"Clearing current assignment of (?P<n>\d+) partition\(s\)")
_LOST = re.compile(r'Group "[^"]*": current assignment of (?P<n>\d+) partition\(s\) lost: '
                   r"(?P<why>.*)")
_COMMITFAIL = re.compile(r"Offset commit \((?P<how>[^)]*)\) failed for (?P<k>\d+)/(?P<n>\d+) "
                         r"partition\(s\)(?: in join-state (?P<js>\S+))?: (?P<rest>.*)")
# the commit's response (COMMIT, debug): "OffsetCommit for N partition(s)[ in join-state S]: R:
# returned: E" (E "Success", "Local: No offset stored" when nothing was stored, or an error)
_COMMIT_RESULT = re.compile(r"OffsetCommit for (?P<n>-?\d+) partition\(s\)(?: in join-state "
                            r"(?P<js>\S+))?: (?P<how>.*?): returned: (?P<err>.*?)\s*$")
_COMMIT_OK = ("Success", "Local: No offset stored", "No offset stored")
# list_str: "t[0]@5(err)" (1.x) / "t(topic-id)[0]@5(err)" (2.x)
_LIST_ITEM = re.compile(r"(?<![^\s,\[\]()])(?P<t>[^\s,\[\]()]+)(?:\((?:[^()]|\([^()]*\))*\))?"
                        r"\[(?P<p>\d+)\](?:@(?P<o>-?\d+))?(?:\((?P<err>[^()]*)\))?")
# the member's new assignment: ASSIGNMENT (SyncGroup, 1.6+), FETCHSTART (assign(), < 1.6);
# other lists (DUMP_ALL, OFFSETFETCH …) are not assignments
LIST_FACILITIES = ("ASSIGNMENT", "FETCHSTART")
LIST_HEAD = re.compile(r"^\s*List with (?P<n>\d+) partition\(s\):\s*$")
LIST_LINE = re.compile(r"^\s*(?P<t>\S+) \[(?P<p>\d+)\] offset \S+")
CGRP_CONTEXT = re.compile(
    r'Group "[^"]*" (?:changed (?:join )?state|received op|heartbeat error response)|'
    r'Group "[^"]*": (?:fetching offsets|starting fetchers|assigning \d+|unassign done|'
    r"setting group assignment|clearing group assignment|\d+ partition\(s\) being|"
    r"rejoining|resetting group leader|subscribe|unsubscribe)|"
    r"Heartbeat failed|Fetching committed offsets|Group \"[^\"]*\" (?:is|initiating) "
    r"rebalanc")

def _short(text: str, n: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class Member:
    name: str
    current: list[tuple[str, int]] = field(default_factory=list)
    listing: list[tuple[str, int]] | None = None
    list_expect: int = 0
    last_list: list[tuple[str, int]] | None = None
    pending: dict | None = None  # a delegated assign waiting for its partition list
    delegated_revoke: bool = False  # the application's unassign will follow: no row
    delegated_assign: bool = False  # the application's assign will follow: no row
    # how the member last left (kind, MAXPOLL numbers), None once assigned again: the
    # lines that report the same leave again give no second row
    left: tuple[str, tuple[str, str] | None] | None = None
    lost: int | None = None  # partitions just lost (the revoke that follows tells the app)
    unplaced: str | None = None  # a MAXPOLL without group: the cause of the LEAVE that follows
    commit_failed: str | None = None  # the error of a COMMIT failure: its COMMITFAIL repeats it


def wording(msg: str, m: Member, inst: str | None) -> list[dict] | None:
    """The events a librdkafka message states: None (not a group line), [] (read, no
    row), or the events (their partitions may be resolved later)."""
    def detail(text: str) -> str:
        return f"{text}; {inst}" if inst else text

    x = _DELEGATE.search(msg)
    if x:
        count = int(x.group("n"))
        kind = "assigned" if x.group("kind") == "assign" else "revoked"
        why = (x.group("why") or "").strip()
        if count == 0:
            return []
        if kind == "revoked" and m.lost == count:  # the loss told to the application
            m.lost, m.delegated_revoke = None, True
            return []
        return [{"event": kind, "count": count, "incremental": bool(x.group("inc")),
                 "delegated": True,
                 "detail": detail(f"{'incremental ' if x.group('inc') else ''}"
                                  f"{x.group('kind')} of {count} partition(s)"
                                  + (f": {_short(why, 200)}" if why else ""))}]
    x = _NEW_ASSIGNMENT.search(msg)
    if x:
        count = int(x.group("n"))
        if count == 0 or m.delegated_assign or m.pending is not None:
            m.delegated_assign = False
            return []
        return [{"event": "assigned", "count": count, "incremental": False,
                 "detail": detail(f"assign of {count} partition(s)")}]
    x = _UNASSIGNING.search(msg) or _CLEARING.search(msg)
    if x:
        count = int(x.group("n"))
        if count == 0 or m.delegated_revoke:
            m.delegated_revoke = False
            return []
        return [{"event": "revoked", "count": count, "incremental": False,
                 "detail": detail(f"unassign of {count} partition(s)")}]
    x = _LOST.search(msg)
    if x:
        count = int(x.group("n"))
        return [{"event": "lost", "count": count, "incremental": False,
                 "detail": detail(f"assignment of {count} partition(s) lost: "
                                  f"{_short(x.group('why'), 200)}")}]
    x = _COMMIT_RESULT.search(msg)
    if x:
        err = x.group("err").strip()
        if err in _COMMIT_OK:  # committed, or nothing to commit: no event (no offsets named)
            m.commit_failed = None
            return None
        m.commit_failed = err
        if m.left is not None:  # the commit of a member that has left: its leave is written
            return []
        return [{"event": "commit_failed",
                 "detail": detail(f"offset commit ({x.group('how')}) failed for "
                                  f"{x.group('n')} partition(s): {_short(err, 200)}")}]
    x = _COMMITFAIL.search(msg)
    if x:
        rest = x.group("rest")
        items = list(_LIST_ITEM.finditer(rest))
        err = rest[:items[0].start()].rstrip(": ").strip() if items else rest.strip()
        repeated, m.commit_failed = m.commit_failed, None
        if repeated is not None and (repeated == err or repeated in rest):
            return []  # the warning of the failure its COMMIT line told
        out = []
        for it in items:
            offset = int(it.group("o")) if it.group("o") is not None else None
            why = it.group("err") or err
            out.append({"event": "commit_failed", "topic": it.group("t"),
                        "partition": int(it.group("p")),
                        "offset": offset if offset is not None and offset >= 0 else None,
                        "detail": detail(f"offset commit ({x.group('how')}) failed: "
                                         f"{_short(why, 200)}")})
        return out or [{"event": "commit_failed",
                        "detail": detail(f"offset commit ({x.group('how')}) failed: "
                                         f"{_short(err, 200)}")}]
    x = _LEAVE.search(msg)
    if x:
        if m.left is not None:  # the mechanics of a leave already written
            return []
        why, m.unplaced = (f"{m.unplaced}; LeaveGroup" if m.unplaced else "LeaveGroup"), None
        return [{"event": "left_group", "leave": ("leave", None), "detail": detail(why)}]
    if _CGRP_LINE.match(msg):  # 'Group "G" …: <reason>': the reason is not the event
        return None
    x = _MAXPOLL.search(msg)
    if x or _MAXPOLL_ERR.search(msg):
        key = (x.group("max"), x.group("by")) if x else None
        if m.left is not None and m.left[0] == "maxpoll" and (
                key is None or m.left[1] in (None, key)):
            return []  # the warning, the consumer error and its print: one leave
        why = (f"poll interval exceeded (max.poll.interval.ms {x.group('max')}, exceeded "
               f"by {x.group('by')} ms)" if x else "poll interval exceeded")
        return [{"event": "left_group", "leave": ("maxpoll", key), "detail": detail(why)}]
    x = _SESSION.search(msg)
    if x:
        if m.left is not None and m.left[0] in ("maxpoll", "leave"):
            return []  # the session of a member that had already left
        why = f"session timeout (no coordinator response for {x.group('ms')} ms"
        why += f"; {x.group('why')})" if x.group("why") else ")"
        return [{"event": "left_group", "leave": ("session", None), "detail": detail(why)}]
    return None
