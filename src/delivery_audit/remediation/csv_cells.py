"""CSV files a spreadsheet can open safely: every text cell that a spreadsheet would read as
a formula is neutralised.

A cell beginning with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a line feed is
a formula (or starts one) in Excel, LibreOffice and Google Sheets; message keys, member ids
and details are data from the producers and consumers audited, so such a text cell gets a
leading ``'`` (OWASP's CSV-injection advice), which spreadsheets show as text. Numbers are
written as numbers and never changed; the Parquet file beside each CSV holds the exact
values. Files are RFC 4180 (``\\r\\n``, quoted when needed), UTF-8, with a header row; an
empty cell is null, instants are ISO-8601 UTC with ``Z``.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.timefmt import iso_z

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def safe_text(value: str) -> str:
    """A text cell a spreadsheet shows as text (see the module docstring)."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime):
        return iso_z(value)
    return safe_text(str(value))


def write_csv(table: pa.Table, path: Path) -> None:
    """``table`` as a formula-safe CSV file at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\r\n")
        w.writerow([safe_text(n) for n in table.column_names])
        for row in table.to_pylist():
            w.writerow([cell(row[n]) for n in table.column_names])
