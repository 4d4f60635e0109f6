"""`airflow dags test` of both DAGs over a small generated day, on SQLite in a checkout-local
AIRFLOW_HOME, with the inputs and the reports on a moto S3 server that Airflow knows only as
the ``aws_default`` Connection (``AIRFLOW_CONN_AWS_DEFAULT``, its endpoint in
``extra.endpoint_url``): no AWS_* variable reaches the Airflow process, so the sensor, the
report check, the alert and, through the variables the reconcile task derives from the
Connection, the Spark job all find S3 through it. The daily run uses Spark local[2]; the
backfill run submits to a real standalone cluster on 127.0.0.1 (tests/spark_cluster.py), so the
DAG-on-cluster path (spark_default → spark://…, --py-files) is covered without a third Airflow
run. The daily DAG runs a second time in Connect mode (the ``spark_connect_conn_id`` Param: a
``spark_connect`` Connection to a Spark Connect server on 127.0.0.1 that the test starts as
``make connect-up`` does, tests/connect_server.py): no spark-submit, the audit runs in the
task's Python as a client of that server, and its report equals the spark-submit run's. Every
published report's figures equal the generator's truth.json. One more run, on local folders,
covers the Airflow-native outputs at once (issue 34): the Slack provider's notifier to a
stand-in endpoint, the report root's Asset event and the downstream DAG that reads it, and
OpenLineage's file transport. Slow (Spark + Airflow)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import boto3
import pytest
import yaml
from airflow_helpers import (
    AIRFLOW_HOME,
    AWS_SECRET,
    VENV_BIN,
    airflow_env,
    aws_connection,
    dags_test,
    layout_inputs,
    slack_stand_in,
    task_logs,
    task_states,
    truth_differences,
)
from connect_server import connect_server  # noqa: F401  (fixture: a Connect server, 127.0.0.1)
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)
from spark_cluster import spark_cluster  # noqa: F401  (fixture: master + 2 workers, 127.0.0.1)

from delivery_audit.anomalies import ANOMALY_NAMES

pytestmark = pytest.mark.slow

DAY = "2026-11-19"
WID = "20261119T000000Z_20261120T000000Z"
BUCKET = "audit-reports"
INPUTS = "kafka-logs"


@pytest.fixture(scope="module")
def day_data(tmp_path_factory) -> Path:
    """A small mixed day in the DAG's layout: <root>/<source>/dt=<day>/part-*.jsonl, and the
    generator's config.yaml (the audit config stays a local file) and truth.json."""
    root = tmp_path_factory.mktemp("airflow-e2e")
    gen = root / "generated"
    out = subprocess.run([str(VENV_BIN / "delivery-audit"), "generate", "--scenario", "mixed",
                          "--messages", "1500", "--seed", "11", "--start", f"{DAY}T00:00:00Z",
                          "--out", str(gen)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    data = root / "data"
    layout_inputs(gen, data, DAY)
    (data / "config.yaml").write_text((gen / "config.yaml").read_text())
    (data / "truth.json").write_text((gen / "truth.json").read_text())
    return data


def _truth(day_data: Path) -> dict:
    truth = json.loads((day_data / "truth.json").read_text())
    assert truth["window"] == {"start": f"{DAY}T00:00:00Z", "end": "2026-11-20T00:00:00Z",
                               "grace_minutes": 60}  # the daily window, the config's grace
    return truth


@pytest.fixture(scope="module")
def s3(s3_endpoint, day_data):  # noqa: F811
    """The report bucket, and the day's inputs uploaded to s3://kafka-logs/<source>/dt=<day>/."""
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    client.create_bucket(Bucket=INPUTS)
    for f in sorted(day_data.rglob("*")):
        rel = f.relative_to(day_data).as_posix()
        if f.is_file() and rel.split("/", 1)[0] in ("sends", "broker", "ledger", "events"):
            client.upload_file(str(f), INPUTS, rel)
    return client


def _env(report_root: str, endpoint: str, config: Path, master: str | None = None,
         connect: dict | None = None, **settings) -> dict[str, str]:
    extra = {"AIRFLOW_CONN_AWS_DEFAULT": aws_connection(endpoint)}
    if master:
        extra["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": master})
    if connect:
        extra["AIRFLOW_CONN_SPARK_CONNECT_E2E"] = json.dumps(connect)
    return airflow_env(
        settings={"data_root": f"s3://{INPUTS}", "report_root": report_root,
                  "config_file": str(config), "notifier": {"type": "log"}, **settings},
        extra=extra)


def _show(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout + proc.stderr)[-6000:]


def _check_s3_went_through_the_connection(output: str, endpoint: str) -> None:
    """The sensor listed the inputs on S3, the job was given the Connection, no secret shown."""
    assert "S3 through Connection 'aws_default' (from the default)" in output
    for source in ("sends", "broker", "ledger"):
        assert re.search(rf"{source}: [1-9]\d* file\(s\) match s3://{INPUTS}/{source}/", output), \
            source
    assert (f"job environment from Connection 'aws_default': endpoint {endpoint}, region "
            "us-east-1, credentials") in output
    assert AWS_SECRET not in output  # masked by Airflow; never in XCom (the plan)


@pytest.fixture(scope="module")
def daily_run(day_data, s3, s3_endpoint) -> dict:  # noqa: F811
    """The daily DAG's spark-submit run of the day (local[2]), once for the module: its
    process, task states, logs and published report (None when it published none)."""
    env = _env(f"s3://{BUCKET}/daily", s3_endpoint, day_data / "config.yaml")
    proc = dags_test("delivery_audit_daily", "2026-11-20", env=env)
    prefix = f"daily/dt={DAY}/{WID}/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
            .get("Contents", [])}
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "report.json")["Body"]
                        .read()) if prefix + "report.json" in keys else None
    return {"proc": proc, "states": task_states("delivery_audit_daily"), "keys": keys,
            "output": proc.stdout + proc.stderr + task_logs("delivery_audit_daily"),
            "prefix": prefix, "report": report}


def test_daily_dag_reads_s3_and_publishes_report_and_manifest_to_s3(daily_run, day_data, s3,
                                                                    s3_endpoint):  # noqa: F811
    proc, states, prefix = daily_run["proc"], daily_run["states"], daily_run["prefix"]
    assert proc.returncode == 0, _show(proc)
    for t in ("resolve_window", "wait_for_inputs", "reconcile", "check_report"):
        assert states[f"audit.{t}"] == "success", (states, _show(proc))
    _check_s3_went_through_the_connection(daily_run["output"], s3_endpoint)
    assert {prefix + "report.json", prefix + "report.html", prefix + "_manifest.json"} <= \
        daily_run["keys"]
    report = daily_run["report"]
    assert report["window"]["id"] == WID
    assert all(f.startswith(f"s3://{INPUTS}/") for f in report["inputs"]["sends"]["files"])
    # the published figures are the faults the generator injected, no more, no fewer
    assert truth_differences(report, _truth(day_data)) == []
    verdict = report["verdict"]["verdict"]
    assert states["audit.alert"] == ("skipped" if verdict == "pass" else "success")
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=prefix + "_manifest.json")
                          ["Body"].read())
    assert {f["path"] for f in manifest["files"]} >= {"report.json", "report.html"}
    # (a re-run replacing the window's prefix is proven on the same publish code in
    # tests/test_storage.py, without a second Spark job here)


def test_daily_dag_audits_through_spark_connect(daily_run, day_data, s3,
                                                s3_endpoint,  # noqa: F811
                                                connect_server):  # noqa: F811
    """The daily DAG with the spark_connect_conn_id Param: reconcile is a Spark Connect client
    of the test's server (no spark-submit, no JVM of its own); the report is the one its
    classic twin (the spark-submit run of the same day, ``daily_run``) published, apart from
    the run metadata, and both are the truth."""
    host, port = connect_server.url[len("sc://"):].rsplit(":", 1)
    env = _env(f"s3://{BUCKET}/daily-connect", s3_endpoint, day_data / "config.yaml",
               connect={"conn_type": "spark_connect", "host": host, "port": int(port)})
    proc = dags_test("delivery_audit_daily", "2026-11-20", conf={
        "spark_connect_conn_id": "spark_connect_e2e"}, env=env)
    assert proc.returncode == 0, _show(proc)
    states = task_states("delivery_audit_daily")
    for t in ("resolve_window", "wait_for_inputs", "reconcile", "check_report"):
        assert states[f"audit.{t}"] == "success", (states, _show(proc))
    output = proc.stdout + proc.stderr + task_logs("delivery_audit_daily")
    assert "Spark: Spark Connect through Connection 'spark_connect_e2e'" in output
    assert "auditing through Spark Connect (Connection 'spark_connect_e2e')" in output
    _check_s3_went_through_the_connection(output, s3_endpoint)
    key = f"daily-connect/dt={DAY}/{WID}/report.json"
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    assert report["run"]["spark_session"] == "connect"
    jobs = connect_server.jobs_tagged(f"delivery-audit-{report['run']['run_id']}")
    assert jobs and all(j["status"] == "SUCCEEDED" for j in jobs)
    classic = daily_run["report"]
    assert classic is not None, _show(daily_run["proc"])
    assert classic["run"]["spark_session"] == "classic"
    assert {k: v for k, v in report.items() if k != "run"} == \
        {k: v for k, v in classic.items() if k != "run"}
    assert truth_differences(report, _truth(day_data)) == []


def test_backfill_dag_audits_its_window_to_the_truth_and_alerts_on_fail(
        day_data, s3, s3_endpoint, tmp_path, spark_cluster):  # noqa: F811
    """One backfill run, on the standalone cluster, inputs and reports on S3: the window of
    its Params (the generated day, with its grace), whose report equals the generator's
    truth; with thresholds that any count breaks, the alert path (exit 3 is a result, the
    alert task reads the report from S3 and sends it through the log notifier)."""
    config = yaml.safe_load((day_data / "config.yaml").read_text()) or {}
    config["thresholds"] = {name: {"fail": 0} for name in ANOMALY_NAMES}  # any count fails
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(config))
    env = _env(f"s3://{BUCKET}", s3_endpoint, strict, master=spark_cluster.master_url,
               spark_conf={"spark.sql.shuffle.partitions": 2, "spark.default.parallelism": 2})
    apps_before = {a["id"] for a in spark_cluster.status().get("completedapps", [])}
    truth = _truth(day_data)
    conf = {"start": truth["window"]["start"], "end": truth["window"]["end"],
            "grace_minutes": truth["window"]["grace_minutes"],
            "report_prefix": "backfill/e2e"}
    proc = dags_test("delivery_audit_backfill", conf=conf, env=env)
    assert proc.returncode == 0, _show(proc)
    window_dir = f"backfill/e2e/dt={DAY}/{WID}/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="backfill/")["Contents"]}
    assert sorted(k for k in keys if k.endswith("report.json")) == [window_dir + "report.json"]
    assert window_dir + "_manifest.json" in keys
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=window_dir + "report.json")
                        ["Body"].read())
    assert report["window"]["id"] == WID
    assert report["window"]["start"] == truth["window"]["start"]
    assert report["window"]["end"] == truth["window"]["end"]
    assert report["window"]["grace_minutes"] == truth["window"]["grace_minutes"]
    assert truth_differences(report, truth) == []
    assert report["verdict"]["verdict"] == "fail"
    states = task_states("delivery_audit_backfill")
    assert states["audit.reconcile"] == "success" and states["audit.alert"] == "success"
    output = proc.stdout + proc.stderr + task_logs("delivery_audit_backfill")
    _check_s3_went_through_the_connection(output, s3_endpoint)
    assert "alert sent (notifier log): verdict fail" in output, _show(proc)
    assert f"Kafka delivery audit {WID}: FAIL" in output, _show(proc)
    # it ran on the cluster, with the library shipped as --py-files
    assert f"--master {spark_cluster.master_url}" in output, _show(proc)
    assert "delivery_audit.zip" in output and "--py-files" in output, _show(proc)
    apps = [a for a in spark_cluster.status().get("completedapps", [])
            if a["id"] not in apps_before]
    assert [a["state"] for a in apps] == ["FINISHED"], apps


def _asset_events(uri: str) -> list[dict]:
    """The extras of the Asset's events in the metadata DB (SQLite), oldest first."""
    con = sqlite3.connect(AIRFLOW_HOME / "airflow.db")
    try:
        rows = con.execute("SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                           "WHERE a.uri = ? ORDER BY e.id", (uri,)).fetchall()
    finally:
        con.close()
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


def test_outputs_alert_through_slack_asset_event_downstream_dag_and_lineage(day_data, tmp_path):
    """One backfill run of a 2 h window, locally (inputs and reports in folders), with
    thresholds that any count breaks: the fail verdict goes through the Slack provider's
    notifier (a Slack webhook Connection, AIRFLOW_CONN_SLACK_E2E) to a stand-in for Slack's
    endpoint on 127.0.0.1, check_report emits the report root's Asset event, and the
    OpenLineage provider (file transport) writes START and COMPLETE for reconcile with every
    input and the report folder. Then the downstream DAG reads the report the event names
    and writes its ticket."""
    config = yaml.safe_load((day_data / "config.yaml").read_text()) or {}
    config["thresholds"] = {name: {"fail": 0} for name in ANOMALY_NAMES}  # any count fails
    config.pop("notifier", None)
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(config))
    reports, tickets, lineage = tmp_path / "reports", tmp_path / "tickets", tmp_path / "ol"
    lineage.mkdir()
    with slack_stand_in() as (slack_url, slack):
        env = airflow_env(
            settings={"data_root": str(day_data), "report_root": str(reports),
                      "config_file": str(strict),
                      "notifier": {"type": "slack", "conn_id": "slack_e2e"},
                      "spark_conf": {"spark.sql.shuffle.partitions": 2}},
            extra={"AIRFLOW_CONN_SLACK_E2E": json.dumps({
                       "conn_type": "slackwebhook",
                       "host": f"{slack_url}/services",
                       "password": "T000/B000/SLACKSECRET"}),
                   "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({
                       "type": "file", "log_file_path": str(lineage / "events.jsonl"),
                       "append": True}),
                   "AIRFLOW__OPENLINEAGE__NAMESPACE": "delivery-audit-e2e"})
        start, end = f"{DAY}T10:00:00Z", f"{DAY}T12:00:00Z"
        proc = dags_test("delivery_audit_backfill",
                         conf={"start": start, "end": end, "grace_minutes": 60}, env=env)
    (tmp_path / "backfill-output.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, _show(proc)
    states = task_states("delivery_audit_backfill")
    assert states["audit.check_report"] == "success" and states["audit.alert"] == "success", \
        (states, _show(proc))
    wid = "20261119T100000Z_20261119T120000Z"
    report_dir = reports / f"dt={DAY}" / wid
    report = json.loads((report_dir / "report.json").read_text())
    assert report["verdict"]["verdict"] == "fail"
    output = proc.stdout + proc.stderr + task_logs("delivery_audit_backfill")
    assert "SLACKSECRET" not in output

    # 1. the alert: one POST to the webhook path of the Connection, naming verdict and report
    assert [r["path"] for r in slack.received] == ["/services/T000/B000/SLACKSECRET"]
    text = slack.received[0]["body"]["text"]
    assert f"Kafka delivery audit {wid}: FAIL" in text
    assert f"Report: {report_dir}/report.html" in text
    assert f"All windows: {reports}/index.html" in text
    assert "alert sent (notifier slack (Connection 'slack_e2e'))" in output, _show(proc)

    # 2. the Asset event: the report root's URI, the window, verdict and counts as extra
    events = _asset_events(reports.as_uri())
    assert events, _show(proc)
    extra = events[-1]
    counts = {k: v["count"] for k, v in report["anomalies"].items() if v.get("count")}
    assert extra["window"] == wid and extra["verdict"] == "fail"
    assert extra["anomalies"] == counts and extra["report_json"] == f"{report_dir}/report.json"

    # 3. lineage: START and COMPLETE of reconcile, every input and the report folder
    ol = [json.loads(line) for f in sorted(lineage.iterdir())
          for line in f.read_text().splitlines() if line.strip()]
    mine = {e["eventType"]: e for e in ol
            if e["job"]["name"] == "delivery_audit_backfill.audit.reconcile"}
    assert {"START", "COMPLETE"} <= set(mine), [(e["eventType"], e["job"]["name"]) for e in ol]
    sources = [str(day_data / s / "dt=*" / "*.jsonl*") for s in ("sends", "broker", "ledger",
                                                                  "events")]
    for kind in ("START", "COMPLETE"):
        ev = mine[kind]
        assert sorted(i["name"] for i in ev["inputs"]) == sorted(sources), ev["inputs"]
        assert {o["namespace"] for o in ev["inputs"] + ev["outputs"]} == {"file"}
        assert str(report_dir) in [o["name"] for o in ev["outputs"]], ev["outputs"]
    complete = {o["name"]: o for o in mine["COMPLETE"]["outputs"]}
    assertions = complete[f"{report_dir}/anomalies"]["facets"]["dataQualityAssertions"]
    by_name = {a["name"]: a for a in assertions["assertions"]}
    assert by_name["verdict"]["success"] is False and by_name["verdict"]["actual"] == "fail"
    assert {n: int(a["actual"]) for n, a in by_name.items() if n != "verdict" and
            int(a["actual"])} == counts

    # 4. the downstream DAG: the Asset's newest event names this report; a fail → a ticket
    down = dags_test("delivery_audit_on_report", conf={"ticket_dir": str(tickets)}, env=env)
    assert down.returncode == 0, _show(down)
    assert task_states("delivery_audit_on_report") == {"read_report": "success"}, _show(down)
    ticket = json.loads((tickets / f"{wid}.json").read_text())
    assert ticket["window"] == wid and ticket["verdict"] == "fail"
    assert ticket["report"] == f"{report_dir}/report.html"
    assert ticket["anomalies"] == counts
