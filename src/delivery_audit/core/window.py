"""The audit window (contract §3): [start, end) plus a grace period for late reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .timefmt import iso_z

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_minutes(text: str | int | float) -> float:
    """'60m', '2h', '90s', '1d' or a bare number of minutes → minutes."""
    if isinstance(text, int | float):
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 60m, 2h, 90s)")
    value, unit = int(m.group(1)), m.group(2) or "m"
    return value * _UNIT_MS[unit] / 60_000


DEFAULT_GRACE_MINUTES = 60.0


def resolve_grace(given: str | float | None, config_minutes: float | None,
                  default: str | float = DEFAULT_GRACE_MINUTES) -> tuple[float, str]:
    """One precedence for the grace, the CLI's and Airflow's: the run's own value (--grace,
    the backfill DAG's Param) > the audit config file's ``grace_minutes`` > the deployment
    default (the CLI: 60m; Airflow: "grace" in Variable delivery_audit_settings). Returns the
    minutes and where they came from ("run", "config" or "default")."""
    if given is not None:
        return parse_duration_minutes(given), "run"
    if config_minutes is not None:
        return float(config_minutes), "config"
    return parse_duration_minutes(default), "default"


def parse_instant(text: str | datetime) -> datetime:
    """ISO-8601 (an offset honoured, none meaning UTC) → aware UTC datetime."""
    if isinstance(text, datetime):
        dt = text
    else:
        s = str(text).strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError as exc:
            raise ValueError(f"not an ISO-8601 instant: {text!r}") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


@dataclass(frozen=True)
class AuditWindow:
    start: datetime
    end: datetime
    grace_minutes: float = 60.0

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError(f"window end {self.end.isoformat()} is not after start "
                             f"{self.start.isoformat()}")
        if self.grace_minutes < 0:
            raise ValueError("grace must not be negative")

    @classmethod
    def of(cls, start: str | datetime, end: str | datetime,
           grace: str | float | int = 60) -> AuditWindow:
        return cls(parse_instant(start), parse_instant(end), parse_duration_minutes(grace))

    @property
    def read_until(self) -> datetime:
        """Every source is read up to end + grace, exclusive (rule 6)."""
        return self.end + timedelta(minutes=self.grace_minutes)

    @property
    def window_id(self) -> str:
        fmt = "%Y%m%dT%H%M%SZ"
        return f"{self.start.strftime(fmt)}_{self.end.strftime(fmt)}"

    @property
    def dt(self) -> str:
        return self.start.strftime("%Y-%m-%d")

    @property
    def relative_dir(self) -> str:
        """Where this window's outputs go below the report root (contract §7)."""
        return f"dt={self.dt}/{self.window_id}"

    def as_dict(self) -> dict[str, object]:
        return {
            "start": iso_z(self.start),
            "end": iso_z(self.end),
            "grace_minutes": self.grace_minutes,
            "id": self.window_id,
        }
