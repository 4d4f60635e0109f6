"""The DAGs' optional snapshot task (issue 32): the plan it follows (the ``snapshot`` Param,
topics, groups, the ``kafka`` Connection, the window + grace it reads, where it lands and what
reconcile is then given), the provider Connection read without showing a secret, the folder
a rerun replaces, and one ``airflow dags test`` of the daily DAG with the snapshot on against
librdkafka's mock cluster loaded by the test's own recording producer and consumer.

The mock cluster lives in this process: its brokers are TCP listeners on 127.0.0.1 served by
librdkafka's own (native) threads, which keep serving while this process waits in
``subprocess.run``; so the ``airflow dags test`` subprocess (the snapshot task runs in it)
reaches it as any client would, through the Connection ``AIRFLOW_CONN_KAFKA_E2E``.
"""

from __future__ import annotations

import gc
import gzip
import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from airflow_helpers import airflow_env, dags_test, task_logs, task_states
from connect_server import connect_server  # noqa: F401  (fixture: a Connect server, 127.0.0.1)
from delivery_audit_airflow import aws, uris  # noqa: E402
from delivery_audit_airflow.connect import request_fields  # noqa: E402
from delivery_audit_airflow.kafka_snapshot import (  # noqa: E402
    SnapshotConfigError,
    client_config,
    describe_config,
    replace_folder,
)
from delivery_audit_airflow.plan import PlanError, build_plan, job_args  # noqa: E402
from delivery_audit_airflow.settings import Settings  # noqa: E402
from mock_cluster import mock_cluster
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)

from delivery_audit.anomalies import ANOMALY_NAMES  # noqa: E402

START = datetime(2026, 11, 19, tzinfo=UTC)
END = START + timedelta(days=1)
WID = "20261119T000000Z_20261120T000000Z"


def _plan(params=None, request=None, **settings):
    return build_plan(start=START, end=END, settings=Settings.of(data_root="/lake", **settings),
                      request=request, params=params or {})


def test_the_snapshot_is_off_by_default_and_the_plan_audits_the_broker_glob():
    plan = _plan()
    assert plan["snapshot"] is None and plan["offsets"] is None
    assert plan["sources"]["broker"] == "/lake/broker/dt=*/*.jsonl*"
    assert "--offsets" not in job_args(plan, None)
    # the Param false beats a Variable that turns it on
    assert _plan({"snapshot": False}, snapshot=True, snapshot_topics=["orders"])["snapshot"] \
        is None


def test_the_snapshot_param_plans_a_read_of_the_window_plus_grace_that_reconcile_audits():
    plan = _plan({"snapshot": True, "snapshot_topics": ["orders", "payments"],
                  "snapshot_groups": ["billing"], "kafka_conn_id": "kafka_prod"},
                 grace="30m")
    snap = plan["snapshot"]
    folder = f"/lake/snapshot/dt=2026-11-19/{WID}"
    assert snap == {"dir": folder, "topics": ["orders", "payments"], "groups": ["billing"],
                    "kafka_conn_id": "kafka_prod", "kafka_conn_from": "run",
                    "from": None, "to": "2026-11-20T00:30:00Z",
                    "broker": f"{folder}/broker/*", "offsets": f"{folder}/offsets.json"}
    args = job_args(plan, None)
    assert args[args.index("--broker") + 1] == f"{folder}/broker/*"
    assert args[args.index("--offsets") + 1] == f"{folder}/offsets.json"
    assert plan["sources"]["sends"] == "/lake/sends/dt=*/*.jsonl*"  # the others unchanged
    # the Connect path (spark_connect_conn_id) audits the same snapshot
    fields = request_fields(plan)
    assert fields["broker"] == [f"{folder}/broker/*"]
    assert fields["offsets"] == f"{folder}/offsets.json"
    json.dumps(plan)  # XCom: JSON, and no client config in it
    assert "bootstrap" not in json.dumps(plan)


def test_the_snapshot_reads_what_the_job_reads_of_the_broker_side(tmp_path):
    """Contract rule 6: up to end + grace (the config's grace wins over the Variable's), from
    the log start unless the audit config's lookback_minutes bounds the read."""
    config = tmp_path / "audit.yaml"
    config.write_text("grace_minutes: 90\nlookback_minutes: 120\n")
    snap = _plan({"snapshot": True, "snapshot_topics": ["orders"]}, grace="30m",
                 config_file=str(config))["snapshot"]
    assert (snap["from"], snap["to"]) == ("2026-11-18T22:00:00Z", "2026-11-20T01:30:00Z")
    # the backfill's own grace_minutes beats the config's
    snap = _plan({"snapshot": True, "snapshot_topics": ["orders"]},
                 request={"grace_minutes": 5.0}, config_file=str(config))["snapshot"]
    assert snap["to"] == "2026-11-20T00:05:00Z"


def test_snapshot_settings_precedence_and_refusals():
    # the Variable turns it on for scheduled runs, with its topics, groups and Connection
    plan = _plan(snapshot=True, snapshot_topics=["orders"], snapshot_groups=["g1"],
                 kafka_conn_id="kafka_lake", snapshot_dir="s3://lake/snap/{ds_nodash}")
    assert plan["snapshot"]["topics"] == ["orders"] and plan["snapshot"]["groups"] == ["g1"]
    assert plan["snapshot"]["kafka_conn_id"] == "kafka_lake"
    assert plan["snapshot"]["kafka_conn_from"] == "variable"
    assert plan["offsets"] == "s3://lake/snap/20261119/offsets.json"
    # the backfill's topics and groups when no snapshot_* Param is given; kafka_default
    plan = _plan({"snapshot": True}, request={"topics": ["t1"], "groups": ["g2"]})
    assert (plan["snapshot"]["topics"], plan["snapshot"]["groups"]) == (["t1"], ["g2"])
    assert (plan["snapshot"]["kafka_conn_id"], plan["snapshot"]["kafka_conn_from"]) == \
        ("kafka_default", "default")
    with pytest.raises(PlanError, match="the snapshot needs topics"):
        _plan({"snapshot": True})
    with pytest.raises(PlanError, match="snapshot_topics: 'a b' is not a valid name"):
        _plan({"snapshot": True, "snapshot_topics": ["a b"]})
    with pytest.raises(PlanError, match="kafka_conn_id 'x y' is not a connection id"):
        _plan({"snapshot": True, "snapshot_topics": ["t"], "kafka_conn_id": "x y"})
    with pytest.raises(PlanError, match="snapshot_dir"):
        _plan({"snapshot": True, "snapshot_topics": ["t"]}, snapshot_dir="s3a://lake/snap")


def test_the_kafka_connection_is_read_through_the_provider_and_no_secret_is_shown(
        monkeypatch):
    secret = "scram-secret-e2e"
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_AUDIT", json.dumps({
        "conn_type": "kafka", "extra": {
            "bootstrap.servers": "b-1.example:9096,b-2.example:9096",
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "audit", "sasl.password": secret, "group.id": "airflow",
            "ssl.ca.location": "/etc/ssl/ca.pem", "socket.timeout.ms": 10000}}))
    bootstrap, config, notes = client_config("kafka_audit")
    assert bootstrap == "b-1.example:9096,b-2.example:9096"
    assert config == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                      "sasl.username": "audit", "sasl.password": secret,
                      "ssl.ca.location": "/etc/ssl/ca.pem", "socket.timeout.ms": "10000"}
    assert notes == ["group.id (the snapshot joins no group and reads every batch)"]
    shown = describe_config(config)
    assert secret not in shown and "audit" not in shown
    assert "sasl.password=***" in shown and "security.protocol=SASL_SSL" in shown
    assert "sasl.mechanism=SCRAM-SHA-512" in shown
    monkeypatch.setenv("AIRFLOW_CONN_NOT_KAFKA", json.dumps({"conn_type": "aws"}))
    with pytest.raises(SnapshotConfigError, match="needs a 'kafka' Connection"):
        client_config("not_kafka")
    monkeypatch.setenv("AIRFLOW_CONN_NO_SERVERS", json.dumps({
        "conn_type": "kafka", "extra": {"security.protocol": "SSL"}}))
    with pytest.raises(SnapshotConfigError, match="no bootstrap.servers"):
        client_config("no_servers")


def _staged(root: Path, partitions: dict[str, str]) -> Path:
    out = root / "snapshot"
    (out / "broker").mkdir(parents=True)
    for name, text in partitions.items():
        (out / "broker" / name).write_bytes(gzip.compress(text.encode()))
    (out / "offsets.json").write_text(json.dumps({"taken_at": "2026-11-20T01:00:00Z"}))
    return out


def test_a_rerun_replaces_the_snapshot_folder_locally_and_on_s3(
        tmp_path, s3_endpoint, monkeypatch):  # noqa: F811
    import boto3

    target = tmp_path / "lake" / "snapshot" / "dt=2026-11-19" / WID
    first = _staged(tmp_path / "run1", {"orders-0.jsonl.gz": "a", "orders-1.jsonl.gz": "b"})
    names = replace_folder(first, str(target), uris.on(None))
    assert names[-1] == "offsets.json"  # written last
    second = _staged(tmp_path / "run2", {"orders-0.jsonl.gz": "c"})  # a partition fewer
    replace_folder(second, str(target), uris.on(None))
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()) \
        == ["broker/orders-0.jsonl.gz", "offsets.json"]
    assert gzip.decompress((target / "broker" / "orders-0.jsonl.gz").read_bytes()) == b"c"
    assert [p.name for p in target.parent.iterdir()] == [WID]  # no staging or old folder left

    monkeypatch.setenv("AIRFLOW_CONN_SNAP_S3", json.dumps({
        "conn_type": "aws", "login": "testing", "password": "testing",
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}))
    aws.s3_hook.cache_clear()
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="snap-lake")
    uri = f"s3://snap-lake/snapshot/dt=2026-11-19/{WID}"
    replace_folder(_staged(tmp_path / "s3run1", {"orders-0.jsonl.gz": "a",
                                                 "orders-1.jsonl.gz": "b"}),
                   uri, uris.on("snap_s3"))
    replace_folder(_staged(tmp_path / "s3run2", {"orders-0.jsonl.gz": "c"}), uri,
                   uris.on("snap_s3"))
    assert uris.on("snap_s3").list_files(uri) == ["broker/orders-0.jsonl.gz", "offsets.json"]
    body = client.get_object(Bucket="snap-lake", Key=f"snapshot/dt=2026-11-19/{WID}/broker/"
                             "orders-0.jsonl.gz")["Body"].read()
    assert gzip.decompress(body) == b"c"


# --- the DAG run against the mock cluster ---------------------------------------------------

TOPIC = "orders"
GROUP = "billing"
MESSAGES = 24
UNPROCESSED = 3  # the tail of partition 0: consumed, committed past, never processed
#: the Connection's SASL password (unused on PLAINTEXT): never in a log or an XCom
KAFKA_SECRET = "kafka-secret-e2e"


@pytest.fixture(scope="module")
def cluster():
    with mock_cluster() as mock:
        yield mock


def test_the_snapshot_task_skips_when_off_and_fails_at_once_on_a_missing_topic(
        cluster, monkeypatch, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
    from delivery_audit_airflow.group import snapshot

    with pytest.raises(AirflowSkipException, match="snapshot off"):
        snapshot.function(_plan())
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_MOCK", json.dumps({
        "conn_type": "kafka", "extra": {"bootstrap.servers": cluster.bootstrap}}))
    plan = build_plan(start=START, end=END, settings=Settings.of(data_root=str(tmp_path)),
                      params={"snapshot": True, "snapshot_topics": ["no-such-topic"],
                              "kafka_conn_id": "kafka_mock"})
    with pytest.raises(AirflowFailException, match="topic.s. no-such-topic not on the cluster "
                                                   "of Connection 'kafka_mock'"):
        snapshot.function(plan)
    assert not (tmp_path / "snapshot").exists()  # nothing published


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _load_the_cluster(bootstrap: str, scratch: Path) -> tuple[set, dict[int, int]]:
    """The test's producer sends MESSAGES keyed records (the recorder writes the sends); its
    consumer reads them all and commits after the last one, but never processes the last
    UNPROCESSED records of partition 0 (the ledger has no row for them). Returns their
    (partition, offset)s and the committed offset per partition."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from delivery_audit.recorders import Recorder, RecordingConsumer, RecordingProducer

    with Recorder(scratch, name="orders-api") as rec:
        producer = RecordingProducer({"bootstrap.servers": bootstrap,
                                      "enable.idempotence": True, "linger.ms": 5}, rec,
                                     producer_id="orders-api-1")
        for n in range(MESSAGES):
            producer.produce(TOPIC, key=f"customer-{n % 5}", value=b"{}")
        assert producer.close(15) == 0
        del producer
    acked = [s for s in _rows(scratch / "orders-api.sends.jsonl") if s["status"] == "acked"]
    assert len(acked) == MESSAGES
    ends: dict[int, int] = {}
    for s in acked:
        ends[s["partition"]] = max(ends.get(s["partition"], 0), s["offset"] + 1)
    assert sorted(ends) == [0, 1] and ends[0] > UNPROCESSED
    tail = {(0, o) for o in range(ends[0] - UNPROCESSED, ends[0])}

    with Recorder(scratch, name="billing-1") as rec:
        consumer = RecordingConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                      "enable.auto.commit": False}, rec)
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in ends])
        seen, deadline = 0, time.monotonic() + 30
        while seen < MESSAGES and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=50, timeout=0.5):
                if msg.error():
                    continue
                seen += 1
                if (msg.partition(), msg.offset()) not in tail:
                    with consumer.processing(msg):
                        pass
        assert seen == MESSAGES
        consumer.commit(asynchronous=False)  # the next offsets: past the unprocessed tail
        consumer.close()
        del consumer
    gc.collect()
    return tail, ends


@pytest.mark.slow
def test_daily_dag_with_the_snapshot_audits_what_the_test_put_on_the_cluster(
        cluster, connect_server, tmp_path):  # noqa: F811
    """The daily DAG, snapshot Param on, through a ``kafka`` Connection to the mock cluster:
    the snapshot task reads the day's partitions and the group's committed offsets into the
    data root, reconcile audits that snapshot with --offsets, and the report counts what the
    test constructed: the records consumed past but never processed are ``skipped``, proven
    by the committed offsets of the snapshot's offsets.json alone (the run has no events
    source), every other record is delivered once, nothing else is an anomaly."""
    now = datetime.now(UTC)
    if now.hour == 23 and now.minute >= 57:  # keep the records inside one UTC day
        time.sleep((60 - now.minute) * 60 - now.second + 5)
    day = datetime.now(UTC).date()
    logical = (day + timedelta(days=1)).isoformat()
    wid = f"{day:%Y%m%d}T000000Z_{day + timedelta(days=1):%Y%m%d}T000000Z"
    cluster.create_topic(TOPIC, 2)
    scratch, data, reports = tmp_path / "recorded", tmp_path / "data", tmp_path / "reports"
    tail, ends = _load_the_cluster(cluster.bootstrap, scratch)
    for source, name in (("sends", "orders-api"), ("ledger", "billing-1")):
        folder = data / source / f"dt={day}"
        folder.mkdir(parents=True)
        shutil.copy(scratch / f"{name}.{source}.jsonl", folder)

    host, port = connect_server.url[len("sc://"):].rsplit(":", 1)
    env = airflow_env(
        settings={"data_root": str(data), "report_root": str(reports), "events": None,
                  "wait_for_grace": False, "notifier": {"type": "log"}},
        extra={"AIRFLOW_CONN_KAFKA_E2E": json.dumps({
            "conn_type": "kafka", "extra": {"bootstrap.servers": cluster.bootstrap,
                                            "security.protocol": "PLAINTEXT",
                                            "sasl.username": "delivery-audit",
                                            "sasl.password": KAFKA_SECRET}}),
            "AIRFLOW_CONN_SPARK_CONNECT_SNAP": json.dumps({
                "conn_type": "spark_connect", "host": host, "port": int(port)})})
    t0 = time.monotonic()
    proc = dags_test("delivery_audit_daily", logical, env=env, conf={
        "snapshot": True, "snapshot_topics": [TOPIC], "snapshot_groups": [GROUP],
        "kafka_conn_id": "kafka_e2e", "spark_connect_conn_id": "spark_connect_snap"})
    took = time.monotonic() - t0
    output = proc.stdout + proc.stderr + task_logs("delivery_audit_daily")
    assert proc.returncode == 0, output[-6000:]
    states = task_states("delivery_audit_daily")
    for t in ("resolve_window", "wait_for_inputs", "snapshot", "reconcile", "check_report"):
        assert states[f"audit.{t}"] == "success", (states, output[-6000:])
    print(f"airflow dags test with the snapshot: {took:.1f} s")

    snap = data / "snapshot" / f"dt={day}" / wid
    assert sorted(p.name for p in (snap / "broker").iterdir()) == \
        ["orders-0.jsonl.gz", "orders-1.jsonl.gz"]
    offsets = json.loads((snap / "offsets.json").read_text())
    assert {(p["partition"], p["read_from"], p["read_to"]) for p in offsets["partitions"]} == \
        {(p, 0, end) for p, end in ends.items()}
    assert {(g["group"], g["partition"], g["committed"]) for g in offsets["groups"]} == \
        {(GROUP, p, end) for p, end in ends.items()}
    assert f"snapshot of {TOPIC} (2 partitions) through Connection 'kafka_e2e' (from the run)" \
        in output
    assert "sasl.password=***" in output and KAFKA_SECRET not in output

    report = json.loads((reports / f"dt={day}" / wid / "report.json").read_text())
    assert report["window"]["id"] == wid
    counts = {a: report["anomalies"].get(a, {}).get("count", 0) for a in ANOMALY_NAMES}
    assert counts == {a: (UNPROCESSED if a == "skipped" else 0) for a in ANOMALY_NAMES}
    states_of = report["groups"][GROUP]["states"]
    assert {s: n for s, n in states_of.items() if n} == \
        {"delivered_once": MESSAGES - UNPROCESSED, "skipped": UNPROCESSED}
    assert report["judged"] == MESSAGES
    broker_files = report["inputs"]["broker"]["files"]
    assert broker_files and all(f"snapshot/dt={day}/{wid}/broker/" in f for f in broker_files)
