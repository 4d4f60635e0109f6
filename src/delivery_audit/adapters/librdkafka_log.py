"""librdkafka logs (the C client under confluent-kafka-python/Go/.NET, rust-rdkafka,
node-rdkafka) → events; producer fencing and transaction-abort lines of any client counted.

Layouts (the librdkafka part is found anywhere in the line, after any prefix):

* librdkafka's own ``%4|1681468032.123|MAXPOLL|rdkafka#consumer-1| [thrd:main]: …``
  (syslog level, epoch seconds, facility, instance name, message);
* its examples' ``1524281233.078 RDKAFKA-7-ASSIGN: rdkafka#consumer-1: [thrd:main]: …``;
* confluent-kafka-go's ``LogEvent`` printed: ``[2023-04-14T10:27:12Z][rdkafka#consumer-1]
  [MAXPOLL][4][thrd:main]: …``;
* confluent-kafka-python's logger (``FAC [rdkafka#consumer-1] [thrd:main]: …`` after the
  logging prefix), rust-rdkafka's ``librdkafka: FAC [thrd:main]: …``, .NET LogHandler
  lines (``Handle: rdkafka#consumer-1 … Message:[thrd:main]: …``), node-rdkafka's
  ``event.log`` objects (``{"severity":4,"fac":"MAXPOLL","message":"[thrd:main]: …"}``
  inside an application's JSON line) and any other line carrying the wordings below.

Time: librdkafka's epoch seconds when the line has them (absolute); else the binding's
or application's own time prefix (as the client-log adapter reads it, a day from
``adapters.date`` for time-only ones; ``Jan 18 00:47:06.807`` takes the year of
``adapters.date`` or the window); a line with none takes the previous line's time.

Events (wordings from librdkafka's src/rdkafka_cgrp.c, src/rdkafka_assignment.c,
src/rdkafka_partition.c, 0.9 – 2.x):

* MAXPOLL "Application maximum poll interval (Nms) exceeded by Mms …: leaving group" (and
  the consumer error "Local: Maximum application poll interval (max.poll.interval.ms)
  exceeded") → ``left_group`` 'poll interval exceeded';
* SESSTMOUT "Consumer group session timed out (in join-state S) after N ms without a
  successful response from the group coordinator …" → ``left_group`` 'session timeout';
* LEAVE 'Group "G": leave (in state S)' → ``left_group`` 'LeaveGroup';
* ASSIGN 'Group "G": delegating [incremental ]assign|revoke of N partition(s) to
  application …' → ``assigned`` / ``revoked``, one row per partition when the partitions
  are in the log (the ASSIGNMENT / FETCHSTART "List with N partition(s):" lines that
  precede or follow it, or the member's current assignment for a revoke of all of it),
  else one row for all N; without a rebalance callback, 'new assignment of N partition(s)'
  / 'unassigning N partition(s)' / "Clearing current assignment of N partition(s)" do the
  same (after a delegation they are the application completing it: read, no row);
* LOST 'Group "G": current assignment of N partition(s) lost: …' → ``lost``;
* COMMITFAIL "Offset commit (R) failed for K/N partition(s)[ in join-state S]: E: t[0]@5…"
  → ``commit_failed`` per listed partition (offset, error), else one row.

Other consumer-group lines (join state changes, "received op", heartbeat errors,
"Fetching committed offsets", …) are read without a row; every other line is skipped.
One leave, one row: until the member is assigned again, the consumer error the
application prints after a MAXPOLL (same numbers, or none), the LEAVE debug line and a
SESSTMOUT after a MAXPOLL or LEAVE report the same leave (read, no row); two SESSTMOUTs are
two timeouts (the rejoin between them is not logged without debug). A LEAVE after a
MAXPOLL that could not be placed (no group) carries its cause; a revoke right after a
LOST of the same count is the loss told to the application (no second row).

Member: ``adapters.member`` or the file name (``Options.member_for``): the instance name
(``rdkafka#consumer-1``) is the same in every process, so it is kept in the detail; a
second consumer instance in the same file becomes ``<member>/<instance>``. Group: the
line's ``Group "G"``, else ``adapters.group``, else an error row (never the last group
seen).

Producer fencing (Java ``ProducerFencedException``, ``InvalidProducerEpochException``,
"Producer fenced", "There is a newer producer with the same transactionalId which fences
the current one", librdkafka "Producer attempted … with an old epoch", ``_FENCED``) and
transaction aborts ("Transaction aborted", ``abort_transaction``, "Aborting transaction")
are not consumer-group events: skipped as ``producer_fencing`` / ``transaction_abort`` and
counted (``producer_fencing_lines``, ``transaction_abort_lines``), from any client's log.

Size: librdkafka's wordings of 0.9 to 2.16 and the layouts of six bindings, each a regex
and a few lines; they share one reader state (pending assigns, repeated leaves).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from .clock import LogClock
from .framing import framed_lines
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)

# --- layouts --------------------------------------------------------------------------
# (an empty instance name is printed as nothing: "%7|1770120035.565|ASSIGN| [thrd:main]: …")
_RAW = re.compile(r"%(?P<lvl>\d)\|(?P<ts>[^|]{1,40})\|(?P<fac>[A-Za-z0-9_]+)\|"
                  r"(?:(?P<name>[^|\s][^|]*)\|)?\s?(?P<msg>.*)$")
_EXAMPLE = re.compile(r"(?P<ts>\d{9,11}\.\d{1,6}) RDKAFKA-(?P<lvl>\d)-(?P<fac>[A-Za-z0-9_]+): "
                      r"(?P<name>\S+): (?P<msg>.*)$")
_GO = re.compile(r"\[(?P<ts>\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d))\]\[(?P<name>[^\]]*)\]"
                 r"\[(?P<fac>[A-Za-z0-9_]+)\]\[(?P<lvl>\d)\](?P<msg>.*)$")
_PY = re.compile(r"(?<![A-Z0-9_])(?P<fac>[A-Z][A-Z0-9_]+) "
                 r"\[(?P<name>[^\]\[\s]*#(?:consumer|producer)-\d+)\] (?P<msg>.*)$")
_RUST = re.compile(r"librdkafka: (?P<fac>[A-Z][A-Z0-9_]+) (?P<msg>\[thrd:.*)$")
_NAME = re.compile(r"(?<![\w.-])[\w.-]*#(?:consumer|producer)-\d+")
_THREAD_MSG = re.compile(r"\[thrd:[^\]\[]*\]:\s?(?P<msg>.*)$")
_EPOCH = re.compile(r"^\s*(?P<s>\d{9,11})\.(?P<f>\d{1,6})\s*$")
_ISO_NEAR_START = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")
_MONTH_DAY = re.compile(r"^\s*(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +"
                        r"(?P<d>\d{1,2}) (?P<t>\d\d:\d\d:\d\d(?:\.\d{1,9})?)\b")
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()

# a line that belongs to librdkafka (the client-log adapter hands these over)
_CLAIM = re.compile(r"%\d\|[^|]{1,40}\|[A-Za-z0-9_]+\||RDKAFKA-\d-[A-Za-z0-9_]+: |"
                    r"librdkafka: [A-Z][A-Z0-9_]+ \[thrd:|"
                    r"(?<![A-Z0-9_])[A-Z][A-Z0-9_]+ \[[^\]\[\s]*#(?:consumer|producer)-\d+\] |"
                    r"\]\[[^\]\[\s]*#(?:consumer|producer)-\d+\]\[[A-Za-z0-9_]+\]\[\d\]|"
                    r"Application maximum poll interval \(\d+ms\) exceeded|"
                    r"Maximum application poll interval \(max\.poll\.interval\.ms\) exceeded")

# --- wordings -------------------------------------------------------------------------
_GROUP = re.compile(r'Group "(?P<g>[^"]*)"')
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
# list_str: "t[0]@5(err)" (1.x) / "t(topic-id)[0]@5(err)" (2.x)
_LIST_ITEM = re.compile(r"(?<![^\s,\[\]()])(?P<t>[^\s,\[\]()]+)(?:\((?:[^()]|\([^()]*\))*\))?"
                        r"\[(?P<p>\d+)\](?:@(?P<o>-?\d+))?(?:\((?P<err>[^()]*)\))?")
# the member's new assignment: ASSIGNMENT (SyncGroup, 1.6+), FETCHSTART (assign(), < 1.6);
# other lists (DUMP_ALL, OFFSETFETCH …) are not assignments
_LIST_FACILITIES = ("ASSIGNMENT", "FETCHSTART")
_LIST_HEAD = re.compile(r"^\s*List with (?P<n>\d+) partition\(s\):\s*$")
_LIST_LINE = re.compile(r"^\s*(?P<t>\S+) \[(?P<p>\d+)\] offset \S+")
_CGRP_CONTEXT = re.compile(
    r'Group "[^"]*" (?:changed (?:join )?state|received op|heartbeat error response)|'
    r'Group "[^"]*": (?:fetching offsets|starting fetchers|assigning \d+|unassign done|'
    r"setting group assignment|clearing group assignment|\d+ partition\(s\) being|"
    r"rejoining|resetting group leader|subscribe|unsubscribe)|"
    r"Heartbeat failed|Fetching committed offsets|Group \"[^\"]*\" (?:is|initiating) "
    r"rebalanc")

_FENCING = re.compile(
    r"ProducerFencedException|InvalidProducerEpochException|Producer fenced|"
    r"There is a newer producer with the same transactionalId which fences the current one|"
    r"Producer attempted (?:to produce|an operation) with an old epoch|\b_FENCED\b|"
    r"fenced by a newer instance|\bPRODUCER_FENCED\b|\bINVALID_PRODUCER_EPOCH\b")
_ABORT = re.compile(r"Transaction (?:successfully )?abort|\babort_transaction\b|\bTXNABORT\b|"
                    r"Aborting (?:the |incomplete )?transaction|TransactionAbortedException|"
                    r"abortTransaction\(\)")


@dataclass
class Parsed:
    """The librdkafka part of a line."""

    msg: str
    fac: str | None = None
    name: str | None = None
    epoch_ms: int | None = None
    iso: str | None = None  # a binding's ISO time (Go's RFC 3339)


def is_librdkafka_line(line: str) -> bool:
    """Whether a line is in one of librdkafka's layouts (what sniffing looks for)."""
    return bool(_CLAIM.search(line))


def claims(line: str) -> bool:
    """Whether a line belongs to librdkafka (or is a producer fencing / abort line)."""
    return bool(_CLAIM.search(line) or _FENCING.search(line) or _ABORT.search(line))


def _epoch(text: str) -> int | None:
    m = _EPOCH.match(text)
    if not m:
        return None
    return int(m.group("s")) * 1000 + int(m.group("f")[:3].ljust(3, "0"))


def _json_log(line: str) -> tuple[dict | None, str | None]:
    """node-rdkafka's event.log object ({severity, fac, message}) inside a JSON line, and
    the line's own timestamp field."""
    i = line.find("{")
    if i < 0:
        return None, None
    try:
        obj = json.loads(line[i:])
    except (ValueError, RecursionError):
        return None, None
    found: list[dict] = []
    ts = None
    stack = [obj]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            if "fac" in cur and isinstance(cur.get("message"), str):
                found.append(cur)
            for key in ("timestamp", "@timestamp", "time", "ts"):
                if ts is None and isinstance(cur.get(key), str):
                    ts = cur[key]
            stack.extend(v for v in cur.values() if isinstance(v, dict | list))
        elif isinstance(cur, list):
            stack.extend(cur)
    return (found[0] if found else None), ts


def parse(line: str) -> Parsed:
    """Facility, instance name, time and message of a librdkafka line in any layout."""
    for rx in (_RAW, _EXAMPLE, _GO):
        m = rx.search(line)
        if m:
            ts = m.group("ts")
            p = Parsed(m.group("msg"), m.group("fac"), m.group("name") or None,
                       epoch_ms=_epoch(ts), iso=ts if rx is _GO else None)
            return _thread(p)
    if "{" in line and '"fac"' in line:
        obj, ts = _json_log(line)
        if obj is not None:
            return _thread(Parsed(str(obj["message"]), str(obj["fac"]), _name(line), iso=ts))
    m = _PY.search(line)
    if m:
        return _thread(Parsed(m.group("msg"), m.group("fac"), m.group("name")))
    m = _RUST.search(line)
    if m:
        return _thread(Parsed(m.group("msg"), m.group("fac"), _name(line)))
    return _thread(Parsed(line, None, _name(line)))


def _name(line: str) -> str | None:
    m = _NAME.search(line)
    return m.group(0) if m else None


def _thread(p: Parsed) -> Parsed:
    m = _THREAD_MSG.search(p.msg)
    if m:
        p.msg = m.group("msg")
    return p


def _short(text: str, n: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass
class _Member:
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


class Reader:
    """Reads one file's librdkafka lines (also handed over line by line by client-log)."""

    def __init__(self, origin: str, w: RowWriter, opts: Options,
                 clock: LogClock | None = None) -> None:
        self.w = w
        self.opts = opts
        self.base = opts.member_for(origin)
        self.clock = clock or LogClock(opts)
        self.members: dict[str, _Member] = {}
        self.last_ts: int | None = None

    # ---- per line ----------------------------------------------------------------
    def take(self, n: int, line: str) -> bool:
        """Account for line ``n`` if it is librdkafka's (or a fencing/abort line)."""
        if not claims(line):
            return False
        self.line(n, line)
        return True

    def line(self, n: int, line: str) -> None:
        w = self.w
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                return
            if _FENCING.search(line):
                w.count("producer_fencing_lines")
                w.skip(n, "producer_fencing")
                return
            if _ABORT.search(line):
                w.count("transaction_abort_lines")
                w.skip(n, "transaction_abort")
                return
            p = parse(line)
            ts, problem = self._time(line, p)
            member = self._member(p.name)
            self._event(n, line, p, ts, problem, member)

    def finish(self) -> None:
        """At the end of the file: delegations still waiting for their list."""
        for m in self.members.values():
            self._flush(m)

    # ---- time, member, group --------------------------------------------------------
    def _time(self, line: str, p: Parsed) -> tuple[int | None, str | None]:
        ts: int | None = p.epoch_ms
        problem = None
        if ts is None and p.iso:
            ts, problem, _ = self.clock.parse(p.iso)
        if ts is None and problem is None:
            # lstrip: a line of a million spaces would make the clock's ^\s*\[?\s* backtrack
            ts, problem, _ = self.clock.parse(line.lstrip())
            if ts is None and problem is None:
                m = _ISO_NEAR_START.search(line[:80])
                if m:
                    ts, problem, _ = self.clock.parse(line[m.start():])
            if ts is None and problem is None:
                ts, problem = self._month_day(line)
        if ts is None and problem is None:
            ts = self.last_ts  # a line without a time of its own
        elif ts is not None:
            self.last_ts = ts
        return ts, problem

    def _month_day(self, line: str) -> tuple[int | None, str | None]:
        m = _MONTH_DAY.match(line)
        if not m:
            return None, None
        if self.clock.day is None:
            return None, (f"timestamp without a year ({m.group(0).strip()!r}): set "
                          f"adapters.date (a day of that year) or audit with a window")
        text = (f"{self.clock.day.year:04d}-{_MONTHS.index(m.group('mon')) + 1:02d}-"
                f"{int(m.group('d')):02d} {m.group('t')}")
        try:
            datetime.fromisoformat(text[:19])
        except ValueError as exc:
            return None, f"bad timestamp: {exc}"
        saved = self.clock.day
        ts, problem, _ = self.clock.parse(text)
        self.clock.day = saved
        return ts, problem

    def _member(self, instance: str | None) -> _Member:
        """The member of an instance; a line without one (an application's print of a
        consumer error) is the file's consumer when it has exactly one."""
        if not instance:
            consumers = [k for k in self.members if k and "producer" not in k]
            if len(consumers) == 1:
                return self.members[consumers[0]]
        key = instance or ""
        if key not in self.members:
            consumers = [k for k in self.members if k and "producer" not in k]
            name = self.base
            if key and consumers and key not in consumers and "producer" not in key:
                name = f"{self.base}/{key}"
            self.members[key] = _Member(name)
        return self.members[key]

    # ---- events ---------------------------------------------------------------------
    def _event(self, n: int, line: str, p: Parsed, ts: int | None, problem: str | None,
               m: _Member) -> None:
        w, msg = self.w, p.msg
        inst = f"instance {p.name}" if p.name else None
        g = _GROUP.search(msg)
        group = g.group("g") if g else self.opts.group

        # partition lists (ASSIGNMENT / FETCHSTART …): "List with N partition(s):" + items
        head = _LIST_HEAD.match(msg)
        if head and p.fac in _LIST_FACILITIES:
            m.listing, m.list_expect = [], int(head.group("n"))
            w.recognise(n)
            if m.list_expect == 0:
                self._list_done(m)
            return
        item = _LIST_LINE.match(msg)
        if item and m.listing is not None and p.fac in _LIST_FACILITIES:
            m.listing.append((item.group("t"), int(item.group("p"))))
            w.recognise(n)
            if len(m.listing) >= m.list_expect:
                self._list_done(m)
            return

        events = self._wording(msg, m, inst)
        if events is None:
            if _CGRP_CONTEXT.search(msg):
                w.recognise(n)
            else:
                w.skip(n, "unrelated_log_line")
            return
        if not events:  # read (part of a rebalance already written), no row of its own
            w.recognise(n)
            return
        if problem:
            w.error(n, problem, line)
            return
        if ts is None:
            w.error(n, "no timestamp on the line or before it", line)
            return
        if not group:
            w.error(n, "consumer group unknown: the line names no group (Group \"G\"); "
                       "set adapters.group", line)
            if events[0].get("leave", ("",))[0] == "maxpoll":  # its LEAVE line says the group
                m.unplaced = str(events[0]["detail"]).split("; instance ")[0]
            return
        for ev in events:
            self._apply(n, m, group, ts, ev)

    def _wording(self, msg: str, m: _Member, inst: str | None) -> list[dict] | None:
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
        x = _COMMITFAIL.search(msg)
        if x:
            rest = x.group("rest")
            items = list(_LIST_ITEM.finditer(rest))
            err = rest[:items[0].start()].rstrip(": ").strip() if items else rest.strip()
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

    def _apply(self, n: int, m: _Member, group: str, ts: int, ev: dict) -> None:
        kind = ev["event"]
        if kind in ("assigned", "revoked", "lost"):
            self._flush(m)
        if kind == "left_group":
            self._flush(m)
            if m.left is None or ev["leave"][0] != "session":
                m.left = ev["leave"]
            self._row(n, m, group, ts, ev)
            return
        if kind == "assigned":
            m.left, m.unplaced = None, None
            if ev.get("delegated"):
                m.delegated_assign = True
            parts = m.last_list if m.last_list is not None and \
                len(m.last_list) == ev["count"] else None
            m.last_list = None
            if parts is None:  # the list may follow (FETCHSTART, librdkafka < 1.6)
                m.pending = {"n": n, "group": group, "ts": ts, "ev": ev}
                return
            self._assigned(n, m, group, ts, ev, parts)
            return
        if kind in ("revoked", "lost"):
            if ev.get("delegated"):
                m.delegated_revoke = True
            if kind == "lost":
                m.lost = ev["count"]
            parts = m.current if m.current and len(m.current) == ev["count"] else None
            if parts:
                for t, p in parts:
                    self._row(n, m, group, ts, {**ev, "topic": t, "partition": p})
                m.current = []
            else:
                self._row(n, m, group, ts, ev)
                if not ev.get("incremental"):
                    m.current = []
            return
        self._row(n, m, group, ts, ev)

    def _assigned(self, n: int, m: _Member, group: str, ts: int, ev: dict,
                  parts: list[tuple[str, int]] | None) -> None:
        if parts:
            for t, p in parts:
                self._row(n, m, group, ts, {**ev, "topic": t, "partition": p})
            m.current = (m.current + parts) if ev.get("incremental") else list(parts)
        else:
            self._row(n, m, group, ts, ev)
            m.current = []

    def _list_done(self, m: _Member) -> None:
        parts, m.listing = m.listing or [], None
        pend = m.pending
        if pend is not None and len(parts) == pend["ev"]["count"]:
            m.pending = None
            self._assigned(pend["n"], m, pend["group"], pend["ts"], pend["ev"], parts)
            return
        m.last_list = parts

    def _flush(self, m: _Member) -> None:
        pend, m.pending = m.pending, None
        if pend is not None:
            self._assigned(pend["n"], m, pend["group"], pend["ts"], pend["ev"], None)

    def _row(self, n: int, m: _Member, group: str, ts: int, ev: dict) -> None:
        self.w.row(n, group_id=group, member_id=m.name, ts=ts, event=ev["event"],
                   topic=ev.get("topic"), partition=ev.get("partition"),
                   offset=ev.get("offset"), generation=None, detail=ev.get("detail"))


def hand_off(lines: Iterator[tuple[int, str]], origin: str, w: RowWriter,
             opts: Options) -> Iterator[tuple[int, str]]:
    """The lines of another adapter's input (client-log) without librdkafka's: those are
    read here, as the ``librdkafka-log`` format would."""
    reader = Reader(origin, w, opts)
    for n, line in lines:
        if not reader.take(n, line):
            yield n, line
    reader.finish()


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    reader = Reader(origin, w, opts)
    for n, line in framed_lines(path, w):
        reader.line(n, line)
    reader.finish()


__all__ = ["Reader", "claims", "convert_file", "hand_off", "parse"]
