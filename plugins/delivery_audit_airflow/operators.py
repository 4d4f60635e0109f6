"""SparkSubmitOperator for jobs/reconcile.py, driven by the run plan in XCom.

* The arguments are built at execute time from the ``resolve_window`` plan (``--stage all``: the
  job validates inputs, reconciles, validates results and publishes with the manifest last).
* Exit code 3 means "the audit ran and published a report whose verdict is fail": that is a
  result, not a task failure, so it is neither retried nor failed here — check_report/alert act
  on it. Exit 1 (input unreadable) and anything else fail the task (and are retried).
* Backfill ``topics``/``groups`` become the job's ``--topic``/``--group`` options.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from delivery_audit_airflow.plan import job_args

VERDICT_FAIL_EXIT = 3


class AuditSparkSubmitOperator(SparkSubmitOperator):
    """Submit the reconcile job for the window planned by ``plan_task_id``."""

    ui_color = "#f4a460"

    def __init__(self, *, plan_task_id: str, stage: str = "all", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_task_id = plan_task_id
        self.stage = stage

    def execute(self, context: Any) -> dict[str, Any]:
        plan = context["ti"].xcom_pull(task_ids=self.plan_task_id)
        if not plan:
            raise RuntimeError(f"no plan from {self.plan_task_id}")
        # the job's own input check decides whether an optional source is readable; only pass
        # --events when the glob matches something
        if plan["sources"].get("events"):
            from delivery_audit_airflow import uris

            if not uris.glob_matches(plan["sources"]["events"], limit=1):
                self.log.info("no events files match %s: running without events",
                              plan["sources"]["events"])
                plan = {**plan, "sources": {**plan["sources"], "events": None}}
        self.application = plan.get("job") or self.application
        self.application_args = job_args(plan, plan.get("config_file"), stage=self.stage)
        self.conf = {**(self.conf or {}), **plan.get("spark_conf", {})}
        self.env_vars = {**(self.env_vars or {})}
        # the driver's Python must be the one that has delivery_audit installed
        self.env_vars.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON",
                                                                  sys.executable))
        self.env_vars.setdefault("PYSPARK_DRIVER_PYTHON",
                                 os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable))
        self._hook = None  # rebuild with the arguments above
        exit_code = 0
        try:
            super().execute(context)
        except Exception:
            sp = getattr(self._hook, "_submit_sp", None) if self._hook else None
            exit_code = getattr(sp, "returncode", None)
            if exit_code != VERDICT_FAIL_EXIT:
                raise
            self.log.warning("reconcile exited %s: the audit verdict is FAIL; the report is "
                             "published and the alert task will act on it", exit_code)
        return {"exit_code": exit_code, "report_dir": plan["report_dir"]}
