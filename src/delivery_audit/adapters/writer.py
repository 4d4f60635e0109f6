"""The canonical JSON Lines writer every adapter writes through: one file per input file,
each row with the original file and line (``__file``, ``__line``), a line it cannot
convert as an error row (``__error``, ``__raw``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..schemas import FIELDS

RAW_LIMIT = 10_000  # characters of the original line kept in an error row

# The files RowWriter wrote in this process: only in those are __file/__line/__raw/__error
# honoured by ingestion (ingest/tokens/jsonl.py); in a user's JSON Lines file they are ordinary
# unknown fields, so a row cannot claim another file or line.
_WRITTEN: set[str] = set()


def written_by_adapter(path: str) -> bool:
    return str(path) in _WRITTEN


class RowWriter:
    """Writes canonical rows of one source as JSON Lines, each with __file and __line."""

    def __init__(self, path: Path, source: str, origin: str) -> None:
        self.path = path
        self.source = source
        self.origin = origin
        self.names = [f.name for f in FIELDS[source]]
        self.rows = 0
        self.errors = 0
        self.counts: dict[str, int] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (JSON "\ud800" in the input) cannot be encoded: written as the
        # same JSON escape, inside the string it came from
        self._fh = open(path, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        _WRITTEN.add(str(path))

    def row(self, line_no: int, **values: Any) -> None:
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"not {self.source} fields: {sorted(unknown)}")
        obj = {n: values.get(n) for n in self.names}
        obj["__file"] = self.origin
        obj["__line"] = line_no
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1

    def error(self, line_no: int, reason: str, raw: str) -> None:
        obj = {n: None for n in self.names}
        obj.update({"__file": self.origin, "__line": line_no, "__error": reason,
                    "__raw": raw[:RAW_LIMIT]})
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1
        self.errors += 1

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    @contextmanager
    def guard(self, line_no: int, raw: str) -> Iterator[None]:
        """Convert one line; whatever it raises (a 5,000-digit number, a value of an
        unexpected type) makes the line an error row instead of stopping the run."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - any failure is this line's problem
            text = str(exc).splitlines()[0] if str(exc) else ""
            self.error(line_no, f"cannot convert the line: {type(exc).__name__}: "
                                f"{text[:200]}", raw)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
