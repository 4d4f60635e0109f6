"""RecordingProducer: a confluent_kafka.Producer whose every send outcome becomes a
canonical ``sends`` row (contract §2; §9 for transactions)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from .kafka_client import TIMEOUT_ERRORS, KafkaException, Producer
from .writer import SEQ_HEADER, Recorder, as_text, now_ms


def _error_text(err: Any) -> str:
    """`NAME: description` of a KafkaError (or the exception's text)."""
    if hasattr(err, "name") and hasattr(err, "str"):
        return f"{err.name()}: {err.str()}"
    return f"{type(err).__name__}: {err}"


class RecordingProducer:
    """A confluent_kafka.Producer that records each send (see the package docstring).

    * a delivery report → a ``sends`` row: ``acked`` with partition, offset and ack_ts;
      ``timeout`` (message/request timed out) or ``failed`` with ``error``;
    * ``produce`` raising (queue full, message too large …) → a ``failed`` row, re-raised;
    * with a ``transactional.id``: the sends between ``begin_transaction`` and
      ``commit_transaction`` / ``abort_transaction`` are held and written when it ends,
      ``acked`` or ``aborted`` (partition and offset when their delivery report had them),
      with ``ack_ts`` the end of the transaction;
    * every row: ``send_ts`` (the produce call), ``attempt``, ``producer_id``,
      ``idempotent`` (``enable.idempotence``, or transactional), ``transactional_id``.

    The sequence number travels in a record header (``seq`` by default) so that consumers
    can record it too; give ``seq=`` or let it count 0, 1, 2 … per (topic, key)."""

    def __init__(self, config: dict[str, Any], recorder: Recorder,
                 producer_id: str | None = None, seq_header: str | None = SEQ_HEADER) -> None:
        self._producer: Producer | None = Producer(config)
        self.recorder = recorder
        self.producer_id = producer_id or config.get("client.id") or recorder.name
        self.transactional_id = as_text(config.get("transactional.id"))
        # a transactional producer is idempotent (librdkafka enables it)
        self.idempotent = self.transactional_id is not None or \
            str(config.get("enable.idempotence", "false")).lower() == "true"
        self.seq_header = seq_header
        self._next_seq: dict[tuple[str, str | None], int] = defaultdict(int)
        self._lock = threading.Lock()
        self._txn: list[dict[str, Any]] | None = None  # the open transaction's sends

    def next_seq(self, topic: str, key: str | None) -> int:
        """The next sequence number of (topic, key): 0, 1, 2 …"""
        with self._lock:
            seq = self._next_seq[(topic, key)]
            self._next_seq[(topic, key)] = seq + 1
            return seq

    def produce(self, topic: str, value: Any = None, key: Any = None, seq: int | None = None,
                attempt: int = 1, on_delivery: Callable | None = None,
                headers: list | dict | None = None, **kwargs: Any) -> int:
        """As Producer.produce, recorded; returns the seq used."""
        key_s = as_text(key)
        if seq is None:
            seq = self.next_seq(topic, key_s)
        hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        if self.seq_header:
            hdrs.append((self.seq_header, str(seq).encode()))
        row: dict[str, Any] = dict(
            send_ts=now_ms(), topic=topic, key=key_s, seq=seq, attempt=attempt,
            producer_id=self.producer_id, idempotent=self.idempotent,
            transactional_id=self.transactional_id)
        in_txn = self._txn is not None

        def delivered(err, msg) -> None:
            self._delivered(row, in_txn, err, msg)
            if on_delivery is not None:
                on_delivery(err, msg)

        try:
            self._client.produce(topic, value=value, key=key, headers=hdrs or None,
                                 on_delivery=delivered, **kwargs)
        except (BufferError, KafkaException) as exc:  # never sent: a failed attempt
            cause = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
            self.recorder.write("sends", status="failed", ack_ts=now_ms(),
                                error=_error_text(cause), **row)
            raise
        if in_txn:
            with self._lock:
                if self._txn is not None:
                    self._txn.append(row)
        return seq

    def _delivered(self, row: dict[str, Any], in_txn: bool, err, msg) -> None:
        if in_txn:  # written when the transaction ends
            if err is None:
                row.update(partition=msg.partition(), offset=msg.offset())
            else:
                row["error"] = _error_text(err)
            return
        if err is None:
            self.recorder.write("sends", status="acked", partition=msg.partition(),
                                offset=msg.offset(), ack_ts=now_ms(), **row)
        else:
            status = "timeout" if err.code() in TIMEOUT_ERRORS else "failed"
            self.recorder.write("sends", status=status, error=_error_text(err),
                                ack_ts=now_ms(), **row)

    # transactions -------------------------------------------------------------------
    def begin_transaction(self) -> None:
        """As Producer.begin_transaction; the sends until commit/abort are held back."""
        self._client.begin_transaction()
        with self._lock:
            self._txn = []

    def commit_transaction(self, timeout: float = 30.0) -> None:
        """As Producer.commit_transaction; once it succeeded, the transaction's sends are
        written `acked` (ack_ts: the commit). If it raises, the sends stay held: abort."""
        self._client.commit_transaction(timeout)
        self._client.poll(0)
        self._end_transaction(committed=True)

    def abort_transaction(self, timeout: float = 30.0) -> None:
        """As Producer.abort_transaction; the transaction's sends are written `aborted`,
        with the partition and offset of their delivery report when they had one."""
        self._client.abort_transaction(timeout)
        self._client.flush(timeout)  # serves the purged messages' delivery reports
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

    # the client -----------------------------------------------------------------------
    @property
    def _client(self) -> Producer:
        if self._producer is None:
            raise RuntimeError("the RecordingProducer is closed")
        return self._producer

    def close(self, timeout: float = 30.0) -> int:
        """Flush (serving the last delivery reports) and release the client; returns the
        messages still undelivered."""
        left = self._client.flush(timeout)
        self._producer = None
        return left

    def __getattr__(self, name: str) -> Any:  # poll, flush, purge, … as the Producer's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._client, name)
