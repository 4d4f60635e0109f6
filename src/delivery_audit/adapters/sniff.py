"""``--format auto``: which adapter a file needs, from its first lines, and why.

The first :data:`SNIFF_LINES` lines (framed as the text-log adapters frame them, so
container prefixes, JSON-structured logs and CSV exports do not hide the wording) are
matched against what each format prints: the verifiable producer's and consumer's JSON
``name`` fields, kafka-dump-log's ``Dumping …``/``baseOffset:`` lines, librdkafka's
``%7|<epoch>|CGRP|`` lines, kcat ``-J``'s JSON envelopes (``topic``, ``partition``,
``offset``, ``key``, ``payload``), the broker's coordinator wordings (``GroupCoordinator``,
``GroupMetadataManager``, the 4.x coordinator's ``[Group G]``) against the client's
(``[Consumer clientId=``, ``ConsumerCoordinator``, kafka-python's
``kafka.coordinator.consumer``, Spring's listener container), and the console consumer's
tab-separated ``CreateTime:`` lines. A file matching none of them (or two as much) is
refused with its name and a hint to give ``--format``; when most of its lines are an
application's own log lines (timestamped text, JSON log events, logfmt) the refusal is
:class:`ApplicationLog`, which says to declare a ``mapping`` (auto never guesses one)."""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from dataclasses import dataclass

from .framing import csv_layout, frame_text
from .librdkafka_log import is_librdkafka_line
from .registry import ADAPTERS

SNIFF_LINES = 200
LIBRDKAFKA = "librdkafka"  # the adapter's name, when this version has one

KCAT_ENVELOPE = ("topic", "partition", "offset", "key", "payload")  # kcat -J (kcat.py)
_PRODUCER_NAMES = {"producer_send_success", "producer_send_error", "tool_data"}
_CONSUMER_NAMES = {"records_consumed", "record_data", "partitions_assigned",
                   "partitions_revoked", "offsets_committed"}
_DUMP = re.compile(r"^(?:Dumping \S|baseOffset: \d|\| offset: \d|(?:Log )?[Ss]tarting offset: \d"
                   r"|offset: \d+ position: \d)")
# the broker's server.log: the group coordinator, or (a broker log without group lines yet)
# the broker's own loggers
_COORDINATOR = re.compile(r"GroupCoordinator|GroupMetadataManager|kafka\.coordinator\.group|"
                          r"\[Group [^\]]+\] |"
                          r"\((?:kafka\.(?:server|log|cluster|controller|utils)\.|"
                          r"state\.change\.logger)|\[(?:Broker|KafkaServer) id=\d+\]")
_CLIENT = re.compile(r"\[Consumer (?:instanceId=[^,\]]*, )?clientId=|ConsumerCoordinator|"
                     r"kafka\.coordinator\.consumer|KafkaMessageListenerContainer|"
                     r"o\.s\.k\.l\.|org\.springframework\.kafka|partitions (?:assigned|revoked):|"
                     r"kafka\.coordinator(?!\.group)|aiokafka|CommitFailed(?:Error|Exception)|"
                     r"smallrye\.reactive\.messaging\.kafka|Successfully joined group \S+ with|"
                     r"(?:Revoking|Setting) (?:previously|newly) assigned partitions|"
                     r"autocommit of offsets .* for group ")
# an application's own log lines: timestamped text, logfmt (key=value pairs)
_TIMESTAMPED = re.compile(r"^\s*\[?\s*(?:\d{4}-\d{2}-\d{2}[ T_]\d{2}:\d{2}:\d{2}|"
                          r"\d{2}:\d{2}:\d{2}[.,]\d)")
_LOGFMT = re.compile(r"(?:^|\s)[A-Za-z_][\w.@-]*=(?:\"[^\"]*\"|[^\s\"=]+)")
_CONSOLE = re.compile(r"(?:^|\t)CreateTime:-?\d+(?:\t|$)|^Partition:\d+\tOffset:\d+")


class SniffError(ValueError):
    """The format of a file cannot be told from its content."""


class ApplicationLog(SniffError):
    """An application's own log (no Kafka tool, client or coordinator wording): its lines
    become rows only through a declared ``mapping``."""


class UnreadableInput(OSError):
    """The file cannot be read at all (a corrupt gzip stream, an I/O error)."""


@dataclass(frozen=True)
class Sniffed:
    fmt: str
    reason: str


def _head(path: str, limit: int = SNIFF_LINES) -> list[str]:
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
    out: list[str] = []
    with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None) as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if line.strip():
                out.append(line)
            if len(out) >= limit:
                break
    return out


def sniff(path: str, origin: str | None = None,
          formats: tuple[str, ...] | None = None) -> Sniffed:
    """The adapter format of a file and the reason, or :class:`SniffError` naming it.
    ``formats`` are the adapters this version has (default: all of ``ADAPTERS``)."""
    known = tuple(formats or ADAPTERS)
    name = origin or path
    try:
        head = _head(path)
    except (OSError, EOFError, zlib.error) as exc:
        raise UnreadableInput(f"{name}: cannot be read: {type(exc).__name__}: {exc}") from exc
    if not head:
        raise SniffError(f"{name}: empty, its format cannot be told; give --format")
    counts = {"producer": 0, "consumer": 0, "kcat": 0, "dump": 0, "rdkafka": 0, "coordinator": 0,
              "client": 0, "console": 0, "json": 0, "logfmt": 0, "text": 0}
    examples: dict[str, str] = {}
    layout = csv_layout(head[0])

    def hit(kind: str, what: str) -> None:
        counts[kind] += 1
        examples.setdefault(kind, what)

    for i, raw in enumerate(head):
        obj = None
        if raw.lstrip().startswith("{"):
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, ValueError, RecursionError):
                obj = None
            if isinstance(obj, dict) and all(f in obj for f in KCAT_ENVELOPE):
                hit("kcat", f"kcat -J envelopes ({raw[:40]!r}, line {i + 1})")
                continue
            if isinstance(obj, dict) and isinstance(obj.get("name"), str):
                if obj["name"] in _PRODUCER_NAMES:
                    hit("producer", f'"name": "{obj["name"]}" (line {i + 1})')
                elif obj["name"] in _CONSUMER_NAMES:
                    hit("consumer", f'"name": "{obj["name"]}" (line {i + 1})')
                else:
                    hit("json", f"JSON log events ({raw[:40]!r}, line {i + 1})")
                continue
        if _DUMP.match(raw):
            hit("dump", f"{raw[:40]!r} (line {i + 1})")
            continue
        if is_librdkafka_line(raw):
            hit("rdkafka", f"{raw[:30]!r} (line {i + 1})")
            continue
        if _CONSOLE.search(raw) and "\t" in raw:
            hit("console", f"tab-separated {raw.split(chr(9))[0][:30]!r} (line {i + 1})")
            continue
        framed = frame_text(raw)
        if framed.text is None:  # a stack frame, a viewer's timestamp: no wording
            continue
        m = _COORDINATOR.search(raw)
        if m:
            hit("coordinator", f"{m.group(0).strip()!r} (line {i + 1})")
            continue
        m = _CLIENT.search(raw)
        if m:
            hit("client", f"{m.group(0)!r} (line {i + 1})")
            continue
        if isinstance(obj, dict):
            hit("json", f"JSON log events ({raw[:40]!r}, line {i + 1})")
        elif len(_LOGFMT.findall(framed.text)) >= 3:
            hit("logfmt", f"logfmt lines ({raw[:40]!r}, line {i + 1})")
        elif _TIMESTAMPED.match(framed.text):
            hit("text", f"timestamped log lines ({raw[:40]!r}, line {i + 1})")
    framing = " (a CSV export)" if layout is not None else ""
    for kind, fmt in (("producer", "kafka-verifiable-producer"),
                      ("consumer", "kafka-verifiable-consumer"),
                      ("kcat", "kcat"),
                      ("dump", "kafka-dump-log")):
        if counts[kind]:
            return Sniffed(fmt, f"{counts[kind]} line(s) like {examples[kind]}")
    if counts["rdkafka"]:
        fmt = next((f for f in known if LIBRDKAFKA in f), None)
        if fmt is None:
            raise SniffError(f"{name}: librdkafka log lines ({examples['rdkafka']}), which "
                             "this version has no adapter for")
        return Sniffed(fmt, f"{counts['rdkafka']} librdkafka line(s) like "
                            f"{examples['rdkafka']}")
    coord, client = counts["coordinator"], counts["client"]
    if coord or client:
        if coord == client:
            raise SniffError(f"{name}: as many broker coordinator lines ({examples['coordinator']}"
                             f") as client lines ({examples['client']}); give --format "
                             "coordinator-log or client-log")
        kind, fmt = ("coordinator", "coordinator-log") if coord > client else \
            ("client", "client-log")
        other = "client" if kind == "coordinator" else "coordinator"
        why = f"{counts[kind]} {kind} line(s) like {examples[kind]}"
        if counts[other]:
            why += f" (and {counts[other]} {other} line(s))"
        return Sniffed(fmt, why + framing)
    if counts["console"]:
        return Sniffed("kafka-console-consumer", f"{counts['console']} console-consumer "
                                                 f"line(s): {examples['console']}")
    app = counts["json"] + counts["logfmt"] + counts["text"]
    if app * 2 >= len(head):
        kind = max(("json", "logfmt", "text"), key=lambda k: counts[k])
        raise ApplicationLog(
            f"{name}: an application's own log ({app} of its first {len(head)} lines are log "
            f"lines, e.g. {examples[kind]}), not a Kafka tool's output nor a consumer "
            "client's or group coordinator's log; auto never guesses how such lines become "
            "rows: declare rules in adapters.mapping.<source> and give --format mapping "
            "(docs/adapters.md \"Your own application logs\")")
    raise SniffError(f"{name}: cannot tell its format from its first {len(head)} lines "
                     f"(no Kafka tool output, client or coordinator wording found); "
                     f"give --format (one of {', '.join(known)})")
