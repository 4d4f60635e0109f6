"""`airflow dags test` of both DAGs over a small generated day, on SQLite in a checkout-local
AIRFLOW_HOME, reports published to a moto S3 server. The daily run uses Spark local[2]; the
backfill run submits to a real standalone cluster on 127.0.0.1 (tests/spark_cluster.py), so
the DAG-on-cluster path (spark_default → spark://…, --py-files) is covered without a third
Airflow run. Slow (Spark + Airflow)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from airflow_helpers import (
    VENV_BIN,
    airflow_env,
    dags_test,
    layout_inputs,
    s3_env,
    task_logs,
    task_states,
)
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)
from spark_cluster import spark_cluster  # noqa: F401  (fixture: master + 2 workers, 127.0.0.1)

pytestmark = pytest.mark.slow

DAY = "2026-11-19"
WID = "20261119T000000Z_20261120T000000Z"
BUCKET = "audit-reports"


@pytest.fixture(scope="module")
def day_data(tmp_path_factory) -> Path:
    """A small mixed day in the DAG's layout: <root>/<source>/dt=<day>/part-*.jsonl."""
    root = tmp_path_factory.mktemp("airflow-e2e")
    gen = root / "generated"
    out = subprocess.run([str(VENV_BIN / "delivery-audit"), "generate", "--scenario", "mixed",
                          "--messages", "1500", "--seed", "11", "--start", f"{DAY}T00:00:00Z",
                          "--out", str(gen)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    data = root / "data"
    layout_inputs(gen, data, DAY)
    (data / "config.yaml").write_text((gen / "config.yaml").read_text())
    return data


@pytest.fixture(scope="module")
def s3(s3_endpoint):  # noqa: F811
    import boto3

    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def _env(day_data: Path, report_root: str, endpoint: str, config: Path | None = None,
         master: str | None = None, **variables: str) -> dict[str, str]:
    extra = s3_env(endpoint)
    if master:
        extra["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": master})
    return airflow_env(
        variables={"data_root": str(day_data), "report_root": report_root,
                   "config_file": str(config or day_data / "config.yaml"),
                   "notifier": '{"type": "log"}', **variables},
        extra=extra)


def _show(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout + proc.stderr)[-6000:]


def test_daily_dag_publishes_report_and_manifest_to_s3(day_data, s3, s3_endpoint):  # noqa: F811
    env = _env(day_data, f"s3://{BUCKET}/daily", s3_endpoint)
    proc = dags_test("delivery_audit_daily", "2026-11-20", env=env)
    assert proc.returncode == 0, _show(proc)
    states = task_states("delivery_audit_daily")
    for t in ("resolve_window", "wait_for_inputs", "reconcile", "check_report"):
        assert states[f"audit.{t}"] == "success", (states, _show(proc))
    prefix = f"daily/dt={DAY}/{WID}/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]}
    assert {prefix + "report.json", prefix + "report.html", prefix + "_manifest.json"} <= keys
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "report.json")["Body"].read())
    assert report["window"]["id"] == WID
    verdict = report["verdict"]["verdict"]
    assert states["audit.alert"] == ("skipped" if verdict == "pass" else "success")
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "_manifest.json")
                          ["Body"].read())
    assert {f["path"] for f in manifest["files"]} >= {"report.json", "report.html"}
    # (a re-run replacing the window's prefix is proven on the same publish code in
    # tests/test_storage.py, without a second Spark job here)


def test_backfill_dag_judges_only_the_window_and_alerts_on_fail(day_data, s3_endpoint,  # noqa: F811
                                                                tmp_path, spark_cluster):  # noqa: F811
    """One backfill run, on the standalone cluster, checks the window and, with thresholds
    that any count breaks, the alert path (exit 3 is a result, the alert task sends through
    the log notifier)."""
    import yaml

    from delivery_audit.anomalies import ANOMALY_NAMES

    config = yaml.safe_load((day_data / "config.yaml").read_text()) or {}
    config["thresholds"] = {name: {"fail": 0} for name in ANOMALY_NAMES}  # any count fails
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(config))
    reports = tmp_path / "reports"
    env = _env(day_data, str(reports), s3_endpoint, config=strict,
               master=spark_cluster.master_url,
               spark_conf=json.dumps({"spark.sql.shuffle.partitions": "2",
                                      "spark.default.parallelism": "2"}))
    apps_before = {a["id"] for a in spark_cluster.status().get("completedapps", [])}
    conf = {"start": f"{DAY}T10:00:00Z", "end": f"{DAY}T12:00:00Z", "grace_minutes": 30,
            "report_prefix": "backfill/e2e"}
    proc = dags_test("delivery_audit_backfill", conf=conf, env=env)
    assert proc.returncode == 0, _show(proc)
    found = sorted(reports.rglob("report.json"))
    assert [p.relative_to(reports).as_posix() for p in found] == \
        [f"backfill/e2e/dt={DAY}/20261119T100000Z_20261119T120000Z/report.json"]
    report = json.loads(found[0].read_text())
    assert report["window"]["id"] == "20261119T100000Z_20261119T120000Z"
    assert report["window"]["start"] == f"{DAY}T10:00:00Z"
    assert report["window"]["end"] == f"{DAY}T12:00:00Z"
    assert report["window"]["grace_minutes"] == 30
    assert 0 < report["judged"] < 1500  # two hours of the day, not the day
    assert (found[0].parent / "_manifest.json").is_file()
    assert report["verdict"]["verdict"] == "fail"
    states = task_states("delivery_audit_backfill")
    assert states["audit.reconcile"] == "success" and states["audit.alert"] == "success"
    output = proc.stdout + proc.stderr + task_logs("delivery_audit_backfill")
    assert "alert sent (notifier log): verdict fail" in output, _show(proc)
    assert "Kafka delivery audit 20261119T100000Z_20261119T120000Z: FAIL" in output, _show(proc)
    # it ran on the cluster, with the library shipped as --py-files
    assert f"--master {spark_cluster.master_url}" in output, _show(proc)
    assert "delivery_audit.zip" in output and "--py-files" in output, _show(proc)
    apps = [a for a in spark_cluster.status().get("completedapps", [])
            if a["id"] not in apps_before]
    assert [a["state"] for a in apps] == ["FINISHED"], apps
