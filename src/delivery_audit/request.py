"""The engine's request and result types (delivery_audit.audit.run_audit's), and the
request built from command-line style values, checked before any Spark starts.

Callers: the CLI (`delivery-audit run`), jobs/reconcile.py (spark-submit), the Airflow
Connect task (delivery_audit_airflow.connect), the simulator's lab, the benchmark, tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from .config import AuditConfig, load_config
from .core.window import AuditWindow, resolve_grace
from .paths import check_plain_text, check_relative_dir, check_report_root
from .privacy import pseudonym_key
from .schemas import SOURCES

EXIT_OK = 0  # verdict pass or warn
EXIT_INPUT = 1  # unreadable or invalid input, or no Spark Connect server
EXIT_FAIL = 3  # verdict fail: the report is published
EXIT_PUBLISH = 4  # the report could not be published

#: a stage hook: called with the stage's name, returns a context manager around the stage
StageHook = Callable[[str], AbstractContextManager[Any]]


class AuditFailed(Exception):
    """An audit that could not finish: ``kind`` (``input``, ``publish``, ``spark connect``),
    the message (redacted: no URL user-info, token or secret) and the exit status."""

    def __init__(self, kind: str, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.kind, self.exit_code = kind, exit_code


@dataclass
class AuditRequest:
    inputs: dict[str, list[str]]  # source -> globs/URIs; "events" optional
    window: AuditWindow
    out: str
    config: AuditConfig = field(default_factory=AuditConfig)
    formats: dict[str, str] = field(default_factory=dict)
    notify: bool = True  # alert on warn/fail through the config's notifier
    topics: list[str] = field(default_factory=list)  # audit only these topics
    groups: list[str] = field(default_factory=list)  # judge only these groups
    # a live read's offsets file (contract §9.1, rule 26: `run --offsets FILE`), path or s3://
    offsets: str | None = None
    # the Spark to run on: this session (left open), else a new session on ``master``
    # (default: spark-submit's, SPARK_MASTER, local[2]), else a Spark Connect client of
    # ``remote`` (default SPARK_REMOTE), stopped after the audit
    spark: SparkSession | None = None
    master: str | None = None
    remote: str | None = None
    publish: bool = True  # False: the report in the result only, nothing written to ``out``
    on_stage: StageHook | None = None  # around every stage (Spark jobs are labelled anyway)

    @property
    def audited_config(self) -> AuditConfig:
        """The config judging the requested groups (all of them when none are named)."""
        return self.config.only_groups(self.groups) if self.groups else self.config

    @property
    def destination(self) -> str:
        """The window's published folder."""
        return f"{self.out.rstrip('/')}/{self.window.relative_dir}"


@dataclass(frozen=True)
class AuditResult:
    report: dict[str, Any]
    destination: str  # the window's published folder
    exit_code: int  # EXIT_FAIL for a fail verdict, else EXIT_OK
    manifest: dict[str, Any] | None = None  # None when not published


def build_request(*, sends: Iterable[str], broker: Iterable[str], ledger: Iterable[str],
                  start: Any, end: Any, out: str, events: Iterable[str] | None = None,
                  grace: str | float | None = None, config: str | Path | None = None,
                  formats: Iterable[str] = (), topics: Iterable[str] = (),
                  groups: Iterable[str] = (), offsets: str | Path | None = None,
                  **options: Any) -> AuditRequest:
    """The request for `delivery-audit run`'s values (``formats``: SOURCE=FORMAT pairs,
    ``config``: the audit config's path, ``grace``: e.g. "60m", default the config's,
    ``offsets``: a live read's offsets file, read when the audit starts),
    every one checked here, before any Spark starts: a ValueError says what is wrong.
    ``options``: the rest of AuditRequest's fields (notify, master, remote, spark, …)."""
    check_report_root(out)
    topics, groups = list(topics), list(groups)
    for name in [*topics, *groups]:
        check_plain_text(name, f"--topic/--group {name!r}")
    cfg = load_config(config)
    window = AuditWindow.of(start, end, resolve_grace(grace, cfg.grace_minutes)[0])
    check_relative_dir(window.relative_dir)
    pairs = dict(_split_format(f) for f in formats)
    if cfg.pseudonymise:
        pseudonym_key()  # a pseudonymising run without its secret must not start
    if options.get("master") and options.get("remote"):
        raise ValueError("give --master or --spark-remote, not both")
    return AuditRequest(inputs={"sends": list(sends), "broker": list(broker),
                                "ledger": list(ledger), "events": list(events or [])},
                        window=window, out=out, config=cfg, formats=pairs, topics=topics,
                        groups=groups, offsets=str(offsets) if offsets else None, **options)


def _split_format(text: str) -> tuple[str, str]:
    source, sep, fmt = text.partition("=")
    if not sep or source not in SOURCES:
        raise ValueError(f"--format takes SOURCE=FORMAT with SOURCE one of {', '.join(SOURCES)}")
    return source, fmt
