"""The light core (delivery_audit.core, the audit window included) loads
nothing beyond the standard library: the Airflow plugin imports it, and DAG parsing must
stay light."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from delivery_audit.core.s3uri import split_s3
from delivery_audit.core.submit import audit_submit, is_cluster_master, shipped_package
from delivery_audit.core.timefmt import iso_z, iso_z_ms

HEAVY = ("pyspark", "great_expectations", "boto3", "botocore", "pandas", "pyarrow", "yaml",
         "airflow", "jinja2", "typer")


def test_the_core_imports_only_the_standard_library():
    code = ("import sys, json\n"
            "import delivery_audit.core.globs, delivery_audit.core.timefmt\n"
            "import delivery_audit.core.s3uri, delivery_audit.core.manifest\n"
            "import delivery_audit.core.process, delivery_audit.core.window\n"
            "import delivery_audit.core.packaging, delivery_audit.core.submit\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(json.loads(out))
    assert "delivery_audit" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_iso_z_and_s3_split():
    assert iso_z(datetime(2026, 11, 19, 1, tzinfo=timezone(timedelta(hours=2)))) == \
        "2026-11-18T23:00:00Z"
    assert iso_z(datetime(2026, 11, 19)) == "2026-11-19T00:00:00Z"  # naive: UTC
    assert iso_z_ms(0) == "1970-01-01T00:00:00Z"
    assert iso_z(datetime(2026, 11, 19, 0, 0, 0, 5000, tzinfo=UTC)) == \
        "2026-11-19T00:00:00.005000Z"
    assert split_s3("s3://bucket/a/b.jsonl") == ("bucket", "a/b.jsonl")
    assert split_s3("s3://bucket") == ("bucket", "")


def test_the_audit_submit_command_line(monkeypatch):
    """One spark-submit for the operator, the cluster script and the benchmark: the Python of
    the driver and executors in the env and the conf, --py-files, the caller's conf last."""
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    s = audit_submit("spark://127.0.0.1:7077", Path("/repo/jobs/reconcile.py"), ["--json"],
                     py_files=Path("/tmp/x/delivery_audit.zip"), driver_memory="2g",
                     conf={"spark.ui.enabled": "true"}, local_ip="127.0.0.1")
    assert s.command("/spark/bin/spark-submit") == [
        "/spark/bin/spark-submit", "--master", "spark://127.0.0.1:7077",
        "--driver-memory", "2g", "--py-files", "/tmp/x/delivery_audit.zip",
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.ui.enabled=true", "/repo/jobs/reconcile.py", "--json"]
    assert s.env == {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                     "SPARK_LOCAL_IP": "127.0.0.1"}
    assert not any(k.startswith("DELIVERY_AUDIT") for k in s.environ())
    # the caller's (or the environment's) interpreter wins, in the env and the conf alike
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", "/opt/driver/python")
    s = audit_submit("local[2]", "job.py", env={"PYSPARK_PYTHON": "/opt/py/bin/python"})
    assert s.env == {"PYSPARK_PYTHON": "/opt/py/bin/python",
                     "PYSPARK_DRIVER_PYTHON": "/opt/driver/python"}
    assert s.conf == {"spark.pyspark.python": "/opt/py/bin/python",
                      "spark.pyspark.driver.python": "/opt/driver/python"}
    assert "--py-files" not in s.command() and "--driver-memory" not in s.command()


def test_the_package_is_shipped_to_cluster_masters_only():
    assert [is_cluster_master(m) for m in ("local[2]", "local", "", None, "spark://h:7077",
                                           "yarn", "k8s://https://h")] == \
        [False, False, False, False, True, True, True]
    with shipped_package("local[*]") as py_files:
        assert py_files is None
    with shipped_package("spark://h:7077", "/mine.zip") as py_files:
        assert py_files == "/mine.zip"
    with shipped_package("spark://h:7077") as py_files:
        zipped = Path(py_files)
        names = zipfile.ZipFile(zipped).namelist()
        assert zipped.name == "delivery_audit.zip"
        assert "delivery_audit/core/submit.py" in names
        assert "delivery_audit/expectations/results.json" in names
    assert not zipped.parent.exists()  # built for the occasion, removed afterwards
