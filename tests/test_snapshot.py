"""`delivery-audit snapshot` (delivery_audit.snapshot, contract §9.1) against a real
Kafka-protocol broker: librdkafka's mock cluster on 127.0.0.1, as the lab runs it, loaded by
the recorders (an idempotent producer, a transactional one with a committed and an aborted
transaction, a consumer group that commits). The snapshot must hold exactly the records the
producers' delivery reports placed (partition, offset, key, seq), the transactions' rows
transactional with their producer id, a COMMIT / ABORT control row in every partition each
transaction touched, and offsets.json with the partitions' offsets and the groups' commits.
An audit of that day with the snapshot as its broker side counts the aborted records as no
copies and the marker offsets as no gaps.

One module-scoped cluster, a dozen records: the file stays fast."""

from __future__ import annotations

import gc
import gzip
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mock_cluster import mock_cluster
from typer.testing import CliRunner

from delivery_audit.cli import app

TOPIC = "snap-orders"
GROUP = "snap-billing"  # consumes everything, commits
PARTIAL = "snap-partial"  # commits partition 0 only
PASSWORD = "Sn4pshot-Pa55word-never-shown"
FETCH_API = 1  # Kafka API key of Fetch (rd_kafka_mock_push_request_errors)


def _rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _produce(bootstrap: str, rec_dir: Path) -> None:
    """3 plain records (one per partition), a committed transaction of 6 (2 per partition),
    an aborted one of 2 (partitions 0 and 1 only), recorded as sends."""
    from delivery_audit.recorders import Recorder, RecordingProducer

    with Recorder(rec_dir, name="producer") as rec:
        plain = RecordingProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "linger.ms": 5}, rec, producer_id="snap-plain")
        for p in range(3):
            plain.produce(TOPIC, key=f"plain-{p}", value=f"plain-{p}.0".encode(), partition=p)
        assert plain.close(15) == 0
        txn = RecordingProducer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                 "transactional.id": "snap-tx"}, rec, producer_id="snap-tx")
        txn.init_transactions(15)
        txn.begin_transaction()
        for i in range(6):
            txn.produce(TOPIC, key=f"paid-{i}", value=f"paid-{i}.0".encode(), partition=i % 3)
        txn.commit_transaction(15)
        txn.begin_transaction()
        for p in range(2):
            txn.produce(TOPIC, key=f"void-{p}", value=f"void-{p}.0".encode(), partition=p)
        txn.flush(15)  # in the log before the ABORT marker
        txn.abort_transaction(15)
        assert txn.close(15) == 0
        del plain, txn
        gc.collect()


def _consume(bootstrap: str, rec_dir: Path) -> None:
    """GROUP reads every partition from the start (read_committed) and commits; the mock
    hands read_committed consumers the aborted records too (docs/adapters.md), so they are
    dropped unprocessed, the filter a real broker's answer makes the client apply."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from delivery_audit.recorders import Recorder, RecordingConsumer

    with Recorder(rec_dir, name="billing-1") as rec:
        consumer = RecordingConsumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "billing-1",
            "isolation.level": "read_committed", "enable.auto.commit": False}, rec,
            member_id="billing-1")
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
        processed, deadline, quiet = 0, time.monotonic() + 20, None
        while time.monotonic() < deadline and (quiet is None or time.monotonic() < quiet):
            batch = [m for m in consumer.consume(num_messages=50, timeout=0.3)
                     if not m.error()]
            for msg in batch:
                if msg.key().startswith(b"void-"):
                    continue
                with consumer.processing(msg):
                    processed += 1
            if batch:
                consumer.commit(asynchronous=False)
            if processed == 9 and quiet is None:
                quiet = time.monotonic() + 1.0  # the aborted records after the last one
        consumer.close()
        assert processed == 9
    partial = Consumer({"bootstrap.servers": bootstrap, "group.id": PARTIAL})
    partial.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
    partial.close()
    del consumer, partial
    gc.collect()


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """The cluster after the day's traffic, its recordings and one snapshot of it."""
    pytest.importorskip("kafka", reason="kafka-python is not installed")
    from delivery_audit.snapshot import SnapshotRequest, take_snapshot

    base = tmp_path_factory.mktemp("snapshot")
    rec_dir = base / "recordings"
    started = datetime.now(UTC)
    with mock_cluster() as cluster:
        cluster.create_topic(TOPIC, 3)
        cluster.create_topic("snap-empty", 1)
        _produce(cluster.bootstrap, rec_dir)
        _consume(cluster.bootstrap, rec_dir)
        result = take_snapshot(SnapshotRequest(cluster.bootstrap, (TOPIC, "snap-empty"),
                                               str(base / "snap"), groups=(GROUP, PARTIAL)))
        yield {"cluster": cluster, "base": base, "rec": rec_dir, "result": result,
               "started": started, "finished": datetime.now(UTC)}


def _snapshot_rows(result) -> list[dict]:
    return [r for f in result.broker_files for r in _rows(Path(f))]


def test_cluster_binds_loopback(day):
    assert day["cluster"].bootstrap.startswith("127.0.0.1:")


def test_snapshot_holds_exactly_the_records_the_producers_placed(day):
    sends = _rows(day["rec"] / "producer.sends.jsonl")
    rows = _snapshot_rows(day["result"])
    data = [r for r in rows if r["control"] is None]
    assert sorted((r["partition"], r["offset"], r["key"], r["seq"]) for r in data) == \
        sorted((s["partition"], s["offset"], s["key"], s["seq"]) for s in sends)
    assert {s["status"] for s in sends} == {"acked", "aborted"} and len(sends) == 11
    assert all(r["topic"] == TOPIC and r["timestamp"] for r in data)
    assert (day["result"].records, day["result"].controls) == (11, 5)
    # one file per partition, the empty topic's included (and empty)
    names = sorted(Path(f).name for f in day["result"].broker_files)
    assert names == ["snap-empty-0.jsonl.gz"] + [f"{TOPIC}-{p}.jsonl.gz" for p in range(3)]


def test_transactions_rows_carry_their_pid_and_markers_close_them_per_partition(day):
    sends = {(s["partition"], s["offset"]): s
             for s in _rows(day["rec"] / "producer.sends.jsonl")}
    rows = _snapshot_rows(day["result"])
    data = [r for r in rows if r["control"] is None]
    txn = [r for r in data if sends[(r["partition"], r["offset"])]["transactional_id"]]
    plain = [r for r in data if not sends[(r["partition"], r["offset"])]["transactional_id"]]
    pids = {r["pid"] for r in txn}
    assert len(pids) == 1 and None not in pids
    pid = pids.pop()
    assert all(r["transactional"] and r["producer_epoch"] is not None for r in txn)
    assert len(plain) == 3 and all(r["transactional"] is False and r["pid"] not in (None, pid)
                                   for r in plain)
    controls = sorted((r["partition"], r["control"]) for r in rows if r["control"])
    # COMMIT in every partition the committed transaction touched, ABORT in 0 and 1 only
    assert controls == [(0, "abort"), (0, "commit"), (1, "abort"), (1, "commit"),
                        (2, "commit")]
    for r in rows:
        if r["control"]:
            assert r["pid"] == pid and r["transactional"] is True and r["key"] is None
            assert r["timestamp"] is None  # the mock writes markers with timestamp 0
            # the marker follows its transaction's records in the partition
            before = [s for (p, o), s in sends.items() if p == r["partition"] and
                      o < r["offset"] and s["transactional_id"]]
            want = "acked" if r["control"] == "commit" else "aborted"
            assert before and max(before, key=lambda s: s["offset"])["status"] == want


def test_offsets_file_has_the_partitions_offsets_and_the_groups_commits(day):
    doc = json.loads(Path(day["result"].offsets_path).read_text())
    assert set(doc) == {"taken_at", "partitions", "groups"}
    taken = datetime.fromisoformat(doc["taken_at"])
    assert day["started"] <= taken <= day["finished"]
    rows = _snapshot_rows(day["result"])
    ends = {p: max(r["offset"] for r in rows if r["partition"] == p) + 1 for p in range(3)}
    assert doc["partitions"] == [
        {"topic": "snap-empty", "partition": 0, "log_start": 0, "end": 0, "last_stable": 0,
         "read_from": 0, "read_to": 0}] + [
        {"topic": TOPIC, "partition": p, "log_start": 0, "end": ends[p],
         "last_stable": ends[p], "read_from": 0, "read_to": ends[p]} for p in range(3)]
    assert ends == {0: 6, 1: 6, 2: 4}
    events = _rows(day["rec"] / "billing-1.events.jsonl")
    committed: dict[int, int] = {}
    for e in events:
        if e["event"] == "commit":
            committed[e["partition"]] = e["offset"]
    assert set(committed) == {0, 1, 2}
    got = {(g["group"], g["topic"], g["partition"]): g["committed"] for g in doc["groups"]}
    assert got == {
        **{(GROUP, TOPIC, p): committed[p] for p in range(3)}, (GROUP, "snap-empty", 0): None,
        (PARTIAL, TOPIC, 0): 1, (PARTIAL, TOPIC, 1): None, (PARTIAL, TOPIC, 2): None,
        (PARTIAL, "snap-empty", 0): None}


def test_a_leader_change_midway_is_followed(day, tmp_path):
    from delivery_audit.snapshot import SnapshotRequest, take_snapshot

    # the next two Fetches are answered NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION:
    # the snapshot refreshes its metadata and asks the leader again
    day["cluster"].push_request_errors(FETCH_API, [6, 3])
    again = take_snapshot(SnapshotRequest(day["cluster"].bootstrap, (TOPIC,), str(tmp_path)))
    assert sorted(map(json.dumps, _snapshot_rows(again))) == sorted(
        json.dumps(r) for r in _snapshot_rows(day["result"]) if r["topic"] == TOPIC)


def test_an_unreadable_partition_fails_naming_it_and_writes_nothing(day, tmp_path):
    from delivery_audit.snapshot import SnapshotFailed, SnapshotRequest, take_snapshot

    day["cluster"].push_request_errors(FETCH_API, [29])  # TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(SnapshotFailed, match=rf"{TOPIC}\[0\].*TopicAuthorizationFailed"):
        take_snapshot(SnapshotRequest(day["cluster"].bootstrap, (TOPIC,), str(tmp_path)))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SnapshotFailed, match="topic snap-missing: not in the cluster"):
        take_snapshot(SnapshotRequest(day["cluster"].bootstrap, (TOPIC, "snap-missing"),
                                      str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_max_records_guards(day, tmp_path):
    from delivery_audit.snapshot import SnapshotFailed, SnapshotRequest, take_snapshot

    total = day["result"].records + day["result"].controls
    with pytest.raises(SnapshotFailed, match=rf"{TOPIC}\[2\]: more than --max-records "
                                             rf"{total - 1} records"):
        take_snapshot(SnapshotRequest(day["cluster"].bootstrap, (TOPIC,), str(tmp_path / "a"),
                                      max_records=total - 1))
    assert list((tmp_path / "a").iterdir()) == []
    ok = take_snapshot(SnapshotRequest(day["cluster"].bootstrap, (TOPIC,), str(tmp_path / "b"),
                                       max_records=total))
    assert ok.records + ok.controls == total


def test_cli_reads_the_client_config_and_never_shows_its_secret(day, tmp_path, caplog):
    config = tmp_path / "client.properties"
    config.write_text("# the team's consumer settings\nsecurity.protocol=PLAINTEXT\n"
                      f"sasl.username=auditor\nsasl.password={PASSWORD}\ngroup.id=billing\n",
                      encoding="utf-8")
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    ok = runner.invoke(app, ["snapshot", "--bootstrap-servers", day["cluster"].bootstrap,
                             "--topic", TOPIC, "--out", str(tmp_path / "ok"),
                             "--group", GROUP, "--client-config", str(config)])
    assert ok.exit_code == 0, ok.output
    assert "11 records and 5 transaction markers from 3 partitions" in ok.output
    # a topic that is not there, read with the same settings
    failed = runner.invoke(app, ["snapshot", "--bootstrap-servers", day["cluster"].bootstrap,
                                 "--topic", "snap-missing", "--out", str(tmp_path / "failed"),
                                 "--client-config", str(config)])
    assert failed.exit_code == 1 and "snap-missing" in failed.output
    config.write_text(f"ssl.truststore.password={PASSWORD}\n", encoding="utf-8")
    refused = runner.invoke(app, ["snapshot", "--bootstrap-servers", day["cluster"].bootstrap,
                                  "--topic", TOPIC, "--out", str(tmp_path / "refused"),
                                  "--client-config", str(config)])
    assert refused.exit_code == 1 and "ssl.truststore.password" in refused.output
    assert not (tmp_path / "failed" / "broker").exists()
    written = "".join(p.read_bytes().decode("utf-8", "replace") if p.suffix != ".gz" else
                      gzip.open(p, "rt").read()
                      for p in (tmp_path / "ok").rglob("*") if p.is_file())
    for text in (ok.output, failed.output, refused.output, caplog.text, written):
        assert PASSWORD not in text


def test_snapshot_help_lists_every_option():
    result = CliRunner().invoke(app, ["snapshot", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--bootstrap-servers", "--topic", "--out", "--group", "--client-config",
                   "--from", "--to", "--max-records"):
        assert option in result.output, option


def test_client_config_maps_librdkafka_and_java_keys_to_kafka_python(tmp_path):
    from delivery_audit.snapshot import SnapshotFailed, read_client_config
    from delivery_audit.snapshot.client_config import scrub, to_kafka_python

    path = tmp_path / "client.properties"
    path.write_text("# Aiven\nsecurity.protocol = sasl_ssl\nsasl.mechanisms=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="auditor" password="{PASSWORD}";\n'
                    "ssl.ca.location=/etc/kafka/ca.pem\nssl.endpoint.identification.algorithm="
                    "\nisolation.level=read_committed\n", encoding="utf-8")
    config = read_client_config(path)
    assert to_kafka_python(config) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "auditor", "sasl_plain_password": PASSWORD,
        "ssl_cafile": "/etc/kafka/ca.pem", "ssl_check_hostname": False}
    assert PASSWORD not in scrub(f"login failed with {PASSWORD}", config)
    assert "pw1" not in scrub("short pw1", {"sasl.password": "pw1"})
    with pytest.raises(SnapshotFailed, match="ssl.keystore.location") as refused:
        to_kafka_python({"ssl.keystore.location": "/k.jks", "sasl.password": PASSWORD})
    assert PASSWORD not in str(refused.value)
    path.write_text(f"sasl.password {PASSWORD}\n", encoding="utf-8")
    with pytest.raises(SnapshotFailed, match="line 1 is not key=value") as bad:
        read_client_config(path)
    assert PASSWORD not in str(bad.value)


class _CompactedLog:
    """A broker's Fetch answers for one compacted partition, built with kafka-python's own
    batch builder: offset 1 compacted out of the first batch, the batch holding 3 and 4
    removed whole. Only the transport is stood in for; the read loop runs as it is."""

    def __init__(self) -> None:
        from kafka.record.default_records import DefaultRecordBatchBuilder

        self.batches = []
        for base, deltas in ((0, (0, 2)), (5, (0, 1))):
            builder = DefaultRecordBatchBuilder(magic=2, compression_type=0,
                                                is_transactional=False, producer_id=42,
                                                producer_epoch=0, base_sequence=base,
                                                batch_size=1 << 16)
            for d in deltas:
                builder.append(d, timestamp=1_700_000_000_000 + d, key=b"k",
                               value=f"v.{base + d}".encode(), headers=[])
            raw = bytearray(builder.build())
            raw[0:8] = base.to_bytes(8, "big")  # the broker assigns the base offset
            self.batches.append((base, base + deltas[-1], bytes(raw)))
        self.fetched: list[int] = []

    def ask_leader(self, tp, build, operation, what):
        request = build(4)
        offset = request.topics[0][1][0][1]
        self.fetched.append(offset)
        # one batch an answer (as a broker under a small max_bytes): the first not below it
        records = next((raw for _b, last, raw in self.batches if last >= offset), b"")
        return (tp.partition, 0, 7, 7, [], records)


def test_a_compacted_partition_is_read_across_its_offset_gaps(tmp_path):
    from delivery_audit.snapshot.offsets import PartitionRange
    from delivery_audit.snapshot.staging import PartitionFile
    from delivery_audit.snapshot.take import _Counts, _read_partition

    log, out = _CompactedLog(), PartitionFile(tmp_path / "t-0.jsonl.gz")
    seen: list[int] = []
    _read_partition(log, PartitionRange("t", 0, 0, 7, 7, 0, 7), out, _Counts(None),
                    seen.append)
    out.close()
    rows = _rows(tmp_path / "t-0.jsonl.gz")
    assert [(r["offset"], r["seq"], r["batch_sequence"]) for r in rows] == [
        (0, 0, 0), (2, 2, 2), (5, 5, 5), (6, 6, 6)]
    assert all(r["pid"] == 42 and r["transactional"] is False for r in rows)
    assert log.fetched == [0, 3] and seen == [3, 7]


def test_read_range_from_and_to_lookups():
    from delivery_audit.snapshot.offsets import read_range

    assert read_range(10, 50, None, None) == (10, 50)
    assert read_range(10, 50, 20, 40) == (20, 40)
    assert read_range(10, 50, 5, 60) == (10, 50)  # never outside [log_start, end]
    assert read_range(10, 50, -1, None) == (50, 50)  # nothing at or after --from
    assert read_range(10, 50, 30, -1) == (30, 50)  # nothing at or after --to: the end
    assert read_range(10, 50, 40, 20) == (40, 40)  # empty, not reversed


def test_audit_of_the_day_counts_aborted_records_as_no_copies_and_markers_as_no_gaps(
        day, spark, tmp_path):
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import AuditConfig
    from delivery_audit.core.window import AuditWindow

    rec = day["rec"]
    window = AuditWindow(day["started"].replace(second=0, microsecond=0),
                         (day["finished"] + timedelta(minutes=1)).replace(second=0,
                                                                          microsecond=0),
                         grace_minutes=0)
    config = AuditConfig.from_dict({
        "groups": {GROUP: {"isolation.level": "read_committed", "topics": [TOPIC]}},
        "notifier": {"type": "log"}})
    snap = day["result"]
    result = run_audit(AuditRequest(
        inputs={"sends": [str(rec / "producer.sends.jsonl")],
                "broker": [str(Path(snap.out) / "broker" / "*.jsonl.gz")],
                "ledger": [str(rec / "billing-1.ledger.jsonl")],
                "events": [str(rec / "billing-1.events.jsonl")]},
        window=window, out=str(tmp_path), config=config, notify=False, spark=spark,
        offsets=snap.offsets_path))
    report = result.report
    anomalies = {name: a["count"] for name, a in report["anomalies"].items()}
    assert report["inputs"]["broker"]["rows_read"] == 16  # 11 records, 5 markers
    # the markers' offsets are records of the log: no gap, nothing skipped or lost
    assert anomalies["lost_acked"] == 0 and anomalies["skipped"] == 0
    assert anomalies["seq_gap"] == 0 and anomalies["aborted_read"] == 0
    # the aborted records are no copies: their two messages were never committed
    assert anomalies["lost_unacked"] == 2
    states = report["groups"][GROUP]["states"]
    assert (states["delivered_once"], states["lost_unacked"]) == (9, 2)
    assert sum(states.values()) == report["groups"][GROUP]["judged"] == 11
    assert [t["aborted"]["records"] for t in report["transactions"]] == [1, 1, 0]
    stated = report["offsets_file"]
    assert stated["committed_counted"] is True
    written = json.loads(Path(snap.offsets_path).read_text())["groups"]
    mine = {(g["group"], g["topic"], g["partition"]): g["committed"] for g in written}
    assert {(g["group"], g["topic"], g["partition"]): g["committed"]
            for g in stated["groups"]} == mine
    assert all(mine[(GROUP, TOPIC, p)] is not None for p in range(3))
