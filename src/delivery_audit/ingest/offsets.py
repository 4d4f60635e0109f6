"""The offsets file of a live read (contract §9.1): what `delivery-audit snapshot` writes
beside its broker rows and `run --offsets FILE` reads (rule 26).

    {"taken_at": "ISO-8601",
     "partitions": [{"topic": "t", "partition": 0, "log_start": 0, "end": 120,
                     "last_stable": 118, "read_from": 0, "read_to": 120}],
     "groups": [{"group": "g", "topic": "t", "partition": 0, "committed": 97}]}

:func:`read_offsets` reads one file (a local path or an ``s3://`` URI, staged like every
input by ingest/files.py) and checks it whole before any Spark work: a file that is not
JSON, a missing or mistyped field, ``read_from > read_to``, a partition or group named twice
fail the run with an :class:`~delivery_audit.errors.InputError` naming the file and the
field. Unknown fields are ignored (a later snapshot may say more). ``last_stable`` may be
null; ``committed`` is null where the group has committed nothing on that partition.

:meth:`OffsetsFile.stated` turns it into detection's facts (detection/facts.py
``StatedOffsets``): the read ranges, the log starts and, when ``taken_at`` is before the
audit's ``end + grace``, the committed offsets that count for rule 12.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.timefmt import iso_z
from ..core.window import parse_instant
from ..detection.facts import StatedOffsets
from ..errors import InputError
from .files import resolve

_MAX_BYTES = 64 * 1024 * 1024  # a few rows per partition and group: far below this


@dataclass(frozen=True)
class PartitionOffsets:
    topic: str
    partition: int
    log_start: int
    end: int
    last_stable: int | None
    read_from: int  # the offsets read: [read_from, read_to)
    read_to: int

    def as_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "log_start": self.log_start,
                "end": self.end, "last_stable": self.last_stable, "read_from": self.read_from,
                "read_to": self.read_to}


@dataclass(frozen=True)
class GroupOffsets:
    group: str
    topic: str
    partition: int
    committed: int | None  # the next offset the group reads; None: nothing committed

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "committed": self.committed}


@dataclass(frozen=True)
class OffsetsFile:
    taken_at: datetime  # aware, UTC
    partitions: tuple[PartitionOffsets, ...]
    groups: tuple[GroupOffsets, ...] = ()
    source: str = ""  # the file as the user named it

    def as_dict(self) -> dict[str, Any]:
        """The file's content in contract §9.1's shape (``taken_at`` ISO Z)."""
        return {"taken_at": iso_z(self.taken_at),
                "partitions": [p.as_dict() for p in self.partitions],
                "groups": [g.as_dict() for g in self.groups]}

    def counts_for_past(self, read_until: datetime) -> bool:
        """Rule 26: the committed offsets count for rule 12 only when the file was taken
        before the audit's ``end + grace`` (a later commit may cover later processing)."""
        return self.taken_at < read_until

    def stated(self, read_until: datetime) -> StatedOffsets:
        """Detection's facts of this file for an audit read up to ``read_until``."""
        committed = {} if not self.counts_for_past(read_until) else {
            (g.group, g.topic, g.partition): g.committed
            for g in self.groups if g.committed is not None}
        return StatedOffsets(
            read_ranges={(p.topic, p.partition): (p.read_from, p.read_to)
                         for p in self.partitions},
            log_starts={(p.topic, p.partition): p.log_start for p in self.partitions},
            committed=committed)

    def report_section(self, read_until: datetime) -> dict[str, Any]:
        """report.json's ``offsets_file``: the file's offsets as read, and whether its
        committed offsets counted for "went past" (rule 26)."""
        return {"file": self.source, **self.as_dict(),
                "committed_counted": self.counts_for_past(read_until)}


def read_offsets(path_or_uri: str, stage_dir: str | Path | None = None) -> OffsetsFile:
    """The offsets file at a local path or ``s3://`` URI (staged below ``stage_dir``),
    checked whole; an InputError names the file and the field."""
    if stage_dir is None:  # the file is read whole here: its staged copy goes with it
        with tempfile.TemporaryDirectory(prefix="delivery-audit-offsets-") as tmp:
            return read_offsets(path_or_uri, tmp)
    text = str(path_or_uri)
    found = resolve("offsets", [text], stage_dir=Path(stage_dir))
    if found is None or len(found.files) != 1:
        n = 0 if found is None else len(found.files)
        raise InputError(f"{text}: an offsets file must name one file ({n} match)")
    local, origin = found.files[0], found.origins[0]
    if found.bytes > _MAX_BYTES:
        raise InputError(f"{origin}: {found.bytes} bytes is too large for an offsets file")
    try:
        raw = Path(local).read_bytes()
        doc = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{origin}: not UTF-8 text ({exc.reason} at byte {exc.start})") \
            from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{origin}: not valid JSON: {exc.msg} (line {exc.lineno} column "
                         f"{exc.colno})") from None
    except OSError as exc:
        raise InputError(f"{origin}: cannot be read: {exc.strerror}") from None
    return parse_offsets(doc, origin)


def parse_offsets(doc: Any, name: str) -> OffsetsFile:
    """An offsets file's parsed JSON, checked (``name``: the file, for the messages)."""
    check = _Checker(name)
    if not isinstance(doc, dict):
        check.fail("", f"the file must hold a JSON object, not {_kind(doc)}")
    if doc.get("taken_at") in (None, ""):
        check.fail("taken_at", "missing (when the offsets were taken, ISO-8601)")
    if not isinstance(doc["taken_at"], str):
        check.fail("taken_at", f"must be an ISO-8601 text, not {_kind(doc['taken_at'])}")
    try:
        taken_at = parse_instant(doc["taken_at"])
    except ValueError:
        check.fail("taken_at", f"not an ISO-8601 instant: {doc['taken_at']!r}")
    partitions = tuple(_partition(check, f"partitions[{i}]", p)
                       for i, p in enumerate(check.rows(doc, "partitions")))
    groups = tuple(_group(check, f"groups[{i}]", g)
                   for i, g in enumerate(check.rows(doc, "groups", required=False)))
    check.unique("partitions", [(p.topic, p.partition) for p in partitions])
    check.unique("groups", [(g.group, g.topic, g.partition) for g in groups])
    return OffsetsFile(taken_at, partitions, groups, source=name)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a text", bool: "a boolean",
            type(None): "null"}.get(type(value), type(value).__name__)


class _Checker:
    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, field: str, problem: str) -> None:
        where = f"{self.name}: {field}: " if field else f"{self.name}: "
        raise InputError(where + problem)

    def rows(self, doc: dict, field: str, required: bool = True) -> list[dict]:
        value = doc.get(field)
        if value is None and not required:
            return []
        if not isinstance(value, list):
            self.fail(field, "missing (a list)" if value is None
                      else f"must be a list, not {_kind(value)}")
        for i, row in enumerate(value):
            if not isinstance(row, dict):
                self.fail(f"{field}[{i}]", f"must be an object, not {_kind(row)}")
        return value

    def text(self, row: dict, where: str, field: str) -> str:
        value = row.get(field)
        if not isinstance(value, str) or not value:
            self.fail(f"{where}.{field}", "missing" if value in (None, "")
                      else f"must be a text, not {_kind(value)}")
        return value

    def offset(self, row: dict, where: str, field: str, nullable: bool = False) -> int | None:
        value = row.get(field)
        if value is None and nullable:
            return None
        if value is None:
            self.fail(f"{where}.{field}", "missing")
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{where}.{field}", f"must be an integer, not {_kind(value)}")
        if value < 0:
            self.fail(f"{where}.{field}", f"must not be negative ({value})")
        return value

    def order(self, where: str, low: tuple[str, int], high: tuple[str, int]) -> None:
        if low[1] > high[1]:
            self.fail(f"{where}.{low[0]}", f"{low[0]} ({low[1]}) > {high[0]} ({high[1]})")

    def unique(self, field: str, keys: list[tuple]) -> None:
        seen: dict[tuple, int] = {}
        for i, k in enumerate(keys):
            if k in seen:
                self.fail(f"{field}[{i}]", f"{', '.join(map(str, k))} is named twice "
                                           f"(first at {field}[{seen[k]}])")
            seen[k] = i


def _partition(check: _Checker, where: str, row: dict) -> PartitionOffsets:
    topic = check.text(row, where, "topic")
    o = {f: check.offset(row, where, f) for f in ("partition", "log_start", "end",
                                                  "read_from", "read_to")}
    last_stable = check.offset(row, where, "last_stable", nullable=True)
    # the read lies in the log as it was when the offsets were taken
    check.order(where, ("read_from", o["read_from"]), ("read_to", o["read_to"]))
    check.order(where, ("log_start", o["log_start"]), ("end", o["end"]))
    check.order(where, ("log_start", o["log_start"]), ("read_from", o["read_from"]))
    check.order(where, ("read_to", o["read_to"]), ("end", o["end"]))
    if last_stable is not None:
        check.order(where, ("last_stable", last_stable), ("end", o["end"]))
    return PartitionOffsets(topic, o["partition"], o["log_start"], o["end"], last_stable,
                            o["read_from"], o["read_to"])


def _group(check: _Checker, where: str, row: dict) -> GroupOffsets:
    return GroupOffsets(check.text(row, where, "group"), check.text(row, where, "topic"),
                        check.offset(row, where, "partition"),
                        check.offset(row, where, "committed", nullable=True))
