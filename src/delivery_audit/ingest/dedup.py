"""Rule 5: exact duplicate rows are logging artefacts; a repeated broker offset is too.

The first copy (in file order) stays; every later copy is quarantined with a
pointer to the first ("duplicate of line N [of FILE]").

Duplicates are rare, so rows are not all shuffled and sorted: each parsed row carries a
64-bit fingerprint of its compared columns (:func:`fingerprint`, computed in ingestion's
one scan); one aggregation finds the fingerprints that occur more than once, and only
those rows are collected and ranked exactly, on the driver (:func:`later_copies`).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..schemas import FIELDS

# the columns that make two rows "the same" for each source
BROKER_IDENTITY = ("topic", "partition", "offset")


def identity_columns(source: str) -> tuple[str, ...]:
    if source == "broker":
        return BROKER_IDENTITY
    return tuple(f.name for f in FIELDS[source])


def fingerprint(source: str) -> Column:
    """A hash of the compared columns (evaluate it on parsed rows only)."""
    return F.xxhash64(*[F.col(c) for c in identity_columns(source)])


def compared_values(source: str) -> Column:
    """The compared columns as one JSON text: equal for exactly the same values."""
    return F.to_json(F.struct(*[F.col(c) for c in identity_columns(source)]))


def later_copies(suspects: list[dict], line: Callable[[str, int, int], int],
                 origins: dict[str, str]) -> list[dict]:
    """The rows whose fingerprint repeats (``_fp``, ``_values`` from :func:`compared_values`,
    ``_file``, ``_block``, ``_pos``, ``_rid``) → their later copies: per identical row the
    first in file order stays; each later copy gets ``d_row`` (its line) and ``d_reason``.
    ``line(file, block, pos)`` numbers a row in its file; ``origins`` names Spark's file
    URIs as the user gave them."""
    groups: dict[tuple, list[dict]] = {}
    for r in suspects:
        groups.setdefault((r["_fp"], r["_values"]), []).append(r)
    out = []
    for rows in groups.values():
        rows.sort(key=lambda r: (r["_file"], r["_block"], r["_pos"], r["_rid"]))
        first = rows[0]
        first_line = line(first["_file"], first["_block"], first["_pos"])
        first_file = origins.get(first["_file"], first["_file"])
        for r in rows[1:]:
            where = "" if r["_file"] == first["_file"] else f" of {first_file}"
            out.append({**r, "d_row": line(r["_file"], r["_block"], r["_pos"]),
                        "d_reason": f"duplicate of line {first_line}{where}"})
    return out
