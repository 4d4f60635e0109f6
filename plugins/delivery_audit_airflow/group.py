"""The audit task group, shared by the daily and the backfill DAG.

    resolve_window → wait_for_inputs → reconcile → check_report → alert

* resolve_window: the window ([data_interval_start, data_interval_end) for scheduled runs, the
  validated ``start``/``end`` Params for backfills) and every location, from Variables → XCom.
* wait_for_inputs: reschedule-mode sensor; done when every required source glob matches a file
  and (by default) window end + grace has passed, so late consumption is in the inputs.
* reconcile: one spark-submit of jobs/reconcile.py ``--stage all`` (validates the inputs with GX,
  reconciles, validates the results, publishes with ``_manifest.json`` last). A re-run writes
  the same window folder again, replacing it (idempotent).
* check_report: reads ``_manifest.json`` and ``report.json`` from the destination and fails if
  they are missing, belong to another window, or list files that are not there.
* alert: skipped on ``pass``; on ``warn``/``fail`` sends the report through the notifier.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import PokeReturnValue, TaskGroup, get_current_context, task

from delivery_audit_airflow.alerts import task_failure_callback
from delivery_audit_airflow.operators import AuditSparkSubmitOperator
from delivery_audit_airflow.settings import REPO_ROOT

GROUP_ID = "audit"
INPUT_WAIT_TIMEOUT = timedelta(hours=12)
INPUT_POKE_INTERVAL = timedelta(minutes=5)


def default_args() -> dict[str, Any]:
    """Shared default_args. DELIVERY_AUDIT_RETRY_DELAY_SECONDS shortens the delay in tests."""
    delay = float(os.environ.get("DELIVERY_AUDIT_RETRY_DELAY_SECONDS", "300"))
    return {
        "owner": "sre",
        "retries": 2,
        "retry_delay": timedelta(seconds=delay),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(hours=1),
        "on_failure_callback": task_failure_callback,
    }


def _fail_fast(exc: Exception):
    from airflow.sdk.exceptions import AirflowFailException

    return AirflowFailException(str(exc))


def _now() -> datetime:
    return datetime.now(UTC)


@task(task_id="resolve_window")
def resolve_window() -> dict[str, Any]:
    from delivery_audit_airflow.plan import PlanError, build_plan, validate_backfill
    from delivery_audit_airflow.settings import Settings

    ctx = get_current_context()
    params = dict(ctx.get("params") or {})
    try:
        settings = Settings.load()
        if "start" in params:  # the backfill DAG
            request = validate_backfill(params, float(settings.raw("backfill_max_days")))
            start, end, source = request["start"], request["end"], "params"
        else:
            request = None
            start = ctx["data_interval_start"]
            end = ctx["data_interval_end"]
            source = "data_interval"
            if start is None or end is None or end <= start:
                raise PlanError(f"the run has no usable data interval ({start} → {end}); "
                                "use CronDataIntervalTimetable")
        plan = build_plan(start=start, end=end, settings=settings, request=request,
                          source=source)
    except (PlanError, ValueError) as exc:
        raise _fail_fast(exc) from exc
    w = plan["window"]
    print(f"audit window {w['start']} → {w['end']} (from {source}), grace "
          f"{w['grace_minutes']:g} min (from the {w['grace_from']}); report → "
          f"{plan['report_dir']}")
    return plan


@task.sensor(task_id="wait_for_inputs", poke_interval=INPUT_POKE_INTERVAL.total_seconds(),
             timeout=INPUT_WAIT_TIMEOUT.total_seconds(), mode="reschedule")
def wait_for_inputs(plan: dict[str, Any]) -> PokeReturnValue:
    from delivery_audit_airflow import uris

    w = plan["window"]
    ready_at = datetime.fromisoformat(w["end"].replace("Z", "+00:00")) + timedelta(
        minutes=w["grace_minutes"])
    if plan.get("wait_for_grace", True) and _now() < ready_at:
        print(f"window end + grace is {ready_at.isoformat()}: not yet")
        return PokeReturnValue(is_done=False)
    found: dict[str, int] = {}
    missing = []
    for name, pattern in plan["sources"].items():
        if not pattern:
            continue
        found[name] = len(uris.glob_matches(pattern, limit=1000))
        print(f"{name}: {found[name]} file(s) match {pattern}")
        if not found[name] and name != "events":
            missing.append(name)
    if missing:
        print(f"waiting for {', '.join(missing)}")
        return PokeReturnValue(is_done=False)
    return PokeReturnValue(is_done=True, xcom_value=found)


@task(task_id="check_report")
def check_report(plan: dict[str, Any], submitted: dict[str, Any] | None) -> dict[str, Any]:
    import functools
    import json

    from delivery_audit.core.manifest import MANIFEST, verify_manifest
    from delivery_audit_airflow import uris

    report_dir = plan["report_dir"]
    manifest_uri = uris.join(report_dir, MANIFEST)
    report_uri = uris.join(report_dir, "report.json")
    if not uris.exists(manifest_uri):
        raise FileNotFoundError(f"no manifest at {manifest_uri}: the report was not published")
    # every listed file present; report.json and report.html the bytes that were published
    # (read once: the report parsed below is the one whose sha256 was checked)
    read = functools.cache(lambda name: uris.read_bytes(uris.join(report_dir, name)))
    verify_manifest(uris.read_text(manifest_uri), window_id=plan["window"]["id"],
                    present=uris.list_files(report_dir), read=read, where=report_dir)
    report = json.loads(read("report.json").decode("utf-8"))
    window = report.get("window") or {}
    if window.get("id") and window["id"] != plan["window"]["id"]:
        raise ValueError(f"{report_uri} is for window {window['id']}, "
                         f"expected {plan['window']['id']}")
    verdict = report.get("verdict") or {}
    if verdict.get("verdict") not in ("pass", "warn", "fail"):
        raise ValueError(f"{report_uri} has no verdict: {verdict!r}")
    exit_code = (submitted or {}).get("exit_code")
    if exit_code == 3 and verdict["verdict"] != "fail":
        raise ValueError(f"reconcile exited 3 (fail) but the report says {verdict['verdict']}")
    counts = {name: (a or {}).get("count", 0) for name, a in
              (report.get("anomalies") or {}).items()}
    summary = {
        "verdict": verdict["verdict"],
        "reasons": list(verdict.get("reasons") or []),
        "anomalies": {k: v for k, v in counts.items() if v},
        "report_json": report_uri,
        "report_html": uris.join(report_dir, "report.html"),
        "manifest": manifest_uri,
        "window": plan["window"]["id"],
    }
    print(f"verdict {summary['verdict'].upper()} for {summary['window']}: "
          f"{summary['reasons']} — {report_uri}")
    return summary


@task(task_id="alert")
def alert(plan: dict[str, Any], summary: dict[str, Any]) -> str:
    import json

    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

    from delivery_audit_airflow import uris
    from delivery_audit_airflow.alerts import notifier_settings, send_alert

    if summary["verdict"] == "pass":
        raise AirflowSkipException("verdict pass: nothing to alert")
    report = json.loads(uris.read_text(summary["report_json"]))
    settings = notifier_settings(plan)
    how = send_alert(report, plan["report_link"], settings)
    print(f"alert sent ({how}): verdict {summary['verdict']} for {summary['window']}")
    if summary["verdict"] == "fail" and plan.get("fail_run_on_verdict"):
        raise AirflowFailException(f"audit verdict FAIL for {summary['window']}: "
                                   f"{summary['reasons']}")
    return how


def audit_task_group(group_id: str = GROUP_ID, *, spark_conn_id: str = "spark_default",
                     driver_memory: str | None = None, py_files: str | None = None) -> TaskGroup:
    """Build the audit task group in the current DAG context and return it. ``py_files``:
    what reconcile ships with --py-files; by default, on a cluster master, a zip of the
    installed delivery_audit built for each run."""
    with TaskGroup(group_id=group_id, tooltip="resolve → wait → reconcile → check → alert") as tg:
        plan = resolve_window()
        ready = wait_for_inputs(plan)
        reconcile = AuditSparkSubmitOperator(
            task_id="reconcile",
            plan_task_id=f"{group_id}.resolve_window",
            application=str(REPO_ROOT / "jobs" / "reconcile.py"),  # or the plan's "job"
            conn_id=spark_conn_id,
            name="delivery-audit-{{ dag.dag_id }}-{{ ts_nodash }}",
            driver_memory=driver_memory,
            py_files=py_files,
            stage="all",
            execution_timeout=timedelta(hours=6),
        )
        checked = check_report(plan, reconcile.output)
        ready >> reconcile
        alert(plan, checked)
    return tg
