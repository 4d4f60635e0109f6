"""`run --help`, `convert --help` (and `snapshot --help`, when this version has the command)
list every format and option they accept: the formats derived from the adapter registry
and ingestion's canonical formats, the options from the Typer commands themselves, so a
format or option added without its help fails here. No Spark is started."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from delivery_audit.adapters.registry import ADAPTERS, AUTO
from delivery_audit.cli import app

COMMANDS = typer.main.get_command(app).commands


def _help(command: str) -> str:
    """The command's --help, wide enough that no name is wrapped, box drawing removed."""
    out = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    return re.sub(r"[│╭╮╰╯─]", " ", out.output)


def _accepted_options(command: str) -> list[str]:
    params = COMMANDS[command].params
    names = [name for p in params if isinstance(p, click.Option)
             for name in (*p.opts, *p.secondary_opts)]
    return names + [p.human_readable_name for p in params if isinstance(p, click.Argument)]


def _formats_of_run() -> list[str]:
    from delivery_audit.ingest.files import ADAPTER_FORMATS, FORMATS  # loads pyspark: here only

    return [*FORMATS, *ADAPTER_FORMATS]


def _listed(words: list[str], text: str) -> list[str]:
    """The words missing from text (each as a whole word: 'kcat' is not 'kcats')."""
    return [w for w in words if not re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)]


def test_run_help_lists_every_format_and_option():
    text = _help("run")
    assert _listed(_accepted_options("run"), text) == []
    formats = _formats_of_run()
    assert set(ADAPTERS) | {AUTO, "jsonl", "csv", "parquet"} <= set(formats)
    assert _listed(formats, text) == []


def test_convert_help_lists_every_format_and_option():
    text = _help("convert")
    assert _listed(_accepted_options("convert"), text) == []
    assert _listed([AUTO, *ADAPTERS], text) == []
    assert "format=" in text  # kcat's -f format through --option


def test_snapshot_help_lists_every_option():
    if "snapshot" not in COMMANDS:
        pytest.skip("this version has no snapshot command (issue 32's snapshot branch)")
    text = _help("snapshot")
    assert _listed(_accepted_options("snapshot"), text) == []


def test_the_check_catches_a_missing_name():
    text = _help("convert")
    assert _listed(["--no-such-option", "kcat-json"], text) == ["--no-such-option",
                                                                 "kcat-json"]
