"""What every adapter shares: options, the canonical JSON Lines writer (with the original
file and line of every row), sequence extraction and timestamp parsing.

Adapters stream their input line by line; memory stays bounded by one line (plus, for
the client-log adapter, a small window of recently emitted events).
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any

from ..config import AuditConfig
from ..schemas import FIELDS

RAW_LIMIT = 10_000  # characters of the original line kept in an error row

_SUFFIXES = (".gz", ".jsonl", ".json", ".log", ".txt", ".out", ".ndjson")


def stem(origin: str) -> str:
    """The file name without directories and the usual suffixes: a default member name."""
    name = PurePath(origin.rstrip("/")).name
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                changed = True
    return name


_ESCAPED = re.compile("[\udc80-\udcff]")  # an invalid byte, as surrogateescape reads it


def open_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without the line break) of a local file, gzip allowed.
    A UTF-8 byte order mark opening the file is not text (as in Spark's line reader).

    A line that is not valid UTF-8 is never decoded lossily (contract rule 4): it becomes
    an error row of ``w`` ("not valid UTF-8 (byte offset N of the line)", the line shown
    with the bad bytes replaced) and is not yielded."""
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
    with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape",
                          newline=None) as fh:
        for n, line in enumerate(fh, start=1):
            line = line.rstrip("\r\n")
            bad = _ESCAPED.search(line)
            if bad is not None:
                offset = len(line[:bad.start()].encode("utf-8", "surrogateescape"))
                shown = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                w.error(n, f"not valid UTF-8 (byte offset {offset} of the line)", shown)
                continue
            yield n, line


# --------------------------------------------------------------------------- options


@dataclass
class SeqRule:
    """Where a record's sequence number is: contract `adapters.seq`."""

    source: str = "payload"  # payload | json | header | regex
    name: str | None = None  # json field (dotted path) or header name
    pattern: re.Pattern[str] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> SeqRule:
        data = dict(data or {})
        source = str(data.get("from", "payload")).lower()
        if source not in ("payload", "json", "header", "regex"):
            raise ValueError(f"adapters.seq.from must be payload, json, header or regex, "
                             f"not {source!r}")
        pattern = data.get("pattern")
        if source == "regex" and not pattern:
            raise ValueError("adapters.seq.from: regex needs adapters.seq.pattern")
        if source in ("json", "header") and not data.get("name"):
            raise ValueError(f"adapters.seq.from: {source} needs adapters.seq.name")
        return cls(source, data.get("name"), re.compile(pattern) if pattern else None)


_PLAIN_SEQ = re.compile(r"^\s*(?:.*\.)?(-?\d+)\s*$")


def _from_text(text: str, rule: SeqRule) -> int | None:
    if rule.source == "regex":
        assert rule.pattern is not None
        m = rule.pattern.search(text)
        if not m:
            return None
        g = m.groupdict().get("seq") if m.groupdict() else None
        g = g if g is not None else (m.group(1) if m.groups() else m.group(0))
        try:
            return int(g)
        except (TypeError, ValueError):
            return None
    if rule.source == "json":
        try:
            value: Any = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            return None
        for part in str(rule.name).split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return int(value)
        return None
    m = _PLAIN_SEQ.match(text)
    return int(m.group(1)) if m else None


def extract_seq(payload: str | None, rule: SeqRule,
                headers: dict[str, str] | None = None) -> int | None:
    """The sequence number of a record, or None when it carries none."""
    if rule.source == "header":
        if not headers or rule.name not in headers:
            return None
        value = headers[rule.name]
        return int(value) if re.fullmatch(r"\s*-?\d+\s*", value or "") else None
    if payload is None:
        return None
    return _from_text(payload, rule)


@dataclass
class Options:
    """`adapters:` in the audit config (all optional)."""

    seq: SeqRule = field(default_factory=SeqRule)
    date: date | None = None  # the day of time-only log lines
    tz: Any = UTC  # the zone of log timestamps without an offset
    group: str | None = None
    member: str | dict[str, str] | None = None  # a name, or {file glob: name}
    topic: str | None = None
    partition: int | None = None
    producer_id: str | None = None
    idempotent: bool | None = None
    member_uuid: str = "strip"  # coordinator member ids: strip | keep the client's UUID
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: AuditConfig, window=None) -> Options:
        data = dict((config.raw or {}).get("adapters") or {})
        day = data.get("date")
        if day is not None and not isinstance(day, date):
            day = date.fromisoformat(str(day))
        if isinstance(day, datetime):
            day = day.date()
        if day is None and window is not None:
            day = window.start.date()
        tz: Any = UTC
        if data.get("timezone"):
            from zoneinfo import ZoneInfo

            tz = ZoneInfo(str(data["timezone"]))
        group = data.get("group")
        if group is None and len(config.groups) == 1:
            group = config.groups[0].group_id
        partition = data.get("partition")
        uuid_mode = str(data.get("member_uuid", "strip"))
        if uuid_mode not in ("strip", "keep"):
            raise ValueError("adapters.member_uuid must be 'strip' or 'keep'")
        idem = data.get("idempotent")
        return cls(
            seq=SeqRule.from_dict(data.get("seq")),
            date=day, tz=tz,
            group=None if group is None else str(group),
            member=data.get("member"),
            topic=None if data.get("topic") is None else str(data["topic"]),
            partition=None if partition is None else int(partition),
            producer_id=None if data.get("producer_id") is None else str(data["producer_id"]),
            idempotent=None if idem is None else bool(idem),
            member_uuid=uuid_mode,
            raw=data,
        )

    def member_for(self, origin: str) -> str:
        """The consumer name of a file: adapters.member (a name or {glob: name}) or the
        file name without suffixes."""
        if isinstance(self.member, str) and self.member:
            return self.member
        if isinstance(self.member, dict):
            name = PurePath(origin).name
            for pattern, member in self.member.items():
                if fnmatch.fnmatch(origin, pattern) or fnmatch.fnmatch(name, pattern):
                    return str(member)
        return stem(origin)


# --------------------------------------------------------------------------- time

_LOG_TS = re.compile(
    r"^\s*\[?\s*(?:(?P<date>\d{4}-\d{2}-\d{2})[ T])?"
    r"(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2}|UTC)?\]?")


def epoch_ms(dt: datetime) -> int:
    return int(round(dt.timestamp() * 1000))


class LogClock:
    """Timestamps at the start of a log line → epoch ms. Time-only lines take their day
    from `adapters.date` (or the window's start day) and roll over at midnight."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.day: date | None = opts.date
        self.last_ms: int | None = None

    def parse(self, line: str) -> tuple[int | None, str | None, int]:
        """(epoch ms or None, a reason when there is a time but no usable day, end index)."""
        m = _LOG_TS.match(line)
        if not m:
            return None, None, 0
        frac = (m.group("frac") or "0")[:6].ljust(6, "0")
        tzinfo: Any = self.opts.tz
        tz = m.group("tz")
        if tz == "Z" or tz == "UTC":
            tzinfo = UTC
        elif tz:
            sign = 1 if tz[0] == "+" else -1
            digits = tz[1:].replace(":", "")
            # a timedelta here; made a timezone below, where a bad offset is an error
            tzinfo = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            if m.group("date"):
                day = date.fromisoformat(m.group("date"))
                rolled = False
            else:
                if self.day is None:
                    return None, ("time-only timestamp and no day: set adapters.date "
                                  "(or audit with a window)"), m.end()
                day, rolled = self.day, True
            if tz and tz not in ("Z", "UTC"):
                from datetime import timezone

                tzinfo = timezone(tzinfo)  # a fixed offset, built above as a timedelta
            dt = datetime(day.year, day.month, day.day, int(m.group("h")), int(m.group("m")),
                          int(m.group("s")), int(frac), tzinfo=tzinfo)
            ms = epoch_ms(dt)
            if rolled and self.last_ms is not None and ms < self.last_ms - 12 * 3_600_000:
                next_day = day + timedelta(days=1)  # the clock went past midnight
                ms += 86_400_000
                self.day = next_day
        except (ValueError, OverflowError) as exc:  # 2026-13-45, +99:00, past year 9999
            return None, f"bad timestamp: {exc}", m.end()
        if m.group("date"):
            self.day = day
        self.last_ms = ms
        return ms, None, m.end()


# --------------------------------------------------------------------------- writer


# The files RowWriter wrote in this process: only in those are __file/__line/__raw/__error
# honoured by ingestion (ingest/tokens.py); in a user's JSON Lines file they are ordinary
# unknown fields, so a row cannot claim another file or line.
_WRITTEN: set[str] = set()


def written_by_adapter(path: str) -> bool:
    return str(path) in _WRITTEN


class RowWriter:
    """Writes canonical rows of one source as JSON Lines, each with __file and __line."""

    def __init__(self, path: Path, source: str, origin: str) -> None:
        self.path = path
        self.source = source
        self.origin = origin
        self.names = [f.name for f in FIELDS[source]]
        self.rows = 0
        self.errors = 0
        self.counts: dict[str, int] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (JSON "\ud800" in the input) cannot be encoded: written as the
        # same JSON escape, inside the string it came from
        self._fh = open(path, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        _WRITTEN.add(str(path))

    def row(self, line_no: int, **values: Any) -> None:
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"not {self.source} fields: {sorted(unknown)}")
        obj = {n: values.get(n) for n in self.names}
        obj["__file"] = self.origin
        obj["__line"] = line_no
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1

    def error(self, line_no: int, reason: str, raw: str) -> None:
        obj = {n: None for n in self.names}
        obj.update({"__file": self.origin, "__line": line_no, "__error": reason,
                    "__raw": raw[:RAW_LIMIT]})
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1
        self.errors += 1

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    @contextmanager
    def guard(self, line_no: int, raw: str) -> Iterator[None]:
        """Convert one line; whatever it raises (a 5,000-digit number, a value of an
        unexpected type) makes the line an error row instead of stopping the run."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - any failure is this line's problem
            text = str(exc).splitlines()[0] if str(exc) else ""
            self.error(line_no, f"cannot convert the line: {type(exc).__name__}: "
                                f"{text[:200]}", raw)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_int(value: Any) -> int | None:
    """An integer from a JSON value (int, integral float or digit string), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object(line: str) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON object from a line, or the reason it is not one (strict JSON: no NaN or
    Infinity, which json.loads would take and json.dumps write back as invalid JSON)."""
    try:
        obj = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg}"
    except ValueError as exc:  # NaN, or a number of more than 4,300 digits
        return None, f"not valid JSON: {str(exc).splitlines()[0][:120]}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    return obj, None


def key_text(value: Any) -> tuple[str | None, bool]:
    """(key as the contract's string, ok): null, a string, or an integer's text."""
    if value is None or isinstance(value, str):
        return value, True
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), True
    return None, False


def record_key_seq(obj: dict[str, Any], rule: SeqRule) -> tuple[str | None, int | None,
                                                                 str | None]:
    """(key, seq, error) of a verifiable client's record line: the key as key_text has it
    and the seq extracted from the value; ``error`` is set when the key is not a string."""
    key, ok = key_text(obj.get("key"))
    if not ok:
        return None, None, "key is not a string"
    value = obj.get("value")
    return key, extract_seq(None if value is None else str(value), rule), None


def json_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, text, object) of each JSON-object line of a tool's output; a blank line
    is skipped, any other line becomes an error row."""
    for n, line in open_lines(path, w):
        if not line.strip():
            continue
        obj, why = json_object(line)
        if obj is None:
            w.error(n, why or "not a JSON object", line)
            continue
        yield n, line, obj
