"""Adapters: real-world Kafka tool outputs and logs → canonical JSON Lines (contract §6).

``convert`` reads each input file line by line and writes, per file, one canonical
JSON Lines file whose rows carry ``__file`` (the origin name) and ``__line`` (the line
in the original file). A line the adapter cannot parse becomes an error row
(``__error`` + ``__raw``), so ingestion quarantines and counts it; lines that are
legitimately not rows (batch headers, startup events, unrelated log lines) are
skipped and counted in the returned extra counts.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from ..config import AuditConfig
from ..errors import InputError
from .options import Options, stem
from .registry import ADAPTERS, AUTO
from .sniff import SniffError, UnreadableInput, sniff
from .writer import LineAccount, RowWriter

__all__ = ["ADAPTERS", "AUTO", "LineAccount", "convert"]


def convert(fmt: str, source: str, files: list[str], origins: list[str], out_dir: Path,
            config: AuditConfig, window=None,
            accounts: list[LineAccount] | None = None,
            sniffed: list | None = None) -> tuple[list[str], dict[str, int]]:
    """Convert the files of one source; returns the written paths and extra counts.

    ``window`` (optional) gives the day of time-only log lines when the config's
    ``adapters.date`` does not. ``accounts``, when given, receives each file's
    :class:`LineAccount` (what became of every line). With ``fmt`` ``auto`` each file's
    format is sniffed from its content (``sniffed``, when given, receives each file's
    :class:`~.sniff.Sniffed` choice and reason).
    """
    if fmt != AUTO:
        if fmt not in ADAPTERS:
            raise ValueError(f"no adapter for format {fmt!r} (one of {', '.join(ADAPTERS)})")
        if source not in ADAPTERS[fmt].SOURCES:
            raise ValueError(f"format {fmt!r} does not carry {source}")
    if len(files) != len(origins):
        raise ValueError("files and origins differ in length")
    opts = Options.from_config(config, window)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    counts: dict[str, int] = {}
    for i, (path, origin) in enumerate(zip(files, origins, strict=True)):
        module = ADAPTERS[_file_format(fmt, source, path, origin, sniffed)]
        target = out_dir / f"{i:05d}_{stem(origin)[:60] or 'input'}.{source}.jsonl"
        with RowWriter(target, source, origin) as writer:
            try:
                module.convert_file(path, origin, source, writer, opts)
            except (OSError, EOFError, zlib.error) as exc:  # truncated or corrupt gzip, I/O
                raise InputError(f"{origin}: cannot be read: {type(exc).__name__}: "
                                 f"{exc}") from exc
        written.append(str(target))
        if accounts is not None:
            accounts.append(writer.account())
        counts["adapter_rows"] = counts.get("adapter_rows", 0) + writer.rows
        counts["adapter_errors"] = counts.get("adapter_errors", 0) + writer.errors
        for k, v in writer.counts.items():
            counts[k] = counts.get(k, 0) + v
    return written, counts


def _file_format(fmt: str, source: str, path: str, origin: str, sniffed: list | None) -> str:
    """The adapter of one file: ``fmt``, or with ``auto`` the sniffed one (an InputError
    naming the file when it cannot be told or does not carry ``source``)."""
    if fmt != AUTO:
        return fmt
    try:
        choice = sniff(path, origin)
    except (SniffError, UnreadableInput) as exc:
        raise InputError(str(exc)) from exc
    if source not in ADAPTERS[choice.fmt].SOURCES:
        raise InputError(f"{origin}: looks like {choice.fmt} ({choice.reason}), which does "
                         f"not carry {source} (it feeds {', '.join(ADAPTERS[choice.fmt].SOURCES)})")
    if sniffed is not None:
        sniffed.append(choice)
    return choice.fmt
