"""The run plan: which window to audit, where the inputs are, where the report goes.

Resolved once per run by the ``resolve_window`` task and passed on via XCom, so every later task
(and a retry of any of them) works on exactly the same window and locations.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from delivery_audit.core.timefmt import iso_z as _iso
from delivery_audit.core.window import AuditWindow, resolve_grace
from delivery_audit.core.window import parse_instant as parse_window_instant
from delivery_audit_airflow import uris
from delivery_audit_airflow.settings import (
    CONN_ID_PATTERN,
    DEFAULT_AWS_CONN_ID,
    DEFAULT_KAFKA_CONN_ID,
    VARIABLE,
    Settings,
    date_placeholders,
)

#: report_prefix: 1-5 '/'-separated segments of [A-Za-z0-9._-] that start with a letter/digit
#: (so no '..', no leading '/', no empty segment, no spaces or shell/URI specials); the same
#: rule as delivery_audit.paths.check_prefix. These patterns are JSON-schema patterns for the
#: trigger form (ECMA-262: '$' also matches before a final newline in Python's re), so the
#: server-side checks below use re.fullmatch and refuse control characters first.
PREFIX_PATTERN = r"^$|^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){0,4}$"
PREFIX_MAX = 200
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,248}$"  # a Kafka topic / group id
ISO_PATTERN = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$"
WINDOW_ID_PATTERN = r"^\d{8}T\d{6}Z_\d{8}T\d{6}Z$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


class PlanError(ValueError):
    """A request that must not run (bad params): fail the task without retrying."""


def parse_instant(text: Any, what: str) -> datetime:
    """An ISO-8601 instant (offset honoured, none = UTC) as aware UTC; the rules are
    delivery_audit.core.window's."""
    if not isinstance(text, datetime) and (_CONTROL.search(str(text or ""))
                                           or not re.fullmatch(ISO_PATTERN, str(text).strip())):
        raise PlanError(f"{what}: {text!r} is not an ISO-8601 instant "
                        "(e.g. 2026-11-19T00:00:00Z)")
    try:
        return parse_window_instant(text)
    except ValueError as exc:
        raise PlanError(f"{what}: {text!r} is not a valid instant: {exc}") from exc


def _names(value: Any, what: str) -> list[str]:
    if value in (None, "", []):
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        name = str(item).strip()
        if _CONTROL.search(str(item)) or not re.fullmatch(NAME_PATTERN, name):
            raise PlanError(f"{what}: {item!r} is not a valid name (letters, digits, '.', '_', "
                            "'-', starting with a letter or digit)")
        out.append(name)
    return out


def validate_backfill(params: dict[str, Any], max_days: float) -> dict[str, Any]:
    """Check the backfill DAG's Params; returns the normalised request."""
    start = parse_instant(params.get("start"), "start")
    end = parse_instant(params.get("end"), "end")
    if end <= start:
        raise PlanError(f"end {end.isoformat()} must be after start {start.isoformat()}")
    if end - start > timedelta(days=max_days):
        raise PlanError(f"window {end - start} is longer than the allowed maximum of {max_days:g} "
                        f"days (backfill_max_days in Variable {VARIABLE})")
    raw_prefix = params.get("report_prefix") or ""
    if not isinstance(raw_prefix, str):
        raise PlanError(f"report_prefix {raw_prefix!r} must be a string")
    prefix = raw_prefix.strip(" ")
    if (_CONTROL.search(raw_prefix) or len(prefix) > PREFIX_MAX
            or not re.fullmatch(PREFIX_PATTERN, prefix) or ".." in prefix.split("/")):
        raise PlanError(f"report_prefix {raw_prefix!r} is not allowed: use letters, digits, '.', "
                        f"'_', '-' in up to 5 '/'-separated segments, at most {PREFIX_MAX} "
                        "characters (no '..', no leading '/', no control characters)")
    grace = params.get("grace_minutes")
    if isinstance(grace, bool):
        raise PlanError(f"grace_minutes {grace!r} is not a number")
    if grace not in (None, ""):
        try:
            grace = float(grace)
        except (TypeError, ValueError) as exc:
            raise PlanError(f"grace_minutes {grace!r} is not a number") from exc
        if grace < 0 or grace > 7 * 1440:
            raise PlanError(f"grace_minutes {grace:g} must be between 0 and 10080")
    else:
        grace = None
    return {
        "start": start,
        "end": end,
        "topics": _names(params.get("topics"), "topics"),
        "groups": _names(params.get("groups"), "groups"),
        "grace_minutes": grace,
        "report_prefix": prefix,
    }


def _check_root(root: str) -> None:
    """The report root (the Variable's + prefix) by delivery_audit.paths' rules (the job
    checks --out again): no '..', no control characters, a supported scheme."""
    # the engine beyond delivery_audit.core is imported by tasks only: DAG parsing stays
    # light (tests/test_dags.py::test_dag_files_import_nothing_heavy)
    from delivery_audit.paths import check_report_root

    try:
        check_report_root(root, f"report root (report_root in Variable {VARIABLE} + prefix)")
    except ValueError as exc:
        raise PlanError(str(exc)) from exc


def _conn_id(value: Any, name: str) -> str | None:
    """A Connection id Param's value (None when empty), or a PlanError naming the Param."""
    if value in (None, ""):
        return None
    if not isinstance(value, str) or _CONTROL.search(value) \
            or not re.fullmatch(CONN_ID_PATTERN, value):
        raise PlanError(f"{name} {value!r} is not a connection id (letters, digits, "
                        "'_', '.', '-')")
    return value


def resolve_aws_conn(param: Any, settings: Settings) -> tuple[str, str]:
    """The AWS Connection of the run and where it came from: the run's ``aws_conn_id`` Param
    ("run") > the Variable's ``aws_conn_id`` ("variable"; its default: aws_default)."""
    if (given := _conn_id(param, "aws_conn_id")) is not None:
        return given, "run"
    conn = settings.get("aws_conn_id") or DEFAULT_AWS_CONN_ID
    return conn, "variable" if "aws_conn_id" in settings.explicit else "default"


def resolve_snapshot(params: dict[str, Any], settings: Settings, request: dict[str, Any],
                     window: AuditWindow, grace_minutes: float, dates: dict[str, str],
                     lookback_minutes: float | None = None) -> dict[str, Any] | None:
    """The snapshot task's part of the plan, or None when the run takes none.

    On: the run's ``snapshot`` Param, else the Variable's ``snapshot`` (default false).
    Topics and groups: the run's ``snapshot_topics``/``snapshot_groups`` Params, else the
    backfill's ``topics``/``groups``, else the Variable's; topics are required. The Kafka
    Connection: the ``kafka_conn_id`` Param, else the Variable's, else kafka_default. The read
    covers what the job reads of the broker side (contract rule 6): up to the window's end +
    grace, and with no lower bound (from each partition's log start: earlier rows are needed to
    see first sends) unless the audit config's ``lookback_minutes`` bounds it, then from the
    window's start minus that lookback. It lands in the Variable's ``snapshot_dir`` (rendered for
    the window), which then is the job's broker input and offsets file."""
    on = params.get("snapshot")
    if on in (None, ""):
        on = settings.get("snapshot")
    if not isinstance(on, bool):
        raise PlanError(f"snapshot {on!r} must be true or false")
    if not on:
        return None
    topics = (_names(params.get("snapshot_topics"), "snapshot_topics")
              or list(request.get("topics") or [])
              or _names(settings.get("snapshot_topics"), "snapshot_topics"))
    if not topics:
        raise PlanError("the snapshot needs topics: the snapshot_topics Param (or, in the "
                        f"backfill, topics), or snapshot_topics in Variable {VARIABLE}")
    groups = (_names(params.get("snapshot_groups"), "snapshot_groups")
              or list(request.get("groups") or [])
              or _names(settings.get("snapshot_groups"), "snapshot_groups"))
    given = _conn_id(params.get("kafka_conn_id"), "kafka_conn_id")
    conn = given or settings.get("kafka_conn_id") or DEFAULT_KAFKA_CONN_ID
    conn_from = "run" if given else (
        "variable" if "kafka_conn_id" in settings.explicit else "default")
    folder = settings.render("snapshot_dir", window_id=window.window_id, **dates).rstrip("/")
    if not folder:
        raise PlanError(f"snapshot_dir in Variable {VARIABLE} is empty")
    if folder.startswith(("s3a://", "s3n://")) or ".." in folder.split("/"):
        raise PlanError(f"snapshot_dir {folder!r}: use s3:// or a local folder, without '..'")
    return {"dir": folder, "topics": topics, "groups": groups, "kafka_conn_id": conn,
            "kafka_conn_from": conn_from,
            "from": (None if lookback_minutes is None
                     else _iso(window.start - timedelta(minutes=lookback_minutes))),
            "to": _iso(window.end + timedelta(minutes=grace_minutes)),
            "broker": uris.join(folder, "broker", "*"),
            "offsets": uris.join(folder, "offsets.json")}


def build_plan(*, start: datetime, end: datetime, settings: Settings,
               request: dict[str, Any] | None = None, source: str = "schedule",
               aws_conn_id: str | None = None,
               spark_connect_conn_id: str | None = None,
               params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the later tasks need, as a JSON-able dict (no secrets: XCom is readable
    in the UI). ``spark_connect_conn_id``: reconcile audits through that Spark Connect
    Connection instead of spark-submit (None: spark-submit). ``params``: the run's Params
    (the snapshot's: :func:`resolve_snapshot`)."""
    request = request or {}
    if end <= start:
        raise PlanError(f"empty window: {_iso(start)} → {_iso(end)}")
    dates = date_placeholders(start, end)
    sources = {name: settings.render(name, **dates)
               for name in ("sends", "broker", "ledger", "events")}
    if not sources["events"]:
        sources["events"] = None
    for name, value in sources.items():
        if name != "events" and not value:
            raise PlanError(f"{name!r} in Variable {VARIABLE} is empty: the source is required")
    config_file = settings.render("config_file") or None
    # the CLI's own precedence (window.resolve_grace): the run's Param > the audit config's
    # grace_minutes > the deployment default (the Variable's "grace"). The plan passes the
    # result as --grace: the wait for end + grace and the job's window agree
    config_grace_minutes, lookback_minutes = config_windowing(config_file)
    grace_minutes, grace_from = resolve_grace(request.get("grace_minutes"),
                                              config_grace_minutes, settings.get("grace"))
    root = settings.render("report_root")
    if request.get("report_prefix"):
        root = uris.join(root, request["report_prefix"])
    window = AuditWindow.of(start, end)  # the job's own window id and folder
    wid = window.window_id
    if not re.fullmatch(WINDOW_ID_PATTERN, wid):  # years before 1000 or after 9999
        raise PlanError(f"window id {wid!r} is not YYYYMMDDTHHMMSSZ_YYYYMMDDTHHMMSSZ")
    _check_root(root)
    report_dir = uris.join(root, window.relative_dir)
    conn, conn_from = resolve_aws_conn(aws_conn_id, settings)
    spark_connect_conn_id = _conn_id(spark_connect_conn_id, "spark_connect_conn_id")
    snapshot = resolve_snapshot(params or {}, settings, request, window, grace_minutes, dates,
                                lookback_minutes)
    if snapshot:  # the job audits the snapshot: its broker rows and its offsets file
        sources["broker"] = snapshot["broker"]
    return {
        "source": source,
        "job": settings.render("job"),
        "window": {"start": _iso(start), "end": _iso(end), "id": wid,
                   "grace_minutes": grace_minutes, "grace_from": grace_from},
        "sources": sources,
        "out": root,
        "report_dir": report_dir,
        "report_link": settings.render("report_link", report_dir=report_dir, **dates),
        "config_file": config_file,
        "topics": list(request.get("topics") or []),
        "groups": list(request.get("groups") or []),
        "notifier": settings.get("notifier"),
        "spark_conf": {str(k): _conf_value(v) for k, v in settings.get("spark_conf").items()},
        "fail_run_on_verdict": settings.get("fail_run_on_verdict"),
        "wait_for_grace": settings.get("wait_for_grace"),
        "aws_conn_id": conn,
        "aws_conn_from": conn_from,
        "pass_aws_conn_to_job": settings.get("pass_aws_conn_to_job"),
        "spark_connect_conn_id": spark_connect_conn_id,
        "snapshot": snapshot,
        "offsets": snapshot["offsets"] if snapshot else None,
    }


def _conf_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def config_windowing(path: str | None) -> tuple[float | None, float | None]:
    """``grace_minutes`` and ``lookback_minutes`` of the audit config file (None: no file, or
    not set in it); read as the job reads it (delivery_audit.config.load_config)."""
    if not path:
        return None, None
    from delivery_audit.config import load_config  # task time only, as check_report_root

    try:
        config = load_config(path)
    except ValueError as exc:  # unreadable or invalid: the job would fail the same way
        raise PlanError(f"audit config (config_file in Variable {VARIABLE}): {exc}") from exc
    return config.grace_minutes, config.lookback_minutes


def config_grace(path: str | None) -> float | None:
    """``grace_minutes`` of the audit config file (None: no file, or no grace in it)."""
    return config_windowing(path)[0]


def grace_arg(minutes: float) -> str:
    return f"{int(minutes)}m" if float(minutes).is_integer() else f"{round(minutes * 60)}s"


def job_args(plan: dict[str, Any], config_path: str | None,
             stage: str | None = "all") -> list[str]:
    """The reconcile job's command line (same arguments as ``delivery-audit run``)."""
    src = plan["sources"]
    args = ["--sends", src["sends"], "--broker", src["broker"], "--ledger", src["ledger"]]
    if src.get("events"):
        args += ["--events", src["events"]]
    w = plan["window"]
    args += ["--start", w["start"], "--end", w["end"], "--grace", grace_arg(w["grace_minutes"])]
    if config_path:
        args += ["--config", config_path]
    if plan.get("offsets"):  # a snapshot's offsets file (contract rule 26)
        args += ["--offsets", plan["offsets"]]
    for topic in plan.get("topics") or []:
        args += ["--topic", topic]
    for group in plan.get("groups") or []:
        args += ["--group", group]
    # the DAG's alert task notifies; the job must not alert a second time
    args += ["--out", plan["out"], *(["--stage", stage] if stage else []), "--no-notify"]
    return args
