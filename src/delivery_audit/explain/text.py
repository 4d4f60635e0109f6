"""How explain writes what it tells: an instant as a UTC clock reading, the time between
two instants in milliseconds, and any value (instants inside) as JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ..core.timefmt import iso_z


def clock(dt: datetime | None) -> str:
    if dt is None:
        return "—"
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def ms_text(a: datetime, b: datetime) -> str:
    return f"{(b - a) / timedelta(milliseconds=1):,.0f} ms"


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_z(value, "milliseconds")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
