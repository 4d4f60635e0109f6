"""The recorders' file: canonical JSON Lines (contract §2) written while the application runs,
one file per source, ``<directory>/<name>.<source>.jsonl``.

Standard library and ``delivery_audit.fields`` only: no Kafka client, no Spark.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from delivery_audit.fields import FIELDS

SEQ_HEADER = "seq"  # the record header that carries the sequence number, by default


def now_ms() -> int:
    """The wall clock as epoch milliseconds (the canonical timestamps' unit)."""
    return int(time.time() * 1000)


def as_text(value: Any) -> str | None:
    """A key or header value as the canonical string (bytes read as UTF-8)."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def header_seq(headers: Mapping[str, Any] | Iterable[tuple[str, Any]] | None,
               name: str | None) -> int | None:
    """The sequence number in header `name` (None when absent or not an integer); the
    headers as a record gives them: (key, value) pairs, or a dict."""
    if not name or not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in pairs:
        if key == name:
            text = (as_text(value) or "").strip()
            return int(text) if text.lstrip("-").isdigit() else None
    return None


class Recorder:
    """Thread-safe canonical JSON Lines writer: ``<directory>/<name>.<source>.jsonl``.

    Every row has all the source's canonical fields (null when not given, in the contract's
    order); a name that is not a field of the source is refused. Files are opened in append
    mode and line-buffered: a crash loses at most the line being written."""

    def __init__(self, directory: str | os.PathLike, name: str | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}

    def path(self, source: str) -> Path:
        return self.directory / f"{self.name}.{source}.jsonl"

    def write(self, source: str, **values: Any) -> None:
        if source not in FIELDS:
            raise ValueError(f"not a canonical source: {source!r}")
        names = [f.name for f in FIELDS[source]]
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"not {source} fields: {sorted(unknown)}")
        line = json.dumps({n: values.get(n) for n in names}, separators=(",", ":"),
                          ensure_ascii=False)
        with self._lock:
            fh = self._files.get(source)
            if fh is None:
                fh = self._files[source] = open(self.path(source), "a",  # noqa: SIM115
                                                encoding="utf-8", buffering=1)
            fh.write(line + "\n")

    def flush(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.flush()

    def close(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
