"""`delivery-audit convert`: real-world files → the canonical JSON Lines `run` would ingest,
with what became of every line (no Spark: nothing here imports pyspark).

The conversion is :func:`delivery_audit.adapters.convert`, the code `run` calls through
``ingest.staging.staged_rows``; this module parses the command's options, sniffs formats
(``--format auto``), and summarises each file's :class:`~.writer.LineAccount`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import AuditConfig, load_config
from . import ADAPTERS, AUTO, convert
from .mapping import lines_taken
from .sniff import ApplicationLog, Sniffed, SniffError, sniff
from .writer import LineAccount

ERRORS_SHOWN = 5  # error rows listed per file in the summary


class UsageError(ValueError):
    """A command line that cannot be run (exit status 2)."""


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs → a nested dict (``seq.from=header`` → {"seq": {"from": …}});
    a value is JSON when it parses as JSON, else the string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise UsageError(f"--option takes KEY=VALUE (e.g. date=2024-01-16, "
                             f"seq.from=header), not {pair!r}")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        if isinstance(value, float | int) and not isinstance(value, bool) and \
                key.split(".")[-1] == "date":
            value = text  # a date is never a number
        node = out
        *parents, last = key.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = value
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for k, v in extra.items():
        merged[k] = _merge(merged[k], v) if isinstance(v, dict) and isinstance(
            merged.get(k), dict) else v
    return merged


def build_config(config_path: Path | None, options: dict[str, Any]) -> AuditConfig:
    """The audit config (``--config``) with ``--option`` pairs over its ``adapters:``."""
    base = load_config(config_path)
    raw = dict(base.raw or {})
    raw["adapters"] = _merge(dict(raw.get("adapters") or {}), options)
    return AuditConfig.from_dict(raw)


@dataclass
class FileSummary:
    origin: str
    fmt: str
    why: str | None
    account: LineAccount

    @property
    def rules(self) -> dict[str, int]:
        """Format mapping: the lines each rule took ({"sends[0]": 120, …})."""
        return lines_taken(self.account.path)

    @property
    def rows(self) -> int:
        """Valid rows written."""
        return self.account.rows - self.account.error_rows

    @property
    def error_rows(self) -> int:
        return self.account.error_rows

    @property
    def errors(self) -> list[tuple[int, str]]:
        """The first error rows' (line, reason)."""
        return self.account.errors

    def to_json(self) -> dict[str, Any]:
        a = self.account
        return {"file": self.origin, "format": self.fmt, "format_reason": self.why,
                "output": a.path, "lines": a.lines, "rows": self.rows,
                "recognised": a.recognised, "skipped": dict(sorted(a.skipped.items())),
                "error_rows": self.error_rows, "error_lines": a.error_lines,
                "errors": [{"line": n, "reason": r} for n, r in self.errors],
                "unaccounted": a.unaccounted,
                **({"rules": self.rules} if self.fmt == "mapping" else {})}


@dataclass
class ConvertResult:
    source: str
    files: list[FileSummary]

    def total(self) -> dict[str, Any]:
        skipped: dict[str, int] = {}
        for f in self.files:
            for k, v in f.account.skipped.items():
                skipped[k] = skipped.get(k, 0) + v
        rules: dict[str, int] = {}
        for f in self.files:
            for k, v in (f.rules if f.fmt == "mapping" else {}).items():
                rules[k] = rules.get(k, 0) + v
        return {"files": len(self.files),
                "lines": sum(f.account.lines for f in self.files),
                "rows": sum(f.rows for f in self.files),
                "recognised": sum(f.account.recognised for f in self.files),
                "skipped": dict(sorted(skipped.items())),
                "error_rows": sum(f.error_rows for f in self.files),
                "unaccounted": sum(f.account.unaccounted for f in self.files),
                **({"rules": rules} if rules else {})}

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "files": [f.to_json() for f in self.files],
                "total": self.total()}


def choose_formats(fmt: str, source: str, files: list[str]) -> list[Sniffed]:
    """The format of each file (sniffed with ``auto``); UsageError when a format is
    unknown, cannot be told, or does not carry ``source``."""
    if fmt != AUTO and fmt not in ADAPTERS:
        raise UsageError(f"unknown format {fmt!r} (one of auto, {', '.join(ADAPTERS)})")
    out: list[Sniffed] = []
    for path in files:
        if fmt == AUTO:
            try:
                choice = sniff(path)
            except ApplicationLog as exc:
                raise UsageError(f"{exc}; e.g. convert --format mapping --source {source} "
                                 f"--option 'mapping.{source}=[{{\"regex\": \"…\"}}]'"
                                 ) from exc
            except SniffError as exc:
                raise UsageError(str(exc)) from exc
        else:
            choice = Sniffed(fmt, "given with --format")
        carried = ADAPTERS[choice.fmt].SOURCES
        if source not in carried:
            what = f"{path}: looks like {choice.fmt} ({choice.reason}), which" if \
                fmt == AUTO else f"format {fmt!r}"
            hint = (f"; an application's own {source} lines need --format mapping with "
                    f"adapters.mapping.{source} rules") if source in ("sends", "ledger") and \
                fmt == AUTO else ""
            raise UsageError(f"{what} does not carry {source} (it feeds "
                             f"{', '.join(carried)}){hint}")
        out.append(choice)
    return out


def run_convert(fmt: str, source: str, files: list[str], out: Path,
                config: AuditConfig) -> ConvertResult:
    """Convert ``files`` as `run` would (same :func:`convert`), one output per file."""
    from ..fields import SOURCES

    if source not in SOURCES:
        raise UsageError(f"unknown source {source!r} (one of {', '.join(SOURCES)})")
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise UsageError(f"no such file: {', '.join(missing)}")
    choices = choose_formats(fmt, source, files)
    summaries: list[FileSummary] = []
    # files of one format converted together (as `run` converts a source); outputs named
    # by their position among all files, so two inputs of one name do not collide
    formats = list(dict.fromkeys(c.fmt for c in choices))
    for choice_fmt in formats:
        picked = [i for i, c in enumerate(choices) if c.fmt == choice_fmt]
        accounts: list[LineAccount] = []
        sub = out if len(formats) == 1 else out / choice_fmt
        convert(choice_fmt, source, [files[i] for i in picked],
                [files[i] for i in picked], sub, config, accounts=accounts)
        for i, account in zip(picked, accounts, strict=True):
            summaries.append(FileSummary(files[i], choice_fmt,
                                         choices[i].reason if fmt == AUTO else None, account))
    order = {f: i for i, f in enumerate(files)}
    summaries.sort(key=lambda s: order[s.origin])
    return ConvertResult(source, summaries)


def render(result: ConvertResult, console) -> None:
    """The summary for a terminal (rich)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table("file", "format", "lines", "rows", "recognised", "skipped", "error rows",
                  "unaccounted", title=f"convert → {result.source}")
    for f in result.files:
        a = f.account
        skipped = ", ".join(f"{k}={v}" for k, v in sorted(a.skipped.items())) or "0"
        table.add_row(escape(f.origin), f.fmt, str(a.lines), str(f.rows), str(a.recognised),
                      escape(skipped), str(f.error_rows), str(a.unaccounted),
                      style="bold red" if a.unaccounted else None)
    t = result.total()
    if len(result.files) > 1:
        table.add_row("total", "", str(t["lines"]), str(t["rows"]), str(t["recognised"]),
                      ", ".join(f"{k}={v}" for k, v in t["skipped"].items()) or "0",
                      str(t["error_rows"]), str(t["unaccounted"]), style="bold")
    console.print(table)
    for f in result.files:
        if f.fmt == "mapping" and f.rules:
            taken = ", ".join(f"{name}: {n}" for name, n in f.rules.items())
            console.print(f"{escape(f.origin)}: lines per rule (adapters.mapping.…): "
                          f"{taken}", highlight=False, soft_wrap=True)
        if f.why:
            console.print(f"{escape(f.origin)}: format {f.fmt}, chosen from "
                          f"{escape(f.why)}", highlight=False, soft_wrap=True)
        for n, reason in f.errors[:ERRORS_SHOWN]:
            console.print(f"  {escape(f.origin)}:{n}: {escape(reason)}", highlight=False,
                          soft_wrap=True)
        if f.error_rows > ERRORS_SHOWN:
            console.print(f"  … and {f.error_rows - ERRORS_SHOWN} more error rows in "
                          f"{escape(f.origin)}", highlight=False, soft_wrap=True)
    outputs = sorted({str(Path(f.account.path).parent) for f in result.files})
    console.print(f"{t['rows']} rows, {t['error_rows']} error rows from {t['lines']} lines "
                  f"({t['recognised']} recognised, {sum(t['skipped'].values())} skipped, "
                  f"{t['unaccounted']} unaccounted) → {escape(', '.join(outputs))}",
                  highlight=False, soft_wrap=True)
