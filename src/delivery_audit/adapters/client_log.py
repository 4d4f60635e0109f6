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

from . import librdkafka_log
from .clock import LogClock
from .lines import open_lines
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)

_PREFIX = re.compile(r"\[Consumer (?:instanceId=[^,\]]*, )?clientId=(?P<client>[^,\]]+), "
                     r"groupId=(?P<group>[^\]]*)\]")
_THREAD = re.compile(r"^\s*\[(?P<thread>[^\]]+)\]")
_FOR_GROUP = re.compile(r"\bfor group (?P<group>[^\s:,]+)")
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
_AUTO_COMMIT = re.compile(r"(?:Synchronous|Asynchronous) auto-commit of offsets "
                          r"\{(?P<offsets>.*?)\} failed:\s*(?P<why>.*)")
_COMMIT_ON_PARTITION = re.compile(r"Offset commit failed on partition (?P<tp>\S+) at offset "
                                  r"(?P<o>\d+):\s*(?P<why>.*)")
_COMMIT_FAILED = re.compile(r"Commit cannot be completed since the group has already "
                            r"rebalanced|Offset commit failed|Auto offset commit failed|"
                            r"CommitFailedError")
_POLL_TIMEOUT = re.compile(r"consumer poll timeout has expired|Heartbeat poll expired",
                           re.IGNORECASE)
_LEAVE = re.compile(r"sending LeaveGroup request(?: to coordinator \S+(?: \([^)]*\))?)?"
                    r"(?: due to (?P<why>.*))?", re.IGNORECASE)
_JOINED = re.compile(r"Successfully joined group(?: (?P<g>\S+))? with generation "
                     r"(?:Generation\{generationId=(?P<gen1>-?\d+)|(?P<gen2>-?\d+))")
_DEDUP_MS = 1_000
# (?<!\s): tried once per run of spaces, not from each of them (a line padded with a
# million spaces would take minutes)
_FOR_GROUP_TAIL = re.compile(r"(?<!\s)\s++for group \S+.*$")


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


class _Context:
    def __init__(self, opts: Options, origin: str) -> None:
        self.opts = opts
        self.default_member = opts.member_for(origin)
        self.last: tuple[str | None, str] = (opts.group, self.default_member)
        self.threads: dict[str, tuple[str | None, str]] = {}
        self.generation: dict[tuple[str | None, str], int] = {}
        self.recent: dict[tuple, int] = {}


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    clock = LogClock(opts)
    ctx = _Context(opts, origin)
    last_ts: int | None = None
    # librdkafka lines (%7|…|FAC|rdkafka#consumer-1| …) go to adapters/librdkafka_log.py
    for n, line in librdkafka_log.hand_off(open_lines(path, w), origin, w, opts):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            ts, ts_problem, end = clock.parse(line)
            rest = line[end:]
            events = _events(rest)
            if ts is None and ts_problem is None and end == 0:
                ts = last_ts  # a continuation line (stack trace, exception message)
            elif ts is not None:
                last_ts = ts
            thread_m = _THREAD.match(rest)
            thread = thread_m.group("thread") if thread_m else None
            prefix = _PREFIX.search(rest)
            if prefix:
                who = (prefix.group("group") or None, prefix.group("client"))
                if thread:
                    ctx.threads[thread] = who
            else:
                who = ctx.threads.get(thread or "", ctx.last)
                g = _FOR_GROUP.search(rest)
                if g:
                    who = (g.group("group"), who[1])
            if prefix or _FOR_GROUP.search(rest):
                ctx.last = who
            if not events:
                w.skip(n, "unrelated_log_line")
                continue
            if ts_problem:
                w.error(n, ts_problem, line)
                continue
            if ts is None:
                w.error(n, "no timestamp on the line or before it", line)
                continue
            group, member = who
            if not group and not any(ev.get("group") for ev in events):
                w.error(n, "consumer group unknown: no groupId on the line; set adapters.group",
                        line)
                continue
            for ev in events:
                group = ev.get("group") or who[0]
                if ev["event"] == "joined_group" and ev.get("generation") is not None:
                    ctx.generation[(group, member)] = ev["generation"]
                gen = ev.get("generation", ctx.generation.get((group, member)))
                dedup_key = (group, member, ev["event"], ev.get("topic"), ev.get("partition"),
                             ev.get("offset"))
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


def _events(text: str) -> list[dict]:
    """The events a log line states (without group/member/time), or []."""
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
        return out or [{"event": "commit_failed", "detail": why}]
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
            return [{"event": event, "topic": t, "partition": p} for t, p in parts]
    if _POLL_TIMEOUT.search(text):
        return [{"event": "left_group", "detail": "poll timeout"}]
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
    return []
