"""``kafka-console-consumer`` output printed with ``print.timestamp``, ``print.partition``,
``print.offset`` and ``print.key`` (optionally ``print.headers``) → broker or ledger.

    CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:42<TAB>key-1<TAB>payload

The prefixed fields (``CreateTime:``/``LogAppendTime:``/``NO_TIMESTAMP``,
``Partition:``, ``Offset:``, and ``Topic:`` if present) may appear in any order; the
rest is ``[headers<TAB>]key<TAB>value`` (headers when ``adapters.console.headers`` is
true or the field is ``NO_HEADERS``/``k:v,…``; a lone field is the value with no key
printed). The tool prints a null key as ``null``: read as null. The topic comes from
``adapters.topic`` (the tool does not print it). For the ledger, each record is a
successful processing by ``adapters.member`` (or the file name) in ``adapters.group``,
started at the record's timestamp (the tool prints no consumption time).
``Processed a total of N messages`` is not a row.
"""

from __future__ import annotations

import re

from .lines import open_lines
from .options import Options, extract_seq
from .writer import RowWriter

SOURCES = ("broker", "ledger")
DEFAULT_GROUP = "console-consumer"
# ASCII digits only: str.isdigit() also takes "²", which int() refuses
_DIGITS = re.compile(r"[0-9]+")
_HEADERS = re.compile(r"^(NO_HEADERS|[^:,\t]+:[^,\t]*(,[^:,\t]+:[^,\t]*)*)$")


def _headers(text: str) -> dict[str, str]:
    if text == "NO_HEADERS":
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        k, _, v = part.partition(":")
        out.setdefault(k, v)
    return out


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    console = dict(opts.raw.get("console") or {})
    sep = str(console.get("separator", "\t"))
    with_headers = console.get("headers")
    with_key = console.get("key", True)
    group = opts.group or DEFAULT_GROUP
    member = opts.member_for(origin)
    for n, line in open_lines(path, w):
        with w.guard(n, line):
            if not line.strip():
                w.skip(n, "blank")
                continue
            if line.startswith("Processed a total of "):
                w.skip(n, "tool_summary")
                continue
            parts = line.split(sep)
            ts: int | None = None
            partition = offset = None
            topic = opts.topic
            bad = None
            i = 0
            while i < len(parts):
                p = parts[i]
                m = re.fullmatch(r"(CreateTime|LogAppendTime):(-?\d+)", p)
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
                w.error(n, "no Partition:/Offset: fields (print.partition and print.offset "
                           "are needed)", line)
                continue
            if not topic:
                w.error(n, "topic unknown: set adapters.topic", line)
                continue
            headers: dict[str, str] = {}
            if rest and (with_headers or (with_headers is None and len(rest) >= 3
                                          and _HEADERS.match(rest[0]))):
                headers = _headers(rest[0])
                rest = rest[1:]
            key: str | None = None
            if with_key and len(rest) >= 2:
                key = None if rest[0] == "null" else rest[0]
                rest = rest[1:]
            value = sep.join(rest) if rest else None
            if value == "null":
                value = None
            seq = extract_seq(value, opts.seq, headers)
            if source == "broker":
                w.row(n, topic=topic, partition=partition, offset=offset, key=key, seq=seq,
                      timestamp=ts, producer_id=opts.producer_id)
            else:
                if ts is None:
                    w.error(n, "no record timestamp to stand for the processing time", line)
                    continue
                w.row(n, group_id=group, member_id=member, topic=topic, partition=partition,
                      offset=offset, key=key, seq=seq, started_ts=ts, outcome="success")
