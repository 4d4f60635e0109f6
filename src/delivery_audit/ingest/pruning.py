"""Partition pruning: skip input files whose date/hour partition cannot hold a row the
audit reads (contract §8 rule 6: rows up to ``end + grace``, and from ``start −
lookback_minutes`` when a look-back is configured).

A file's time span comes from its path, in this order:

* Hive-style segments: ``dt=`` / ``date=`` / ``day=`` (``YYYY-MM-DD`` or ``YYYYMMDD``),
  optionally with a later ``hour=`` / ``hr=`` (``0``–``23``): one day, or one hour;
* dated folders ``…/YYYY/MM/DD/`` with an optional ``HH/`` after them;
* a date in the file name: ``…YYYY-MM-DD…`` or ``…YYYYMMDD…``, optionally followed by an
  hour (``2026-11-19T13``, ``2026-11-19-13``, ``2026-11-19_13``, ``2026111913``).

A file whose path says nothing is always read. ``slack_minutes`` widens every span on
both sides for layouts that partition by arrival time rather than event time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_HIVE_DAY = re.compile(r"(?:^|/)(?:dt|date|day)=(\d{4})-?(\d{2})-?(\d{2})(?=/|$)")
_HIVE_HOUR = re.compile(r"(?:^|/)(?:hour|hr)=(\d{1,2})(?=/|$)")
_FOLDERS = re.compile(r"(?:^|/)(\d{4})/(\d{2})/(\d{2})(?:/(\d{2}))?(?=/)")
_NAME = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?:[T_-]?(\d{2})(?!\d))?(?!\d)")


@dataclass(frozen=True)
class Bounds:
    """Rows the audit reads: ``lower`` (None: no lower bound) ≤ t < ``upper``."""

    lower: datetime | None
    upper: datetime
    slack: timedelta = timedelta(0)

    def describe(self) -> dict[str, str | float | None]:
        return {"lower": None if self.lower is None else self.lower.isoformat(),
                "upper": self.upper.isoformat(),
                "slack_minutes": self.slack.total_seconds() / 60}


def _span(year: str, month: str, day: str, hour: str | None) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(int(year), int(month), int(day), int(hour or 0), tzinfo=UTC)
    except ValueError:
        return None
    return start, start + (timedelta(hours=1) if hour is not None else timedelta(days=1))


def path_span(path: str) -> tuple[datetime, datetime] | None:
    """The [start, end) a file's path says its rows fall in, or None."""
    p = path.replace("\\", "/")
    day = _HIVE_DAY.search(p)
    if day:
        hour = _HIVE_HOUR.search(p[day.end():])
        return _span(*day.groups(), hour.group(1) if hour else None)
    folders = _FOLDERS.search(p)
    if folders:
        return _span(*folders.groups())
    name = _NAME.search(p.rsplit("/", 1)[-1])
    if name:
        return _span(*name.groups())
    return None


def keep(path: str, bounds: Bounds | None) -> bool:
    """Whether a file may hold a row inside the bounds (unknown span: yes)."""
    if bounds is None:
        return True
    span = path_span(path)
    if span is None:
        return True
    start, end = span[0] - bounds.slack, span[1] + bounds.slack
    return start < bounds.upper and (bounds.lower is None or end > bounds.lower)
