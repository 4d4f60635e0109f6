"""Line framing: the log line inside what surrounds it when people collect or paste logs.

The text-log adapters (client_log, coordinator_log, …) read their input through
:func:`framed_lines` instead of ``open_lines``. It yields ``(line number, log line)`` with
the original line numbers (for ``__line`` and the line accounting) and:

* strips ANSI colours and the prefixes that wrap a line: ``docker compose`` service
  prefixes (``kafka_1  | ``, ``kafka-1  | ``), ``kubectl logs --prefix``
  (``[pod/name/container] ``), ``grep -r``/``grep -H``/``grep -n`` file names
  (``server.log.2024-01-16-23:``, ``logs/server.log:1234:``), syslog
  (``Oct 14 00:14:53 host kafka[123]: ``, RFC 5424 ``2024-…T…Z host kafka[123]: ``) and
  the second timestamp of a log viewer or ``docker logs -t``
  (``2024-01-16T23:00:01.123Z <the original line>``). The inner (original) timestamp wins;
  a line without one keeps the outer timestamp (syslog's without its day: as a time-only
  line, the day comes from ``adapters.date`` or the audit window);
* turns a JSON-structured log line (logstash, ECS, Quarkus, GELF, log4j2 JSON, Docker's
  json-file) into ``<timestamp> [<thread>] <LEVEL> <logger> - <message>``;
* reads a CSV export of a log platform (quoted columns; a header naming the time and
  message columns, or none: then the first timestamp column and the last column) and
  yields its events in time order (exports are often newest first), each with the line
  number of its record; the header is skipped as ``csv_header``;
* skips the lines of a stack trace (``\\tat …``, ``Caused by: …``, ``... 12 more``) as
  ``stack_trace`` and a log viewer's timestamp alone on its line (Kibana's
  ``Jan 17, 2020 @ 15:54:24.877``) as ``viewer_timestamp``;
* drops a log4j location tail ``(org.apache.kafka….ConsumerCoordinator:123)`` so that it
  does not end up in a partition list.

Lines are framed one at a time (bounded memory), except CSV exports, which are read whole
to be sorted (log platforms cap their exports at a few thousand rows).

Size: every layout a log line can arrive in is one concern (the prefixes are tried in one
loop; the CSV exports share the line framing); each layout is a few lines, and one place
keeps their order explicit.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .lines import open_lines
from .writer import RowWriter

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# the start of a log line: a dated or time-only timestamp, bracketed or not
_LOG_START = re.compile(r"^\s*\[?\s*(?:\d{4}-\d{2}-\d{2}[ T])?\d{2}:\d{2}:\d{2}")
_LEVELS = {"INFO", "WARN", "WARNING", "ERROR", "DEBUG", "TRACE", "FATAL", "SEVERE"}
_COMPOSE = re.compile(r"^(?P<name>[A-Za-z0-9][\w.-]*)\s+\|(?: |$)")
# a layout that puts the level first ("%p - %d - %c:%L - %m"): "INFO - 2024-11-11 09:36:29,853 - …"
_LEVEL_FIRST = re.compile(r"^(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE)\s*+[-|:]?\s++"
                          r"(?=(?:\d{4}-\d{2}-\d{2}[ T])?\d{2}:\d{2}:\d{2})")
_KUBECTL = re.compile(r"^\[pod/[^\s/\]]+/[^\s\]]+\] ")
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_HOST_TAG = r" (?P<host>[A-Za-z][\w.-]*) [A-Za-z][\w./-]*(?:\[\d+\])?: ?"
_SYSLOG_BSD = re.compile(rf"^(?:{_MONTHS}) [ \d]\d (?P<time>\d\d:\d\d:\d\d){_HOST_TAG}")
_ISO = (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
        r"(?:Z|[+-]\d{2}:?\d{2})?")
_SYSLOG_5424 = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?"
                          rf"(?:Z|[+-]\d{{2}}:\d{{2}})){_HOST_TAG}")
_OUTER_TS = re.compile(rf"^(?P<time>{_ISO})\s+")
_EPOCH_TAB = re.compile(r"^(?P<epoch>\d{9,13})(?:\.\d+)?\t")  # Loki/Grafana: "<ms>\t<line>"
# a log viewer's own time, then " | " (Papertrail-like exports)
_VIEWER_BAR = re.compile(r"^(?P<time>[\w ,./:@+-]{0,30}?\d\d:\d\d:\d\d(?:[.,]\d+)?)\s*\| ")
_VIEWER_FORMATS = ("%Y %b %d %H:%M:%S", "%b %d %Y %H:%M:%S", "%b %d, %Y @ %H:%M:%S.%f",
                   "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S")
# possessive: a megabyte line without a colon is read once, not once per character
_GREP = re.compile(r"^(?P<file>[^\s:\[\]\"]++)(?::\d++)?:")
_LETTER = re.compile(r"[A-Za-z]")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_STACK = re.compile(r"^\s*(?:at [\w$.<>/-]+\(.*\)|Caused by: .*|Suppressed: .*|Wrapped by: .*|"
                    r"\.\.\. \d+ (?:more|common frames omitted)|"
                    r"Traceback \(most recent call last\):|File \".*\", line \d+.*)"
                    r"\s*(?:~?\[[^\]]*\])?\s*$")
_KIBANA_TS = re.compile(rf"^\s*(?:{_MONTHS}) \d{{1,2}}, \d{{4}} @ \d\d:\d\d:\d\d(?:\.\d+)?\s*$")
_KIBANA_FMT = "%b %d, %Y @ %H:%M:%S.%f"
# "(org.apache.kafka….ConsumerCoordinator:123)" at the end of a log4j line, and the MDC some
# images append after it (" - app=connect, clusterId=confluent, server=0")
_LOG4J_TAIL = re.compile(r"\s\((?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?::\d+)?\)"
                         r"(?: - [\w.-]+=[^,\s]*(?:, [\w.-]+=[^,\s]*)*)?\s*$")

_TIME_KEYS = ("@timestamp", "timestamp", "time", "@t", "ts", "date", "datetime", "_time",
              "timeMillis", "instant", "eventtime", "event_time")
_MESSAGE_KEYS = ("message", "msg", "@message", "@m", "log", "short_message", "_raw",
                 "line", "content", "text", "full_message", "@mt")
_LOGGER_KEYS = ("logger_name", "loggerName", "logger", "log.logger", "_logger_name",
                "loggername", "class")
_THREAD_KEYS = ("thread_name", "threadName", "thread", "process.thread.name",
                "_thread_name", "threadname")
_LEVEL_KEYS = ("level", "log.level", "severity", "levelname", "loglevel", "@l")


class FramedLine(str):
    """The log line an adapter reads, with the file's line it was framed from: an error row
    shows the ``original`` (RowWriter.error), as the file has it."""

    original: str

    def __new__(cls, text: str, original: str) -> FramedLine:
        obj = super().__new__(cls, text)
        obj.original = original
        return obj


@dataclass
class Framed:
    """One physical line, framed: the log line to read, or the kind it is skipped as."""

    text: str | None
    skip: str | None = None


def _nested(obj: dict[str, Any], dotted: str) -> Any:
    """A field by its flat name (ECS writes ``"log.level"``) or its dotted path."""
    if dotted in obj:
        return obj[dotted]
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {k.lower(): v for k, v in obj.items()}
    for key in keys:
        value = _nested(obj, key)
        if value is None:
            value = lowered.get(key.lower())
        if value is not None and value != "":
            return value
    return None


def iso_time(value: Any) -> str | None:
    """A timestamp a log line can start with (ISO-8601, read by LogClock), from the usual
    forms of a log platform: ISO (with or without a zone), epoch seconds or milliseconds
    (a number or a digit string), log4j2's ``instant``, Kibana's ``Jan 17, 2020 @ …``."""
    ms: int | None = None
    if isinstance(value, dict) and "epochSecond" in value:  # log4j2 JsonLayout instant
        try:
            ms = int(value["epochSecond"]) * 1000 + int(value.get("nanoOfSecond", 0)) // 10**6
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d{9,13}(?:\.\d+)?", text):
            value = float(text) if "." in text else int(text)
        else:
            m = re.match(_ISO, text)
            if m:
                return m.group(0)
            try:
                dt = datetime.strptime(text, _KIBANA_FMT)
            except ValueError:
                return None
            return dt.isoformat(timespec="milliseconds")
    if ms is None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        ms = round(value) if value > 1e11 else round(value * 1000)  # ms, else seconds
    try:
        dt = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sort_key(iso: str | None) -> float | None:
    if iso is None:
        return None
    text = iso.replace(" ", "T").replace(",", ".")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)  # only the order matters: one zone for the file
    return dt.timestamp()


def from_json(obj: dict[str, Any], outer: str | None = None) -> str | None:
    """The log line a JSON-structured log event stands for, or None when the object has no
    message (it is then not a log event). ``outer``: the time of an export's prefix, used
    when the event has no time field."""
    message = _first(obj, _MESSAGE_KEYS)
    if not isinstance(message, str):
        return None
    message = message.rstrip("\r\n").split("\n", 1)[0].rstrip("\r")
    inner = frame_text(message)
    if inner.text is not None and _LOG_START.match(inner.text):
        return inner.text  # Docker's json-file "log": the original line, its time wins
    parts = [iso_time(_first(obj, _TIME_KEYS)) or outer]
    thread = _first(obj, _THREAD_KEYS)
    if thread is not None:
        parts.append(f"[{thread}]")
    level = _first(obj, _LEVEL_KEYS)
    if isinstance(level, str):
        parts.append(level.upper())
    logger = _first(obj, _LOGGER_KEYS)
    if isinstance(logger, str):
        parts.append(f"{logger} -")
    parts.append(message)
    return " ".join(p for p in parts if p)


def _inner_starts(rest: str) -> bool:
    """Whether what follows an outer timestamp is a log line with its own (or a JSON
    event, whose own time field wins), behind container prefixes if any."""
    for _ in range(3):
        m = _KUBECTL.match(rest) or _COMPOSE.match(rest)
        if not m:
            break
        rest = rest[m.end():]
    return bool(_LOG_START.match(rest)) or rest.lstrip().startswith("{")


def _outer_time(line: str) -> tuple[str | None, int] | None:
    """An outer timestamp prefix: (its ISO time, or None when it cannot be read; where the
    rest starts), or None when the line has none."""
    m = _SYSLOG_BSD.match(line) or _SYSLOG_5424.match(line)
    if m and m.group("host").upper() not in _LEVELS:
        return m.group("time"), m.end()
    m = _OUTER_TS.match(line)
    if m:
        return m.group("time"), m.end()
    m = _EPOCH_TAB.match(line)
    if m:
        return iso_time(m.group("epoch")), m.end()
    m = _VIEWER_BAR.match(line)
    if m:
        text = " ".join(m.group("time").split())
        for fmt in _VIEWER_FORMATS:
            try:
                return datetime.strptime(text, fmt).isoformat(timespec="milliseconds"), m.end()
            except ValueError:
                continue
        return None, m.end()
    return None


def _strip_outer(line: str) -> tuple[str, str | None]:
    """The line without the prefixes a container runtime, grep, syslog or a log viewer put
    before it (applied until none is left), and the outer time when the line has no time
    of its own (it then starts with that time)."""
    outer: str | None = None
    for _ in range(6):
        m = _LEVEL_FIRST.match(line)
        if m:
            line = line[m.end():]
            continue
        m = _KUBECTL.match(line)
        if m:
            line = line[m.end():]
            continue
        m = _COMPOSE.match(line)
        if m and m.group("name").upper() not in _LEVELS:
            line = line[m.end():]
            continue
        found = _outer_time(line)
        if found is not None:
            when, end = found
            rest = line[end:]
            if _inner_starts(rest) or not rest.strip() or _STACK.match(rest):
                outer = when or outer
                line = rest
                continue
            if when is None:
                break
            # no time of its own: the outer one (a bare ISO prefix is already at the start)
            bare = _OUTER_TS.match(line) is not None and not _SYSLOG_5424.match(line)
            return (line if bare else f"{when} {rest}"), when
        m = _GREP.match(line)
        if m and _LETTER.search(m.group("file")) and not _DATE.match(m.group("file")):
            rest = line[m.end():]
            if _LOG_START.match(rest) or _STACK.match(rest) or _COMPOSE.match(rest):
                line = rest
                continue
        break
    return line, outer


def drop_tail(text: str) -> str:
    """The line without a log4j location tail (read from the last " (": one anchored match,
    not a search along the line)."""
    i = text.rfind(" (")
    if i < 0 or not _LOG4J_TAIL.match(text, i):
        return text
    return text[:i].rstrip()


def frame_text(line: str) -> Framed:
    """Frame one physical line (not a CSV export's: see :func:`framed_lines`)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if not line.strip():
        return Framed(line)
    if line[0] == "[" and not line.startswith("[pod/"):
        inner, outer = line, None  # "[2024-…] …": no prefix to look for
    else:
        inner, outer = _strip_outer(line)
    if inner.lstrip().startswith("{"):
        try:
            obj = json.loads(inner)
        except (json.JSONDecodeError, ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            text = from_json(obj, outer)
            if text is not None:
                return Framed(drop_tail(text))
    if _STACK.match(inner):
        return Framed(None, "stack_trace")
    if _KIBANA_TS.match(inner):
        return Framed(None, "viewer_timestamp")
    return Framed(drop_tail(inner))


# --- CSV exports of log platforms ------------------------------------------------------

_CSV_TIME = ("@timestamp", "timestamp", "_time", "time", "date", "datetime", "@t",
             "eventtime", "event_time", "ts", "timestamp (utc)")
_CSV_MESSAGE = ("message", "@message", "_raw", "msg", "log", "line", "content", "text",
                "_source.message", "log.message", "full_message", "short_message")


@dataclass
class _CsvLayout:
    time_col: int
    message_col: int
    header: bool
    logger_col: int | None = None
    thread_col: int | None = None
    level_col: int | None = None


def _cells(text: str) -> list[str] | None:
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else None


def csv_layout(first: str) -> _CsvLayout | None:
    """The layout of a CSV export from its first line (a header, or a first record whose
    cells are quoted and one of which is a timestamp), or None when it is not one."""
    if "," not in first:
        return None
    cells = _cells(first)
    if not cells or len(cells) < 2:
        return None
    names = [c.strip().lower() for c in cells]

    def col(candidates: tuple[str, ...]) -> int | None:
        for c in candidates:
            if c in names:
                return names.index(c)
        return None

    time_col, message_col = col(_CSV_TIME), col(_CSV_MESSAGE)
    if time_col is not None and message_col is not None:
        return _CsvLayout(time_col, message_col, True,
                          col(tuple(k.lower() for k in _LOGGER_KEYS)),
                          col(tuple(k.lower() for k in _THREAD_KEYS)),
                          col(tuple(k.lower() for k in _LEVEL_KEYS)))
    if not first.startswith('"'):
        return None
    for i, cell in enumerate(cells[:-1]):
        if re.fullmatch(_ISO, cell.strip()):
            return _CsvLayout(i, len(cells) - 1, False)
    return None


@dataclass
class _Record:
    lines: list[int]
    cells: list[str] | None
    raw: str  # the record's first physical line (shown when it is an error)


def _records(lines: Iterator[tuple[int, str]], pending: list[tuple[int, str]]
             ) -> Iterator[_Record]:
    """CSV records with the physical lines they span (a quoted cell may hold line breaks)."""
    buf: list[tuple[int, str]] = []
    quotes = 0
    for n, line in _chain(pending, lines):
        buf.append((n, line))
        quotes += line.count('"')
        if quotes % 2:
            continue  # inside a quoted cell: the record goes on
        yield _Record([k for k, _ in buf], _cells("\n".join(t for _, t in buf)), buf[0][1])
        buf, quotes = [], 0
    if buf:
        yield _Record([k for k, _ in buf], None, buf[0][1])


def _chain(first: list[tuple[int, str]], rest: Iterator[tuple[int, str]]
           ) -> Iterator[tuple[int, str]]:
    yield from first
    yield from rest


def _csv_event(layout: _CsvLayout, cells: list[str]) -> tuple[str, list[str]]:
    """The log line of a record and the further lines of its message (a stack trace)."""
    def cell(i: int | None) -> str | None:
        return cells[i] if i is not None and i < len(cells) and cells[i] != "" else None

    message = cell(layout.message_col) or ""
    first, *more = message.split("\n")
    first = first.rstrip("\r")
    inner = frame_text(first)
    if inner.text is not None and _LOG_START.match(inner.text):
        return inner.text, more
    parts = [iso_time(cell(layout.time_col))]
    if cell(layout.thread_col):
        parts.append(f"[{cell(layout.thread_col)}]")
    if cell(layout.level_col):
        parts.append(str(cell(layout.level_col)).upper())
    if cell(layout.logger_col):
        parts.append(f"{cell(layout.logger_col)} -")
    parts.append(inner.text if inner.text is not None else first)
    return " ".join(p for p in parts if p), more


def _framed_csv(layout: _CsvLayout, lines: Iterator[tuple[int, str]],
                pending: list[tuple[int, str]], w: RowWriter) -> Iterator[tuple[int, str]]:
    events: list[tuple[float | None, _Record]] = []
    for rec in _records(lines, pending):
        if layout.header and not events and rec.lines[0] == pending[0][0]:
            for n in rec.lines:
                w.skip(n, "csv_header")
            continue
        when = None
        if rec.cells is not None and layout.time_col < len(rec.cells):
            when = _sort_key(iso_time(rec.cells[layout.time_col]))
        events.append((when, rec))
    times = [t for t, _ in events if t is not None]
    falling = sum(a > b for a, b in zip(times, times[1:], strict=False))
    rising = sum(a < b for a, b in zip(times, times[1:], strict=False))
    if falling > rising:  # newest first: reversed, so that equal times keep their order
        events.reverse()
    keyed, last = [], float("-inf")
    for when, rec in events:
        last = when if when is not None else last
        keyed.append((last, rec))
    keyed.sort(key=lambda pair: pair[0])  # stable: ties keep the file's (true) order
    for _, rec in keyed:
        if rec.cells is None:
            w.error(rec.lines[0], f"not a record of the CSV export: its quotes do not close "
                                  f"(it runs over {len(rec.lines)} lines)", rec.raw)
            for n in rec.lines[1:]:
                w.skip(n, "csv_continuation")
            continue
        text, more = _csv_event(layout, rec.cells)
        yield rec.lines[0], FramedLine(text, rec.raw)
        for n, extra in zip(rec.lines[1:], [*more, *[None] * len(rec.lines)], strict=False):
            framed = frame_text(extra) if extra is not None else Framed(None, "csv_continuation")
            if framed.text is None:
                w.skip(n, framed.skip or "csv_continuation")
            elif not framed.text.strip():
                w.skip(n, "blank")
            else:
                yield n, FramedLine(framed.text, extra)


def framed_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str]]:
    """(line number, the log line) of a text log file, framed (see the module's doc).
    Lines that are no log line (a stack frame, a viewer's timestamp, a CSV header) are
    skipped on ``w`` with their kind and not yielded."""
    lines = open_lines(path, w)
    pending: list[tuple[int, str]] = []
    for n, line in lines:
        pending.append((n, line))
        if line.strip():
            break
    if pending and pending[-1][1].strip():
        layout = csv_layout(pending[-1][1].lstrip("\ufeff"))
        if layout is not None:
            for n, _ in pending[:-1]:
                w.skip(n, "blank")
            yield from _framed_csv(layout, lines, pending[-1:], w)
            return
    for n, line in _chain(pending, lines):
        framed = frame_text(line)
        if framed.text is None:
            w.skip(n, framed.skip or "unrelated_log_line")
            continue
        yield n, FramedLine(framed.text, line)
