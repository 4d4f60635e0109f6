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

Modules: the layouts and a line's time are in librdkafka_layouts.py, the wordings (what a
message states for one member) in librdkafka_wordings.py; this reader keeps the members'
state across lines (pending assigns, repeated leaves) and writes the rows.
"""

from __future__ import annotations

from collections.abc import Iterator

from .clock import LogClock
from .framing import framed_lines
from .librdkafka_layouts import (
    ABORT,
    FENCING,
    LineTime,
    Parsed,
    claims,
    is_librdkafka_line,
    parse,
)
from .librdkafka_wordings import (
    CGRP_CONTEXT,
    GROUP,
    LIST_FACILITIES,
    LIST_HEAD,
    LIST_LINE,
    Member,
    wording,
)
from .options import Options
from .writer import RowWriter

SOURCES = ("events",)


class Reader:
    """Reads one file's librdkafka lines (also handed over line by line by client-log)."""

    def __init__(self, origin: str, w: RowWriter, opts: Options,
                 clock: LogClock | None = None) -> None:
        self.w = w
        self.opts = opts
        self.base = opts.member_for(origin)
        self.clock = clock or LogClock(opts)
        self.members: dict[str, Member] = {}
        self.times = LineTime(self.clock)

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
            if FENCING.search(line):
                w.count("producer_fencing_lines")
                w.skip(n, "producer_fencing")
                return
            if ABORT.search(line):
                w.count("transaction_abort_lines")
                w.skip(n, "transaction_abort")
                return
            p = parse(line)
            ts, problem = self.times.read(line, p)
            member = self._member(p.name)
            self._event(n, line, p, ts, problem, member)

    def finish(self) -> None:
        """At the end of the file: delegations still waiting for their list."""
        for m in self.members.values():
            self._flush(m)

    # ---- time, member, group --------------------------------------------------------
    def _member(self, instance: str | None) -> Member:
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
            self.members[key] = Member(name)
        return self.members[key]

    # ---- events ---------------------------------------------------------------------
    def _event(self, n: int, line: str, p: Parsed, ts: int | None, problem: str | None,
               m: Member) -> None:
        w, msg = self.w, p.msg
        inst = f"instance {p.name}" if p.name else None
        g = GROUP.search(msg)
        group = g.group("g") if g else self.opts.group

        # partition lists (ASSIGNMENT / FETCHSTART …): "List with N partition(s):" + items
        head = LIST_HEAD.match(msg)
        if head and p.fac in LIST_FACILITIES:
            m.listing, m.list_expect = [], int(head.group("n"))
            w.recognise(n)
            if m.list_expect == 0:
                self._list_done(m)
            return
        item = LIST_LINE.match(msg)
        if item and m.listing is not None and p.fac in LIST_FACILITIES:
            m.listing.append((item.group("t"), int(item.group("p"))))
            w.recognise(n)
            if len(m.listing) >= m.list_expect:
                self._list_done(m)
            return

        events = wording(msg, m, inst)
        if events is None:
            if CGRP_CONTEXT.search(msg):
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

    def _apply(self, n: int, m: Member, group: str, ts: int, ev: dict) -> None:
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

    def _assigned(self, n: int, m: Member, group: str, ts: int, ev: dict,
                  parts: list[tuple[str, int]] | None) -> None:
        if parts:
            for t, p in parts:
                self._row(n, m, group, ts, {**ev, "topic": t, "partition": p})
            m.current = (m.current + parts) if ev.get("incremental") else list(parts)
        else:
            self._row(n, m, group, ts, ev)
            m.current = []

    def _list_done(self, m: Member) -> None:
        parts, m.listing = m.listing or [], None
        pend = m.pending
        if pend is not None and len(parts) == pend["ev"]["count"]:
            m.pending = None
            self._assigned(pend["n"], m, pend["group"], pend["ts"], pend["ev"], parts)
            return
        m.last_list = parts

    def _flush(self, m: Member) -> None:
        pend, m.pending = m.pending, None
        if pend is not None:
            self._assigned(pend["n"], m, pend["group"], pend["ts"], pend["ev"], None)

    def _row(self, n: int, m: Member, group: str, ts: int, ev: dict) -> None:
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


__all__ = ["Reader", "claims", "convert_file", "hand_off", "is_librdkafka_line", "parse"]
