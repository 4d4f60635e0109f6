"""`delivery-audit lab`: a real rebalance on a real Kafka-protocol broker, recorded and
audited end to end (`--scenario rebalance`, the default; `--scenario transactions` is
lab_txn.py; `--serve` only serves the broker, lab_serve.py).

1. starts librdkafka's mock cluster (shipped inside the confluent-kafka wheel, reached
   through its C API with ctypes) on 127.0.0.1 and creates a 2-partition topic;
2. produces keyed, sequenced messages through the RecordingProducer (idempotent);
3. runs a consumer group of two RecordingConsumers; the member "slow" stalls on one
   record for longer than max.poll.interval.ms, so librdkafka makes it leave the group:
   the group rebalances, "fast" takes the partition over and reprocesses what "slow"
   had not committed, and "slow"'s commit then fails;
4. reads the topic as `delivery-audit snapshot` does (every partition up to the end
   offsets taken when it starts, record batches with their producer ids) into the
   canonical broker form;
5. audits the recorded files with run_audit and prints where the report is.

Everything binds 127.0.0.1; the mock cluster lives in this process and is destroyed by
the lab itself.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from delivery_audit.recorders import Recorder

from .lab_audit import audit_recordings, fresh_recordings, recorded_files
from .lab_broker import BrokerUnavailable, MockCluster, dump_topic
from .lab_serve import serve
from .lab_txn import run_transactions_lab, summary

TOPIC = "lab-orders"
GROUP = "lab-group"


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

    from delivery_audit.recorders import RecordingConsumer

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


@dataclass
class LabRecording:
    """Steps 1–4 done: the recorded files, the run's span, the group's settings, notes."""

    workdir: Path
    files: dict[str, list[str]]
    started: datetime
    finished: datetime
    settings: dict[str, int]
    notes: list[str] = field(default_factory=list)


def record_lab(workdir: str | Path, messages: int = 40, keys: int = 8,
               poll_interval_ms: int = 6000, stall_ms: int = 9000, work_ms: int = 150,
               max_seconds: float = 90.0, echo=print) -> LabRecording:
    """Steps 1–4 in `workdir` (recordings under recordings/): mostly waiting on the
    consumer group (no Spark), so a caller may run it beside other work."""
    from delivery_audit.recorders import RecordingProducer

    workdir = Path(workdir)
    rec_dir = fresh_recordings(workdir)
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
        broker_rows = dump_topic(cluster.bootstrap, TOPIC, rec_dir / "broker.dump.jsonl")
        echo(f"read {broker_rows} records as a snapshot (up to the end offsets)")
    finished = datetime.now(UTC)
    files = recorded_files(rec_dir, "broker.dump.jsonl")
    return LabRecording(workdir, files, started, finished, settings, notes)


def audit_lab(recording: LabRecording, spark=None) -> LabResult:
    """Step 5: audit the recordings (reports under `workdir`/reports)."""
    config = {"groups": {GROUP: dict(recording.settings, topics=[TOPIC])},
              "notifier": {"type": "log"}}
    result = audit_recordings(recording.files, recording.started, recording.finished, config,
                              recording.workdir / "reports", spark)
    return LabResult(recording.workdir, result.destination, result.report, recording.files,
                     recording.notes)


def run_lab(workdir: str | Path, spark=None, messages: int = 40, keys: int = 8,
            poll_interval_ms: int = 6000, stall_ms: int = 9000, work_ms: int = 150,
            max_seconds: float = 90.0, echo=print) -> LabResult:
    """Run the lab in `workdir` (recordings under recordings/, reports under reports/)."""
    return audit_lab(record_lab(workdir, messages, keys, poll_interval_ms, stall_ms, work_ms,
                                max_seconds, echo), spark)


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
    serve_broker: Annotated[bool, typer.Option(
        "--serve", help="only serve the lab's broker for your own clients: print its "
                        "address, and on Ctrl-C write WORKDIR/broker/<topic>.jsonl")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        help="with --serve: a topic to create (repeatable; default orders)")] = None,
    partitions: Annotated[int, typer.Option(
        min=1, help="with --serve: partitions per topic")] = 3,
) -> None:
    """Run a real rebalance (or transactions) on a local mock Kafka cluster, record it
    and audit it; or (--serve) serve that broker to your own clients."""
    if serve_broker:
        try:
            serve(workdir, topic or ["orders"], partitions, echo=typer.echo)
        except BrokerUnavailable as exc:
            typer.echo(f"error: cannot start the lab broker: {exc}", err=True)
            raise typer.Exit(1) from exc
        return
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
