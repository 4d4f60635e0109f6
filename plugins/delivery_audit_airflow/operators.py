"""SparkSubmitOperator for jobs/reconcile.py, driven by the run plan in XCom.

* The arguments are built at execute time from the ``resolve_window`` plan (``--stage all``: the
  job validates inputs, reconciles, validates results and publishes with the manifest last).
* Exit code 3 means "the audit ran and published a report whose verdict is fail": that is a
  result, not a task failure, so it is neither retried nor failed here — check_report/alert act
  on it. Exit 1 (input unreadable) and anything else fail the task (and are retried).
* Backfill ``topics``/``groups`` become the job's ``--topic``/``--group`` options.
* On a cluster master (``spark_default``'s host is not ``local…``) the job ships
  ``delivery_audit`` itself: unless ``py_files`` is given, a zip of the installed package is
  built for the run and passed as ``--py-files`` (removed afterwards), and, since the driver
  then imports the package from that zip, DELIVERY_AUDIT_EXPECTATIONS points at the GX suites.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from delivery_audit_airflow.plan import job_args

VERDICT_FAIL_EXIT = 3


def package_zip(dest_dir: Path) -> Path:
    """``dest_dir/delivery_audit.zip``: the installed package (sources, templates), for
    ``--py-files``."""
    import delivery_audit

    package = Path(delivery_audit.__file__).resolve().parent
    dest = dest_dir / "delivery_audit.zip"
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                zf.write(f, Path(package.name) / f.relative_to(package))
    return dest


def _expectations_dir() -> Path | None:
    """The GX suites next to the installed sources (src/delivery_audit → ../../expectations)."""
    import delivery_audit

    found = Path(delivery_audit.__file__).resolve().parents[2] / "expectations"
    return found if (found / "results.json").is_file() else None


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
        shipped = self._ship_package()
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
        finally:
            if shipped:
                shutil.rmtree(shipped, ignore_errors=True)
                self.py_files = None
        return {"exit_code": exit_code, "report_dir": plan["report_dir"]}

    def _ship_package(self) -> Path | None:
        """On a cluster master, pass a fresh zip of delivery_audit as --py-files; the temp
        folder to remove afterwards, or None (local master, or py_files given)."""
        if self.py_files:
            return None
        try:
            master = str(self._get_hook()._connection.get("master") or "")
        except Exception:  # noqa: BLE001  (the submit itself reports a bad connection)
            return None
        finally:
            self._hook = None
        if not master or master.startswith("local"):
            return None
        folder = Path(tempfile.mkdtemp(prefix="delivery-audit-py-files-"))
        self.py_files = str(package_zip(folder))
        suites = _expectations_dir()
        if suites and "DELIVERY_AUDIT_EXPECTATIONS" not in os.environ:
            self.env_vars.setdefault("DELIVERY_AUDIT_EXPECTATIONS", str(suites))
        self.log.info("master %s: shipping %s with --py-files", master, self.py_files)
        return folder
