"""Log-line timestamps → epoch milliseconds: dated or time-only (their day from
``adapters.date`` or the window, rolling over at midnight), in the line's zone or
``adapters.timezone``."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from .options import Options

# a date, then " ", "T" or "_" (runit/svlogd: 2018-07-11_05:04:07.75431), then the time
_LOG_TS = re.compile(
    r"^\s*+\[?\s*+(?:(?P<date>\d{4}-\d{2}-\d{2})[ T_])?"
    r"(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2}|UTC)?\]?")


def epoch_ms(dt: datetime) -> int:
    return int(round(dt.timestamp() * 1000))


class LogClock:
    """Timestamps at the start of a log line → epoch ms. Time-only lines take their day
    from `adapters.date` (or the window's start day) and roll over at midnight."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.day: date | None = opts.date
        self.last_ms: int | None = None

    def parse(self, line: str) -> tuple[int | None, str | None, int]:
        """(epoch ms or None, a reason when there is a time but no usable day, end index)."""
        m = _LOG_TS.match(line)
        if not m:
            return None, None, 0
        frac = (m.group("frac") or "0")[:6].ljust(6, "0")
        tzinfo: Any = self.opts.tz
        tz = m.group("tz")
        if tz == "Z" or tz == "UTC":
            tzinfo = UTC
        elif tz:
            sign = 1 if tz[0] == "+" else -1
            digits = tz[1:].replace(":", "")
            # a timedelta here; made a timezone below, where a bad offset is an error
            tzinfo = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        try:
            if m.group("date"):
                day = date.fromisoformat(m.group("date"))
                rolled = False
            else:
                if self.day is None:
                    return None, ("time-only timestamp and no day: set adapters.date "
                                  "(or audit with a window)"), m.end()
                day, rolled = self.day, True
            if tz and tz not in ("Z", "UTC"):
                tzinfo = timezone(tzinfo)  # a fixed offset, built above as a timedelta
            dt = datetime(day.year, day.month, day.day, int(m.group("h")), int(m.group("m")),
                          int(m.group("s")), int(frac), tzinfo=tzinfo)
            ms = epoch_ms(dt)
            if rolled and self.last_ms is not None and ms < self.last_ms - 12 * 3_600_000:
                next_day = day + timedelta(days=1)  # the clock went past midnight
                ms += 86_400_000
                self.day = next_day
        except (ValueError, OverflowError) as exc:  # 2026-13-45, +99:00, past year 9999
            return None, f"bad timestamp: {exc}", m.end()
        if m.group("date"):
            self.day = day
        self.last_ms = ms
        return ms, None, m.end()
