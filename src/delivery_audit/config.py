"""The audit configuration file (YAML or JSON) and its defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .fields import ISOLATION_LEVELS

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # Kafka's transaction.timeout.ms default
LATENCY_SLA = "latency_sla_ms"  # top level and per group (contract §9)
ISOLATION = "isolation.level"  # per group (contract §9)

GROUP_SETTINGS = (
    "max.poll.records",
    "max.poll.interval.ms",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "enable.auto.commit",
)


@dataclass(frozen=True)
class GroupConfig:
    group_id: str
    settings: dict[str, Any] = field(default_factory=dict)
    topics: tuple[str, ...] = ()

    def get(self, name: str) -> Any:
        return self.settings.get(name)


@dataclass(frozen=True)
class DumpRange:
    topic: str
    partition: int
    log_start_offset: int
    end_offset: int


@dataclass(frozen=True)
class AuditConfig:
    grace_minutes: float | None = None  # None: the CLI/default (60) decides
    dense_seq: bool = True
    groups: tuple[GroupConfig, ...] = ()
    dump_ranges: tuple[DumpRange, ...] = ()
    lookback_minutes: float | None = None
    # widen date/hour partitions by this much when pruning (arrival-time layouts)
    partition_slack_minutes: float = 0.0
    # anomaly -> {"warn": n, "fail": n}; topic -> anomaly -> {"warn": n, "fail": n}
    thresholds: dict[str, dict[str, int]] = field(default_factory=dict)
    topic_thresholds: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    allow_critical: bool = False
    on_invalid_input: str = "quarantine"  # or "fail"
    # may hold a webhook URL: kept out of repr (tracebacks, logs); notify.describe() masks it
    notifier: dict[str, Any] = field(default_factory=lambda: {"type": "log"}, repr=False)
    # keys, member ids and producer ids shown as keyed pseudonyms (privacy.py)
    pseudonymise: bool = False
    # contract §9: Kafka's transaction.timeout.ms (hanging_transaction), the delivery
    # latency SLA of every group without its own (late_delivery; None: not judged)
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    latency_sla_ms: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def only_groups(self, group_ids: list[str]) -> AuditConfig:
        """The same config judging exactly these groups (settings kept where given)."""
        known = {g.group_id: g for g in self.groups}
        return replace(self, groups=tuple(known.get(g, GroupConfig(g)) for g in group_ids))

    def group(self, group_id: str) -> GroupConfig | None:
        return next((g for g in self.groups if g.group_id == group_id), None)

    def sla_ms(self, group_id: str) -> int | None:
        """The group's ``latency_sla_ms``, else the top-level one, else None (contract §9)."""
        g = self.group(group_id)
        own = g.get(LATENCY_SLA) if g is not None else None
        return int(own) if own is not None else self.latency_sla_ms

    def isolation(self, group_id: str) -> str | None:
        """The group's configured ``isolation.level`` (lower case), or None."""
        g = self.group(group_id)
        level = g.get(ISOLATION) if g is not None else None
        return None if level is None else str(level).lower()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditConfig:
        if not isinstance(data, dict):
            raise ValueError("the config must be a mapping")
        groups = []
        for gid, settings in (data.get("groups") or {}).items():
            settings = dict(settings or {})
            topics = tuple(str(t) for t in settings.pop("topics", []) or [])
            if settings.get(LATENCY_SLA) is not None:
                settings[LATENCY_SLA] = _millis(settings[LATENCY_SLA],
                                                f"groups.{gid}.{LATENCY_SLA}")
            if settings.get(ISOLATION) is not None:
                settings[ISOLATION] = _isolation(settings[ISOLATION], f"groups.{gid}")
            groups.append(GroupConfig(str(gid), settings, topics))
        ranges = tuple(
            DumpRange(str(r["topic"]), int(r["partition"]), int(r["log_start_offset"]),
                      int(r["end_offset"]))
            for r in data.get("dump_ranges") or []
        )
        on_invalid = str(data.get("on_invalid_input", "quarantine"))
        if on_invalid not in ("quarantine", "fail"):
            raise ValueError("on_invalid_input must be 'quarantine' or 'fail'")
        grace = data.get("grace_minutes")
        lookback = data.get("lookback_minutes")
        return cls(
            grace_minutes=None if grace is None else float(grace),
            dense_seq=bool(data.get("dense_seq", True)),
            groups=tuple(groups),
            dump_ranges=ranges,
            lookback_minutes=None if lookback is None else float(lookback),
            partition_slack_minutes=float(data.get("partition_slack_minutes") or 0),
            thresholds=dict(data.get("thresholds") or {}),
            topic_thresholds=dict(data.get("topic_thresholds") or {}),
            allow_critical=bool(data.get("allow_critical", False)),
            on_invalid_input=on_invalid,
            notifier=dict(data.get("notifier") or {"type": "log"}),
            pseudonymise=_flag(data.get("pseudonymise", False), "pseudonymise"),
            transaction_timeout_ms=_millis(
                data.get("transaction_timeout_ms", DEFAULT_TRANSACTION_TIMEOUT_MS),
                "transaction_timeout_ms"),
            latency_sla_ms=None if data.get(LATENCY_SLA) is None
            else _millis(data[LATENCY_SLA], LATENCY_SLA),
            raw=data,
        )


def _millis(value: Any, name: str) -> int:
    """A non-negative whole number of milliseconds (an int, or an all-digit string)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number of milliseconds, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number of milliseconds (>= 0), "
                         f"got {value!r}")
    return value


def _isolation(value: Any, where: str) -> str:
    """An ``isolation.level``: read_committed or read_uncommitted (any case)."""
    level = str(value).strip().lower() if isinstance(value, str) else None
    if level not in ISOLATION_LEVELS:
        raise ValueError(f"{where}.{ISOLATION} must be one of "
                         f"{', '.join(ISOLATION_LEVELS)}, got {value!r}")
    return level


def _flag(value: Any, name: str) -> bool:
    """A YAML/JSON boolean (or the strings true/false, yes/no, on/off, 1/0)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", "", "none"):
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")


def load_config(path: str | Path | None) -> AuditConfig:
    """Read a YAML or JSON config file; no path gives the defaults."""
    if path is None:
        return AuditConfig()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read config {p}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"config {p} is not valid {p.suffix.lstrip('.') or 'YAML'}: {exc}") \
            from exc
    try:
        return AuditConfig.from_dict(data or {})
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"config {p}: {exc}") from exc
