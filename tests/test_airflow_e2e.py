"""`airflow dags test` of the three DAGs over a small generated day, on SQLite in a
checkout-local AIRFLOW_HOME, with the inputs and the reports on a moto S3 server that Airflow
knows only as the ``aws_default`` Connection (``AIRFLOW_CONN_AWS_DEFAULT``, its endpoint in
``extra.endpoint_url``): no AWS_* variable reaches the Airflow process, so the sensor, the
report check, the alert, the downstream DAG and, through the variables the reconcile task
derives from the Connection, the Spark job all find S3 through it. Two audit runs, each a
module fixture that several tests read:

* run A, the daily DAG by spark-submit on a real standalone cluster on 127.0.0.1 (one 2-core
  worker, tests/spark_cluster.py: spark_default → spark://…, the library as --py-files), the
  generator's config and the log notifier: report, HTML and manifest on S3, alert per verdict;
* run B, the backfill DAG over its Params' window (the generated day, with its grace) through
  Spark Connect (the ``spark_connect_conn_id`` Param: a ``spark_connect`` Connection to the
  Spark Connect server the test starts as ``make connect-up`` does, tests/connect_server.py;
  no spark-submit, the audit runs in the task's Python as a client of that server), with
  thresholds that any count breaks, so the fail verdict goes through the Slack provider's
  notifier (a ``slackwebhook`` Connection) to a stand-in for Slack's endpoint on 127.0.0.1;
  check_report emits the report root's Asset event (an s3:// URI) and the OpenLineage
  provider (file transport) writes START and COMPLETE for reconcile. Then the downstream DAG
  ``delivery_audit_on_report`` reads, from S3, the report the event names and writes its
  ticket.

Both reports' figures equal the generator's truth.json, and run B's report is run A's apart
from the run metadata and what the strict thresholds change (the verdict's reasons, the
results suite's threshold expectation). (A notifier on a closed port is
tests/test_airflow_outputs.py's, at task level.) Slow (Spark + Airflow)."""

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
    differing_paths,
    layout_inputs,
    migrate,
    slack_stand_in,
    task_logs,
    task_states,
    truth_differences,
)
from connect_server import connect_server  # noqa: F401  (fixture: a Connect server, 127.0.0.1)
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)
from spark_cluster import spark_cluster_one_worker  # noqa: F401  (master + 1 two-core worker)

from delivery_audit.anomalies import ANOMALY_NAMES

pytestmark = pytest.mark.slow

DAY = "2026-11-19"
WID = "20261119T000000Z_20261120T000000Z"
BUCKET = "audit-reports"
INPUTS = "kafka-logs"
SOURCES = ("sends", "broker", "ledger", "events")
#: where run B's report differs from run A's (apart from ``run``), found by differing_paths
#: and each checked below: a fail threshold of 0 makes every non-zero count a verdict reason
#: and breaks the results suite's expectation "every count within its fail threshold"
STRICT_CHANGES = {"verdict.reasons", "results_validation.failed"}


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
        if f.is_file() and rel.split("/", 1)[0] in SOURCES:
            client.upload_file(str(f), INPUTS, rel)
    return client


def _env(report_root: str, endpoint: str, config: Path, extra: dict | None = None,
         **settings) -> dict[str, str]:
    return airflow_env(
        settings={"data_root": f"s3://{INPUTS}", "report_root": report_root,
                  "config_file": str(config), "notifier": {"type": "log"}, **settings},
        extra={"AIRFLOW_CONN_AWS_DEFAULT": aws_connection(endpoint), **(extra or {})})


def _show(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout + proc.stderr)[-6000:]


def _object(s3, key: str) -> dict:
    return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def _keys(s3, prefix: str) -> set[str]:
    return {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)
            .get("Contents", [])}


def _check_s3_went_through_the_connection(output: str, endpoint: str) -> None:
    """The sensor listed the inputs on S3, the job was given the Connection, no secret shown."""
    assert "S3 through Connection 'aws_default' (from the default)" in output
    for source in ("sends", "broker", "ledger"):
        assert re.search(rf"{source}: [1-9]\d* file\(s\) match s3://{INPUTS}/{source}/", output), \
            source
    assert (f"job environment from Connection 'aws_default': endpoint {endpoint}, region "
            "us-east-1, credentials") in output
    assert AWS_SECRET not in output  # masked by Airflow; never in XCom (the plan)


def _asset_events(uri: str) -> list[dict]:
    """The extras of the Asset's events in the metadata DB (SQLite), oldest first (Airflow
    stores a bare bucket's s3://bucket as s3://bucket/)."""
    con = sqlite3.connect(AIRFLOW_HOME / "airflow.db")
    try:
        rows = con.execute("SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                           "WHERE a.uri IN (?, ?) ORDER BY e.id",
                           (uri, uri.rstrip("/") + "/")).fetchall()
    finally:
        con.close()
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


# --- run A: the daily DAG by spark-submit on the standalone cluster ---------------------------

@pytest.fixture(scope="module")
def daily_run(day_data, s3, s3_endpoint, spark_cluster_one_worker) -> dict:  # noqa: F811
    """The daily DAG's run of the day on the cluster, once for the module: its process, task
    states, logs, the cluster's new applications and the published report (None: none)."""
    spark_cluster = spark_cluster_one_worker
    env = _env(f"s3://{BUCKET}/daily", s3_endpoint, day_data / "config.yaml",
               extra={"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
                   {"conn_type": "spark", "host": spark_cluster.master_url})},
               spark_conf={"spark.sql.shuffle.partitions": 2, "spark.default.parallelism": 2})
    apps_before = {a["id"] for a in spark_cluster.status().get("completedapps", [])}
    proc = dags_test("delivery_audit_daily", "2026-11-20", env=env)
    prefix = f"daily/dt={DAY}/{WID}/"
    keys = _keys(s3, prefix)
    return {"proc": proc, "states": task_states("delivery_audit_daily"), "keys": keys,
            "output": proc.stdout + proc.stderr + task_logs("delivery_audit_daily"),
            "apps": [a for a in spark_cluster.status().get("completedapps", [])
                     if a["id"] not in apps_before],
            "prefix": prefix, "report": _object(s3, prefix + "report.json")
            if prefix + "report.json" in keys else None}


def test_daily_dag_on_the_cluster_reads_s3_and_publishes_report_and_manifest_to_s3(
        daily_run, day_data, s3, s3_endpoint, spark_cluster_one_worker):  # noqa: F811
    spark_cluster = spark_cluster_one_worker
    proc, states, prefix = daily_run["proc"], daily_run["states"], daily_run["prefix"]
    output = daily_run["output"]
    assert proc.returncode == 0, _show(proc)
    for t in ("resolve_window", "wait_for_inputs", "reconcile", "check_report"):
        assert states[f"audit.{t}"] == "success", (states, _show(proc))
    _check_s3_went_through_the_connection(output, s3_endpoint)
    # it ran on the cluster, with the library shipped as --py-files: one app, finished
    assert f"--master {spark_cluster.master_url}" in output, _show(proc)
    assert "delivery_audit.zip" in output and "--py-files" in output, _show(proc)
    assert [a["state"] for a in daily_run["apps"]] == ["FINISHED"], daily_run["apps"]
    assert {prefix + "report.json", prefix + "report.html", prefix + "_manifest.json"} <= \
        daily_run["keys"]
    report = daily_run["report"]
    assert report["window"]["id"] == WID
    assert report["run"]["spark_session"] == "classic"
    assert all(f.startswith(f"s3://{INPUTS}/") for f in report["inputs"]["sends"]["files"])
    # the published figures are the faults the generator injected, no more, no fewer
    assert truth_differences(report, _truth(day_data)) == []
    verdict = report["verdict"]["verdict"]
    assert states["audit.alert"] == ("skipped" if verdict == "pass" else "success")
    if verdict != "pass":
        assert f"alert sent (notifier log): verdict {verdict}" in output, _show(proc)
    manifest = _object(s3, prefix + "_manifest.json")
    assert {f["path"] for f in manifest["files"]} >= {"report.json", "report.html"}
    # (a re-run replacing the window's prefix is proven on the same publish code in
    # tests/test_storage.py, without a second Spark job here)


# --- run B: the backfill DAG through Spark Connect, strict, Slack, Asset, lineage -------------

@pytest.fixture(scope="module")
def backfill_run(daily_run, day_data, s3, s3_endpoint, connect_server,  # noqa: F811
                 tmp_path_factory) -> dict:
    """The backfill DAG's run of the generated day (after run A: the Asset's newest event is
    this run's), once for the module."""
    tmp = tmp_path_factory.mktemp("backfill")
    config = yaml.safe_load((day_data / "config.yaml").read_text()) or {}
    config["thresholds"] = {name: {"fail": 0} for name in ANOMALY_NAMES}  # any count fails
    config.pop("notifier", None)
    strict = tmp / "strict.yaml"
    strict.write_text(yaml.safe_dump(config))
    lineage = tmp / "ol"
    lineage.mkdir()
    host, port = connect_server.url[len("sc://"):].rsplit(":", 1)
    truth = _truth(day_data)
    migrate()
    asset_uri = f"s3://{BUCKET}"
    events_before = len(_asset_events(asset_uri))
    with slack_stand_in() as (slack_url, slack):
        env = _env(asset_uri, s3_endpoint, strict,
                   notifier={"type": "slack", "conn_id": "slack_e2e"},
                   extra={"AIRFLOW_CONN_SPARK_CONNECT_E2E": json.dumps({
                              "conn_type": "spark_connect", "host": host, "port": int(port)}),
                          "AIRFLOW_CONN_SLACK_E2E": json.dumps({
                              "conn_type": "slackwebhook", "host": f"{slack_url}/services",
                              "password": "T000/B000/SLACKSECRET"}),
                          "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({
                              "type": "file", "log_file_path": str(lineage / "events.jsonl"),
                              "append": True}),
                          "AIRFLOW__OPENLINEAGE__NAMESPACE": "delivery-audit-e2e"})
        proc = dags_test("delivery_audit_backfill", env=env, conf={
            "start": truth["window"]["start"], "end": truth["window"]["end"],
            "grace_minutes": truth["window"]["grace_minutes"], "report_prefix": "backfill/e2e",
            "spark_connect_conn_id": "spark_connect_e2e"})
    window_dir = f"backfill/e2e/dt={DAY}/{WID}/"
    keys = _keys(s3, "backfill/")
    return {"proc": proc, "env": env, "states": task_states("delivery_audit_backfill"),
            "output": proc.stdout + proc.stderr + task_logs("delivery_audit_backfill"),
            "keys": keys, "window_dir": window_dir, "slack": list(slack.received),
            "report": _object(s3, window_dir + "report.json")
            if window_dir + "report.json" in keys else None,
            "asset_uri": asset_uri, "events": _asset_events(asset_uri)[events_before:],
            "lineage": [json.loads(line) for f in sorted(lineage.iterdir())
                        for line in f.read_text().splitlines() if line.strip()]}


def test_backfill_dag_audits_its_window_through_spark_connect_to_the_truth_and_fails(
        backfill_run, daily_run, day_data, s3_endpoint, connect_server):  # noqa: F811
    """Reconcile is a Spark Connect client of the test's server (no spark-submit); the window
    is the Params' (the generated day, with its grace); the report is the truth and, apart
    from the run and what the strict thresholds change (STRICT_CHANGES), run A's (its
    classic, cluster twin)."""
    proc, states, output = backfill_run["proc"], backfill_run["states"], backfill_run["output"]
    assert proc.returncode == 0, _show(proc)
    for t in ("resolve_window", "wait_for_inputs", "reconcile", "check_report", "alert"):
        assert states[f"audit.{t}"] == "success", (states, _show(proc))
    assert "Spark: Spark Connect through Connection 'spark_connect_e2e'" in output
    assert "auditing through Spark Connect (Connection 'spark_connect_e2e')" in output
    _check_s3_went_through_the_connection(output, s3_endpoint)
    window_dir = backfill_run["window_dir"]
    assert sorted(k for k in backfill_run["keys"] if k.endswith("report.json")) == \
        [window_dir + "report.json"]
    assert window_dir + "_manifest.json" in backfill_run["keys"]
    report, truth = backfill_run["report"], _truth(day_data)
    assert report["run"]["spark_session"] == "connect"
    jobs = connect_server.jobs_tagged(f"delivery-audit-{report['run']['run_id']}")
    assert jobs and all(j["status"] == "SUCCEEDED" for j in jobs)
    assert report["window"]["id"] == WID
    for field in ("start", "end", "grace_minutes"):
        assert report["window"][field] == truth["window"][field], field
    assert truth_differences(report, truth) == []
    assert report["verdict"]["verdict"] == "fail"
    classic = daily_run["report"]
    assert classic is not None, _show(daily_run["proc"])
    changed = differing_paths({k: v for k, v in report.items() if k != "run"},
                              {k: v for k, v in classic.items() if k != "run"})
    # run A (the generator's thresholds) fails too, on its critical counts: same verdict
    assert set(changed) == STRICT_CHANGES | (
        set() if classic["verdict"]["verdict"] == "fail" else {"verdict.verdict"}), changed
    counts = {k: v["count"] for k, v in report["anomalies"].items() if v.get("count")}
    assert counts and all(f"{name} = {n} > fail threshold 0" in report["verdict"]["reasons"]
                          for name, n in counts.items()), report["verdict"]["reasons"]
    assert report["results_validation"]["success"] is False
    # one more failed expectation, first in suite order: the threshold check (fail >= count),
    # broken by one (0, count) row per non-zero count; run A's failures follow alike, only
    # over a results table grown by those threshold rows (element_count)
    failed, before = report["results_validation"]["failed"], classic["results_validation"]["failed"]
    threshold, rest = failed[0], failed[1:]
    assert threshold["expectation"] == "expect_column_pair_values_a_to_be_greater_than_b", failed
    assert threshold["unexpected_count"] == len(counts), threshold
    assert all(fail == 0 and n > 0 for fail, n in threshold["examples"]), threshold
    assert [{k: v for k, v in f.items() if k != "element_count"} for f in rest] == \
        [{k: v for k, v in f.items() if k != "element_count"} for f in before], (rest, before)
    assert all(b["element_count"] > a["element_count"]
               for b, a in zip(rest, before, strict=True)), rest


def test_backfill_fail_goes_to_slack_the_asset_event_and_lineage(backfill_run):
    """The Slack POST names the verdict and the report's URLs (no secret in any output); the
    Asset event's extra the window, verdict, counts and report; lineage START and COMPLETE of
    reconcile every input, the report folder and the data-quality assertions."""
    output, report = backfill_run["output"], backfill_run["report"]
    assert report is not None, _show(backfill_run["proc"])
    report_dir, root = f"s3://{BUCKET}/{backfill_run['window_dir']}".rstrip("/"), \
        f"s3://{BUCKET}/backfill/e2e"
    assert "SLACKSECRET" not in output

    # 1. the alert: one POST to the webhook path of the Connection, naming verdict and report
    assert [r["path"] for r in backfill_run["slack"]] == ["/services/T000/B000/SLACKSECRET"]
    text = backfill_run["slack"][0]["body"]["text"]
    assert f"Kafka delivery audit {WID}: FAIL" in text
    assert f"Report: {report_dir}/report.html" in text
    assert f"All windows: {root}/index.html" in text
    assert "alert sent (notifier slack (Connection 'slack_e2e'))" in output, \
        _show(backfill_run["proc"])

    # 2. the Asset event: the report root's s3:// URI, the window, verdict and counts as extra
    assert len(backfill_run["events"]) == 1, (backfill_run["events"], _show(backfill_run["proc"]))
    extra = backfill_run["events"][0]
    counts = {k: v["count"] for k, v in report["anomalies"].items() if v.get("count")}
    assert extra["window"] == WID and extra["verdict"] == "fail"
    assert extra["start"] == report["window"]["start"] and extra["end"] == report["window"]["end"]
    assert extra["anomalies"] == counts and extra["report_json"] == f"{report_dir}/report.json"

    # 3. lineage: START and COMPLETE of reconcile, every input and the report folder on S3
    ol = backfill_run["lineage"]
    mine = {e["eventType"]: e for e in ol
            if e["job"]["name"] == "delivery_audit_backfill.audit.reconcile"}
    assert {"START", "COMPLETE"} <= set(mine), [(e["eventType"], e["job"]["name"]) for e in ol]
    folder = report_dir[len(f"s3://{BUCKET}/"):]
    for kind in ("START", "COMPLETE"):
        ev = mine[kind]
        assert sorted((i["namespace"], i["name"]) for i in ev["inputs"]) == \
            sorted((f"s3://{INPUTS}", f"{s}/dt=*/*.jsonl*") for s in SOURCES), ev["inputs"]
        assert {o["namespace"] for o in ev["outputs"]} == {f"s3://{BUCKET}"}
        assert folder in [o["name"] for o in ev["outputs"]], ev["outputs"]
    complete = {o["name"]: o for o in mine["COMPLETE"]["outputs"]}
    assertions = complete[f"{folder}/anomalies"]["facets"]["dataQualityAssertions"]
    by_name = {a["name"]: a for a in assertions["assertions"]}
    assert by_name["verdict"]["success"] is False and by_name["verdict"]["actual"] == "fail"
    assert {n: int(a["actual"]) for n, a in by_name.items() if n != "verdict" and
            int(a["actual"])} == counts


def test_downstream_dag_reads_the_s3_report_the_event_names_and_writes_its_ticket(
        backfill_run, tmp_path):
    """delivery_audit_on_report, on the same s3:// Asset: the newest event (run B's) names a
    report on S3, read through the event's AWS Connection; a fail → a ticket."""
    report = backfill_run["report"]
    assert report is not None, _show(backfill_run["proc"])
    tickets = tmp_path / "tickets"
    down = dags_test("delivery_audit_on_report", conf={"ticket_dir": str(tickets)},
                     env=backfill_run["env"])
    assert down.returncode == 0, _show(down)
    assert task_states("delivery_audit_on_report") == {"read_report": "success"}, _show(down)
    assert AWS_SECRET not in down.stdout + down.stderr
    ticket = json.loads((tickets / f"{WID}.json").read_text())
    assert ticket["window"] == WID and ticket["verdict"] == "fail"
    assert ticket["report"] == f"s3://{BUCKET}/{backfill_run['window_dir']}report.html"
    assert ticket["anomalies"] == {k: v["count"] for k, v in report["anomalies"].items()
                                   if v.get("count")}
