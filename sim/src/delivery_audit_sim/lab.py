"""`delivery-audit lab`: a real rebalance on a real Kafka-protocol broker, recorded and
audited end to end (`--scenario rebalance`, the default; `--scenario transactions` is
lab_txn.py).

1. starts librdkafka's mock cluster (shipped inside the confluent-kafka wheel, reached
   through its C API with ctypes) on 127.0.0.1 and creates a 2-partition topic;
2. produces keyed, sequenced messages through the RecordingProducer (idempotent);
3. runs a consumer group of two RecordingConsumers; the member "slow" stalls on one
   record for longer than max.poll.interval.ms, so librdkafka makes it leave the group:
   the group rebalances, "fast" takes the partition over and reprocesses what "slow"
   had not committed, and "slow"'s commit then fails;
4. dumps the topic by reading it until idle (not up to end offsets) into the canonical
   broker form;
5. audits the recorded files with run_audit and prints where the report is.

Everything binds 127.0.0.1; the mock cluster lives in this process and is destroyed by
the lab itself.
"""

from __future__ import annotations

import ctypes
import gc
import glob
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

TOPIC = "lab-orders"
GROUP = "lab-group"


class BrokerUnavailable(RuntimeError):
    """The mock cluster cannot start here (no confluent-kafka, no librdkafka symbols)."""


class MockCluster:
    """librdkafka's in-process mock Kafka cluster, through its C API."""

    def __init__(self, brokers: int = 1) -> None:
        try:
            import confluent_kafka
        except ImportError as exc:
            raise BrokerUnavailable("confluent-kafka is not installed "
                                    "(pip install confluent-kafka)") from exc
        base = Path(confluent_kafka.__file__).resolve().parent
        candidates = sorted(glob.glob(str(base.parent / "confluent_kafka.libs" /
                                          "librdkafka*.so*")))
        candidates += sorted(glob.glob(str(base / ".dylibs" / "librdkafka*.dylib")))
        if not candidates:
            raise BrokerUnavailable(f"no bundled librdkafka next to {base}")
        lib = ctypes.CDLL(candidates[0])
        try:
            lib.rd_kafka_conf_new.restype = ctypes.c_void_p
            lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
            lib.rd_kafka_new.restype = ctypes.c_void_p
            lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                                         ctypes.c_size_t]
            lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
            lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
            lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
            lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
            lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_int, ctypes.c_int]
        except AttributeError as exc:
            raise BrokerUnavailable(f"librdkafka without the mock cluster API: {exc}") from exc
        self._lib = lib
        err = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
        self._rk = lib.rd_kafka_new(0, conf, err, 512)  # a producer handle owns the cluster
        if not self._rk:
            raise BrokerUnavailable(f"rd_kafka_new failed: {err.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise BrokerUnavailable("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        rc = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, 1)
        if rc != 0:
            raise RuntimeError(f"mock topic {name}: error {rc}")

    def stop(self) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class LabResult:
    workdir: Path
    destination: str
    report: dict[str, Any]
    files: dict[str, list[str]]
    notes: list[str] = field(default_factory=list)


def _member(name: str, bootstrap: str, rec_dir: Path, settings: dict[str, int],
            stop: threading.Event, stall_ms: int, work_ms: int, notes: list[str],
            progress: dict[str, float]) -> None:
    from confluent_kafka import KafkaException

    from .recorder import Recorder, RecordingConsumer

    rec = Recorder(rec_dir, name=name)
    consumer = RecordingConsumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "max.poll.interval.ms": settings["max.poll.interval.ms"],
        "session.timeout.ms": settings["session.timeout.ms"],
        "heartbeat.interval.ms": settings["heartbeat.interval.ms"],
        "partition.assignment.strategy": "range",
    }, rec, member_id=name)
    consumer.subscribe([TOPIC])
    stalled = stall_ms <= 0
    processed = 0
    try:
        while not stop.is_set():
            batch = consumer.consume(num_messages=settings["max.poll.records"], timeout=0.5)
            for msg in batch:
                if msg.error():
                    notes.append(f"{name}: poll reported {msg.error().str()}")
                    continue
                with consumer.processing(msg):
                    if not stalled and processed >= 1:
                        stalled = True
                        notes.append(f"{name}: stalling {stall_ms} ms on offset "
                                     f"{msg.partition()}:{msg.offset()}")
                        time.sleep(stall_ms / 1000)
                    else:
                        time.sleep(work_ms / 1000)
                processed += 1
                progress[name] = time.monotonic()
                try:
                    consumer.commit(message=msg, asynchronous=False)
                except KafkaException as exc:
                    notes.append(f"{name}: commit failed: {exc.args[0].str()}")
                    break  # back to poll: the member rejoins the group
    finally:
        try:
            consumer.close()
        finally:
            rec.close()


def _dump(bootstrap: str, path: Path, idle_s: float = 3.0) -> int:
    """Read every partition from the beginning until nothing arrives for idle_s."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lab-dump",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    meta = c.list_topics(TOPIC, timeout=10)
    parts = sorted(meta.topics[TOPIC].partitions)
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in parts])
    n = 0
    last = time.monotonic()
    with open(path, "w", encoding="utf-8") as fh:
        while time.monotonic() - last < idle_s:
            msg = c.poll(0.2)
            if msg is None or msg.error():
                continue
            last = time.monotonic()
            seq = next((int(v.decode()) for k, v in (msg.headers() or []) if k == "seq"), None)
            fh.write(json.dumps({
                "topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
                "key": None if msg.key() is None else msg.key().decode(), "seq": seq,
                "timestamp": msg.timestamp()[1], "producer_id": None}) + "\n")
            n += 1
    c.close()
    return n


def run_lab(workdir: str | Path, spark=None, messages: int = 40, keys: int = 8,
            poll_interval_ms: int = 6000, stall_ms: int = 9000, work_ms: int = 150,
            max_seconds: float = 90.0, echo=print) -> LabResult:
    """Run the lab in `workdir` (recordings under recordings/, reports under reports/)."""
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import AuditConfig
    from delivery_audit.core.window import AuditWindow

    from .recorder import Recorder, RecordingProducer

    workdir = Path(workdir)
    rec_dir = workdir / "recordings"
    rec_dir.mkdir(parents=True, exist_ok=True)
    for old in rec_dir.glob("*.jsonl"):
        old.unlink()
    settings = {"max.poll.records": 5, "max.poll.interval.ms": poll_interval_ms,
                "session.timeout.ms": poll_interval_ms, "heartbeat.interval.ms": 1000}
    notes: list[str] = []
    started = datetime.now(UTC)
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic(TOPIC, 2)
        echo(f"mock Kafka cluster at {cluster.bootstrap}; topic {TOPIC} (2 partitions)")
        with Recorder(rec_dir, name="producer") as prec:
            producer = RecordingProducer({"bootstrap.servers": cluster.bootstrap,
                                          "enable.idempotence": True, "linger.ms": 5},
                                         prec, producer_id="lab-producer")
            for i in range(messages):
                key = f"customer-{i % keys}"
                seq = producer.next_seq(TOPIC, key)
                producer.produce(TOPIC, key=key, value=f"order-{key}.{seq}".encode(), seq=seq)
            left = producer.close(30)
            del producer
            gc.collect()  # destroy the client before the cluster goes away
            if left:
                raise RuntimeError(f"{left} messages not delivered")
        echo(f"produced {messages} messages over {keys} keys")

        stop = threading.Event()
        progress: dict[str, float] = {}
        threads = [
            threading.Thread(target=_member, name="fast", args=(
                "fast", cluster.bootstrap, rec_dir, settings, stop, 0, work_ms, notes,
                progress)),
            threading.Thread(target=_member, name="slow", args=(
                "slow", cluster.bootstrap, rec_dir, settings, stop, stall_ms, work_ms, notes,
                progress)),
        ]
        threads[0].start()
        time.sleep(1.0)  # "slow" joins second: a first rebalance hands it a partition
        threads[1].start()
        t0 = time.monotonic()
        quiet_needed = max(8.0, 1.5 * poll_interval_ms / 1000)
        while time.monotonic() - t0 < max_seconds:
            time.sleep(0.5)
            last = max(progress.values(), default=t0)
            stalled_done = any("stalling" in n for n in notes) and \
                time.monotonic() - t0 > (stall_ms / 1000 + 2)
            if stalled_done and time.monotonic() - last > quiet_needed:
                break
        stop.set()
        for t in threads:
            t.join(timeout=30)
        echo("consumer group finished: " + "; ".join(notes))
        broker_rows = _dump(cluster.bootstrap, rec_dir / "broker.dump.jsonl")
        echo(f"dumped {broker_rows} records (read until idle)")
    finished = datetime.now(UTC)

    files = {
        "sends": [str(rec_dir / "producer.sends.jsonl")],
        "broker": [str(rec_dir / "broker.dump.jsonl")],
        "ledger": sorted(str(p) for p in rec_dir.glob("*.ledger.jsonl")),
        "events": sorted(str(p) for p in rec_dir.glob("*.events.jsonl")),
    }
    window = AuditWindow(started.replace(second=0, microsecond=0),
                         (finished + timedelta(minutes=1)).replace(second=0, microsecond=0),
                         grace_minutes=0)
    config = AuditConfig.from_dict({"groups": {GROUP: dict(settings, topics=[TOPIC])},
                                    "notifier": {"type": "log"}})
    if spark is None:
        from delivery_audit.spark import get_spark

        spark = get_spark("delivery-audit-lab")
    result = run_audit(AuditRequest(inputs=files, window=window, out=str(workdir / "reports"),
                                    config=config, notify=False, spark=spark))
    return LabResult(workdir, result.destination, result.report, files, notes)


SCENARIOS = ("rebalance", "transactions")


def lab_command(
    scenario: Annotated[str, typer.Option(
        help="rebalance (a member evicted by max.poll.interval.ms) or transactions "
             "(a transactional producer, read_committed and read_uncommitted groups)")
    ] = "rebalance",
    workdir: Annotated[Path, typer.Option(help="where recordings and reports go")] = Path(
        "delivery-audit-lab"),
    messages: Annotated[int, typer.Option(help="messages to produce")] = 40,
    keys: Annotated[int, typer.Option(help="distinct keys")] = 8,
    poll_interval_ms: Annotated[int, typer.Option(
        help="max.poll.interval.ms (and session.timeout.ms) of the group")] = 6000,
    stall_ms: Annotated[int, typer.Option(
        help="how long the slow member stalls on one record")] = 9000,
    transactions: Annotated[int, typer.Option(
        min=2, help="transactions to run (scenario transactions)")] = 8,
) -> None:
    """Run a real rebalance (or transactions) on a local mock Kafka cluster, record it
    and audit it."""
    if scenario not in SCENARIOS:
        raise typer.BadParameter(f"--scenario is one of {', '.join(SCENARIOS)}")
    if scenario == "transactions":
        _transactions_command(workdir, transactions)
        return
    if stall_ms <= poll_interval_ms:
        raise typer.BadParameter("--stall-ms must exceed --poll-interval-ms")
    try:
        res = run_lab(workdir, messages=messages, keys=keys, poll_interval_ms=poll_interval_ms,
                      stall_ms=stall_ms, echo=typer.echo)
    except BrokerUnavailable as exc:
        typer.echo(f"error: cannot start the lab broker: {exc}", err=True)
        raise typer.Exit(1) from exc
    red = res.report.get("anomalies", {}).get("redelivery", {})
    reb = res.report.get("rebalances", {}).get(GROUP, {})
    typer.echo(f"redelivery: {red.get('count', 0)} (by cause {red.get('by_cause', {})}); "
               f"rebalances: {reb.get('rebalance_count', 0)}; evictions: "
               + ", ".join(f"{e['member_id']}={e['diagnosis']}"
                           for e in reb.get("evictions", [])))
    typer.echo(f"recordings: {res.workdir / 'recordings'}")
    typer.echo(f"report: {res.destination}/report.html")


def _transactions_command(workdir: Path, transactions: int) -> None:
    from .lab_txn import run_transactions_lab, summary

    try:
        res = run_transactions_lab(workdir, transactions=transactions, echo=typer.echo)
    except BrokerUnavailable as exc:
        typer.echo(f"error: cannot start the lab broker: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(summary(res.report))
    typer.echo(f"recordings: {res.recording.workdir / 'recordings'}")
    typer.echo(f"report: {res.destination}/report.html")


__all__ = ["BrokerUnavailable", "LabResult", "MockCluster", "lab_command", "run_lab"]

if __name__ == "__main__":  # pragma: no cover
    typer.run(lab_command)
