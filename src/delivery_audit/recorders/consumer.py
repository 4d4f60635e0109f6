"""RecordingConsumer: a confluent_kafka.Consumer whose processing becomes canonical
``ledger`` rows and whose group life (assignments, commits, a poll-interval expiry) becomes
``events`` rows (contract §2; ``isolation`` of §9)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .kafka_client import Consumer, KafkaError, KafkaException, TopicPartition
from .writer import SEQ_HEADER, Recorder, as_text, header_seq, now_ms


class RecordingConsumer:
    """A confluent_kafka.Consumer that records group events, commits and processing.

    * ``processing(msg)`` (a context manager) → a ``ledger`` row when the block ends:
      ``success``, or ``failure`` when it raised (the exception propagates); ``skip(msg)``
      → ``skipped``. The row has the message's topic, partition, offset, key, the seq from
      its header, started_ts/finished_ts, and the consumer's ``isolation``;
    * ``on_assign`` / ``on_revoke`` / ``on_lost`` → ``assigned`` / ``revoked`` / ``lost``
      per partition (your own callbacks given to ``subscribe`` still run);
    * a synchronous ``commit`` → ``commit`` per partition committed (offset: the next to
      read) or ``commit_failed`` with the error (then re-raised); asynchronous results come
      through the ``on_commit`` callback (yours still runs) the same way; a commit with
      nothing to commit (``_NO_OFFSET``) writes nothing;
    * a poll that reports the max.poll.interval.ms expiry → ``left_group`` 'poll timeout'.

    ``generation`` stays null: confluent-kafka does not expose the group generation."""

    def __init__(self, config: dict[str, Any], recorder: Recorder,
                 member_id: str | None = None, seq_header: str | None = SEQ_HEADER) -> None:
        self.group_id = str(config["group.id"])
        # librdkafka's default isolation.level is read_committed
        self.isolation = str(config.get("isolation.level", "read_committed")).lower()
        self.member_id = member_id or config.get("client.id") or recorder.name
        self.recorder = recorder
        self.seq_header = seq_header
        self._sync = threading.local()
        conf = dict(config)
        conf["on_commit"] = self._on_commit_cb(config.get("on_commit"))
        self._consumer = Consumer(conf)

    # events -----------------------------------------------------------------------
    def event(self, event: str, topic: str | None = None, partition: int | None = None,
              offset: int | None = None, detail: str | None = None,
              ts: int | None = None) -> None:
        """Write one ``events`` row of this member (e.g. your own ``joined_group``)."""
        self.recorder.write("events", group_id=self.group_id, member_id=self.member_id,
                            ts=ts or now_ms(), event=event, topic=topic, partition=partition,
                            offset=offset, detail=detail)

    def _partitions_event(self, event: str, partitions, detail: str | None = None) -> None:
        ts = now_ms()
        for tp in partitions:
            self.event(event, tp.topic, tp.partition, detail=detail, ts=ts)

    def _commit_result(self, partitions, err=None) -> None:
        if err is not None and getattr(err, "code", lambda: None)() == KafkaError._NO_OFFSET:
            return  # nothing was stored to commit: no commit, and no failure either
        ts = now_ms()
        for tp in partitions or []:
            failed = err is not None or tp.error is not None
            offset = tp.offset if tp.offset is not None and tp.offset >= 0 else None
            if not failed and offset is None:
                continue  # a partition of the assignment with nothing committed
            reason = err if err is not None else tp.error
            self.event("commit_failed" if failed else "commit", tp.topic, tp.partition,
                       offset=offset, detail=str(reason) if failed else None, ts=ts)

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
        """As Consumer.subscribe; assignment changes are recorded, then yours run."""
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
            reason = exc.args[0] if exc.args else exc
            if offsets is not None:
                tried = offsets
            elif message is not None:
                tried = [TopicPartition(message.topic(), message.partition(),
                                        message.offset() + 1)]
            else:
                tried = []
            if tried:
                self._commit_result(tried, reason)
            elif getattr(reason, "code", lambda: None)() != KafkaError._NO_OFFSET:
                self.event("commit_failed", detail=str(reason))
            raise
        finally:
            self._sync.active = False
        self._commit_result(result)
        return result

    # processing ---------------------------------------------------------------------
    def _ledger(self, msg, started: int, finished: int | None, outcome: str) -> None:
        self.recorder.write("ledger", group_id=self.group_id, member_id=self.member_id,
                            topic=msg.topic(), partition=msg.partition(), offset=msg.offset(),
                            key=as_text(msg.key()), seq=header_seq(msg.headers(),
                                                                   self.seq_header),
                            started_ts=started, finished_ts=finished, outcome=outcome,
                            isolation=self.isolation)

    @contextmanager
    def processing(self, msg) -> Iterator[None]:
        """Wrap the processing of one message: its ledger row is written when it ends."""
        started = now_ms()
        try:
            yield
        except BaseException:
            self._ledger(msg, started, now_ms(), "failure")
            raise
        self._ledger(msg, started, now_ms(), "success")

    def skip(self, msg) -> None:
        """Record a message deliberately not processed (outcome ``skipped``)."""
        t = now_ms()
        self._ledger(msg, t, t, "skipped")

    def close(self) -> None:
        self._consumer.close()

    def __getattr__(self, name: str) -> Any:  # assignment, position, … as the Consumer's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._consumer, name)
