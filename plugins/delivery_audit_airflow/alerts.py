"""Alert glue: the auditor's notifier for verdicts, and a task-failure callback.

``delivery_audit.notify.notifier_from_config`` is imported only when an alert is sent. If the
notifier cannot be built or fails to send, the alert is still logged on the
``delivery_audit.alerts`` logger so it is never lost silently.
"""

from __future__ import annotations

import json
import logging
from typing import Any

ALERT_LOGGER = "delivery_audit.alerts"
log = logging.getLogger(ALERT_LOGGER)


def notifier_settings(plan: dict[str, Any]) -> dict[str, Any]:
    """The notifier, by the DAGs' one precedence: the run's ``notifier`` Param > the audit
    config file's ``notifier`` > the ``notifier`` of Variable delivery_audit_settings (the
    deployment default) > the log notifier. With a ``conn_id`` it is a provider's notifier
    (delivery_audit_airflow.notifiers)."""
    if isinstance(plan.get("notifier_param"), dict) and plan["notifier_param"]:
        return dict(plan["notifier_param"])
    path = plan.get("config_file")
    if path:
        try:
            import yaml

            with open(path, encoding="utf-8") as fh:
                data = yaml.safe_load(fh) or {}
            if isinstance(data, dict) and isinstance(data.get("notifier"), dict):
                return dict(data["notifier"])
        except (OSError, ValueError) as exc:  # yaml errors are ValueErrors
            log.warning("cannot read the notifier from %s: %s", path, exc)
    if plan.get("notifier"):
        return dict(plan["notifier"])
    return {"type": "log"}


def _build_notifier(settings: dict[str, Any]):
    # the engine beyond delivery_audit.core is imported at task time only: this module is
    # loaded when the DAG files are parsed, which must stay light (tests/test_dags.py::
    # test_dag_files_import_nothing_heavy); the same for the imports below
    from delivery_audit.notify import notifier_from_config

    return notifier_from_config(settings)


def index_of(plan: dict[str, Any] | None) -> str | None:
    """The report root's index page (``<report root>/index.html``) of a plan."""
    root = (plan or {}).get("out")
    return f"{str(root).rstrip('/')}/index.html" if root else None


def send_alert(report: dict[str, Any], link: str, settings: dict[str, Any],
               index: str | None = None, context: Any = None) -> str:
    """Send through the configured notifier; returns how it was delivered. The alert
    carries the narrative's first findings, the report's ``link`` and the ``index`` of
    every window. Settings with a ``conn_id`` go through the provider's notifier
    (delivery_audit_airflow.notifiers), the others through the engine's. A notifier that
    fails is a logged warning (no URL, no token) and the alert is logged instead: it never
    fails the task."""
    from delivery_audit_airflow import notifiers

    verdict = (report.get("verdict") or {}).get("verdict", "?")
    try:
        if notifiers.is_provider(settings):
            if not notifiers.wanted(settings, verdict):
                return f"not sent (notifier {settings.get('type')} is not on {verdict})"
            notifiers.send_through_provider(settings, report, link, index, context)
            how = f"notifier {notifiers.describe(settings)}"
        else:
            _build_notifier(settings).send(report, link, index=index)
            how = f"notifier {settings.get('type', '?')}"
    except Exception as exc:  # an alert must not vanish because a webhook is down
        if notifiers.is_provider(settings):
            log.warning("notifier %s failed (%s): logging the alert instead",
                        notifiers.describe(settings), notifiers.safe_reason(exc))
        else:
            from delivery_audit.notify import describe
            from delivery_audit.redaction import redact_text

            log.warning("notifier %s failed (%s): logging the alert instead",
                        describe(settings), redact_text(exc))
        how = "log (notifier failed)"
        first = [f.get("title") for f in (report.get("narrative") or [])[:3]
                 if isinstance(f, dict)]
        log.warning("AUDIT %s %s reasons=%s findings=%s link=%s index=%s", verdict.upper(),
                    (report.get("window") or {}).get("id", ""),
                    json.dumps((report.get("verdict") or {}).get("reasons", [])),
                    json.dumps(first), link, index)
    return how


def task_failure_callback(context: Any) -> None:
    """on_failure_callback: a task of the audit failed for good (after its retries)."""
    ti = context.get("ti") or context.get("task_instance")
    task_id = getattr(ti, "task_id", "?")
    dag_id = getattr(ti, "dag_id", "?")
    exc = context.get("exception")
    plan = None
    try:
        plan = ti.xcom_pull(task_ids=f"{task_id.rsplit('.', 1)[0]}.resolve_window") \
            if ti is not None and "." in task_id else None
    except Exception:  # the plan may be what failed
        plan = None
    window = (plan or {}).get("window") or {}
    report = {
        "verdict": {"verdict": "error",
                    "reasons": [f"{dag_id}.{task_id} failed: {exc!s}"[:2000]]},
        "window": window,
        "anomalies": {},
    }
    log.error("AUDIT ERROR %s.%s window=%s: %s", dag_id, task_id, window.get("id", "?"), exc)
    if plan:
        send_alert(report, (plan or {}).get("report_link", ""), notifier_settings(plan),
                   index=index_of(plan))
