"""The canonical JSON Lines writer every adapter writes through: one file per input file,
each row with the original file and line (``__file``, ``__line``), a line it cannot
convert as an error row (``__error``, ``__raw``).

It also accounts for every line of the input (issue 15: no line silently dropped): a line
is *recognised* (it gave a row, or the adapter read something from it: a batch header, a
``Dumping`` line), *skipped* with a kind (``w.skip(n, "unrelated_log_line")``) or an
*error* row. :attr:`RowWriter.lines` is what ``open_lines`` read; a line the adapter never
classified is ``unaccounted`` (a bug in the adapter: the wild-sample tests assert none)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fields import FIELDS

RAW_LIMIT = 10_000  # characters of the original line kept in an error row

# The files RowWriter wrote in this process: only in those are __file/__line/__raw/__error
# honoured by ingestion (ingest/tokens/jsonl.py); in a user's JSON Lines file they are ordinary
# unknown fields, so a row cannot claim another file or line.
_WRITTEN: set[str] = set()


def written_by_adapter(path: str) -> bool:
    return str(path) in _WRITTEN


@dataclass
class LineAccount:
    """What became of every line of one input file."""

    origin: str
    path: str  # the canonical JSON Lines written
    lines: int
    rows: int
    recognised: int
    error_lines: int
    skipped: dict[str, int] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line, reason), first 100
    error_rows: int = 0  # rows that are error rows (``rows`` counts them too)

    @property
    def unaccounted(self) -> int:
        """Lines read that were never classified (0 unless an adapter has a bug)."""
        return self.lines - self.recognised - sum(self.skipped.values()) - self.error_lines


ERRORS_KEPT = 100


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
        self.lines = 0  # lines read (open_lines counts them)
        self.recognised = 0
        self.error_lines = 0
        self.skipped: dict[str, int] = {}
        self._seen = bytearray()  # one bit per line number: already classified
        self._errors: list[tuple[int, str]] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (JSON "\ud800" in the input) cannot be encoded: written as the
        # same JSON escape, inside the string it came from
        self._fh = open(path, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        _WRITTEN.add(str(path))

    def _first(self, line_no: int) -> bool:
        """Whether ``line_no`` is classified now for the first time (and mark it)."""
        if line_no <= 0:
            return False
        byte, bit = divmod(line_no, 8)
        if byte >= len(self._seen):
            self._seen.extend(bytes(max(byte + 1 - len(self._seen), len(self._seen))))
        if self._seen[byte] & (1 << bit):
            return False
        self._seen[byte] |= 1 << bit
        return True

    def recognise(self, line_no: int) -> None:
        """The adapter read this line (a header, a context line) without a row of its own
        (for the report it is one of the ``skipped_lines``: not a row)."""
        if self._first(line_no):
            self.recognised += 1
            self.count("skipped_lines")

    def skip(self, line_no: int, kind: str) -> None:
        """The line is legitimately not a row: counted under ``kind`` (and, unless blank,
        under the extra count ``skipped_lines``, which the report shows)."""
        if self._first(line_no):
            self.skipped[kind] = self.skipped.get(kind, 0) + 1
            if kind != "blank":
                self.count("skipped_lines")

    def account(self) -> LineAccount:
        return LineAccount(self.origin, str(self.path), self.lines, self.rows, self.recognised,
                           self.error_lines, dict(self.skipped), list(self._errors),
                           self.errors)

    def row(self, line_no: int, **values: Any) -> None:
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"not {self.source} fields: {sorted(unknown)}")
        obj = {n: values.get(n) for n in self.names}
        obj["__file"] = self.origin
        obj["__line"] = line_no
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1
        if self._first(line_no):
            self.recognised += 1

    def error(self, line_no: int, reason: str, raw: str) -> None:
        raw = getattr(raw, "original", raw)  # a framed line (framing.py): the file's text
        obj = {n: None for n in self.names}
        obj.update({"__file": self.origin, "__line": line_no, "__error": reason,
                    "__raw": raw[:RAW_LIMIT]})
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1
        self.errors += 1
        if self._first(line_no):
            self.error_lines += 1
        if len(self._errors) < ERRORS_KEPT:
            self._errors.append((line_no, reason))

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
