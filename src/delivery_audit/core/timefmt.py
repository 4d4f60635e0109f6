"""Instants as the auditor writes them: ISO-8601, UTC, ``Z`` for the offset."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_z(dt: datetime) -> str:
    """An aware datetime (a naive one is taken as UTC) as ISO-8601 in UTC with ``Z``."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def iso_z_ms(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 in UTC with ``Z``."""
    return iso_z(datetime.fromtimestamp(ms / 1000, tz=UTC))


def now_z() -> str:
    return iso_z(datetime.now(UTC))
