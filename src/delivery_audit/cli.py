"""The `delivery-audit` command line."""

from __future__ import annotations

import json
import logging
import sys
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .adapters.convert_command import UsageError, build_config, parse_options, run_convert
from .adapters.convert_command import render as render_conversion
from .adapters.registry import ADAPTERS, AUTO
from .core.window import parse_instant
from .explain.answering import explain as tell
from .explain.printing import render as render_story
from .explain.reading import ExplainError, load
from .explain.selecting import Query, parse_partition
from .notify import index_link
from .paths import check_report_root
from .redaction import redact_text
from .storage import INDEX_HTML, rebuild_index

# The audit itself (delivery_audit.audit: PySpark and the whole engine, 1.2 s to import,
# measured with python -X importtime) is imported by `run` only: `explain`, `convert` and
# `index` need no Spark and start in 0.2 s.

#: entry-point group through which other distributions add commands (the simulator's
#: `generate` and `lab`): each entry point is a callable that takes this Typer app
COMMANDS_GROUP = "delivery_audit.commands"

# no locals in tracebacks: they would print the config (a webhook URL) and the request
app = typer.Typer(add_completion=False, no_args_is_help=True,
                  pretty_exceptions_show_locals=False,
                  help="Prove from logs whether a Kafka system kept its delivery promises.")
EXIT_PUBLISH = 4
#: the formats --format takes, for the help texts: the adapters from their one registry
ADAPTER_CHOICES = ", ".join([AUTO, *ADAPTERS])
CANONICAL_CHOICES = "jsonl, csv, parquet"  # ingest/files.FORMATS (importing it loads Spark)
console = Console(stderr=False)
# an error is one line however long its path: never broken where a log or CI keeps it
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {escape(redact_text(message))}", highlight=False,
              markup=True)
    raise typer.Exit(code)


def print_summary(report: dict, destination: str) -> None:
    verdict = report.get("verdict", {}).get("verdict", "?")
    colour = {"pass": "green", "warn": "yellow", "fail": "red"}.get(verdict, "white")
    w = report["window"]
    console.print(f"[bold]window[/] {w['start']} → {w['end']} (grace {w['grace_minutes']:g} min)"
                  f"   judged [bold]{report['judged']}[/]   verdict [bold {colour}]{verdict}[/]",
                  highlight=False)
    inputs = Table("source", "read", "valid", "quarantined", "after window", title="inputs")
    for s, i in report["inputs"].items():
        inputs.add_row(s, str(i["rows_read"]), str(i["rows_valid"]), str(i["rows_quarantined"]),
                       str(i.get("rows_after_window", 0)))
    console.print(inputs)
    table = Table("anomaly", "severity", "count", "by cause", title="anomalies")
    for name, a in report["anomalies"].items():
        causes = ", ".join(f"{k}={v}" for k, v in a.get("by_cause", {}).items() if v)
        style = "bold red" if a["count"] and a["severity"] == "critical" else None
        table.add_row(name, a["severity"], str(a["count"]), causes, style=style)
    console.print(table)
    if report["groups"]:
        names = list(report["groups"])
        groups = Table("state", *names, title="delivery states per group")
        states = report["groups"][names[0]]["states"]
        for state in states:
            groups.add_row(state, *[str(report["groups"][g]["states"][state]) for g in names])
        groups.add_row("judged", *[str(report["groups"][g]["judged"]) for g in names],
                       style="bold")
        groups.add_row("balance", *["ok" if report["groups"][g]["balance_ok"] else "BROKEN"
                                    for g in names])
        console.print(groups)
    console.print(f"report: {destination}/report.html", highlight=False)
    index = index_link(f"{destination}/report.html")
    if index:
        console.print(f"all windows: {index}", highlight=False)


@app.command()
def run(
    sends: Annotated[list[str], typer.Option(help="producer send log files (glob or s3:// URI)")],
    broker: Annotated[list[str], typer.Option(help="broker topic dump files")],
    ledger: Annotated[list[str], typer.Option(help="consumer processing ledger files")],
    start: Annotated[str, typer.Option(help="window start, ISO-8601 (UTC if no offset)")],
    end: Annotated[str, typer.Option(help="window end, ISO-8601, exclusive")],
    out: Annotated[str, typer.Option(help="report root: a directory or s3://bucket/prefix")],
    events: Annotated[list[str] | None, typer.Option(help="consumer-group events")] = None,
    grace: Annotated[str | None, typer.Option(help="late-read grace, e.g. 60m (default 60m)")
                     ] = None,
    config: Annotated[Path | None, typer.Option(help="audit config, YAML or JSON")] = None,
    fmt: Annotated[list[str] | None, typer.Option(
        "--format", help="SOURCE=FORMAT, e.g. broker=csv (default: from the file names); "
                         f"FORMAT is {CANONICAL_CHOICES} or an adapter: {ADAPTER_CHOICES}")
                            ] = None,
    topic: Annotated[list[str] | None, typer.Option(help="audit only this topic (repeatable)")
                     ] = None,
    group: Annotated[list[str] | None, typer.Option(help="judge only this group (repeatable)")
                     ] = None,
    master: Annotated[str | None, typer.Option(help="Spark master (default local[2])")] = None,
    spark_remote: Annotated[str | None, typer.Option(
        help="a Spark Connect endpoint, sc://HOST:PORT[/;token=…;use_ssl=true]: the audit runs "
             "on that (warm) Spark instead of a local one; default: SPARK_REMOTE if set")
                            ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print report.json to stdout")
                        ] = False,
    notify: Annotated[bool, typer.Option(help="alert on warn/fail through the configured "
                                              "notifier (orchestrators alert themselves)")
                      ] = True,
    offsets: Annotated[str | None, typer.Option(
        help="a live read's offsets.json (delivery-audit snapshot; path or s3:// URI): dump "
             "ranges from its read ranges, retention from its log starts, its committed "
             "offsets shown (contract rule 26)")] = None,
) -> None:
    """Audit one window: join sends, broker dump and ledgers, report every anomaly."""
    from .audit import AuditFailed, build_request, run_audit  # PySpark: `run` only (above)

    try:
        req = build_request(sends=sends, broker=broker, ledger=ledger, events=events,
                            start=start, end=end, out=out, grace=grace, config=config,
                            formats=fmt or [], topics=topic or [], groups=group or [],
                            notify=notify, master=master, remote=spark_remote,
                            offsets=offsets)
    except ValueError as exc:
        _fail(str(exc))
    try:
        result = run_audit(req)
    except AuditFailed as exc:  # its message is redacted
        err.print(f"[bold red]{exc.kind} error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    if json_out:
        sys.stdout.write(json.dumps(result.report, indent=2, default=str) + "\n")
    else:
        print_summary(result.report, result.destination)
    raise typer.Exit(result.exit_code)


@app.command()
def index(
    out: Annotated[str, typer.Option(help="report root: a directory or s3://bucket/prefix")],
) -> None:
    """Rebuild the report root's index (index.json, index.html) from its published windows."""
    try:
        check_report_root(out)
    except ValueError as exc:
        _fail(str(exc))
    try:
        doc = rebuild_index(out)
    except FileNotFoundError as exc:
        _fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - any storage failure, reported redacted
        err.print(f"[bold red]publish error:[/] {escape(redact_text(exc))}", highlight=False)
        raise typer.Exit(EXIT_PUBLISH) from None
    flagged = sum(bool(r["flags"]) for r in doc["windows"])
    console.print(f"{len(doc['windows'])} windows indexed ({flagged} flagged): "
                  f"{escape(out.rstrip('/'))}/{INDEX_HTML}", highlight=False)


@app.command()
def explain(
    report: Annotated[str, typer.Option(help="a published report folder: a directory or "
                                             "s3://bucket/…/dt=…/<window id>")],
    topic: Annotated[str | None, typer.Option(help="the message's topic (with --key)")] = None,
    key: Annotated[str | None, typer.Option(help="the message's key")] = None,
    seq: Annotated[int | None, typer.Option(help="only this seq of the key")] = None,
    partition: Annotated[str | None, typer.Option(
        help="a record's TOPIC:PARTITION (with --offset)")] = None,
    offset: Annotated[int | None, typer.Option(help="the record's offset")] = None,
    around: Annotated[float, typer.Option(
        help="minutes of group events shown before and after the message")] = 5.0,
    limit: Annotated[int, typer.Option(
        help="stories shown when a key has several anomalous messages (0: all)")] = 5,
    json_out: Annotated[bool, typer.Option("--json", help="print the stories as JSON")
                        ] = False,
) -> None:
    """The story of one message (--key K --topic T) or record (--partition T:P --offset O)
    from a published report: its sends, broker copies, every processing by every group, its
    anomalies and the group events around it. No Spark."""
    try:
        if (key is None) == (partition is None) or (key is not None and topic is None) or (
                partition is not None and offset is None):
            raise ExplainError("give --key K --topic T, or --partition TOPIC:PARTITION "
                               "--offset O")
        if partition is not None:
            t, p = parse_partition(partition)
            query = Query(t, partition=p, offset=offset)
        else:
            query = Query(topic, key=key, seq=seq)
        answer = tell(load(report), query, around=timedelta(minutes=around), limit=limit)
    except ExplainError as exc:
        _fail(str(exc))
    if json_out:
        sys.stdout.write(json.dumps(answer.to_json(), indent=2) + "\n")
    else:
        render_story(answer, console)


@app.command()
def convert(
    files: Annotated[list[Path], typer.Argument(help="input files (tool output, logs)")],
    fmt: Annotated[str, typer.Option("--format", help=f"an adapter format: {ADAPTER_CHOICES} "
                                                       "(auto: sniffed from each file's first "
                                                       "lines)")],
    source: Annotated[str, typer.Option(help="the source they feed: sends, broker, ledger "
                                             "or events")],
    out: Annotated[Path, typer.Option(help="directory for the canonical JSON Lines")],
    option: Annotated[list[str] | None, typer.Option(
        help="adapters.KEY=VALUE (JSON values; dotted keys: seq.from=header; kcat -f "
             "output: format='%t %p %o %k %s\\n')")] = None,
    config: Annotated[Path | None, typer.Option(help="audit config (its adapters:)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as JSON")
                        ] = False,
) -> None:
    """Convert tool output and logs to the canonical JSON Lines `run` ingests, and say what
    became of every line. No Spark."""
    try:
        cfg = build_config(config, parse_options(option or []))
        result = run_convert(fmt, source, [str(f) for f in files], out, cfg)
    except (UsageError, ValueError) as exc:
        _fail(str(exc), code=2)
    except Exception as exc:
        # an unreadable input (ingest's InputError, named by class: importing it would
        # import pyspark) or file; anything else is a bug, shown with its traceback
        if type(exc).__name__ != "InputError" and not isinstance(exc, OSError):
            raise
        _fail(str(exc), code=1)
    if json_out:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        render_conversion(result, console)


@app.command()
def snapshot(
    bootstrap_servers: Annotated[str, typer.Option(help="the cluster: HOST:PORT[,HOST:PORT…]")],
    topic: Annotated[list[str], typer.Option(help="a topic to read, every partition "
                                                  "(repeatable)")],
    out: Annotated[Path, typer.Option(help="a local directory: broker/<topic>-<partition>"
                                           ".jsonl.gz and offsets.json are written there")],
    group: Annotated[list[str] | None, typer.Option(
        help="a consumer group whose committed offsets go into offsets.json (repeatable)")
                     ] = None,
    client_config: Annotated[Path | None, typer.Option(
        help="key=value lines as librdkafka/Java clients take them (security.protocol, "
             "sasl.mechanism, sasl.username, sasl.password, ssl.ca.location …); never "
             "printed")] = None,
    start: Annotated[str | None, typer.Option(
        "--from", help="read from the first offset at or after this ISO-8601 time "
                       "(default: the log start)")] = None,
    end: Annotated[str | None, typer.Option(
        "--to", help="read up to the first offset at or after this ISO-8601 time "
                     "(default: the end offset when the snapshot starts)")] = None,
    max_records: Annotated[int | None, typer.Option(
        min=0, help="fail, writing nothing, rather than read more records than this")
                           ] = None,
) -> None:
    """Read the topics from a live cluster over the Kafka protocol, as record batches
    (producer ids, transactional flags, transaction markers, as kafka-dump-log shows them),
    into canonical broker rows and an offsets file for `run --offsets`. No Spark."""
    # kafka-python is the optional `kafka` extra: imported by `snapshot` only
    from .snapshot import SnapshotFailed, SnapshotRequest, read_client_config, take_snapshot

    # kafka-python's own log lines (a connection retried, an API version probed) are not
    # messages for the user: without a handler they would reach stderr through logging's
    # last resort
    logging.getLogger("kafka").addHandler(logging.NullHandler())
    try:
        settings = read_client_config(client_config) if client_config else {}
        req = SnapshotRequest(
            bootstrap_servers=bootstrap_servers, topics=tuple(topic), out=str(out),
            groups=tuple(group or ()), client_config=settings,
            start=parse_instant(start) if start else None,
            end=parse_instant(end) if end else None, max_records=max_records,
            progress=err.is_terminal)
        result = take_snapshot(req)
    except (SnapshotFailed, ValueError) as exc:
        _fail(str(exc))
    except OSError as exc:  # the client config file
        _fail(f"{exc.filename}: {exc.strerror}")
    console.print(f"{result.records} records and {result.controls} transaction markers from "
                  f"{len(result.broker_files)} partitions: {escape(result.out)}/broker/; "
                  f"offsets: {escape(result.offsets_path)}", highlight=False)


def add_commands_from_entry_points(target: typer.Typer, group: str = COMMANDS_GROUP) -> None:
    """Commands other installed distributions add (the simulator's `generate` and `lab`,
    declared in sim/pyproject.toml): each entry point of ``group`` is called with the app.
    The engine imports none of them by name; one that fails to load is skipped with a
    warning, the engine's own commands still run."""
    for ep in entry_points(group=group):
        try:
            ep.load()(target)
        except Exception as exc:  # noqa: BLE001 - a broken add-on must not break the CLI
            err.print(f"[yellow]warning:[/] commands of {escape(ep.value)} not loaded: "
                      f"{escape(redact_text(exc))}", highlight=False)


add_commands_from_entry_points(app)


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
