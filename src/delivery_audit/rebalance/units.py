"""Units the rebalance modules share: instants as epoch milliseconds (a Spark column of
them, their ISO text) and numbers as the report's prose writes them."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..core.timefmt import iso_z_ms


def millis(col: str) -> Column:
    """A timestamp column as epoch milliseconds."""
    return F.unix_millis(F.col(col))


def iso(ms: int | None) -> str | None:
    """Epoch milliseconds as ISO-8601 UTC, always with milliseconds (``…T10:00:00.000Z``)."""
    if ms is None:
        return None
    return iso_z_ms(ms, "milliseconds")


def num(n: float | int | None) -> str:
    """A number for prose: thousands separated, one decimal when not whole, ``?`` if
    unknown."""
    if n is None:
        return "?"
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"
