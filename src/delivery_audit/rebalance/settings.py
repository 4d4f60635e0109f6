"""A group's consumer settings as the rebalance section reads them: the four Kafka settings
it judges, each from the audit config or else Kafka's default, and where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import AuditConfig

KAFKA_DEFAULTS = {
    "max.poll.records": 500,
    "max.poll.interval.ms": 300_000,
    "session.timeout.ms": 45_000,
    "heartbeat.interval.ms": 3_000,
}


@dataclass
class Settings:
    values: dict[str, int]
    origin: dict[str, str]

    def __getitem__(self, name: str) -> int:
        return self.values[name]

    def as_dict(self) -> dict[str, Any]:
        return {k: {"value": v, "from": self.origin[k]} for k, v in self.values.items()}


def group_settings(config: AuditConfig, group_id: str) -> Settings:
    g = config.group(group_id)
    values, origin = {}, {}
    for name, default in KAFKA_DEFAULTS.items():
        raw = g.get(name) if g else None
        try:
            v = int(raw) if raw is not None else None
        except (TypeError, ValueError):
            v = None
        values[name] = v if v is not None and v > 0 else default
        origin[name] = "config" if v is not None and v > 0 else "Kafka default"
    return Settings(values, origin)


def rebalance_settings(config: AuditConfig, groups: list[str]) -> dict[str, Settings]:
    return {g: group_settings(config, g) for g in groups}
