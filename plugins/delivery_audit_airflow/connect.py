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

from delivery_audit_airflow.plan import job_args

#: exit codes of ``delivery-audit run`` that are results, not failures (3: verdict fail)
RESULT_EXIT_CODES = (0, 3)


def connect_url(conn_id: str) -> str:
    """The ``sc://`` URL of a ``spark_connect`` Connection (the provider's hook builds it:
    user id, token and use_ssl as URL parameters). Holds the token: never logged."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    return SparkConnectHook(conn_id=conn_id).get_connection_url()


def cli_args(plan: dict[str, Any]) -> list[str]:
    """``delivery-audit run``'s arguments for the plan (the job's, without ``--stage``)."""
    return job_args(plan, plan.get("config_file"), stage=None)


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
    process; the CLI's exit code (0 pass/warn, 3 verdict fail, 1 unreadable input)."""
    url = connect_url(conn_id)
    from delivery_audit.cli import app  # the engine and PySpark's Connect client: here only

    if log is not None:
        log.info("auditing through Spark Connect (Connection %r), no spark-submit", conn_id)
    with environment(env):
        try:
            code = app(["run", *cli_args(plan), "--spark-remote", url], prog_name="reconcile",
                       standalone_mode=False)
        except Exception as exc:  # click usage errors carry their exit code
            if getattr(exc, "exit_code", None) is None:
                raise
            code = exc.exit_code
    return int(code or 0)
