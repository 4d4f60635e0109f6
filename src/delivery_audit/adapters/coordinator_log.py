"""Broker GroupCoordinator lines of server.log → events, every wording Kafka has used
(docs/adapters.md, "Group coordinator and consumer client wordings", has the table with
the versions each comes from).

Classic protocol (0.9 → 4.x):

* "Preparing to rebalance group G [in state S] with old generation N (…) [(reason: …)]",
  0.9/0.10 "Preparing to restabilize group G with old generation N" → ``revoked`` for all
  of G's partitions (no member, no topic/partition), generation N: the eager protocol takes
  every assignment back. The reason names members: "removing member M on heartbeat
  expiration" → ``left_group`` of M (session timeout); "Removing member M on LeaveGroup[;
  client reason: …]" → ``left_group`` (poll timeout when the reason says so); 4.x
  "explicit `LeaveGroup` request for (M1, M2) members." → ``left_group`` of each;
  "Removing [M…] on pending sync request expiration" → ``left_group`` of each; "Adding new
  member M …" → ``joined_group`` of M;
* "Stabilized group G generation N" → ``assigned`` for all partitions, generation N;
* "Group G with generation N is now empty", 0.9/0.10 "Group G generation N is dead and
  removed" → ``revoked`` for all partitions, generation N;
* leaves: "Member M in group G has failed, removing it from the group", "Pending member M in
  group G has been removed after session timeout expiration" (session timeout); "Member M
  in group G has left, removing it from the group" (1.x–2.3), "Member[group.instance.id I,
  member.id M] in group G has left, removing it from the group" (2.4–2.8), "Member
  MemberMetadata(memberId=M, …, clientHost=H, …) has left group G through explicit
  `LeaveGroup`[ request|; client reason: …]" (3.x), "Pending member with memberId=M has left
  group G through explicit `LeaveGroup` request" (3.x), 4.x "[Group G] [Dynamic |Static
  ]Member M [with instance id I ]has left group through explicit `LeaveGroup` request;
  client reason: …", "Group G removed dynamic members who haven't joined: Set(M…)" (did
  not rejoin within the rebalance timeout) → ``left_group``;
* joins: "Dynamic [Mm]ember with unknown member id joins group G in S state. Created a new
  member id M …", "Static member with groupInstanceId=I and unknown member id joins group G
  … Created a new member id M …", "Pending dynamic member with id M joins group G …" →
  ``joined_group`` of M.

Consumer protocol (KIP-848, ``group.protocol=consumer``, 3.7+/4.x; "[GroupId G]" lines,
no "Preparing to rebalance"/"Stabilized"): "Member M joins the consumer group …",
"Static member M with instance id I joins …", "… Created a new member M to replace the
existing member OLD." → ``joined_group``; "Member M left the consumer group.", "Static
Member M with instance id I [temporarily ]left the consumer group." → ``left_group``;
"Member M fenced from the group because …" (session expired → session timeout; failed to
transition/join/sync within the rebalance timeout → poll timeout) → ``left_group``;
"Member M new assignment state: epoch=E, …, state=S, …" → ``assigned`` of M (state
STABLE) or ``revoked`` of M (UNREVOKED_PARTITIONS), without topic/partition (the line
names topics by id); other states are read without a row. "Bumped group epoch to N." and
"Computed a new target assignment for epoch N" are read (no row): the group epoch is the
generation of the group's later consumer-protocol events.

Member ids are the coordinator's (client id + "-" + UUID). By default
(``adapters.member_uuid: strip``) the UUID is removed so the id matches the client id used
by ledgers and client logs, unless that would merge two members alive at once (several
``console-consumer-<uuid>`` members, two hosts sharing a ``client.id``): the later one
keeps its full id (or ``client-id@host`` when the line gives ``clientHost``). A client id
that a library gives every process (librdkafka's ``rdkafka``, ``sarama``, ``kafkajs``)
names no consumer: ``rdkafka-<uuid>`` stays whole. The full id
is always in the detail. Other lines are skipped (``unrelated_log_line``); the same member
event repeated within a second (a join announced twice) is skipped as
``duplicate_log_event``.
"""

from __future__ import annotations

import re

from .clock import LogClock
from .framing import framed_lines
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)

_DEDUP_MS = 1_000
_UUID = re.compile(r"-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}$")
_G = r"(?P<g>[^\s\]]+)"
_M = r"(?P<m>[^\s,\]\)]+)"
_PREPARING = re.compile(r"Preparing to (?:rebalance|restabilize) group " + _G
                        + r"(?: in state \w+)? with old generation (?P<gen>-?\d+)")
_STABILIZED = re.compile(r"Stabilized group " + _G + r" generation (?P<gen>-?\d+)")
_EMPTY = re.compile(r"Group " + _G + r" (?:with generation|generation) (?P<gen>-?\d+) "
                    r"(?:is now empty|is dead and removed)")
_FAILED = re.compile(r"(?P<pending>Pending )?[Mm]ember " + _M + r" in group " + _G
                     + r" has (?:failed|been removed after session timeout)")
_LEFT_OLD = re.compile(r"Member(?:\[group\.instance\.id (?P<inst>[^,\]]*), member\.id "
                       r"(?P<m1>[^\],\s]+)\]| (?P<m2>\S+)) in group " + _G
                       + r" has left, removing it from the group")
_LEFT_METADATA = re.compile(r"Member MemberMetadata\(memberId=(?P<m>[^,\s]+), "
                            r"(?:groupInstanceId=(?P<inst>[^,]*), )?clientId=(?P<client>[^,]*), "
                            r"clientHost=(?P<host>[^,]*),.*?\) has left group " + _G
                            + r" through explicit `?LeaveGroup`?(?: request)?"
                            r"(?:; client reason: (?P<why>.*?))?(?: \((?:kafka|org)\.[\w.$]+\))?$")
_LEFT_BRACKET = re.compile(r"Member(?:\[[^\]]*member\.id (?P<m1>[^\],\s]+)[^\]]*\]| "
                           r"(?P<m2>[^\s\[]\S*)) has left group " + _G
                           + r" through explicit `?LeaveGroup`?(?: request)?"
                           r"(?:; client reason: (?P<why>.*?))?(?: \((?:kafka|org)\.[\w.$]+\))?$")
_LEFT_PENDING3 = re.compile(r"Pending member with memberId=" + _M + r" has left group " + _G
                            + r" through explicit `?LeaveGroup`?")
_LEFT_4X = re.compile(r"\[Group " + _G + r"\] (?:(?:Dynamic |Static |Pending )?[Mm]ember) "
                      + _M + r"(?: with instance id (?P<inst>\S+))? has left group through "
                      r"explicit `?LeaveGroup`?(?: request)?(?:; client reason: (?P<why>.*?))?"
                      r"(?: \((?:kafka|org)\.[\w.$]+\))?$")
_NOT_REJOINED = re.compile(r"Group " + _G + r" removed dynamic members who haven't joined: "
                           r"(?P<list>.*)")
_JOIN_UNKNOWN = re.compile(r"Dynamic [Mm]ember with unknown member id (?:re)?joins group " + _G
                           + r" in (?:state )?\w+(?: state)?\. Created a new member id " + _M)
_JOIN_STATIC = re.compile(r"Static member with groupInstanceId=(?P<inst>\S+) and unknown member "
                          r"id joins group " + _G + r" in \w+ state\. Created a new member id "
                          + _M)
_JOIN_PENDING = re.compile(r"Pending dynamic member with id " + _M + r" joins group " + _G)
# KIP-848 consumer groups
_GID = r"\[GroupId[ =](?P<g>[^\]\s]+)\] "
_CG_JOIN = re.compile(_GID + r"(?:(?:Static )?[Mm]ember " + _M + r"(?: with instance id \S+)? "
                      r"joins the consumer group|Dynamic member with unknown member id joins the "
                      r"consumer group\. Created a new member id (?P<m2>[^\s,]+))")
_CG_REPLACE = re.compile(_GID + r"Static member with (?:unknown member id and )?instance id \S+ "
                         r"re-joins the consumer "
                         r"group.*?Created a new member " + _M + r" to replace the existing "
                         r"member (?P<old>\S+?)\.?(?:\s|$)")
_CG_LEFT = re.compile(_GID + r"(?:Static )?[Mm]ember " + _M + r"(?: with instance id \S+)? "
                      r"(?P<temp>temporarily )?left the consumer group")
_CG_FENCED = re.compile(_GID + r"Member " + _M + r" fenced from the group because (?P<why>.*)")
_CG_STATE = re.compile(_GID + r"Member " + _M + r" new assignment state: epoch=(?P<e>-?\d+), "
                       r"previousEpoch=(?P<pe>-?\d+), state=(?P<s>\w+)(?P<rest>.*)")
_CG_EPOCH = re.compile(_GID + r"(?:Bumped group epoch to|Computed a new target assignment for "
                       r"epoch) (?P<e>-?\d+)")
_REMOVING = re.compile(r"[Rr]emoving member " + _M + r" on (?P<how>heartbeat expiration|"
                       r"LeaveGroup)(?:; client reason: (?P<why>.*))?")
_ADDING = re.compile(r"Adding new member " + _M)
_LEAVE_REQUEST = re.compile(r"explicit `LeaveGroup` request for \((?P<list>[^)]*)\) members")
_PENDING_SYNC = " on pending sync request expiration"
_LOGGER_TAIL = re.compile(r"\((?:kafka|org)\.[\w.$]++\)\s*+$")
_HOST = re.compile(r"^/")
# client ids that every process of a client library shares by default (librdkafka's
# "rdkafka", Sarama's, kafkajs'): without the UUID they name no consumer, so the member keeps
# its full id (the UUID's owner). kafka-python's "kafka-python-<version>" is stripped as
# before (tests/test_log_events.py reads it as the member of its client log)
_SHARED_CLIENT_ID = re.compile(r"^(?:rdkafka|sarama|kafkajs)$")


def _reason(text: str) -> str | None:
    i = text.find("(reason: ")
    if i < 0:
        return None
    body = text[i + len("(reason: "):]
    tail = _LOGGER_TAIL.search(body)
    if tail:
        body = body[:tail.start()].rstrip()
    body = body.rstrip(".") if body.endswith(").") else body  # 4.x: "(reason: …)."
    return body[:-1] if body.endswith(")") else body


def _leave_detail(why: str | None) -> str:
    why = (why or "").strip().rstrip(".")
    if "poll timeout" in why.lower() or "max.poll.interval" in why.lower():
        return f"poll timeout (LeaveGroup: {why})"
    if why in ("", "not provided"):
        return "LeaveGroup" + (" (no client reason)" if why else "")
    return f"LeaveGroup: {why}"


def _ids(text: str) -> list[str]:
    return [x.strip() for x in re.split(r",\s*", text) if x.strip()]


def _ev(group: str, event: str, member: str | None = None, gen: int | None = None,
        detail: str | None = None, host: str | None = None) -> dict:
    return {"group_id": group, "event": event, "member": member, "generation": gen,
            "detail": detail, "host": host}


def _from_reason(group: str, reason: str) -> list[dict]:
    r = _REMOVING.search(reason)
    if r:
        detail = ("session timeout (heartbeat expiration)" if r.group("how").startswith(
            "heartbeat") else _leave_detail(r.group("why")))
        return [_ev(group, "left_group", r.group("m"), detail=detail)]
    r = _LEAVE_REQUEST.search(reason)
    if r:
        return [_ev(group, "left_group", m, detail="LeaveGroup (coordinator: explicit "
                    "`LeaveGroup` request)") for m in _ids(r.group("list"))]
    end = reason.find(_PENDING_SYNC)  # "Removing Set(M1, M2) on pending sync request expiration"
    start = reason.rfind("Removing ", 0, end) if end >= 0 else -1
    if start >= 0:
        body = re.sub(r"^(?:\w*Set\(|\[)|[\])]$", "", reason[start + len("Removing "):end].strip())
        return [_ev(group, "left_group", m, detail="poll timeout (did not send SyncGroup "
                    "within the rebalance timeout: pending sync request expiration)")
                for m in _ids(body)]
    r = _ADDING.search(reason)
    if r:
        return [_ev(group, "joined_group", r.group("m"), detail="coordinator: adding new member")]
    return []


def _classic(text: str) -> list[dict] | None:
    m = _PREPARING.search(text)
    if m:
        reason = _reason(text)
        gen = int(m.group("gen"))
        g = m.group("g")
        return [_ev(g, "revoked", gen=gen,
                    detail=f"coordinator: preparing to rebalance (old generation {gen})"
                    + (f"; reason: {reason}" if reason else ""))] + _from_reason(g, reason or "")
    m = _STABILIZED.search(text)
    if m:
        gen = int(m.group("gen"))
        return [_ev(m.group("g"), "assigned", gen=gen,
                    detail=f"coordinator: stabilized group generation {gen}")]
    m = _EMPTY.search(text)
    if m:
        gen = int(m.group("gen"))
        return [_ev(m.group("g"), "revoked", gen=gen,
                    detail=f"coordinator: group is now empty (generation {gen})")]
    m = _FAILED.search(text)
    if m:
        how = ("pending member removed after session timeout" if m.group("pending")
               else "member has failed")
        return [_ev(m.group("g"), "left_group", m.group("m"),
                    detail=f"session timeout (coordinator: {how})")]
    m = _LEFT_OLD.search(text)
    if m:
        return [_ev(m.group("g"), "left_group", m.group("m1") or m.group("m2"),
                    detail="LeaveGroup (coordinator: has left, removing it from the group)")]
    m = _LEFT_METADATA.search(text)
    if m:
        host = _HOST.sub("", m.group("host").strip()) or None
        return [_ev(m.group("g"), "left_group", m.group("m"), detail=_leave_detail(
            m.group("why")), host=host)]
    m = _LEFT_4X.search(text) or _LEFT_BRACKET.search(text)
    if m:
        member = m.groupdict().get("m") or m.group("m1") or m.group("m2")
        return [_ev(m.group("g"), "left_group", member, detail=_leave_detail(m.group("why")))]
    m = _LEFT_PENDING3.search(text)
    if m:
        return [_ev(m.group("g"), "left_group", m.group("m"),
                    detail="LeaveGroup (coordinator: pending member left)")]
    m = _NOT_REJOINED.search(text)
    if m:
        body = _LOGGER_TAIL.sub("", m.group("list")).strip()
        body = re.sub(r"^(?:Set\(|\[)|[\])]$", "", body)
        return [_ev(m.group("g"), "left_group", x, detail="poll timeout (did not rejoin within "
                    "the rebalance timeout: removed dynamic members who haven't joined)")
                for x in _ids(body)]
    m = _JOIN_STATIC.search(text) or _JOIN_UNKNOWN.search(text)
    if m:
        return [_ev(m.group("g"), "joined_group", m.group("m"),
                    detail="coordinator: member with unknown member id joins")]
    m = _JOIN_PENDING.search(text)
    if m:
        return [_ev(m.group("g"), "joined_group", m.group("m"),
                    detail="coordinator: pending member joins")]
    return None


def _consumer_protocol(text: str, epochs: dict[str, int]) -> list[dict] | None:
    m = _CG_EPOCH.search(text)
    if m:
        epochs[m.group("g")] = int(m.group("e"))
        return []
    m = _CG_REPLACE.search(text)
    if m:
        g = m.group("g")
        return [_ev(g, "joined_group", m.group("m"), epochs.get(g),
                    "consumer protocol: static member re-joins, replacing member "
                    + m.group("old"))]
    m = _CG_JOIN.search(text)
    if m:
        g = m.group("g")
        return [_ev(g, "joined_group", m.group("m") or m.group("m2"), epochs.get(g),
                    "consumer protocol: member joins")]
    m = _CG_LEFT.search(text)
    if m:
        g = m.group("g")
        how = "temporarily left (static member)" if m.group("temp") else "left"
        return [_ev(g, "left_group", m.group("m"), epochs.get(g),
                    f"LeaveGroup (consumer protocol: member {how})")]
    m = _CG_FENCED.search(text)
    if m:
        g, why = m.group("g"), _LOGGER_TAIL.sub("", m.group("why")).strip().rstrip(".")
        if "session" in why:
            detail = f"session timeout (consumer protocol: fenced because {why})"
        elif "within" in why or "timeout" in why:
            detail = (f"poll timeout (consumer protocol: fenced because {why}; the rebalance "
                      "timeout is max.poll.interval.ms)")
        else:
            detail = f"fenced (consumer protocol: {why})"
        return [_ev(g, "left_group", m.group("m"), epochs.get(g), detail)]
    m = _CG_STATE.search(text)
    if m:
        state = m.group("s").upper()
        event = {"STABLE": "assigned", "UNREVOKED_PARTITIONS": "revoked"}.get(state)
        if event is None:
            return []
        rest = _LOGGER_TAIL.sub("", m.group("rest")).strip(" ,.")
        return [_ev(m.group("g"), event, m.group("m"), int(m.group("e")),
                    f"consumer protocol: member epoch {m.group('e')} (previous "
                    f"{m.group('pe')}), state {state}" + (f"; {rest}" if rest else ""))]
    return None


class _Members:
    """Member names: the client id (UUID stripped) unless that would merge two members
    of a group that are alive at once."""

    def __init__(self, opts: Options) -> None:
        self.keep = opts.member_uuid != "strip"
        self.holder: dict[tuple[str, str], str] = {}  # (group, stripped id) -> full id
        self.names: dict[tuple[str, str], str] = {}  # (group, full id) -> name given

    def name(self, group: str, full: str, host: str | None) -> tuple[str, str | None]:
        """(member id, a note when the id is not the plain client id)."""
        if (group, full) in self.names:
            name = self.names[(group, full)]
            if name == full and _SHARED_CLIENT_ID.match(_UUID.sub("", full)):
                return name, None
            return name, None if name == _UUID.sub("", full) else "kept distinct"
        base = _UUID.sub("", full)
        if self.keep or base == full:
            self.names[(group, full)] = full
            return full, None
        if _SHARED_CLIENT_ID.match(base):
            self.names[(group, full)] = full
            return full, f"kept whole: {base} is the client library's default client id"
        holder = self.holder.get((group, base))
        if holder is None or holder == full:
            self.holder[(group, base)] = full
            self.names[(group, full)] = base
            return base, None
        name = f"{base}@{host}" if host else full
        self.names[(group, full)] = name
        return name, f"kept distinct: {base} is also member {holder}"

    def left(self, group: str, full: str) -> None:
        base = _UUID.sub("", full)
        if self.holder.get((group, base)) == full:
            del self.holder[(group, base)]


def _events(text: str, epochs: dict[str, int]) -> list[dict] | None:
    """The events a line states; [] for a line read without a row; None: not ours."""
    out = _consumer_protocol(text, epochs)
    return out if out is not None else _classic(text)


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    clock = LogClock(opts)
    members = _Members(opts)
    epochs: dict[str, int] = {}
    recent: dict[tuple, int] = {}
    for n, line in framed_lines(path, w):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            ts, problem, end = clock.parse(line)
            events = _events(line[end:], epochs)
            if events is None:
                w.skip(n, "unrelated_log_line")
                continue
            if not events:
                w.recognise(n)
                continue
            if problem or ts is None:
                w.error(n, problem or "no timestamp at the start of the line", line)
                continue
            for ev in events:
                member, detail = None, ev["detail"]
                full = ev["member"]
                if full:
                    member, note = members.name(ev["group_id"], full, ev["host"])
                    detail = f"{detail}; member id {full}"
                    if ev["host"]:
                        detail += f" (client host {ev['host']})"
                    if note:
                        detail += f" ({note})"
                key = (ev["group_id"], member, ev["event"], ev["generation"])
                if full and key in recent and ts - recent[key] <= _DEDUP_MS:
                    w.count("duplicate_log_events")
                    w.skip(n, "duplicate_log_event")
                    continue
                recent[key] = ts
                if full and ev["event"] == "left_group":
                    members.left(ev["group_id"], full)
                w.row(n, ts=ts, member_id=member, group_id=ev["group_id"], event=ev["event"],
                      generation=ev["generation"], detail=detail)
            if len(recent) > 10_000:
                recent = {k: v for k, v in recent.items() if ts - v <= _DEDUP_MS}
