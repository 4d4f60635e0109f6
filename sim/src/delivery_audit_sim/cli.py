"""The simulator's commands: `generate` (a day of delivery logs with known faults and their
truth) and `lab` (a real rebalance, or with `--scenario transactions` a transactional
producer and consumers in both isolation levels, on a local mock Kafka cluster, recorded
and audited).
They run as `delivery-audit-sim …` and, when this package is installed, as `delivery-audit
generate` / `delivery-audit lab`: :func:`add_commands` is this distribution's entry point in
the engine's ``delivery_audit.commands`` group (sim/pyproject.toml), which the engine's CLI
loads; the engine never imports the simulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from delivery_audit.core.window import parse_instant
from delivery_audit.paths import check_report_root

from .lab import lab_command

# the generator (numpy: 0.4 s to import, measured with python -X importtime) is imported by
# `generate` only: every `delivery-audit` command loads this module through the entry point

console = Console(stderr=False)
err = Console(stderr=True)


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True)
    raise typer.Exit(code)


def generate(
    scenario: Annotated[str, typer.Option(help="clean, rebalance-storm, producer-retry, "
                                               "broker-loss, consumer-loss, mixed, "
                                               "exactly-once or mixed-eos")] = "mixed",
    messages: Annotated[int, typer.Option(min=1, help="messages to produce")] = 20_000,
    seed: Annotated[int, typer.Option(help="random seed")] = 7,
    start: Annotated[str | None, typer.Option(help="window start (default: yesterday 00:00Z)")
                     ] = None,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("demo/data"),
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet")] = "jsonl",
) -> None:
    """Write a day of delivery logs with known faults, plus config.yaml and truth.json."""
    from .generator import SCENARIOS, generate_scenario

    try:
        check_report_root(str(out), "--out")
    except ValueError as exc:
        _fail(str(exc))
    if scenario not in SCENARIOS:
        _fail(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
    if fmt not in ("jsonl", "parquet"):
        _fail("--format is jsonl or parquet")
    if start is None:
        day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        begin = day - timedelta(days=1)
    else:
        try:
            begin = parse_instant(start)
        except ValueError as exc:
            _fail(str(exc))
    truth = generate_scenario(scenario, messages, seed, begin, out, fmt)
    nonzero = {k: v for k, v in truth["anomalies"].items() if v}
    console.print(f"wrote {scenario} ({messages} messages, seed {seed}) to {out}; window "
                  f"{truth['window']['start']} → {truth['window']['end']}", highlight=False)
    console.print(f"expected anomalies: {nonzero or 'none'}", highlight=False)


def add_commands(target: typer.Typer) -> None:
    """Register the simulator's commands on a Typer app (the engine's CLI, through the
    ``delivery_audit.commands`` entry-point group, or our own)."""
    target.command("generate")(generate)
    target.command("lab")(lab_command)


app = typer.Typer(add_completion=False, no_args_is_help=True,
                  pretty_exceptions_show_locals=False,
                  help="Simulate Kafka delivery logs with known faults, for the auditor.")
add_commands(app)
