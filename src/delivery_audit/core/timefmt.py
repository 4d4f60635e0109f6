"""Instants as the auditor writes and reads them: ISO-8601, UTC, ``Z`` for the offset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def iso_z(dt: datetime, timespec: str = "auto") -> str:
    """An aware datetime (a naive one is taken as UTC) as ISO-8601 in UTC with ``Z``;
    ``timespec`` as datetime.isoformat's (``"milliseconds"``: always ``.mmm``)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def iso_z_ms(ms: int, timespec: str = "auto") -> str:
    """Epoch milliseconds as ISO-8601 in UTC with ``Z``."""
    return iso_z(datetime.fromtimestamp(ms / 1000, tz=UTC), timespec)


def now_z() -> str:
    return iso_z(datetime.now(UTC))


def instant(value: Any) -> datetime | None:
    """An aware UTC datetime from a datetime or an ISO-8601 text (``Z`` or an offset; naive
    is UTC); None for an empty value or a text that is not an instant."""
    if isinstance(value, datetime):
        dt = value
    elif not value:
        return None
    else:
        s = str(value)
        try:
            dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def epoch_ms(value: Any) -> int | None:
    """:func:`instant` as epoch milliseconds."""
    dt = instant(value)
    return None if dt is None else int(dt.timestamp() * 1000)
