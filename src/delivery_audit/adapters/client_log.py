"""Consumer client logs (Java client, Spring Kafka, kafka-python) → events.

Recognised (one event per partition where the line lists partitions):

* "Revoking previously assigned partitions [t-9, t-0]" / "Revoke previously assigned
  partitions t-0, t-1" / Spring "partitions revoked: [...]" → ``revoked``;
* "Lost previously assigned partitions …" / Spring "partitions lost: …" → ``lost``;
* "Adding newly assigned partitions: …" / "Setting newly assigned partitions …" /
  Spring "partitions assigned: […]" → ``assigned``;
* "Synchronous/Asynchronous auto-commit of offsets {t-9=OffsetAndMetadata{offset=N,…},
  …} failed: …" → ``commit_failed`` per partition with its offset and the reason;
  "Offset commit failed on partition t-0 at offset N: …" → one ``commit_failed``;
  "Commit cannot be completed since the group has already rebalanced" elsewhere (an
  exception line), kafka-python "Offset commit failed" / "Auto offset commit failed" →
  ``commit_failed`` for all partitions (no topic/partition);
* "consumer poll timeout has expired" / "sending LeaveGroup request … due to consumer
  poll timeout" / kafka-python "Heartbeat poll expired, leaving group" → ``left_group``
  with detail 'poll timeout'; other LeaveGroup lines → ``left_group`` with their reason;
* "Successfully joined group with generation …" → ``joined_group`` with the generation
  (later events of the member carry it).

Group and member come from the Java prefix ``[Consumer clientId=C, groupId=G]``
(the member is the client id), kafka-python's "for group G", the thread that last
logged such a prefix (Spring's container lines), else ``adapters.group`` /
``adapters.member`` (or the file name). A line without a timestamp (a stack-trace or
exception line) takes the previous line's. The same event repeated within a second
(Spring echoing the client's revoke) is written once (counted as
duplicate_log_events). Every other line is skipped (counted as skipped_lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import librdkafka_log
from .clock import LogClock
from .framing import framed_lines
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)

_PREFIX = re.compile(r"\[Consumer (?:instanceId=[^,\]]*, )?clientId=(?P<client>[^,\]]+), "
                     r"groupId=(?P<group>[^\]]*)\]")
# the thread of a line: Spring Boot "  INFO 3880 --- [[app] ][%15.15t] logger : …", log4j /
# logback "LEVEL [thread] …" or "[thread] LEVEL …" right after the time
_THREAD = re.compile(r"^\s*\[(?P<t1>[^\]]+)\]|^\s*(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+"
                     r"(?:\d+\s+---\s+(?:\[[^\]]*\]\s+)?)?\[(?P<t2>[^\]]+)\]")
# threads named after their group: the Java client's heartbeat thread
# ("kafka-coordinator-heartbeat-thread | G", AbstractCoordinator 0.10.1+) and kafka-python's
# ("G-heartbeat", HeartbeatThread 1.4+, which logs "Heartbeat poll expired, leaving group")
_THREAD_GROUP = re.compile(r"^kafka-coordinator-heartbeat-thread \| (?P<g1>\S+)$|"
                           r"^(?P<g2>\S+)-heartbeat$")
_SPRING_BOOT_WIDTH = 15  # %15.15t: padded to 15 on the left, cut to its last 15 characters
_FOR_GROUP = re.compile(r"\bfor group (?P<group>[^\s:,]+?)\.?(?=[\s:,]|$)")
_PY_TP = re.compile(r"TopicPartition\(topic=u?'(?P<t>[^']*)',\s*partition=(?P<p>\d+)\)")
_JAVA_TP = re.compile(r"^(?P<t>.+)-(?P<p>\d+)$")
_OFFSETS = re.compile(r"(?P<tp>[^\s{},=]+-\d+)=OffsetAndMetadata\{offset=(?P<o>\d+)")

_PARTITION_EVENTS = [
    ("revoked", re.compile(r"(?:Revoking|Revoke) previously assigned partitions:?\s*(?P<l>.*)")),
    ("revoked", re.compile(r"partitions revoked:\s*(?P<l>.*)")),
    ("lost", re.compile(r"Lost previously assigned partitions:?\s*(?P<l>.*)")),
    ("lost", re.compile(r"partitions lost:\s*(?P<l>.*)")),
    ("assigned", re.compile(r"(?:Adding|Setting) newly assigned partitions:?\s*(?P<l>.*)")),
    ("assigned", re.compile(r"partitions assigned:\s*(?P<l>.*)")),
]
# Spring Kafka 2.3+ (AbstractMessageListenerContainer) names the group before its wording:
# "order-app-group: partitions assigned: [orders-0]" ("null" without a group.id)
_SPRING_GROUP = re.compile(r"(?:^|\s)(?P<g>[^\s:]+): partitions (?:revoked|assigned|lost):")
# 2.0+ "Synchronous|Asynchronous auto-commit of offsets {…} failed: …"; 0.10.1–1.0
# "Auto-commit of offsets {…} failed for group G: …"
_AUTO_COMMIT = re.compile(r"(?:(?:Synchronous|Asynchronous) auto|Auto)-commit of offsets "
                          r"\{(?P<offsets>.*?)\} failed(?: for group (?P<g>[^\s:]+))?:"
                          r"\s*(?P<why>.*)")
_COMMIT_ON_PARTITION = re.compile(r"Offset commit failed on partition (?P<tp>\S+) at offset "
                                  r"(?P<o>\d+):\s*(?P<why>.*)")
_COMMIT_FAILED = re.compile(r"Commit cannot be completed since the group has already "
                            r"rebalanced|Offset commit failed|Auto offset commit failed|"
                            r"CommitFailedException")
_POLL_TIMEOUT = re.compile(r"consumer poll timeout has expired|Heartbeat poll expired",
                           re.IGNORECASE)
_LEAVE = re.compile(r"sending LeaveGroup request(?: to coordinator \S+(?: \([^)]*\))?)?"
                    r"(?: due to (?P<why>.*))?", re.IGNORECASE)
# the member learns it was evicted: kafka-python "Heartbeat: local member_id was not
# recognized; this consumer needs to re-join" (1.4), "Heartbeat failed: local member_id was
# not recognized; resetting and re-joining group"; Java "Attempt to heartbeat failed for since
# member id M is not valid." (1.1–2.5), "Attempt to heartbeat with Generation{…} and group
# instance id … failed due to UNKNOWN_MEMBER_ID, resetting generation" (2.6+; the client
# ignores "with stale …")
_EVICTED = re.compile(r"local member_id was not recognized|Attempt to heartbeat failed for "
                      r"since member id \S+ is not valid|Attempt to heartbeat with (?!stale )"
                      r".* failed due to UNKNOWN_MEMBER_ID, resetting generation")
# kafka-python: "Marking the coordinator dead (node N) for group G: Heartbeat session expired."
_SESSION_EXPIRED = re.compile(r"Marking the coordinator dead .* for group \S+: Heartbeat session "
                              r"expired")
# read, no row: kafka-python announces the same expiry just before with the group named
# (above); Java "Request joining group due to: …" (3.x) is a rejoin request, the join
# itself is "Successfully joined group"
_READ_ONLY = re.compile(r"Heartbeat session expired, marking coordinator dead|Request joining "
                        r"group due to: ")
_JOINED = re.compile(r"Successfully joined group(?: (?P<g>\S+))? with generation "
                     r"(?:Generation\{generationId=(?P<gen1>-?\d+)|(?P<gen2>-?\d+))")
# kafka-python's maybe_leave_group: "Leaving consumer group (G)." (after "Heartbeat poll
# expired, leaving group", on close)
_PY_LEAVING = re.compile(r"Leaving consumer group \((?P<g>[^()\s]+)\)")
_DEDUP_MS = 1_000
# (?<!\s): tried once per run of spaces, not from each of them (a line padded with a
# million spaces would take minutes)
_FOR_GROUP_TAIL = re.compile(r"(?<!\s)\s++for group \S+.*$")
_NO_GROUP = ("consumer group unknown: the line names no group (no [Consumer … groupId=…] "
             "prefix, no 'for group'){why}; set adapters.group")


def partitions_of(text: str) -> list[tuple[str, int]]:
    """Topic-partitions listed in a log line: Java ``[t-0, t-1]`` / ``t-0, t-1`` or
    kafka-python ``{TopicPartition(topic='t', partition=0)}``."""
    found = [(m.group("t"), int(m.group("p"))) for m in _PY_TP.finditer(text)]
    if found:
        return found
    body = text.strip()
    body = _FOR_GROUP_TAIL.sub("", body)
    body = body.strip().strip("[]{}()").strip()
    out: list[tuple[str, int]] = []
    for part in re.split(r",\s*", body):
        part = part.strip().strip("[]{}'\"")
        m = _JAVA_TP.match(part)
        if m:
            out.append((m.group("t"), int(m.group("p"))))
    return out


def _short(text: str, n: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 1] + "…"


def _thread(rest: str) -> tuple[str | None, bool]:
    """(thread name, whether it is complete) of a line: a name that fills a 15-character
    field exactly may be Spring Boot's ``%15.15t`` cut (``[ntainer#0-0-C-1]``)."""
    m = _THREAD.match(rest)
    if not m:
        return None, False
    raw = m.group("t1") or m.group("t2")
    if m.group("t1") and re.search(r"\.py:\d+$", raw):  # kafka-python's [base.py:979]
        return None, False
    name = raw.strip()
    return name, len(raw) != _SPRING_BOOT_WIDTH or raw[0] == " "


class _Context:
    def __init__(self, opts: Options, origin: str) -> None:
        self.opts = opts
        self.default_member = opts.member_for(origin)
        self.threads: dict[str, tuple[str | None, str]] = {}  # complete thread -> (group, member)
        self.generation: dict[tuple[str | None, str], int] = {}
        self.recent: dict[tuple, int] = {}
        self.by_thread: dict[tuple, int] = {}  # (thread, event, topic, partition, offset) -> ts

    def who(self, rest: str, thread: str | None, complete: bool) -> tuple[str | None, str, str]:
        """(group, member, how) of a line: its own prefix or "for group", else the same
        (complete) thread's last prefixed line, else adapters.group; never a guess."""
        prefix = _PREFIX.search(rest)
        if prefix:
            who = (prefix.group("group") or None, prefix.group("client"))
            if not who[0]:  # groupId= empty (assign() without a group): (c) below
                return self.opts.group, who[1], "adapters.group"
            if thread and complete:
                self.threads[thread] = who
            return who[0], who[1], "prefix"
        tied = self.threads.get(thread) if thread and complete else None
        g = _FOR_GROUP.search(rest)
        if g:
            who = (g.group("group"), tied[1] if tied and tied[0] == g.group("group")
                   else self.default_member)
            if thread and complete:
                self.threads[thread] = who
            return who[0], who[1], "for group"
        if tied:
            return tied[0], tied[1], "thread"
        named = _THREAD_GROUP.match(thread) if thread and complete else None
        if named:  # the thread's name carries the group (a name cut short does not)
            return named.group("g1") or named.group("g2"), self.default_member, "thread name"
        return self.opts.group, self.default_member, "adapters.group"


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    clock = LogClock(opts)
    ctx = _Context(opts, origin)
    last_ts: int | None = None
    last_thread: tuple[str | None, bool] = (None, False)
    pending: _Pending | None = None
    # librdkafka lines (%7|…|FAC|rdkafka#consumer-1| …) go to adapters/librdkafka_log.py
    for n, line in librdkafka_log.hand_off(framed_lines(path, w), origin, w, opts):
        if pending is not None and n > pending.n + 1:  # only its next line can name it
            pending = _flush(pending, w)
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            ts, ts_problem, end = clock.parse(line)
            rest = line[end:]
            continuation = ts is None and ts_problem is None and end == 0
            if continuation:
                ts = last_ts  # a stack-trace or exception line: part of the previous event
                thread, complete = last_thread
            else:
                if ts is not None:
                    last_ts = ts
                thread, complete = _thread(rest)
                last_thread = (thread, complete)
            group, member, how = ctx.who(rest, thread, complete)
            if _READ_ONLY.search(rest):
                w.recognise(n)
                continue
            events = _events(rest)
            if events is None:
                w.skip(n, "unrelated_log_line")
                continue
            if not events:  # a wording read, naming nothing ("… partitions set([]) …")
                w.recognise(n)
                continue
            if ts_problem:
                w.error(n, ts_problem, line)
                continue
            if ts is None:
                w.error(n, "no timestamp on the line or before it", line)
                continue
            if pending is not None:
                named = events[0].get("group") if events[0]["event"] == "left_group" else None
                if named and ts - pending.ts <= _DEDUP_MS:  # the held leave, its group named
                    _write(ctx, w, pending.n, pending.ts, pending.events, named, pending.member,
                           "leave", pending.thread)
                    pending = None
                else:
                    pending = _flush(pending, w)
            if thread is not None and events[0].get("echo") and all(
                    abs(ts - ctx.by_thread.get(_thread_key(thread, ev), -10**18)) <= _DEDUP_MS
                    for ev in events):  # Spring's echo, naming its group, of the client's line
                w.count("duplicate_log_events")
                w.skip(n, "duplicate_log_event")
                continue
            if not group and not any(ev.get("group") for ev in events):
                if thread is not None and all(
                        abs(ts - ctx.by_thread.get(_thread_key(thread, ev), -10**18)) <= _DEDUP_MS
                        for ev in events):
                    w.count("duplicate_log_events")  # an echo (Spring) of what was just written
                    w.skip(n, "duplicate_log_event")
                    continue
                why = ""
                if thread and not complete:
                    why = f" and its thread name [{thread}] may be cut short"
                if pending is not None:
                    pending = _flush(pending, w)
                if events[0]["event"] == "left_group" and events[0].get("detail") == "poll timeout":
                    pending = _Pending(n, line, ts, events, member, thread, why)
                else:
                    w.error(n, _NO_GROUP.format(why=why), line)
                continue
            _write(ctx, w, n, ts, events, group, member, how, thread)
    if pending is not None:
        _flush(pending, w)


@dataclass
class _Pending:
    """A poll-timeout leave naming no group, held for one line: kafka-python announces the
    same leave next with its group ("Leaving consumer group (G)."), else an error row."""

    n: int
    line: str
    ts: int
    events: list[dict]
    member: str
    thread: str | None
    why: str


def _flush(p: _Pending, w: RowWriter) -> None:
    w.error(p.n, _NO_GROUP.format(why=p.why), p.line)
    return None


def _write(ctx: _Context, w: RowWriter, n: int, ts: int, events: list[dict], group: str | None,
           member: str, how: str, thread: str | None) -> None:
    """Write a line's events (each once: an event repeated within 1 s is a duplicate)."""
    for ev in events:
        if ev.get("echo") and ev["group"] != group and how == "thread":
            member = ctx.default_member  # the thread's client is of another group
        group = ev.get("group") or group
        if ev["event"] == "joined_group" and ev.get("generation") is not None:
            ctx.generation[(group, member)] = ev["generation"]
        gen = ev.get("generation", ctx.generation.get((group, member)))
        dedup_key = (group, member, ev["event"], ev.get("topic"), ev.get("partition"),
                     ev.get("offset"))
        if thread is not None:
            ctx.by_thread[_thread_key(thread, ev)] = ts
        seen = ctx.recent.get(dedup_key)
        if seen is not None and abs(ts - seen) <= _DEDUP_MS:
            w.count("duplicate_log_events")
            w.skip(n, "duplicate_log_event")
            continue
        ctx.recent[dedup_key] = ts
        w.row(n, group_id=group, member_id=member, ts=ts, event=ev["event"],
              topic=ev.get("topic"), partition=ev.get("partition"), offset=ev.get("offset"),
              generation=gen, detail=ev.get("detail"))
    if len(ctx.recent) > 10_000:
        ctx.recent = {k: v for k, v in ctx.recent.items() if ts - v <= _DEDUP_MS}
        ctx.by_thread = {k: v for k, v in ctx.by_thread.items() if ts - v <= _DEDUP_MS}


def _thread_key(thread: str, ev: dict) -> tuple:
    return (thread, ev["event"], ev.get("topic"), ev.get("partition"), ev.get("offset"))


def _events(text: str) -> list[dict] | None:
    """The events a log line states (without group/member/time); [] for a wording that
    names no partition ("Revoking previously assigned partitions set([])"); None when the
    line is none of ours."""
    m = _AUTO_COMMIT.search(text)
    if m:
        why = _short(m.group("why"))
        out = []
        for o in _OFFSETS.finditer(m.group("offsets")):
            tp = _JAVA_TP.match(o.group("tp"))
            if tp:
                out.append({"event": "commit_failed", "topic": tp.group("t"),
                            "partition": int(tp.group("p")), "offset": int(o.group("o")),
                            "detail": why})
        if m.group("g"):
            for ev in out:
                ev["group"] = m.group("g")
        return out or [{"event": "commit_failed", "detail": why, "group": m.group("g")}]
    m = _COMMIT_ON_PARTITION.search(text)
    if m:
        tp = _JAVA_TP.match(m.group("tp"))
        if tp:
            return [{"event": "commit_failed", "topic": tp.group("t"),
                     "partition": int(tp.group("p")), "offset": int(m.group("o")),
                     "detail": _short(m.group("why"))}]
    for event, rx in _PARTITION_EVENTS:
        m = rx.search(text)
        if m:
            parts = partitions_of(m.group("l"))
            spring = _SPRING_GROUP.search(text)
            named = spring.group("g") if spring and spring.group("g") != "null" else None
            return [{"event": event, "topic": t, "partition": p,
                     **({"group": named, "echo": True} if named else {})} for t, p in parts]
    if _POLL_TIMEOUT.search(text):
        return [{"event": "left_group", "detail": "poll timeout"}]
    m = _EVICTED.search(text)
    if m:
        return [{"event": "left_group", "detail": "evicted (seen by the client: the coordinator "
                 f"no longer knows the member: {_short(m.group(0), 120)})"}]
    if _SESSION_EXPIRED.search(text):
        return [{"event": "left_group", "detail": "session timeout (seen by the client: "
                 "heartbeat session expired)"}]
    m = _PY_LEAVING.search(text)
    if m:
        return [{"event": "left_group", "detail": "LeaveGroup", "group": m.group("g")}]
    m = _LEAVE.search(text)
    if m:
        why = (m.group("why") or "").strip().rstrip(".")
        return [{"event": "left_group", "detail": _short(why) if why else "LeaveGroup"}]
    if _COMMIT_FAILED.search(text):
        return [{"event": "commit_failed", "detail": _short(text[_COMMIT_FAILED.search(
            text).start():])}]
    m = _JOINED.search(text)
    if m:
        gen = m.group("gen1") or m.group("gen2")
        return [{"event": "joined_group", "generation": int(gen), "group": m.group("g")}]
    return None
