"""SparkSubmitOperator for jobs/reconcile.py, driven by the run plan in XCom.

* The arguments are built at execute time from the ``resolve_window`` plan (``--stage all``: the
  job validates inputs, reconciles, validates results and publishes with the manifest last).
* Exit code 3 means "the audit ran and published a report whose verdict is fail": that is a
  result, not a task failure, so it is neither retried nor failed here — check_report/alert act
  on it. Exit 1 (input unreadable) and anything else fail the task (and are retried).
* Backfill ``topics``/``groups`` become the job's ``--topic``/``--group`` options.
* Connect mode (the plan's ``spark_connect_conn_id``, from the run's Param of that name): no
  spark-submit; the audit runs in this task's Python as a Spark Connect client of that
  Connection's endpoint (delivery_audit_airflow.connect), PySpark imported only then.
* What spark-submit is given comes from the engine's ``delivery_audit.core.submit`` (the same
  helper the cluster script and the benchmark use): the Python of the driver and executors
  (PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON unless already set, in the env and the conf) and, on a
  cluster master (``spark_default``'s host is not ``local…``) unless ``py_files`` is given, a
  zip of the installed ``delivery_audit`` built for the run as ``--py-files`` (removed
  afterwards). The zip carries the GX suites (package data), so nothing else is shipped.
"""

from __future__ import annotations

import json
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from delivery_audit.core.submit import audit_submit, shipped_package
from delivery_audit_airflow import uris
from delivery_audit_airflow.connect import RESULT_EXIT_CODES, run_connect
from delivery_audit_airflow.plan import job_args

VERDICT_FAIL_EXIT = 3


class AuditSparkSubmitOperator(SparkSubmitOperator):
    """Submit the reconcile job for the window planned by ``plan_task_id``."""

    ui_color = "#f4a460"
    #: plan_json: the plan, rendered before the task starts, so the OpenLineage START event
    #: (which runs before execute) can name the inputs and outputs
    template_fields = (*SparkSubmitOperator.template_fields, "plan_json")

    def __init__(self, *, plan_task_id: str, stage: str = "all", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_task_id = plan_task_id
        self.stage = stage
        self.plan_json = "{{ ti.xcom_pull(task_ids='" + plan_task_id + "') | tojson }}"

    def get_openlineage_facets_on_start(self):
        """The OpenLineage provider's START lineage: the sources in, the report folder and
        the anomaly table out (delivery_audit_airflow.lineage)."""
        from delivery_audit_airflow import lineage

        plan = lineage.plan_of(self.plan_json)
        if plan is None:
            self.log.warning("lineage: no plan rendered yet (%s)", str(self.plan_json)[:60])
        return lineage.operator_lineage(plan)

    def get_openlineage_facets_on_complete(self, task_instance: Any = None):
        """COMPLETE: the same datasets, with the published report's verdict and anomaly
        counts as data-quality facets (no report readable: the datasets alone)."""
        from delivery_audit_airflow import lineage

        plan = lineage.plan_of(self.plan_json)
        report = None
        if plan:
            try:
                report = json.loads(uris.on(plan.get("aws_conn_id")).read_text(
                    uris.join(plan["report_dir"], "report.json")))
            except Exception as exc:  # noqa: BLE001 - lineage never fails the task
                self.log.warning("lineage: cannot read the report (%s)", type(exc).__name__)
        return lineage.operator_lineage(plan, report)

    def execute(self, context: Any) -> dict[str, Any]:
        plan = context["ti"].xcom_pull(task_ids=self.plan_task_id)
        if not plan:
            raise RuntimeError(f"no plan from {self.plan_task_id}")
        # the job's own input check decides whether an optional source is readable; only pass
        # --events when the glob matches something
        if plan["sources"].get("events"):
            files = uris.on(plan.get("aws_conn_id"))  # the plan's AWS Connection
            if not files.glob_matches(plan["sources"]["events"], limit=1):
                self.log.info("no events files match %s: running without events",
                              plan["sources"]["events"])
                plan = {**plan, "sources": {**plan["sources"], "events": None}}
        if plan.get("spark_connect_conn_id"):
            return self._execute_connect(plan)
        given_py_files = self.py_files
        master = self._master()
        exit_code = 0
        with shipped_package(master, given_py_files) as py_files:
            submit = audit_submit(
                master, plan.get("job") or self.application,
                job_args(plan, plan.get("config_file"), stage=self.stage), py_files=py_files,
                conf={**(self.conf or {}), **plan.get("spark_conf", {})}, env=self.env_vars,
                driver_memory=self._driver_memory, executor_memory=self._executor_memory)
            self.application, self.application_args = submit.application, list(submit.args)
            self.conf, self.env_vars = dict(submit.conf), dict(submit.env)
            self.py_files = submit.py_files
            if py_files and not given_py_files:
                self.log.info("master %s: shipping %s with --py-files", master, py_files)
            self._hook = None  # rebuild with the arguments above
            try:
                super().execute(context)
            except Exception:
                sp = getattr(self._hook, "_submit_sp", None) if self._hook else None
                exit_code = getattr(sp, "returncode", None)
                if exit_code != VERDICT_FAIL_EXIT:
                    raise
                self.log.warning("reconcile exited %s: the audit verdict is FAIL; the report "
                                 "is published and the alert task will act on it", exit_code)
            finally:
                self.py_files = given_py_files  # the zip is gone: a rerun builds its own
        return {"exit_code": exit_code, "report_dir": plan["report_dir"]}

    def _execute_connect(self, plan: dict[str, Any]) -> dict[str, Any]:
        """The audit through the plan's ``spark_connect`` Connection, in this process."""
        exit_code = run_connect(plan, plan["spark_connect_conn_id"], env=self.env_vars,
                                log=self.log)
        if exit_code not in RESULT_EXIT_CODES:
            raise RuntimeError(f"the audit through Spark Connect exited {exit_code}")
        if exit_code == VERDICT_FAIL_EXIT:
            self.log.warning("the audit verdict is FAIL; the report is published and the "
                             "alert task will act on it")
        return {"exit_code": exit_code, "report_dir": plan["report_dir"], "mode": "connect"}

    def _master(self) -> str:
        """The master of the Spark connection ("" when it cannot be read: the submit itself
        reports a bad connection)."""
        try:
            return str(self._get_hook()._connection.get("master") or "")
        except Exception:  # noqa: BLE001
            return ""
        finally:
            self._hook = None
