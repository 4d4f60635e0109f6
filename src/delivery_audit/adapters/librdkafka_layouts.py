"""librdkafka's line layouts (see librdkafka_log.py): the librdkafka part of a line in any
binding's layout (facility, instance name, message, librdkafka's own time), the lines that
belong to librdkafka or are a producer fencing / transaction abort line of any client, and
the time of a line (librdkafka's epoch, a binding's ISO time, the application's prefix, a
year-less ``Jan 18 00:47:06.807``, else the previous line's)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime

from .clock import LogClock

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

FENCING = re.compile(
    r"ProducerFencedException|InvalidProducerEpochException|Producer fenced|"
    r"There is a newer producer with the same transactionalId which fences the current one|"
    r"Producer attempted (?:to produce|an operation) with an old epoch|\b_FENCED\b|"
    r"fenced by a newer instance|\bPRODUCER_FENCED\b|\bINVALID_PRODUCER_EPOCH\b")
ABORT = re.compile(r"Transaction (?:successfully )?abort|\babort_transaction\b|\bTXNABORT\b|"
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
    return bool(_CLAIM.search(line) or FENCING.search(line) or ABORT.search(line))


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



class LineTime:
    """The time of each librdkafka line of a file, in order (a line without one takes the
    previous line's)."""

    def __init__(self, clock: LogClock) -> None:
        self.clock = clock
        self.last_ts: int | None = None

    def read(self, line: str, p: Parsed) -> tuple[int | None, str | None]:
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

