"""The client recorders (delivery_audit.recorders) against a real Kafka-protocol broker:
librdkafka's mock cluster on 127.0.0.1, as the lab runs it. What the recorders write must
match what went through the broker: each acked send is the record a consumer then received
at that partition and offset, each ledger row a record processed, each commit the offset
that follows it; a transaction's aborted sends sit where the log has its ABORT marker. The
README's example runs as written, and its "Audit your own system" walk-through end to end.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mock_cluster import mock_cluster

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _env() -> dict[str, str]:
    paths = [str(ROOT / "src"), str(ROOT / "sim" / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p),
            "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def cluster():
    with mock_cluster() as mock:
        yield mock


def _consume(consumer, count: int, deadline_s: float = 20.0, on_msg=None) -> list:
    """Poll until `count` records arrived (or the deadline); commit after each batch."""
    got: list = []
    t0 = time.monotonic()
    while len(got) < count and time.monotonic() - t0 < deadline_s:
        batch = consumer.consume(num_messages=50, timeout=0.5)
        for msg in batch:
            if msg.error():
                continue
            got.append(msg)
            if on_msg is not None:
                on_msg(msg)
        if batch:
            consumer.commit(asynchronous=False)
    return got


def test_the_recorders_import_without_pyspark_and_load_confluent_kafka_when_named():
    code = ("import sys\n"
            "import delivery_audit.recorders as r\n"
            "from delivery_audit.recorders import Recorder\n"
            "before = 'confluent_kafka' in sys.modules\n"
            "from delivery_audit.recorders import RecordingConsumer, RecordingProducer\n"
            "print(before, 'confluent_kafka' in sys.modules, 'pyspark' in sys.modules,"
            " RecordingProducer.__module__, RecordingConsumer.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "False", "delivery_audit.recorders.producer",
                                  "delivery_audit.recorders.consumer"]


def test_recorder_writes_every_canonical_field_and_refuses_others(tmp_path):
    from delivery_audit.fields import FIELDS
    from delivery_audit.recorders import Recorder

    with Recorder(tmp_path, name="app") as rec:
        rec.write("events", group_id="g", ts=1, event="joined_group")
        with pytest.raises(ValueError, match=r"not events fields: \['colour'\]"):
            rec.write("events", group_id="g", ts=1, event="commit", colour="red")
        with pytest.raises(ValueError, match="not a canonical source"):
            rec.write("audit", x=1)
    [row] = _rows(tmp_path / "app.events.jsonl")
    assert list(row) == [f.name for f in FIELDS["events"]]
    assert row["event"] == "joined_group" and row["member_id"] is None


def test_plain_producer_and_consumer_record_what_went_through_the_broker(cluster, tmp_path):
    from delivery_audit.recorders import Recorder, RecordingConsumer, RecordingProducer
    from delivery_audit_sim.lab_broker import PRODUCE_API

    topic = "rec-plain"
    cluster.create_topic(topic, 3)
    with Recorder(tmp_path, name="api") as rec:
        producer = RecordingProducer({"bootstrap.servers": cluster.bootstrap,
                                      "enable.idempotence": True, "linger.ms": 5}, rec,
                                     producer_id="api-1")
        seqs = [producer.produce(topic, key=f"k{i % 3}", value=b"v") for i in range(12)]
        assert producer.close(15) == 0
        # a non-retriable broker error (TOPIC_AUTHORIZATION_FAILED): a failed send
        cluster.push_request_errors(PRODUCE_API, [29])
        failing = RecordingProducer({"bootstrap.servers": cluster.bootstrap}, rec,
                                    producer_id="api-2")
        failing.produce(topic, key="refused", value=b"v", seq=0)
        assert failing.close(15) == 0
        # the broker down until message.timeout.ms: a timeout
        cluster.set_broker_down(1)
        try:
            late = RecordingProducer({"bootstrap.servers": cluster.bootstrap,
                                      "message.timeout.ms": 800}, rec, producer_id="api-3")
            late.produce(topic, key="late", value=b"v", seq=0)
            assert late.close(15) == 0
        finally:
            cluster.set_broker_down(1, down=False)
        del producer, failing, late
        gc.collect()

    processed: list = []
    with Recorder(tmp_path, name="billing-1") as rec:
        consumer = RecordingConsumer({"bootstrap.servers": cluster.bootstrap,
                                      "group.id": "rec-billing", "enable.auto.commit": False,
                                      "auto.offset.reset": "earliest"}, rec)

        def process(msg) -> None:
            ident = (msg.key().decode(), int(dict(msg.headers())["seq"]))
            if ident == ("k1", 0):
                with pytest.raises(RuntimeError):
                    with consumer.processing(msg):
                        raise RuntimeError("handler failed")
            elif ident == ("k2", 1):
                consumer.skip(msg)
            else:
                with consumer.processing(msg):
                    processed.append(msg)

        consumer.subscribe([topic])
        got = _consume(consumer, 12, on_msg=process)
        consumer.close()
        consumer = None
        gc.collect()
    assert len(got) == 12

    received = {(m.partition(), m.offset()): (m.key().decode(), int(dict(m.headers())["seq"]))
                for m in got}
    sends = _rows(tmp_path / "api.sends.jsonl")
    acked = [s for s in sends if s["status"] == "acked"]
    assert len(acked) == 12 and sorted(s["seq"] for s in acked) == sorted(seqs)
    assert {(s["partition"], s["offset"]): (s["key"], s["seq"]) for s in acked} == received
    assert all(s["producer_id"] == "api-1" and s["idempotent"] and s["attempt"] == 1
               and s["ack_ts"] >= s["send_ts"] for s in acked)
    [refused] = [s for s in sends if s["key"] == "refused"]
    assert refused["status"] == "failed" and refused["offset"] is None
    assert refused["error"].startswith("TOPIC_AUTHORIZATION_FAILED")
    [timed_out] = [s for s in sends if s["key"] == "late"]
    assert timed_out["status"] == "timeout" and timed_out["error"].startswith("_MSG_TIMED_OUT")
    assert len(sends) == 14

    ledger = _rows(tmp_path / "billing-1.ledger.jsonl")
    assert {(r["partition"], r["offset"]): (r["key"], r["seq"]) for r in ledger} == received
    outcomes = {(r["key"], r["seq"]): r["outcome"] for r in ledger}
    assert outcomes.pop(("k1", 0)) == "failure" and outcomes.pop(("k2", 1)) == "skipped"
    assert set(outcomes.values()) == {"success"} and len(processed) == 10
    assert all(r["group_id"] == "rec-billing" and r["member_id"] == "billing-1"
               and r["isolation"] == "read_committed"
               and r["finished_ts"] >= r["started_ts"] for r in ledger)

    events = _rows(tmp_path / "billing-1.events.jsonl")
    assigned = {e["partition"] for e in events if e["event"] == "assigned"}
    assert assigned == {0, 1, 2}
    next_offset: dict[int, int] = {}
    for p, o in received:
        next_offset[p] = max(next_offset.get(p, 0), o + 1)
    committed: dict[int, int] = {}
    for e in events:
        if e["event"] == "commit":
            committed[e["partition"]] = max(committed.get(e["partition"], 0), e["offset"])
    assert committed == next_offset
    assert not [e for e in events if e["event"] == "commit_failed"]
    assert {e["partition"] for e in events if e["event"] == "revoked"} == {0, 1, 2}  # close


def test_transactional_producer_records_committed_and_aborted_sends_where_the_log_has_them(
        cluster, tmp_path):
    from delivery_audit.recorders import Recorder, RecordingConsumer, RecordingProducer
    from delivery_audit.snapshot import SnapshotRequest, take_snapshot

    topic = "rec-txn"
    cluster.create_topic(topic, 2)
    with Recorder(tmp_path, name="payments") as rec:
        producer = RecordingProducer({"bootstrap.servers": cluster.bootstrap,
                                      "transactional.id": "rec-tx", "linger.ms": 5,
                                      "compression.type": "none"}, rec)
        producer.init_transactions(15)
        producer.begin_transaction()
        for i in range(4):
            producer.produce(topic, key=f"p{i % 2}", value=b"c")
        producer.commit_transaction(15)
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, key=f"p{i % 2}", value=b"a")
        producer.flush(15)  # in the log before the ABORT marker
        producer.abort_transaction(15)
        assert producer.close(15) == 0
        del producer
        gc.collect()

    with Recorder(tmp_path, name="reader") as rec:
        consumer = RecordingConsumer({"bootstrap.servers": cluster.bootstrap,
                                      "group.id": "rec-txn-reader",
                                      "isolation.level": "read_uncommitted",
                                      "enable.auto.commit": False,
                                      "auto.offset.reset": "earliest"}, rec)
        consumer.subscribe([topic])

        def process(msg) -> None:
            with consumer.processing(msg):
                pass

        got = _consume(consumer, 7, on_msg=process)
        consumer.close()
        consumer = None
        gc.collect()
    assert len(got) == 7  # the mock does not filter aborted records (docs/adapters.md §4)

    sends = _rows(tmp_path / "payments.sends.jsonl")
    assert [s["status"] for s in sends] == ["acked"] * 4 + ["aborted"] * 3
    assert all(s["transactional_id"] == "rec-tx" and s["idempotent"] for s in sends)
    assert len({s["ack_ts"] for s in sends[:4]}) == 1  # the commit
    received = {(m.partition(), m.offset()): (m.key().decode(), int(dict(m.headers())["seq"]))
                for m in got}
    assert {(s["partition"], s["offset"]): (s["key"], s["seq"]) for s in sends} == received
    # the log: each aborted send is followed in its partition by an ABORT marker, each
    # committed one by a COMMIT marker, of the producer's pid
    snap = take_snapshot(SnapshotRequest(cluster.bootstrap, (topic,), str(tmp_path / "snap")))
    rows = [json.loads(line) for f in snap.broker_files for line in gzip.open(f, "rt")]
    log = {p: [r for r in rows if r["partition"] == p] for p in (0, 1)}
    for s in sends:
        after = [r for r in log[s["partition"]] if r["offset"] > s["offset"] and r["control"]]
        want = "commit" if s["status"] == "acked" else "abort"
        assert after and after[0]["control"] == want, (s, after[:1])
    ledger = _rows(tmp_path / "reader.ledger.jsonl")
    assert {(r["partition"], r["offset"]) for r in ledger} == set(received)
    assert {r["isolation"] for r in ledger} == {"read_uncommitted"}


def _readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Recording sends and processing"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_against_the_mock_cluster(cluster, tmp_path):
    cluster.create_topic("orders", 3)
    (tmp_path / "app.py").write_text(_readme_example(), encoding="utf-8")
    out = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60,
                         env={**_env(), "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrap})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("processed orders") == 6
    logs = tmp_path / "audit-logs"
    assert sorted(p.name for p in logs.iterdir()) == [
        "billing-1.events.jsonl", "billing-1.ledger.jsonl", "orders-api-1.sends.jsonl"]
    sends = _rows(logs / "orders-api-1.sends.jsonl")
    ledger = _rows(logs / "billing-1.ledger.jsonl")
    assert {s["status"] for s in sends} == {"acked"} and len(sends) == 6
    assert sorted((s["key"], s["seq"]) for s in sends) == sorted(
        (f"customer-{k}", q) for k in (0, 1) for q in range(3))
    assert {(s["partition"], s["offset"], s["key"], s["seq"]) for s in sends} == \
        {(r["partition"], r["offset"], r["key"], r["seq"]) for r in ledger}
    assert {r["outcome"] for r in ledger} == {"success"}
    assert {e["event"] for e in _rows(logs / "billing-1.events.jsonl")} >= {"assigned",
                                                                           "commit"}


@pytest.mark.slow
@pytest.mark.audit
def test_the_first_audit_guide_end_to_end_on_lab_serve(spark, tmp_path, monkeypatch):
    """README "First audit, end to end on the lab's broker": `lab --serve`, the example app,
    Ctrl-C, `run` — the report passes with the 6 messages delivered once."""
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    from typer.testing import CliRunner

    from delivery_audit.cli import app

    (tmp_path / "app.py").write_text(_readme_example(), encoding="utf-8")
    lab = subprocess.Popen(
        [sys.executable, "-c", "from delivery_audit.cli import app; app()", "lab", "--serve",
         "--topic", "orders", "--partitions", "3", "--workdir", "lab"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        bootstrap = tmp_path / "lab" / "bootstrap.txt"
        t0 = time.monotonic()
        while not bootstrap.exists() and time.monotonic() - t0 < 60:
            assert lab.poll() is None, lab.stdout.read()
            time.sleep(0.2)
        address = bootstrap.read_text().strip()
        assert re.fullmatch(r"127\.0\.0\.1:\d+", address), address
        run_app = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, timeout=60,
                                 env={**_env(), "KAFKA_BOOTSTRAP_SERVERS": address},
                                 capture_output=True, text=True)
        assert run_app.returncode == 0, run_app.stderr[-3000:]
        lab.send_signal(signal.SIGINT)
        said, _ = lab.communicate(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
    assert lab.returncode == 0, said
    assert f"bootstrap servers: {address}" in said
    assert "broker rows: 6 in lab/broker/orders.jsonl" in said

    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [
        "run", "--sends", "audit-logs/*.sends.jsonl", "--ledger", "audit-logs/*.ledger.jsonl",
        "--events", "audit-logs/*.events.jsonl", "--broker", "lab/broker/*.jsonl",
        "--start", day.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "--end", (day + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "--out", "reports", "--no-notify"])
    assert result.exit_code == 0, result.output[-3000:]
    [report_file] = (tmp_path / "reports").glob("dt=*/*/report.json")
    report = json.loads(report_file.read_text())
    assert report["verdict"]["verdict"] == "pass", report["verdict"]
    assert {s: i["rows_valid"] for s, i in report["inputs"].items()} == {
        "sends": 6, "broker": 6, "ledger": 6, "events": report["inputs"]["events"]["rows_read"]}
    assert all(i["rows_quarantined"] == 0 for i in report["inputs"].values())
    assert report["groups"]["billing"]["states"]["delivered_once"] == 6
