"""The audit task group, shared by the daily and the backfill DAG.

    resolve_window → wait_for_inputs → snapshot → reconcile → check_report → alert

* resolve_window: the window ([data_interval_start, data_interval_end) for scheduled runs, the
  validated ``start``/``end`` Params for backfills), every location (from the JSON Variable
  delivery_audit_settings) and the AWS Connection (the ``aws_conn_id`` Param, else the
  Variable's, else aws_default) → XCom.
* wait_for_inputs: reschedule-mode sensor; done when every required source glob matches a file
  (S3 through the provider's S3Hook on that Connection) and (by default) window end + grace
  has passed, so late consumption is in the inputs.
* snapshot (optional: the ``snapshot`` Param, else the Variable's ``snapshot``; skipped when
  off): reads the window's broker side from the cluster through the Kafka provider's
  Connection (``kafka_conn_id``) into the Variable's ``snapshot_dir``
  (delivery_audit_airflow.kafka_snapshot); reconcile then audits that snapshot
  (``--broker <dir>/broker/*``, ``--offsets <dir>/offsets.json``).
* reconcile: one spark-submit of jobs/reconcile.py ``--stage all`` (validates the inputs with GX,
  reconciles, validates the results, publishes with ``_manifest.json`` last). A re-run writes
  the same window folder again, replacing it (idempotent). Its ``pre_execute`` gives the job
  the Connection's S3 endpoint, region and credentials as ``AWS_*`` environment variables
  (delivery_audit_airflow.aws.job_env), unless the Variable's ``pass_aws_conn_to_job`` is false.
  With the ``spark_connect_conn_id`` Param, the same audit runs instead in the task's Python as
  a Spark Connect client of that Connection's warm Spark (delivery_audit_airflow.connect).
* check_report: reads ``_manifest.json`` and ``report.json`` from the destination and fails if
  they are missing, belong to another window, or list files that are not there; then emits
  the report root's Asset event (window, verdict, anomaly counts; delivery_audit_airflow.assets).
* alert: skipped on ``pass``; on ``warn``/``fail`` sends the report through a provider's
  notifier and its Connection (delivery_audit_airflow.notifiers) or the engine's notifier.
* reconcile reports its OpenLineage lineage (delivery_audit_airflow.lineage) when the
  OpenLineage provider has a transport.
"""

from __future__ import annotations

import functools
import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, PokeReturnValue, TaskGroup, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from delivery_audit.core.manifest import MANIFEST, verify_manifest
from delivery_audit.core.timefmt import instant
from delivery_audit_airflow import assets, aws, uris
from delivery_audit_airflow.alerts import (
    index_of,
    notifier_settings,
    send_alert,
    task_failure_callback,
)
from delivery_audit_airflow.assets import report_asset
from delivery_audit_airflow.operators import AuditSparkSubmitOperator
from delivery_audit_airflow.plan import PlanError, build_plan, validate_backfill
from delivery_audit_airflow.settings import (
    CONN_ID_PATTERN,
    KAFKA_NAME_PATTERN,
    REPO_ROOT,
    VARIABLE,
    Settings,
    markdown_table,
)

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


def audit_params() -> dict[str, Param]:
    """The Params both DAGs take (the backfill DAG adds its window and selection)."""
    return {
        "aws_conn_id": Param(None, type=["null", "string"], pattern=CONN_ID_PATTERN,
                             maxLength=250, title="AWS Connection",
                             description="the Airflow AWS Connection for s3:// inputs and "
                                         f"reports (empty: aws_conn_id in Variable {VARIABLE}, "
                                         "default aws_default)"),
        "notifier": Param(
            None, type=["null", "object"], title="Alert notifier",
            description="this run's alert notifier, e.g. {\"type\": \"slack\", "
                        "\"conn_id\": \"slack_audit\"} (sns: conn_id + target_arn; smtp: "
                        "conn_id + to); empty: the audit config's notifier, else the "
                        f"Variable {VARIABLE}'s, else the log"),
        "snapshot": Param(
            None, type=["null", "boolean"], title="Snapshot the broker side",
            description="true: before reconcile, read the window's records and offsets from "
                        "the cluster through the Kafka Connection and audit that snapshot "
                        f"(empty: snapshot in Variable {VARIABLE}, default false)"),
        "snapshot_topics": Param(
            [], type="array", items={"type": "string", "pattern": KAFKA_NAME_PATTERN},
            title="Snapshot topics",
            description="topics the snapshot reads (empty: the backfill's topics, else "
                        f"snapshot_topics in Variable {VARIABLE})"),
        "snapshot_groups": Param(
            [], type="array", items={"type": "string", "pattern": KAFKA_NAME_PATTERN},
            title="Snapshot groups",
            description="consumer groups whose committed offsets the snapshot reads (empty: "
                        f"the backfill's groups, else snapshot_groups in Variable {VARIABLE})"),
        "kafka_conn_id": Param(
            None, type=["null", "string"], pattern=CONN_ID_PATTERN, maxLength=250,
            title="Kafka Connection",
            description="the kafka Connection of the snapshot (its extra: the client config; "
                        f"empty: kafka_conn_id in Variable {VARIABLE}, default kafka_default)"),
        "spark_connect_conn_id": Param(
            None, type=["null", "string"], pattern=CONN_ID_PATTERN, maxLength=250,
            title="Spark Connect Connection",
            description="a spark_connect Connection (sc://host:port, token, TLS): reconcile "
                        "runs the audit as a thin Spark Connect client of that warm Spark "
                        "instead of spark-submit (empty: spark-submit on spark_default)"),
    }


_DOC_MD = """
### Sources

Four logs of the Kafka system, as globs rendered per window (`{{ds}}`, `{{prev_ds}}`,
`{{data_root}}`, … ; local paths or `s3://`): producer send logs (`sends`), broker topic dumps
(`broker`), consumer processing ledgers (`ledger`) and, optionally, consumer-group events
(`events`). By default `{{data_root}}/<source>/dt=*/*.jsonl*`. `wait_for_inputs` waits (in
reschedule mode, up to 12 h) until every required source matches a file and window end + grace
has passed; `reconcile` then runs `jobs/reconcile.py` once with spark-submit.

### Reports

`<report_root>[/<report_prefix>]/dt=<start date>/<window id>/`: `report.json`, `report.html`,
`anomalies/` (Parquet), `quarantine/`, `validation/` and, written last, `_manifest.json`.
`check_report` reads them back and emits an event of the report root's Asset (the window,
verdict and anomaly counts as its extra; `delivery_audit_on_report` is scheduled on it); on a
`warn` or `fail` verdict `alert` sends the report through the notifier (a provider's, e.g.
`{{"type": "slack", "conn_id": "slack_audit"}}`, or the log). A re-run of the same window
replaces its folder.

### Variable `{variable}`

One JSON object; a key it does not set takes its default, an unknown key or a wrong type fails
`resolve_window` with a message naming the key. Precedence: the run's Param > the audit
config file (`config_file`: `grace_minutes`, `notifier`) > this Variable.

{table}

### Connections

* **`aws_default`** (conn type `aws`; another with the `aws_conn_id` Param or the Variable's
  `aws_conn_id`): S3 for the sensor, the report check and the alert (the Amazon provider's
  `S3Hook`), e.g. `{{"conn_type": "aws", "login": "…", "password": "…", "extra":
  {{"endpoint_url": "http://minio:9000", "region_name": "us-east-1"}}}}`. The Spark job gets its
  S3 endpoint, region and credentials as `AWS_*` environment variables
  (`pass_aws_conn_to_job`); without the Connection both use the worker's AWS chain.
* **`spark_default`** (conn type `spark`): the master, e.g. `local[*]` or `spark://host:7077`.
* A **`spark_connect`** Connection (optional, named by the `spark_connect_conn_id` Param):
  `reconcile` then runs the audit as a thin client of that Spark Connect endpoint (host,
  port, the token as password, `use_ssl` in extra) instead of spark-submit.
* **`kafka_default`** (conn type `kafka`, the Apache Kafka provider's; another with the
  `kafka_conn_id` Param or the Variable's `kafka_conn_id`), for the optional `snapshot` task:
  its extra is the client config, e.g. `{{"bootstrap.servers": "b-1:9096",
  "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "…",
  "sasl.password": "…"}}`. The snapshot (records, markers, `offsets.json`) lands in the
  Variable's `snapshot_dir` and `reconcile` audits it with `--offsets`.
* **`delivery_audit_pseudonym`** (optional): its password is the pseudonymisation key when the
  audit config says `pseudonymise: true` and `DELIVERY_AUDIT_PSEUDONYM_KEY` is not set.

Tasks: `resolve_window → wait_for_inputs → snapshot → reconcile → check_report → alert`
(`snapshot` is skipped unless the run's `snapshot` Param or the Variable's `snapshot` is
true); more in `docs/airflow.md`.
"""


def dag_doc_md(summary: str) -> str:
    """A DAG's doc_md: its own summary (what window it audits), then what both DAGs share:
    sources, reports, the Variable (its keys and defaults, from settings.SCHEMA), the
    Connections."""
    return summary.strip() + "\n" + _DOC_MD.format(variable=VARIABLE, table=markdown_table())


def _fail_fast(exc: Exception):
    return AirflowFailException(str(exc))


def _now() -> datetime:
    return datetime.now(UTC)


def _notifier_param(value: Any) -> dict[str, Any] | None:
    """The run's ``notifier`` Param (None: empty), checked: a known type; a conn_id that is
    a connection id."""
    import re

    if not value:
        return None
    if not isinstance(value, dict):
        raise PlanError(f"notifier {value!r} must be an object")
    kind = str(value.get("type", "")).lower()
    if kind not in ("log", "slack", "sns", "smtp"):
        raise PlanError(f"notifier type {kind!r}: use log, slack, sns or smtp")
    conn = value.get("conn_id")
    if conn is not None and not re.fullmatch(CONN_ID_PATTERN, str(conn)):
        raise PlanError(f"notifier conn_id {conn!r} is not a connection id")
    return dict(value)


@task(task_id="resolve_window")
def resolve_window() -> dict[str, Any]:
    ctx = get_current_context()
    params = dict(ctx.get("params") or {})
    try:
        settings = Settings.load()
        if "start" in params:  # the backfill DAG
            request = validate_backfill(params, float(settings.get("backfill_max_days")))
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
                          source=source, aws_conn_id=params.get("aws_conn_id"),
                          spark_connect_conn_id=params.get("spark_connect_conn_id"),
                          params=params)
        plan["notifier_param"] = _notifier_param(params.get("notifier"))
    except (PlanError, ValueError) as exc:
        raise _fail_fast(exc) from exc
    w = plan["window"]
    print(f"audit window {w['start']} → {w['end']} (from {source}), grace "
          f"{w['grace_minutes']:g} min (from the {w['grace_from']}); report → "
          f"{plan['report_dir']}; S3 through Connection {plan['aws_conn_id']!r} (from the "
          f"{plan['aws_conn_from']}); Spark: " + (
              f"Spark Connect through Connection {plan['spark_connect_conn_id']!r}"
              if plan.get("spark_connect_conn_id") else "spark-submit"))
    snap = plan.get("snapshot")
    print("snapshot: off" if not snap else
          f"snapshot: on, topics {', '.join(snap['topics'])} through Kafka Connection "
          f"{snap['kafka_conn_id']!r} (from the {snap['kafka_conn_from']}), read "
          f"{snap['from'] or 'the log start'} → {snap['to']}, into {snap['dir']}")
    return plan


@task.sensor(task_id="wait_for_inputs", poke_interval=INPUT_POKE_INTERVAL.total_seconds(),
             timeout=INPUT_WAIT_TIMEOUT.total_seconds(), mode="reschedule")
def wait_for_inputs(plan: dict[str, Any]) -> PokeReturnValue:
    files = uris.on(plan.get("aws_conn_id"))
    w = plan["window"]
    ready_at = instant(w["end"]) + timedelta(minutes=w["grace_minutes"])
    if plan.get("wait_for_grace", True) and _now() < ready_at:
        print(f"window end + grace is {ready_at.isoformat()}: not yet")
        return PokeReturnValue(is_done=False)
    found: dict[str, int] = {}
    missing = []
    for name, pattern in plan["sources"].items():
        if not pattern:
            continue
        if name == "broker" and plan.get("snapshot"):
            print(f"broker: taken by the snapshot task after this wait ({pattern})")
            continue
        found[name] = len(files.glob_matches(pattern, limit=1000))
        print(f"{name}: {found[name]} file(s) match {pattern}")
        if not found[name] and name != "events":
            missing.append(name)
    if missing:
        print(f"waiting for {', '.join(missing)}")
        return PokeReturnValue(is_done=False)
    return PokeReturnValue(is_done=True, xcom_value=found)


@task(task_id="snapshot")
def snapshot(plan: dict[str, Any]) -> dict[str, Any]:
    """The window's broker side and offsets read from the cluster (the plan's ``snapshot``,
    delivery_audit_airflow.kafka_snapshot); skipped when the run takes no snapshot."""
    if not plan.get("snapshot"):
        raise AirflowSkipException("snapshot off (Param snapshot, Variable snapshot): "
                                   "reconcile reads the broker glob")
    from delivery_audit_airflow.kafka_snapshot import SnapshotConfigError, run_snapshot

    try:
        return run_snapshot(plan)
    except SnapshotConfigError as exc:  # a setup error: retrying would not help
        raise _fail_fast(exc) from exc


@task(task_id="check_report")
def check_report(plan: dict[str, Any], submitted: dict[str, Any] | None,
                 outlet_events: Any = None) -> dict[str, Any]:
    """Read the published window back and check it; then the report root's Asset event
    (delivery_audit_airflow.assets) with the window, verdict and anomaly counts."""
    files = uris.on(plan.get("aws_conn_id"))  # S3 through the plan's AWS Connection

    report_dir = plan["report_dir"]
    manifest_uri = files.join(report_dir, MANIFEST)
    report_uri = files.join(report_dir, "report.json")
    if not files.exists(manifest_uri):
        raise FileNotFoundError(f"no manifest at {manifest_uri}: the report was not published")
    # every listed file present; report.json and report.html the bytes that were published
    # (read once: the report parsed below is the one whose sha256 was checked)
    read = functools.cache(lambda name: files.read_bytes(files.join(report_dir, name)))
    verify_manifest(files.read_text(manifest_uri), window_id=plan["window"]["id"],
                    present=files.list_files(report_dir), read=read, where=report_dir)
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
        "report_html": files.join(report_dir, "report.html"),
        "manifest": manifest_uri,
        "window": plan["window"]["id"],
    }
    print(f"verdict {summary['verdict'].upper()} for {summary['window']}: "
          f"{summary['reasons']} — {report_uri}")
    if outlet_events is not None:
        outlets = [o for o in get_current_context()["task"].outlets if hasattr(o, "uri")]
        assets.emit(outlet_events, outlets, plan, summary, index_of(plan))
    return summary


@task(task_id="alert")
def alert(plan: dict[str, Any], summary: dict[str, Any]) -> str:
    if summary["verdict"] == "pass":
        raise AirflowSkipException("verdict pass: nothing to alert")
    report = json.loads(uris.on(plan.get("aws_conn_id")).read_text(summary["report_json"]))
    settings = notifier_settings(plan)
    how = send_alert(report, plan["report_link"], settings, index=index_of(plan),
                     context=_context_or_none())
    print(f"alert sent ({how}): verdict {summary['verdict']} for {summary['window']}")
    if summary["verdict"] == "fail" and plan.get("fail_run_on_verdict"):
        raise AirflowFailException(f"audit verdict FAIL for {summary['window']}: "
                                   f"{summary['reasons']}")
    return how


def _context_or_none() -> Any:
    try:
        return get_current_context()
    except Exception:  # noqa: BLE001 - a direct call (tests) has no task context
        return None


def job_environment(context: Any) -> None:
    """``pre_execute`` of reconcile (runs after template rendering, so nothing of it is
    stored as a rendered field): the job gets the plan's AWS Connection as ``AWS_*``
    environment variables (aws.job_env)."""
    task = context["task"]
    plan = context["ti"].xcom_pull(task_ids=task.plan_task_id)
    if not plan:
        return  # the operator fails with its own message
    conn_id = plan.get("aws_conn_id")
    locations = [plan.get("out") or "", *(plan.get("sources") or {}).values()]
    if not any(uris.is_s3(str(loc or "")) for loc in locations):
        return  # nothing on S3: no Connection to look up
    if not conn_id or not plan.get("pass_aws_conn_to_job", True):
        print("the job uses the worker's own AWS credential chain (pass_aws_conn_to_job is "
              "false)" if conn_id else "no AWS Connection in the plan")
        return
    env, said = aws.job_env(conn_id)
    task.env_vars = {**(task.env_vars or {}), **env}
    print(f"job environment from {said}")


def audit_task_group(group_id: str = GROUP_ID, *, spark_conn_id: str = "spark_default",
                     driver_memory: str | None = None, py_files: str | None = None) -> TaskGroup:
    """Build the audit task group in the current DAG context and return it. ``py_files``:
    what reconcile ships with --py-files; by default, on a cluster master, a zip of the
    installed delivery_audit built for each run."""
    with TaskGroup(group_id=group_id,
                   tooltip="resolve → wait → snapshot → reconcile → check → alert") as tg:
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
            pre_execute=job_environment,
            # runs after the snapshot or, when the run takes none, after its skip
            trigger_rule="none_failed",
        )
        taken = snapshot(plan)
        checked = check_report.override(outlets=[report_asset()])(plan, reconcile.output)
        ready >> taken >> reconcile
        ready >> reconcile
        alert(plan, checked)
    return tg
