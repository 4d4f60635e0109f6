"""``kafka-console-consumer`` output printed with ``print.timestamp``, ``print.partition``,
``print.offset`` and ``print.key`` (optionally ``print.headers``, and in Kafka 4.x
``print.delivery`` and ``print.epoch``) → broker or ledger.

    CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:42<TAB>key-1<TAB>payload

The formatter (``DefaultMessageFormatter``) prints, in this order and each only when
asked: ``CreateTime:ms``/``LogAppendTime:ms``/``NO_TIMESTAMP``, ``Partition:p``,
``Offset:o``, ``Delivery:n``/``Delivery:NOT_PRESENT`` (4.x), ``Epoch:e``/``Epoch:NOT_PRESENT``
(4.x), the headers (``k:v,k2:v2`` or ``NO_HEADERS``), the key, the value. The prefixed
fields are read in any order (``LeaderEpoch:``/``DeliveryCount:`` too); the rest is
``[headers<TAB>]key<TAB>value`` (headers when ``adapters.console.headers`` is true, or the
field is ``NO_HEADERS``, or with three fields left the first looks like ``k:v,…``; a lone
field is the value with no key printed, or the key with ``adapters.console.value: false``
for ``print.value=false``). The tool prints a null key as ``null``: read as null. The
topic comes from ``adapters.topic`` (the tool does not print it). For the ledger, each
record is a successful processing by ``adapters.member`` (or the file name) in
``adapters.group``, started at the record's timestamp (the tool prints no consumption time).

``Processed a total of N messages`` (after ``^C``, on stderr) is not a row (kind
``tool_summary``): N is checked against the records of the file, and fewer records than N
is counted as ``incomplete_console_output`` (the missing number), more as
``console_summary_mismatch``. A lone ``^C`` is skipped (``interrupt``), as are ``...``
(``elided``) and the tool's own log4j lines (``tool_log_line``).
"""

from __future__ import annotations

import re

from .lines import open_lines
from .options import Options, extract_seq
from .tool_lines import is_elided, is_log4j
from .writer import RowWriter

SOURCES = ("broker", "ledger")
DEFAULT_GROUP = "console-consumer"
# ASCII digits only: str.isdigit() also takes "²", which int() refuses
_DIGITS = re.compile(r"[0-9]+")
_HEADERS = re.compile(r"^(NO_HEADERS|[^:,\t]+:[^,\t]*(,[^:,\t]+:[^,\t]*)*)$")
_SUMMARY = re.compile(r"^Processed a total of (\d+) messages?\s*$")
_TIMESTAMP = re.compile(r"(CreateTime|LogAppendTime):(-?\d+)")
# Kafka 4.x fields that carry nothing the audit uses, read so they do not shift key and value
_IGNORED_PREFIXES = ("Delivery:", "DeliveryCount:", "Epoch:", "LeaderEpoch:")


def _headers(text: str) -> dict[str, str]:
    if text == "NO_HEADERS":
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        k, _, v = part.partition(":")
        out.setdefault(k, v)
    return out


def _summary(n: int, total: int, records: int, w: RowWriter) -> None:
    if records < total:
        w.count("incomplete_console_output", total - records)
    elif records > total:
        w.count("console_summary_mismatch")
    w.skip(n, "tool_summary")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    console = dict(opts.raw.get("console") or {})
    sep = str(console.get("separator", "\t"))
    with_headers = console.get("headers")
    with_key = console.get("key", True)
    with_value = console.get("value", True)  # print.value=false: the last field is the key
    group = opts.group or DEFAULT_GROUP
    member = opts.member_for(origin)
    records = 0  # record lines (rows and error rows) since the last summary
    for n, line in open_lines(path, w):
        with w.guard(n, line):
            text = line
            if text.startswith("^C"):
                text = text[2:]
                if not text.strip():
                    w.skip(n, "interrupt")
                    continue
            if not text.strip():
                w.skip(n, "blank")
                continue
            m_sum = _SUMMARY.match(text.strip())
            if m_sum:
                _summary(n, int(m_sum.group(1)), records, w)
                records = 0
                continue
            if is_elided(text):
                w.skip(n, "elided")
                continue
            if is_log4j(text):
                w.skip(n, "tool_log_line")
                continue
            records += 1
            parts = text.split(sep)
            ts: int | None = None
            partition = offset = None
            topic = opts.topic
            bad = None
            i = 0
            while i < len(parts):
                p = parts[i]
                m = _TIMESTAMP.fullmatch(p)
                if m:
                    ts = int(m.group(2)) if int(m.group(2)) >= 0 else None
                elif p == "NO_TIMESTAMP":
                    ts = None
                elif p.startswith("Partition:"):
                    v = p[len("Partition:"):]
                    partition = int(v) if _DIGITS.fullmatch(v) else None
                    bad = bad or (None if _DIGITS.fullmatch(v) else f"bad partition {v[:20]!r}")
                elif p.startswith("Offset:"):
                    v = p[len("Offset:"):]
                    offset = int(v) if _DIGITS.fullmatch(v) else None
                    bad = bad or (None if _DIGITS.fullmatch(v) else f"bad offset {v[:20]!r}")
                elif p.startswith(_IGNORED_PREFIXES) and (
                        _DIGITS.fullmatch(p.partition(":")[2]) or p.endswith(":NOT_PRESENT")):
                    pass
                elif p.startswith("Topic:"):
                    topic = p[len("Topic:"):]
                else:
                    break
                i += 1
            rest = parts[i:]
            if bad:
                w.error(n, bad, line)
                continue
            if partition is None or offset is None:
                w.error(n, "no Partition:/Offset: fields: run the console consumer with "
                           "--property print.partition=true --property print.offset=true "
                           "(Kafka ≥ 2.7)", line)
                continue
            if not topic:
                w.error(n, "topic unknown: the console consumer does not print it; set "
                           "adapters.topic", line)
                continue
            headers: dict[str, str] = {}
            if rest and with_headers is not False and (
                    with_headers or rest[0] == "NO_HEADERS"
                    or (len(rest) >= 3 and _HEADERS.match(rest[0]))):
                headers = _headers(rest[0])
                rest = rest[1:]
            key: str | None = None
            if with_key and (len(rest) >= 2 or (rest and with_value is False)):
                key = None if rest[0] == "null" else rest[0]
                rest = rest[1:]
            value = sep.join(rest) if rest and with_value is not False else None
            if value == "null":
                value = None
            seq = extract_seq(value, opts.seq, headers)
            if source == "broker":
                w.row(n, topic=topic, partition=partition, offset=offset, key=key, seq=seq,
                      timestamp=ts, producer_id=opts.producer_id)
            else:
                if ts is None:
                    w.error(n, "no record timestamp to stand for the processing time: run "
                               "the console consumer with --property print.timestamp=true",
                            line)
                    continue
                w.row(n, group_id=group, member_id=member, topic=topic, partition=partition,
                      offset=offset, key=key, seq=seq, started_ts=ts, outcome="success")
