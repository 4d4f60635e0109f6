"""`adapters:` in the audit config: the options every adapter reads (the consumer name of
a file, the day and zone of log times, the group, topic, partition …) and the sequence
rule (``adapters.seq``) with the extraction of a record's sequence number."""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import PurePath
from typing import Any
from zoneinfo import ZoneInfo

from ..config import AuditConfig

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
