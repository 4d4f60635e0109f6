"""Format ``mapping``: an application's own log lines → rows of any source, by declared rules
(``adapters.mapping.<source>``, read and checked in :mod:`.mapping_rules` before any line).

Each line is framed first (container, kubectl, syslog and log-viewer prefixes stripped,
stack-trace lines skipped as ``stack_trace``: adapters/framing.py). A ``regex:`` rule
searches the framed line; a line that is a JSON object (behind such prefixes, or inside
Docker's json-file ``log``) is read by ``json:`` rules as written, and a ``regex:`` rule
sees its JSON text. The first rule that matches wins; a line none matches is skipped as
``unmatched``. A matched line that lacks a required field of the source is an error row
naming the rule and the field.

Fields a rule leaves null take the options the other adapters use: ``adapters.topic``,
``producer_id``, ``idempotent`` (sends, broker), ``adapters.group`` and ``adapters.member``
(or the file name) for ledger and events; ``seq`` from the captured ``value`` (or the line)
by ``adapters.seq``. Times: ``time_format`` (strptime; without an offset in
``adapters.timezone``; without a year or day from ``adapters.date``), else epoch ms or
seconds (numbers or digit strings) or ISO-8601 / log timestamps (time-only ones take their
day from ``adapters.date`` or the window).
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from typing import Any

from ..fields import FIELDS
from .clock import LogClock, epoch_ms
from .framing import frame_text, framed_lines
from .lines import as_int, json_object
from .mapping_rules import ANY, VALUE, MappingError, Rule, norm, rules_for
from .options import Options, extract_seq
from .writer import RowWriter

SOURCES = ("sends", "ledger", "events", "broker")
UNMATCHED = "unmatched"
__all__ = ["SOURCES", "MappingError", "convert_file", "lines_taken"]

# lines each rule took, per written file (RowWriter.path): `convert` shows them per rule
_TAKEN: dict[str, dict[str, int]] = {}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_DOCKER_KEYS = {"log", "stream", "time", "attrs"}
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


def lines_taken(written_path: str) -> dict[str, int]:
    """{rule name: lines it took} of the file ``convert`` wrote at ``written_path``
    (empty when that file was not converted by ``mapping``)."""
    return dict(_TAKEN.get(str(written_path), {}))


def _json_of(text: str) -> tuple[dict[str, Any] | None, str]:
    """The JSON object a line holds as written (behind a container, kubectl, syslog or
    viewer prefix, or inside Docker's json-file ``log``), and its JSON text."""
    i = text.find("{")
    if i < 0:
        return None, text
    if i > 0 and text[:i].strip():
        # only what framing strips may stand before the object: framing a stand-in object
        # behind the same prefix must leave the stand-in alone
        probe = frame_text(text[:i] + "{}").text
        if probe is None or probe.strip() != "{}":
            return None, text
    candidate = text[i:].rstrip()
    obj, _ = json_object(candidate)
    if obj is None:
        return None, text
    if "stream" in obj and isinstance(obj.get("log"), str) and set(obj) <= _DOCKER_KEYS:
        inner = _ANSI.sub("", obj["log"]).rstrip("\r\n").strip()
        inner_obj, inner_text = _json_of(inner)
        return inner_obj, inner_text
    return obj, candidate


def _path(obj: Any, dotted: str) -> Any:
    """A value by its flat name (``"log.level"``) or dotted path (list items by index);
    None when absent."""
    if isinstance(obj, dict) and dotted in obj:
        return obj[dotted]
    value = obj
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return norm(value)


def _match(rule: Rule, text: str, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The values the rule reads from the line, or None when it does not match."""
    if rule.regex is not None:
        m = rule.regex.search(text)
        return None if m is None else m.groupdict()
    if obj is None:
        return None
    for path, allowed in rule.when.items():
        if norm(_path(obj, path)) not in allowed:  # an absent path is null
            return None
    values: dict[str, Any] = {}
    for path, pattern in rule.field_regex.items():
        subject = _as_text(_path(obj, path))
        m = None if subject is None else pattern.search(subject)
        if m is None:
            return None
        values.update(m.groupdict())
    for name, path in rule.paths.items():
        values[name] = _path(obj, path)
    return values


def _mapped(rule: Rule, values: dict[str, Any]) -> None:
    for name, table in rule.maps.items():
        value = values.get(name)
        if value is None:
            continue
        key = norm(value)
        if key in table:
            values[name] = table[key]
        elif ANY in table:
            values[name] = table[ANY]


def _seq(values: dict[str, Any], text: str, obj: dict[str, Any] | None,
         opts: Options) -> int | None:
    """``seq`` by adapters.seq: from the captured value, else (regex/json rules of
    adapters.seq) from the line or its object."""
    value = values.get(VALUE)
    if value is not None:
        return extract_seq(_as_text(value), opts.seq)
    if opts.seq.source == "regex":
        return extract_seq(text, opts.seq)
    if opts.seq.source == "json" and obj is not None:
        return as_int(_path(obj, str(opts.seq.name)))
    return None


def _defaults(source: str, values: dict[str, Any], origin: str, opts: Options) -> None:
    def default(name: str, value: Any) -> None:
        if values.get(name) is None and value is not None:
            values[name] = value

    if source in ("sends", "broker"):
        default("topic", opts.topic)
        default("producer_id", opts.producer_id)
    if source == "sends":
        default("idempotent", opts.idempotent)
    if source == "broker":
        default("partition", opts.partition)
    if source in ("ledger", "events"):
        default("group_id", opts.group)
        default("member_id", opts.member_for(origin))


class _Times:
    """A rule's time values → epoch ms."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.clock = LogClock(opts)

    def epoch(self, value: Any) -> int:
        number = float(value)
        return round(number) if abs(number) >= 1e11 else round(number * 1000)

    def parse(self, value: Any, fmt: str | None) -> tuple[int | None, str | None]:
        if isinstance(value, bool):
            return None, "a boolean is no time"
        if isinstance(value, int | float):
            return self.epoch(value), None
        text = str(value).strip()
        if fmt:
            return self._strptime(text, fmt)
        if _NUMBER.fullmatch(text):
            return self.epoch(text), None
        ms, why, end = self.clock.parse(text)
        if ms is not None and not text[end:].strip():
            return ms, None
        if why:
            return None, why
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None, "not epoch ms/s or ISO-8601 (give the rule a time_format)"
        return epoch_ms(dt if dt.tzinfo else dt.replace(tzinfo=self.opts.tz)), None

    def _strptime(self, text: str, fmt: str) -> tuple[int | None, str | None]:
        try:
            dt = datetime.strptime(text, fmt)
        except ValueError as exc:
            return None, f"does not match time_format {fmt!r} ({exc})"
        dated = any(d in fmt for d in ("%d", "%j", "%x", "%c"))
        yeared = any(d in fmt for d in ("%Y", "%y", "%G", "%x", "%c"))
        if not (dated and yeared):
            day = self.opts.date
            if day is None:
                return None, (f"time_format {fmt!r} gives no {'year' if dated else 'day'}: "
                              "set adapters.date (or audit with a window)")
            dt = dt.replace(year=day.year) if dated else dt.replace(
                year=day.year, month=day.month, day=day.day)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=self.opts.tz)
        return epoch_ms(dt), None


def _typed(kind: str, value: Any) -> Any:
    """Plain conversions of captured text (integers, booleans); anything else is left to
    the canonical parser, which quarantines a wrong type with its own reason."""
    if value is None:
        return None
    if kind in ("long", "int", "nonneg_long", "nonneg_int"):
        number = as_int(value)
        return value if number is None else number
    if kind == "bool" and isinstance(value, str):
        low = value.strip().lower()
        return True if low in _TRUE else False if low in _FALSE else value
    if kind in ("string", "key", "enum") and isinstance(value, int | float) and \
            not isinstance(value, bool):
        return norm(value)
    return value


def _row(rule: Rule, values: dict[str, Any], text: str, obj: dict[str, Any] | None,
         origin: str, opts: Options, times: _Times) -> tuple[dict[str, Any] | None, str | None]:
    """The canonical row of a matched line, or the reason it is an error row."""
    source = rule.source
    _mapped(rule, values)
    values.update(rule.constants)
    names = {f.name for f in FIELDS[source]}
    if "seq" in names and values.get("seq") is None:
        values["seq"] = _seq(values, text, obj, opts)
    for name, origin_field in rule.copies.items():
        values[name] = values.get(origin_field)
    _defaults(source, values, origin, opts)
    row: dict[str, Any] = {}
    for f in FIELDS[source]:
        value = values.get(f.name)
        if value is not None and f.kind == "timestamp":
            value, why = times.parse(value, rule.time_formats.get(f.name))
            if why:
                shown = str(values.get(f.name))[:60]
                return None, (f"adapters.mapping.{rule.name}: {f.name} {shown!r}: {why}")
        value = _typed(f.kind, value)
        if value is None and f.required:
            return None, f"adapters.mapping.{rule.name} matched but gave no {f.name} " \
                         f"(required in {source}){_why_missing(rule, f.name)}"
        row[f.name] = value
    return row, None


def _why_missing(rule: Rule, name: str) -> str:
    if name in rule.paths:
        return f": json path {rule.paths[name]!r} is absent or null"
    if name in rule.groups():
        return f": group {name!r} took no part in the match"
    if name == "seq":
        return ": no seq group/path, and adapters.seq found none in the value or line"
    return f": no group, path, set or copy gives {name}"


def _start_error(exc: MappingError) -> MappingError:
    """The error a malformed mapping raises: a MappingError, which under `run` (ingestion
    loaded) is also ingestion's InputError, so the CLI reports the message (exit status 1)
    instead of a traceback; `convert` imports no ingestion (no pyspark) and exits 2."""
    files = sys.modules.get(__name__.rsplit(".adapters", 1)[0] + ".ingest.files")
    if files is None:
        return exc
    return type("MappingInputError", (MappingError, files.InputError), {})(str(exc))


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    try:
        rules = rules_for(opts.raw, source)  # before any line is read
    except MappingError as exc:
        raise _start_error(exc) from None
    taken = _TAKEN[str(w.path)] = {r.name: 0 for r in rules}
    times = _Times(opts)
    for n, line in framed_lines(path, w):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            original = _ANSI.sub("", getattr(line, "original", line)).strip()
            obj, json_text = _json_of(original)
            text = json_text if obj is not None else str(line)
            for rule in rules:
                values = _match(rule, text, obj)
                if values is not None:
                    break
            else:
                w.skip(n, UNMATCHED)
                continue
            taken[rule.name] += 1
            row, why = _row(rule, values, text, obj, origin, opts, times)
            if why:
                w.error(n, why, line)
            else:
                w.row(n, **row)

