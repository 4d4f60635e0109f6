"""kcat (formerly kafkacat) consumer output → broker: ``kcat -C -J`` JSON envelopes, or the
lines of a ``-f`` format string given as ``adapters.format`` (``--option
format='%t %p %o %k %s\\n'``; ``adapters.kcat.format`` too).

``-J`` prints one JSON object per record (kcat's json.c ``fmt_msg_output_json``)::

    {"topic":"t","partition":0,"offset":15,"tstype":"create","ts":1754311306587,
     "broker":1,"headers":["seq","7"],"key":null,"payload":"…"}

``headers`` is a flat ``[name, value, …]`` array (the ``{name: value}`` object kcat's
``-h`` text shows is read too); ``tstype``/``ts`` are absent when the broker gave no
timestamp, ``broker`` before kcat 1.6. A key or payload decoded from Avro (``-s avro``) is
JSON, kept as its compact JSON text; a ``key_error`` makes the record an error row (its key
is unknown), a ``payload_error`` a row without seq (counted as ``kcat_payload_errors``).

``-f`` output is matched against the format's line patterns (kcat_format.py); a record may
span several lines. The key: ``%K`` of -1 is a null key, and when the format has no ``%K``
an empty key is null (kcat prints a null and an empty key alike, as nothing, or as
``adapters.kcat.null`` such as ``NULL`` with ``-Z``). A ``%K``/``%S`` that disagrees with
the text matched means a separator inside the key or payload: an error row. Without ``%t``
the topic is ``adapters.topic``, without ``%p`` the partition ``adapters.partition``.

Key and seq as in every broker adapter: the seq by ``adapters.seq`` from the payload or,
with ``from: header``, the named header; without ``adapters.seq``, a record's ``seq`` header
(the recorders' convention, what ``snapshot`` reads) when it has one, else the payload.
kcat shows neither producer ids nor transaction markers: the rows carry none. kcat's own
lines are skipped: ``% Reached end of topic …``, ``% Auto-selecting Consumer mode``,
``% ERROR: …`` (kind ``tool_message``, errors counted as ``kcat_errors``) and librdkafka's
``%7|…|`` log lines (``tool_log_line``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InputError
from ..recorders.writer import SEQ_HEADER
from .kcat_format import Format, parse_format
from .lines import as_int, json_object, open_lines
from .options import Options, SeqRule, extract_seq
from .writer import RowWriter

SOURCES = ("broker",)
_LOG_LINE = re.compile(r"^\s*%\d\|")  # librdkafka's log line: %7|<epoch>|FAC|…
_MESSAGE = re.compile(r"^\s*% ")
_ERROR = re.compile(r"^\s*% (?:ERROR|FATAL)\b")
_HEADER_SEQ = SeqRule("header", SEQ_HEADER)


def record_seq(payload: str | None, headers: dict[str, str | None], opts: Options) -> int | None:
    """The seq by ``adapters.seq`` when the config sets it; else, as the snapshot reads a
    record, the ``seq`` header (the recorders' convention) when there is one, else the
    payload's trailing number (adapters.seq's default)."""
    rule = opts.seq if "seq" in opts.raw or SEQ_HEADER not in headers else _HEADER_SEQ
    return extract_seq(payload, rule, headers)  # type: ignore[arg-type]  # None values


def format_option(opts: Options) -> str | None:
    """The ``-f`` format of the input (adapters.kcat.format, else adapters.format)."""
    kcat = opts.raw.get("kcat")
    fmt = kcat.get("format") if isinstance(kcat, dict) else None
    fmt = fmt if fmt is not None else opts.raw.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise InputError(f"adapters.format must be a kcat -f format string, not {fmt!r}")
    return fmt or None


def _tool_line(n: int, line: str, w: RowWriter) -> bool:
    """Skip kcat's and librdkafka's own lines; whether the line was one."""
    if _LOG_LINE.match(line):
        w.skip(n, "tool_log_line")
        return True
    if _MESSAGE.match(line) or line.strip() == "%":
        if _ERROR.match(line):
            w.count("kcat_errors")
        w.skip(n, "tool_message")
        return True
    return False


def _headers(value: Any) -> dict[str, str | None]:
    """kcat's headers: a flat [name, value, …] array (-J), or an object; first one wins."""
    out: dict[str, str | None] = {}
    if isinstance(value, list):
        pairs = zip(value[0::2], value[1::2], strict=False)
    elif isinstance(value, dict):
        pairs = iter(value.items())
    else:
        return out
    for name, v in pairs:
        if isinstance(name, str):
            out.setdefault(name, v if v is None or isinstance(v, str) else json.dumps(v))
    return out


def _text(value: Any) -> str | None:
    """A key or payload as text: a string as is, Avro-decoded JSON as compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _envelope(n: int, line: str, w: RowWriter, opts: Options) -> None:
    obj, why = json_object(line)
    if obj is None:
        w.error(n, f"not a kcat -J envelope ({why}); for kcat -f output give "
                   "adapters.format (--option format='%t %p %o %k %s\\n')", line)
        return
    missing = [f for f in ("topic", "partition", "offset") if f not in obj]
    if missing:
        w.error(n, f"not a kcat -J envelope: no {', '.join(missing)}", line)
        return
    topic, partition, offset = obj["topic"], as_int(obj["partition"]), as_int(obj["offset"])
    if not isinstance(topic, str) or not topic:
        w.error(n, "topic is not a string", line)
        return
    if partition is None or partition < 0 or offset is None or offset < 0:
        w.error(n, "partition and offset must be integers ≥ 0", line)
        return
    if obj.get("key_error") is not None:
        w.error(n, f"kcat could not decode the key: {str(obj['key_error'])[:200]}", line)
        return
    if obj.get("payload_error") is not None:
        w.count("kcat_payload_errors")
    ts = as_int(obj.get("ts")) if obj.get("tstype") not in (None, "unknown") else None
    seq = record_seq(_text(obj.get("payload")), _headers(obj.get("headers")), opts)
    w.row(n, topic=topic, partition=partition, offset=offset, key=_text(obj.get("key")),
          seq=seq, timestamp=ts if ts is not None and ts >= 0 else None,
          producer_id=opts.producer_id)


def _length_of(values: dict[str, str], name: str) -> int | None:
    return int(values[name]) if name in values else None


def _nullable(text: str | None, length: int | None, null: str | None) -> str | None:
    """A key or payload printed by -f: null for a length of -1, else (no length printed)
    for an empty text or kcat's -Z null string."""
    if text is None or length == -1:
        return None
    if length is None and (text == "" or (null is not None and text == null)):
        return None
    return text


def _mismatch(what: str, text: str | None, length: int | None) -> str | None:
    if text is None or length is None or length < 0:
        return None
    size = len(text.encode("utf-8", "surrogateescape"))
    if size == length:
        return None
    return (f"the {what} printed is {size} bytes but kcat says {length}: a separator "
            f"inside the {what}? (a format whose {what} is last or delimited avoids it)")


def _format_row(first: int, raw: str, values: dict[str, str], w: RowWriter,
                opts: Options, null: str | None) -> None:
    key_len, payload_len = _length_of(values, "key_len"), _length_of(values, "payload_len")
    key = _nullable(values.get("key"), key_len, null)
    payload = _nullable(values.get("payload"), payload_len, null)
    bad = _mismatch("key", key, key_len) or _mismatch("payload", payload, payload_len)
    partition = int(values["partition"]) if "partition" in values else opts.partition
    offset = int(values["offset"])
    if bad is None and (partition is None or partition < 0 or offset < 0):
        bad = "partition and offset must be integers ≥ 0"
    if bad:
        w.error(first, bad, raw)
        return
    headers: dict[str, str | None] = {}
    for part in (values.get("headers") or "").split(","):
        name, sep, v = part.partition("=")
        if sep:
            headers.setdefault(name, None if v == "NULL" else v)
    ts = int(values["timestamp"]) if "timestamp" in values else None
    w.row(first, topic=values.get("topic") or opts.topic, partition=partition, offset=offset,
          key=key, seq=record_seq(payload, headers, opts),
          timestamp=ts if ts is not None and ts >= 0 else None, producer_id=opts.producer_id)


def _format_lines(path: str, w: RowWriter, opts: Options, fmt: Format) -> None:
    kcat = opts.raw.get("kcat")
    null = kcat.get("null") if isinstance(kcat, dict) else None
    patterns = fmt.lines
    pending: list[tuple[int, str]] = []  # the lines of the record being read
    values: dict[str, str] = {}

    def drop_partial(reason: str) -> None:
        """A record cut short: an error row at its first line when it held a field,
        the rest skipped; lines of literal text only are skipped as separators."""
        if values:
            first, raw = pending[0]
            w.error(first, reason, "\n".join(t for _, t in pending))
            for m, _ in pending[1:]:
                w.skip(m, "incomplete_record")
        else:
            for m, t in pending:
                w.skip(m, "blank" if not t.strip() else "separator")
        pending.clear()
        values.clear()

    for n, line in open_lines(path, w):
        with w.guard(n, line):
            m = patterns[len(pending)].regex.fullmatch(line)
            if m is None and pending:
                if _tool_line(n, line, w):  # stderr interleaved inside a record
                    continue
                drop_partial(f"a record cut short: line {n} does not continue the format "
                             f"(line {len(pending) + 1} of its {len(patterns)})")
                m = patterns[0].regex.fullmatch(line)
            if m is None:
                if _tool_line(n, line, w):
                    continue
                if not line.strip():
                    w.skip(n, "blank")
                    continue
                w.error(n, f"does not match the kcat format '{fmt.text}'", line)
                continue
            pending.append((n, line))
            values.update({k: v for k, v in m.groupdict().items() if v is not None})
            if len(pending) == len(patterns):
                first = pending[0][0]
                raw = "\n".join(t for _, t in pending)
                for later, _ in pending[1:]:
                    w.recognise(later)
                pending.clear()
                done = dict(values)
                values.clear()
                _format_row(first, raw, done, w, opts, null)
    if pending:
        drop_partial("a record cut short by the end of the file")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    text = format_option(opts)
    fmt = parse_format(text) if text else None  # before any line is read
    if fmt is not None:
        if "topic" not in fmt.fields and not opts.topic:
            raise InputError(f"kcat format '{text}' has no %t: set adapters.topic")
        if "partition" not in fmt.fields and opts.partition is None:
            raise InputError(f"kcat format '{text}' has no %p: set adapters.partition")
        _format_lines(path, w, opts, fmt)
        return
    for n, line in open_lines(path, w):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
            elif not _tool_line(n, line, w):
                _envelope(n, line, w, opts)


__all__ = ["SOURCES", "convert_file", "format_option"]
