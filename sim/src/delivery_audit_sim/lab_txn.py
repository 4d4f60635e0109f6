"""`delivery-audit lab --scenario transactions`: a real transactional producer on
librdkafka's mock Kafka cluster, consumers in both isolation levels, recorded and audited
(contract §9).

1. starts the mock cluster (lab_broker.MockCluster) and creates a 2-partition topic;
2. a RecordingProducer with a `transactional.id` runs `transactions` transactions of
   `per_txn` keyed, sequenced records each: transaction i is aborted when i % 4 is 1
   (its records are sent again, attempt 2, in the next, committed transaction) or 3 (not
   sent again: those messages were never committed); every other one is committed. The
   aborted ones are flushed first, so their records are in the log before the ABORT marker;
3. reads the log as `delivery-audit snapshot` does (delivery_audit.snapshot: Fetch
   over the Kafka protocol, record batches with their headers), the way kafka-dump-log
   shows a segment: every data record with `transactional`, the real `pid` and
   `producer_epoch` of its batch, and every COMMIT/ABORT marker as a control row.
   Consumers never receive markers; this read is what shows them;
4. two consumer groups read the topic to its end, one member each: `lab-txn-committed`
   with isolation.level read_committed and `lab-txn-uncommitted` with read_uncommitted,
   recorded (ledger rows carry `isolation`).

   The mock cluster does not filter aborted records for classic consumers: its Fetch
   handler ignores the isolation level, answers LastStableOffset = high watermark and an
   empty AbortedTransactions list, so librdkafka's read_committed consumer delivers the
   aborted records (it skips the markers). The read_committed member therefore drops the
   records the raw dump shows aborted before processing them — the filter a real broker's
   answer makes the client apply — and the lab notes how many it dropped;
5. audits the recordings with each group's isolation.level in the config.
"""

from __future__ import annotations

import gc
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from delivery_audit.recorders import Recorder

from .lab_audit import audit_recordings, fresh_recordings, recorded_files
from .lab_broker import MockCluster, dump_topic

TXN_TOPIC = "lab-payments"
TRANSACTIONAL_ID = "lab-payments-tx"
GROUPS = {"lab-txn-committed": "read_committed", "lab-txn-uncommitted": "read_uncommitted"}


@dataclass
class TxnRecording:
    workdir: Path
    files: dict[str, list[str]]
    started: datetime
    finished: datetime
    plan: list[str]  # per transaction: commit, abort-resend, abort-drop
    aborted_offsets: set[tuple[int, int]]  # (partition, offset) of aborted data records
    notes: list[str] = field(default_factory=list)


@dataclass
class TxnLabResult:
    recording: TxnRecording
    destination: str
    report: dict[str, Any]


def transaction_plan(transactions: int) -> list[str]:
    """What becomes of each transaction: i % 4 == 1 aborted and sent again in the next
    one (if there is one), i % 4 == 3 aborted for good, the others committed."""
    return ["abort-resend" if i % 4 == 1 else "abort-drop" if i % 4 == 3 else "commit"
            for i in range(transactions)]


def _produce(bootstrap: str, rec_dir: Path, plan: list[str], per_txn: int,
             keys: int) -> None:
    from delivery_audit.recorders import RecordingProducer

    with Recorder(rec_dir, name="producer") as rec:
        producer = RecordingProducer({
            "bootstrap.servers": bootstrap, "transactional.id": TRANSACTIONAL_ID,
            "linger.ms": 5, "compression.type": "none"}, rec, producer_id="lab-txn-producer")
        producer.init_transactions(30)
        n = 0
        resend: list[tuple[str, int]] = []
        for outcome in plan:
            producer.begin_transaction()
            batch, resend = [(k, s, 2) for k, s in resend], []
            for _ in range(per_txn):
                key = f"customer-{n % keys}"
                batch.append((key, producer.next_seq(TXN_TOPIC, key), 1))
                n += 1
            for key, seq, attempt in batch:
                producer.produce(TXN_TOPIC, key=key, value=f"payment-{key}.{seq}".encode(),
                                 seq=seq, attempt=attempt)
            if outcome == "commit":
                producer.commit_transaction(30)
                continue
            producer.flush(30)  # the records reach the log before the ABORT marker
            producer.abort_transaction(30)
            if outcome == "abort-resend":
                resend = [(k, s) for k, s, _a in batch]
        if resend:  # the plan ended on an abort-resend: one more, committed transaction
            producer.begin_transaction()
            for key, seq in resend:
                producer.produce(TXN_TOPIC, key=key, value=f"payment-{key}.{seq}".encode(),
                                 seq=seq, attempt=2)
            producer.commit_transaction(30)
        left = producer.close(30)
        del producer
        gc.collect()  # destroy the client before the cluster goes away
        if left:
            raise RuntimeError(f"{left} messages not delivered")


BROKER_FILE = "broker.broker.jsonl"


def aborted_records(rows: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """The (partition, offset) of aborted data records (rule 21: the first marker of the
    record's pid after it, in its partition, is an ABORT)."""
    aborted: set[tuple[int, int]] = set()
    open_by_pid: dict[tuple[int, int], list[int]] = {}
    for r in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        slot = (r["partition"], r["pid"])
        if r["control"] is not None:
            if r["control"] == "abort":
                aborted.update((r["partition"], o) for o in open_by_pid.get(slot, []))
            open_by_pid.pop(slot, None)
        elif r["transactional"]:
            open_by_pid.setdefault(slot, []).append(r["offset"])
    return aborted


def dump_raw(bootstrap: str, rec_dir: Path) -> tuple[int, set[tuple[int, int]]]:
    """The broker view, data rows and control rows, read as `snapshot` reads the cluster
    into `rec_dir`/broker.broker.jsonl. Returns the row count and the (partition, offset)
    of aborted data records."""
    path = rec_dir / BROKER_FILE
    rows = dump_topic(bootstrap, TXN_TOPIC, path)
    with open(path, encoding="utf-8") as fh:
        return rows, aborted_records([json.loads(line) for line in fh if line.strip()])


def _consume(bootstrap: str, rec_dir: Path, group: str, isolation: str,
             aborted: set[tuple[int, int]], notes: list[str], idle_s: float,
             work_ms: int, max_wait_s: float = 30.0) -> None:
    from delivery_audit.recorders import RecordingConsumer

    member = f"{group}-1"
    rec = Recorder(rec_dir, name=member)
    consumer = RecordingConsumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": member,
        "isolation.level": isolation, "enable.auto.commit": False,
        "auto.offset.reset": "earliest"}, rec, member_id=member)
    consumer.subscribe([TXN_TOPIC])
    dropped = processed = 0
    begun = time.monotonic()
    last: float | None = None  # idle time counts from the first record (joining is slow)
    try:
        while time.monotonic() - (last or begun) < (idle_s if last else max_wait_s):
            batch = consumer.consume(num_messages=20, timeout=0.3)
            for msg in batch:
                if msg.error():
                    continue
                last = time.monotonic()
                if isolation == "read_committed" and \
                        (msg.partition(), msg.offset()) in aborted:
                    dropped += 1  # the broker's read_committed filter, missing in the mock
                    continue
                with consumer.processing(msg):
                    time.sleep(work_ms / 1000)
                processed += 1
            if batch:
                try:
                    consumer.commit(asynchronous=False)
                except Exception as exc:  # noqa: BLE001 - recorded as commit_failed
                    notes.append(f"{member}: commit failed: {exc}")
    finally:
        try:
            consumer.close()
        finally:
            rec.close()
    notes.append(f"{member} ({isolation}): processed {processed}"
                 + (f"; dropped {dropped} aborted records the mock delivered"
                    if isolation == "read_committed" else ""))


def record_transactions(workdir: str | Path, transactions: int = 8, per_txn: int = 4,
                        keys: int = 6, idle_s: float = 2.5, work_ms: int = 5,
                        echo=print) -> TxnRecording:
    """Steps 1–4: produce, dump, consume; the recordings under `workdir`/recordings."""
    workdir = Path(workdir)
    rec_dir = fresh_recordings(workdir)
    plan = transaction_plan(transactions)
    notes: list[str] = []
    started = datetime.now(UTC)
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic(TXN_TOPIC, 2)
        echo(f"mock Kafka cluster at {cluster.bootstrap}; topic {TXN_TOPIC} (2 partitions)")
        _produce(cluster.bootstrap, rec_dir, plan, per_txn, keys)
        echo(f"transactional.id {TRANSACTIONAL_ID}: {len(plan)} transactions of {per_txn} "
             f"records ({', '.join(plan)})")
        rows, aborted = dump_raw(cluster.bootstrap, rec_dir)
        echo(f"read {rows} log records as a snapshot (markers included); "
             f"{len(aborted)} aborted")
        threads = [threading.Thread(target=_consume, name=g, args=(
            cluster.bootstrap, rec_dir, g, iso, aborted, notes, idle_s, work_ms))
            for g, iso in GROUPS.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        echo("consumers finished: " + "; ".join(notes))
    files = recorded_files(rec_dir, BROKER_FILE)
    return TxnRecording(workdir, files, started, datetime.now(UTC), plan, aborted, notes)


def audit_config() -> dict[str, Any]:
    """The lab's audit config: each group's isolation.level and topic (§9)."""
    return {"groups": {g: {"isolation.level": iso, "topics": [TXN_TOPIC]}
                       for g, iso in GROUPS.items()},
            "notifier": {"type": "log"}}


def audit_transactions(recording: TxnRecording, spark=None) -> TxnLabResult:
    """Step 5: audit the recordings (reports under `workdir`/reports)."""
    result = audit_recordings(recording.files, recording.started, recording.finished,
                              audit_config(), recording.workdir / "reports", spark)
    return TxnLabResult(recording, result.destination, result.report)


def run_transactions_lab(workdir: str | Path, spark=None, transactions: int = 8,
                         echo=print) -> TxnLabResult:
    """The whole transactions lab: record, then audit."""
    return audit_transactions(record_transactions(workdir, transactions, echo=echo), spark)


def summary(report: dict[str, Any]) -> str:
    """One line for the console: the §9 figures per group where the report has them."""
    anomalies = report.get("anomalies", {})

    def count(name: str) -> Any:
        a = anomalies.get(name)
        return "n/a (engine without §9)" if a is None else a.get("count", 0)

    per_group = anomalies.get("aborted_read", {}).get("by_group")
    return (f"aborted_read: {count('aborted_read')}"
            + (f" {per_group}" if per_group else "")
            + f"; dup_write: {count('dup_write')}; dup_effect: {count('dup_effect')}; "
              f"lost_unacked: {count('lost_unacked')}")


__all__ = ["GROUPS", "TRANSACTIONAL_ID", "TXN_TOPIC", "TxnLabResult", "TxnRecording",
           "aborted_records", "audit_config", "audit_transactions", "dump_raw",
           "record_transactions",
           "run_transactions_lab", "summary", "transaction_plan"]
