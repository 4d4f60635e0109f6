"""CSV exports of log platforms (Kibana, Graylog, Splunk, CloudWatch Logs Insights, Datadog,
Grafana): the export's layout from its first line, its quoted records (a message may span
lines), sorted by time (a newest-first export is reversed first), each framed as the log
line it holds, with its record's line number (see framing.py)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .framing_lines import LOG_START, Framed, FramedLine, frame_text
from .framing_values import ISO, LEVEL_KEYS, LOGGER_KEYS, THREAD_KEYS, iso_time, sort_key
from .writer import RowWriter

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
                          col(tuple(k.lower() for k in LOGGER_KEYS)),
                          col(tuple(k.lower() for k in THREAD_KEYS)),
                          col(tuple(k.lower() for k in LEVEL_KEYS)))
    if not first.startswith('"'):
        return None
    for i, cell in enumerate(cells[:-1]):
        if re.fullmatch(ISO, cell.strip()):
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
    for n, line in chain(pending, lines):
        buf.append((n, line))
        quotes += line.count('"')
        if quotes % 2:
            continue  # inside a quoted cell: the record goes on
        yield _Record([k for k, _ in buf], _cells("\n".join(t for _, t in buf)), buf[0][1])
        buf, quotes = [], 0
    if buf:
        yield _Record([k for k, _ in buf], None, buf[0][1])


def chain(first: list[tuple[int, str]], rest: Iterator[tuple[int, str]]
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
    if inner.text is not None and LOG_START.match(inner.text):
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


def framed_csv(layout: _CsvLayout, lines: Iterator[tuple[int, str]],
                pending: list[tuple[int, str]], w: RowWriter) -> Iterator[tuple[int, str]]:
    events: list[tuple[float | None, _Record]] = []
    for rec in _records(lines, pending):
        if layout.header and not events and rec.lines[0] == pending[0][0]:
            for n in rec.lines:
                w.skip(n, "csv_header")
            continue
        when = None
        if rec.cells is not None and layout.time_col < len(rec.cells):
            when = sort_key(iso_time(rec.cells[layout.time_col]))
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
