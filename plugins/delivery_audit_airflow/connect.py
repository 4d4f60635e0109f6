"""The reconcile task's Connect mode: the audit runs in the task's own Python, as a thin
Spark Connect client of a warm Spark, instead of a spark-submit of jobs/reconcile.py.

Chosen per run by the ``spark_connect_conn_id`` Param (a Connection of type
``spark_connect``, the Apache Spark provider's ``SparkConnectHook``: host and port, the
token as its password, ``use_ssl`` in its extra); empty, the task submits as before. No
JVM starts in the worker: PySpark's Connect client (and the engine) are imported inside
:func:`run_connect`, never at DAG parse time.

The engine stages its inputs and outputs in local temp folders that the Spark driver reads
and writes too: the server must see the worker's temp folder at the same path (the same
host, as ``make connect-up``'s server, or a shared mount as TMPDIR; docs/scaling.md).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

#: exit statuses of the audit that are results, not failures (3: verdict fail)
RESULT_EXIT_CODES = (0, 3)


def connect_url(conn_id: str) -> str:
    """The ``sc://`` URL of a ``spark_connect`` Connection (the provider's hook builds it:
    user id, token and use_ssl as URL parameters). Holds the token: never logged."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    return SparkConnectHook(conn_id=conn_id).get_connection_url()


def request_fields(plan: dict[str, Any]) -> dict[str, Any]:
    """``delivery_audit.audit.build_request``'s values for the plan: the job's, the
    alert task notifying instead of the engine."""
    src, w = plan["sources"], plan["window"]
    return {"sends": [src["sends"]], "broker": [src["broker"]], "ledger": [src["ledger"]],
            "events": [src["events"]] if src.get("events") else [],
            "start": w["start"], "end": w["end"], "grace": float(w["grace_minutes"]),
            "config": plan.get("config_file"), "topics": list(plan.get("topics") or []),
            "groups": list(plan.get("groups") or []), "out": plan["out"], "notify": False,
            "offsets": plan.get("offsets")}  # a snapshot's offsets file (rule 26), if any


@contextlib.contextmanager
def environment(env: dict[str, str] | None) -> Iterator[None]:
    """``env`` (the job's AWS_* variables, delivery_audit_airflow.aws.job_env) set in this
    process while the audit runs, the previous values restored after."""
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_connect(plan: dict[str, Any], conn_id: str, env: dict[str, str] | None = None,
                log: Any = None) -> int:
    """Audit the plan's window through the Connection's Spark Connect endpoint, in this
    process, with the engine's entry point; its exit status (0 pass/warn, 3 verdict fail,
    1 unreadable input or no server, 4 publishing failed)."""
    url = connect_url(conn_id)
    # the engine and PySpark's Connect client: imported here only, never at DAG parse time
    from delivery_audit.audit import AuditFailed, build_request, run_audit

    if log is not None:
        log.info("auditing through Spark Connect (Connection %r), no spark-submit", conn_id)
    with environment(env):
        try:
            result = run_audit(build_request(**request_fields(plan), remote=url))
        except AuditFailed as exc:  # its message is redacted
            if log is not None:
                log.error("the audit through Spark Connect failed: %s error: %s", exc.kind, exc)
            return exc.exit_code
    if log is not None:
        log.info("verdict %s; report: %s/report.html", result.report["verdict"]["verdict"],
                 result.destination)
    return result.exit_code
