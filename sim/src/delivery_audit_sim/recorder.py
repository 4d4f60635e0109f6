"""Client recorders: confluent-kafka Producer/Consumer wrappers that write the auditor's
canonical JSON Lines (sends, ledger, events) while the application runs.

    from delivery_audit_sim.recorder import Recorder, RecordingProducer, RecordingConsumer

    rec = Recorder("audit-logs/", name="orders-api-1")
    producer = RecordingProducer({"bootstrap.servers": "...", "enable.idempotence": True}, rec)
    producer.produce("orders", key="customer-7", value=b"...", seq=42)   # seq: yours
    producer.flush()

    consumer = RecordingConsumer({"bootstrap.servers": "...", "group.id": "billing",
                                  "enable.auto.commit": False}, rec, member_id="billing-1")
    consumer.subscribe(["orders"])
    while running:
        for msg in consumer.consume(num_messages=100, timeout=1.0):
            if msg.error():
                continue
            with consumer.processing(msg):        # one ledger row: started/finished/outcome
                handle(msg)
        consumer.commit(asynchronous=False)       # commit / commit_failed events
    consumer.close()
    rec.close()

* delivery callbacks → ``sends`` rows (acked with partition/offset and ack_ts; failed, or
  timeout for message timeouts, with the error);
* a transactional producer (``transactional.id``; ``begin_transaction`` …
  ``commit_transaction`` / ``abort_transaction`` on the recorder): the transaction's sends
  are held until it ends, then written ``acked`` (committed) or ``aborted`` (partition and
  offset from the delivery report when there was one), each with ``transactional_id``;
* ledger rows carry the consumer's ``isolation`` (``isolation.level``, librdkafka's default
  read_committed);
* ``on_assign`` / ``on_revoke`` / ``on_lost`` → ``assigned`` / ``revoked`` / ``lost``
  events per partition (your own callbacks still run);
* synchronous commit results and the ``on_commit`` callback → ``commit`` (the committed
  offset is the next to read) / ``commit_failed`` events per partition;
* a poll that reports the max.poll.interval.ms expiry → ``left_group`` 'poll timeout';
* ``processing(msg)`` (context manager) → a ledger row; an exception makes the outcome
  ``failure`` (and propagates); ``skip(msg)`` records ``skipped``.

The sequence number travels in a record header (``seq`` by default) so consumers can
record it too. confluent_kafka is imported lazily: this module imports without it.

Size: the recording producer and consumer (plain and transactional) share the canonical row writers.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from delivery_audit.schemas import FIELDS


def now_ms() -> int:
    return int(time.time() * 1000)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


class Recorder:
    """Thread-safe canonical JSON Lines writer: ``<dir>/<name>.<source>.jsonl``."""

    def __init__(self, directory: str | os.PathLike, name: str | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}

    def path(self, source: str) -> Path:
        return self.directory / f"{self.name}.{source}.jsonl"

    def write(self, source: str, **values: Any) -> None:
        names = [f.name for f in FIELDS[source]]
        unknown = set(values) - set(names)
        if unknown:
            raise ValueError(f"not {source} fields: {sorted(unknown)}")
        line = json.dumps({n: values.get(n) for n in names}, separators=(",", ":"),
                          ensure_ascii=False)
        with self._lock:
            fh = self._files.get(source)
            if fh is None:
                fh = self._files[source] = open(self.path(source), "a",  # noqa: SIM115
                                                encoding="utf-8", buffering=1)
            fh.write(line + "\n")

    def flush(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.flush()

    def close(self) -> None:
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordingProducer:
    """A confluent_kafka.Producer whose every delivery report becomes a sends row."""

    def __init__(self, config: dict[str, Any], recorder: Recorder,
                 producer_id: str | None = None, seq_header: str | None = "seq") -> None:
        from confluent_kafka import Producer

        self._producer = Producer(config)
        self.recorder = recorder
        self.producer_id = producer_id or config.get("client.id") or recorder.name
        self.transactional_id = _text(config.get("transactional.id"))
        # a transactional producer is idempotent (librdkafka enables it)
        self.idempotent = self.transactional_id is not None or \
            str(config.get("enable.idempotence", "false")).lower() == "true"
        self.seq_header = seq_header
        self._next_seq: dict[tuple[str, str | None], int] = defaultdict(int)
        self._lock = threading.Lock()
        self._txn: list[dict[str, Any]] | None = None  # the open transaction's sends

    def next_seq(self, topic: str, key: str | None) -> int:
        with self._lock:
            seq = self._next_seq[(topic, key)]
            self._next_seq[(topic, key)] = seq + 1
            return seq

    def produce(self, topic: str, value: Any = None, key: Any = None, seq: int | None = None,
                attempt: int = 1, on_delivery: Callable | None = None,
                headers: list | dict | None = None, **kwargs: Any) -> int:
        """Produce and record; returns the seq used (auto-assigned per (topic, key) when
        not given: 0, 1, 2 …)."""
        from confluent_kafka import KafkaError

        key_s = _text(key)
        if seq is None:
            seq = self.next_seq(topic, key_s)
        hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        if self.seq_header:
            hdrs.append((self.seq_header, str(seq).encode()))
        sent = now_ms()

        pending: dict[str, Any] | None = None
        if self._txn is not None:
            pending = dict(send_ts=sent, topic=topic, key=key_s, seq=seq, attempt=attempt,
                           producer_id=self.producer_id, idempotent=self.idempotent,
                           transactional_id=self.transactional_id)
            with self._lock:
                self._txn.append(pending)

        def delivered(err, msg) -> None:
            if pending is not None:  # written when the transaction ends
                pending["ack_ts"] = now_ms()
                if err is None:
                    pending.update(partition=msg.partition(), offset=msg.offset())
                else:
                    pending["error"] = f"{err.name()}: {err.str()}"
                if on_delivery is not None:
                    on_delivery(err, msg)
                return
            base = dict(send_ts=sent, topic=topic, key=key_s, seq=seq, ack_ts=now_ms(),
                        attempt=attempt, producer_id=self.producer_id,
                        idempotent=self.idempotent, transactional_id=self.transactional_id)
            if err is None:
                self.recorder.write("sends", status="acked", partition=msg.partition(),
                                    offset=msg.offset(), **base)
            else:
                timeout = err.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT,
                                         KafkaError.REQUEST_TIMED_OUT)
                self.recorder.write("sends", status="timeout" if timeout else "failed",
                                    error=f"{err.name()}: {err.str()}", **base)
            if on_delivery is not None:
                on_delivery(err, msg)

        self._producer.produce(topic, value=value, key=key, headers=hdrs or None,
                               on_delivery=delivered, **kwargs)
        return seq

    # transactions -------------------------------------------------------------------
    def begin_transaction(self) -> None:
        """As Producer.begin_transaction; the sends until commit/abort are held back."""
        self._producer.begin_transaction()
        with self._lock:
            self._txn = []

    def commit_transaction(self, timeout: float = 30.0) -> None:
        """As Producer.commit_transaction; once it succeeded, the transaction's sends are
        written `acked` (ack_ts: the commit). If it raises, the sends stay held: abort."""
        self._producer.commit_transaction(timeout)
        self._producer.poll(0)
        self._end_transaction(committed=True)

    def abort_transaction(self, timeout: float = 30.0) -> None:
        """As Producer.abort_transaction; the transaction's sends are written `aborted`,
        with the partition and offset of their delivery report when they had one."""
        self._producer.abort_transaction(timeout)
        self._producer.flush(timeout)  # serves the purged messages' delivery reports
        self._end_transaction(committed=False)

    def _end_transaction(self, committed: bool) -> None:
        ended = now_ms()
        with self._lock:
            rows, self._txn = self._txn or [], None
        for row in rows:
            row = dict(row, ack_ts=ended)
            if not committed:
                self.recorder.write("sends", status="aborted", **row)
            elif row.get("error") is None and row.get("offset") is not None:
                self.recorder.write("sends", status="acked", **row)
            else:  # cannot happen after a successful commit; recorded, never dropped
                self.recorder.write("sends", status="failed", **row)

    def close(self, timeout: float = 30.0) -> int:
        """Flush and release the client; returns the messages still undelivered."""
        left = self._producer.flush(timeout)
        self.__dict__["_producer"] = None
        return left

    def __getattr__(self, name: str) -> Any:  # poll, flush, purge, … as the Producer's
        return getattr(self._producer, name)


class RecordingConsumer:
    """A confluent_kafka.Consumer that records group events, commits and processing."""

    def __init__(self, config: dict[str, Any], recorder: Recorder,
                 member_id: str | None = None, seq_header: str | None = "seq") -> None:
        from confluent_kafka import Consumer

        self.group_id = str(config["group.id"])
        # librdkafka's default isolation.level is read_committed
        self.isolation = str(config.get("isolation.level", "read_committed")).lower()
        self.member_id = member_id or config.get("client.id") or recorder.name
        self.recorder = recorder
        self.seq_header = seq_header
        self._sync = threading.local()
        self._sync.active = False
        user_on_commit = config.get("on_commit")
        conf = dict(config)
        conf["on_commit"] = self._on_commit_cb(user_on_commit)
        self._consumer = Consumer(conf)

    # events -----------------------------------------------------------------------
    def event(self, event: str, topic: str | None = None, partition: int | None = None,
              offset: int | None = None, detail: str | None = None,
              ts: int | None = None) -> None:
        self.recorder.write("events", group_id=self.group_id, member_id=self.member_id,
                            ts=ts or now_ms(), event=event, topic=topic, partition=partition,
                            offset=offset, detail=detail)

    def _partitions_event(self, event: str, partitions, detail: str | None = None) -> None:
        ts = now_ms()
        for tp in partitions:
            self.event(event, tp.topic, tp.partition, detail=detail, ts=ts)

    def _commit_result(self, partitions, err=None) -> None:
        ts = now_ms()
        for tp in partitions or []:
            failed = err is not None or tp.error is not None
            reason = err if err is not None else tp.error
            self.event("commit_failed" if failed else "commit", tp.topic, tp.partition,
                       offset=tp.offset if tp.offset is not None and tp.offset >= 0 else None,
                       detail=str(reason) if failed else None, ts=ts)

    def _on_commit_cb(self, user: Callable | None) -> Callable:
        def on_commit(err, partitions) -> None:
            if not getattr(self._sync, "active", False):  # sync results: see commit()
                self._commit_result(partitions, err)
            if user is not None:
                user(err, partitions)
        return on_commit

    def subscribe(self, topics: list[str], on_assign: Callable | None = None,
                  on_revoke: Callable | None = None, on_lost: Callable | None = None,
                  **kwargs: Any) -> None:
        def assigned(consumer, partitions):
            self._partitions_event("assigned", partitions)
            if on_assign:
                on_assign(consumer, partitions)

        def revoked(consumer, partitions):
            self._partitions_event("revoked", partitions)
            if on_revoke:
                on_revoke(consumer, partitions)

        def lost(consumer, partitions):
            self._partitions_event("lost", partitions, "assignment lost")
            if on_lost:
                on_lost(consumer, partitions)

        self._consumer.subscribe(topics, on_assign=assigned, on_revoke=revoked, on_lost=lost,
                                 **kwargs)

    def _check(self, msg) -> None:
        from confluent_kafka import KafkaError

        if msg is not None and msg.error() is not None and \
                msg.error().code() == KafkaError._MAX_POLL_EXCEEDED:
            self.event("left_group", detail=f"poll timeout: {msg.error().str()}")

    def poll(self, timeout: float = -1):
        msg = self._consumer.poll(timeout)
        self._check(msg)
        return msg

    def consume(self, num_messages: int = 1, timeout: float = -1):
        msgs = self._consumer.consume(num_messages=num_messages, timeout=timeout)
        for m in msgs:
            self._check(m)
        return msgs

    def commit(self, message=None, offsets=None, asynchronous: bool = True):
        """As Consumer.commit; synchronous results are recorded here, asynchronous ones
        by the on_commit callback (during a later poll)."""
        from confluent_kafka import KafkaException, TopicPartition

        kwargs: dict[str, Any] = {"asynchronous": asynchronous}
        if message is not None:
            kwargs["message"] = message
        if offsets is not None:
            kwargs["offsets"] = offsets
        if asynchronous:
            return self._consumer.commit(**kwargs)
        self._sync.active = True
        try:
            result = self._consumer.commit(**kwargs)
        except KafkaException as exc:
            if offsets is not None:
                tried = offsets
            elif message is not None:
                tried = [TopicPartition(message.topic(), message.partition(),
                                        message.offset() + 1)]
            else:
                tried = []
            if tried:
                self._commit_result(tried, exc.args[0] if exc.args else exc)
            else:
                self.event("commit_failed", detail=str(exc.args[0] if exc.args else exc))
            raise
        finally:
            self._sync.active = False
        self._commit_result(result)
        return result

    # processing ---------------------------------------------------------------------
    def _seq(self, msg) -> int | None:
        if not self.seq_header:
            return None
        for k, v in msg.headers() or []:
            if k == self.seq_header:
                text = _text(v) or ""
                return int(text) if text.strip().lstrip("-").isdigit() else None
        return None

    def _ledger(self, msg, started: int, finished: int | None, outcome: str) -> None:
        self.recorder.write("ledger", group_id=self.group_id, member_id=self.member_id,
                            topic=msg.topic(), partition=msg.partition(), offset=msg.offset(),
                            key=_text(msg.key()), seq=self._seq(msg), started_ts=started,
                            finished_ts=finished, outcome=outcome, isolation=self.isolation)

    @contextmanager
    def processing(self, msg) -> Iterator[None]:
        started = now_ms()
        try:
            yield
        except BaseException:
            self._ledger(msg, started, now_ms(), "failure")
            raise
        self._ledger(msg, started, now_ms(), "success")

    def skip(self, msg) -> None:
        t = now_ms()
        self._ledger(msg, t, t, "skipped")

    def close(self) -> None:
        self._consumer.close()

    def __getattr__(self, name: str) -> Any:  # assignment, position, … as the Consumer's
        return getattr(self._consumer, name)
