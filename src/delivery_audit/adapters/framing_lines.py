"""Framing one physical log line (see framing.py): the prefixes a container runtime, grep,
syslog or a log viewer put before it, a JSON-structured event turned into the text layout
the adapters read, a stack-trace line or a viewer's timestamp skipped with its kind, and a
log4j location tail dropped."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .framing_values import (
    ISO,
    LEVEL_KEYS,
    LOGGER_KEYS,
    MESSAGE_KEYS,
    THREAD_KEYS,
    TIME_KEYS,
    first,
    iso_time,
)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# the start of a log line: a dated or time-only timestamp, bracketed or not
LOG_START = re.compile(r"^\s*\[?\s*(?:\d{4}-\d{2}-\d{2}[ T])?\d{2}:\d{2}:\d{2}")
_LEVELS = {"INFO", "WARN", "WARNING", "ERROR", "DEBUG", "TRACE", "FATAL", "SEVERE"}
_COMPOSE = re.compile(r"^(?P<name>[A-Za-z0-9][\w.-]*)\s+\|(?: |$)")
# a layout that puts the level first ("%p - %d - %c:%L - %m"): "INFO - 2024-11-11 09:36:29,853 - …"
_LEVEL_FIRST = re.compile(r"^(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|SEVERE)\s*+[-|:]?\s++"
                          r"(?=(?:\d{4}-\d{2}-\d{2}[ T])?\d{2}:\d{2}:\d{2})")
_KUBECTL = re.compile(r"^\[pod/[^\s/\]]+/[^\s\]]+\] ")
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_HOST_TAG = r" (?P<host>[A-Za-z][\w.-]*) [A-Za-z][\w./-]*(?:\[\d+\])?: ?"
_SYSLOG_BSD = re.compile(rf"^(?:{_MONTHS}) [ \d]\d (?P<time>\d\d:\d\d:\d\d){_HOST_TAG}")
# a BSD header whose sender wrote no tag ("Oct 14 00:14:53 pjnsj [thread]…", reactor-kafka#181):
# tried after the tagged form; whole seconds then a space, so a time with a fraction
# ("Jan 18 00:47:06.807 WARN …", a subscriber's own prefix) is not taken for it
_SYSLOG_BSD_BARE = re.compile(rf"^(?:{_MONTHS}) [ \d]\d (?P<time>\d\d:\d\d:\d\d) "
                              r"(?P<host>[A-Za-z0-9][\w.-]*) (?=\S)")
_SYSLOG_5424 = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?"
                          rf"(?:Z|[+-]\d{{2}}:\d{{2}})){_HOST_TAG}")
_OUTER_TS = re.compile(rf"^(?P<time>{ISO})\s+")
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
# "(org.apache.kafka….ConsumerCoordinator:123)" at the end of a log4j line, and the MDC some
# images append after it (" - app=connect, clusterId=confluent, server=0")
_LOG4J_TAIL = re.compile(r"\s\((?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?::\d+)?\)"
                         r"(?: - [\w.-]+=[^,\s]*(?:, [\w.-]+=[^,\s]*)*)?\s*$")

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


def from_json(obj: dict[str, Any], outer: str | None = None) -> str | None:
    """The log line a JSON-structured log event stands for, or None when the object has no
    message (it is then not a log event). ``outer``: the time of an export's prefix, used
    when the event has no time field."""
    message = first(obj, MESSAGE_KEYS)
    if not isinstance(message, str):
        return None
    message = message.rstrip("\r\n").split("\n", 1)[0].rstrip("\r")
    inner = frame_text(message)
    if inner.text is not None and LOG_START.match(inner.text):
        return inner.text  # Docker's json-file "log": the original line, its time wins
    parts = [iso_time(first(obj, TIME_KEYS)) or outer]
    thread = first(obj, THREAD_KEYS)
    if thread is not None:
        parts.append(f"[{thread}]")
    level = first(obj, LEVEL_KEYS)
    if isinstance(level, str):
        parts.append(level.upper())
    logger = first(obj, LOGGER_KEYS)
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
    return bool(LOG_START.match(rest)) or rest.lstrip().startswith("{")


def _outer_time(line: str) -> tuple[str | None, int] | None:
    """An outer timestamp prefix: (its ISO time, or None when it cannot be read; where the
    rest starts), or None when the line has none."""
    m = _SYSLOG_BSD.match(line) or _SYSLOG_5424.match(line)
    if m and m.group("host").upper() not in _LEVELS:
        return m.group("time"), m.end()
    m = _SYSLOG_BSD_BARE.match(line)
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
            if LOG_START.match(rest) or _STACK.match(rest) or _COMPOSE.match(rest):
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
    if line.startswith("**") and LOG_START.match(line[2:]):
        # a paste made bold in a GitHub issue ("**2024-07-30 11:06:58,309 - WARNING - …" …
        # "…(group)**", kafka-images#343): the markers are the page's, not the log's
        line = line[2:].removesuffix("**")
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

