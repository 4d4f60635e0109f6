"""The cluster as a snapshot talks to it: kafka-python's KafkaClient (its connections bring
SASL/SSL, its protocol classes the requests), with every partition request sent to the
partition's current leader and the leader followed when it moves.

kafka-python usage notes (not obvious from its docs):

* ``KafkaClient`` is the non-blocking network layer under KafkaConsumer: ``send(node,
  request)`` returns a Future that is only completed by ``poll(future=…)``; ``send`` to a
  node that is not connected fails at once (NodeNotReadyError), hence ``await_ready``.
* A ``Future`` fails only on network trouble; the broker's per-partition error codes are
  in the response and are ours to read (``kafka.errors.for_code``). Errors that mean the
  metadata is stale (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
  LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH …) carry ``invalid_metadata = True``: refresh
  the metadata (``cluster.request_update()`` + ``poll``) and ask the new leader.
* ``allow_auto_create_topics=False``: a metadata request for a missing topic must not
  create it (brokers and librdkafka's mock cluster auto-create by default).
* ``api_version(Request, max_version=n)`` is the highest version both sides speak."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import kafka.errors as Errors
from kafka import KafkaClient
from kafka.protocol.list_offsets import ListOffsetsRequest
from kafka.structs import TopicPartition

from .client_config import scrub
from .request import SnapshotFailed

EARLIEST, LATEST = -2, -1  # ListOffsets' special timestamps
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
ATTEMPTS = 8  # per request: leader changes and reconnects within this bound
TOPIC_ATTEMPTS = 4
BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0)


def label(tp: TopicPartition) -> str:
    """A partition as messages name it: ``topic[partition]``."""
    return f"{tp.topic}[{tp.partition}]"


def partition_entry(response: Any, tp: TopicPartition) -> tuple:
    """The response's tuple for `tp` (Fetch and ListOffsets: partition first, error code
    second)."""
    for topic, partitions in response.topics:
        if topic == tp.topic:
            for entry in partitions:
                if entry[0] == tp.partition:
                    return entry
    raise SnapshotFailed(f"{label(tp)}: the broker's answer does not mention the partition")


class Cluster:
    """One snapshot's connection to the cluster (close it: ``with Cluster(...)``)."""

    def __init__(self, bootstrap: str, settings: Mapping[str, Any],
                 config: Mapping[str, str]) -> None:
        self._settings = dict(settings, bootstrap_servers=bootstrap.split(","),
                              allow_auto_create_topics=False)
        self._settings.setdefault("client_id", "delivery-audit-snapshot")
        self._config = config  # for scrubbing messages only
        try:
            self.client = KafkaClient(**self._settings)
        except Errors.KafkaError as exc:
            raise SnapshotFailed(f"cannot reach the cluster at {bootstrap}: "
                                 f"{self.why(exc)}") from None

    def why(self, exc: BaseException) -> str:
        return scrub(f"{type(exc).__name__}: {exc}", self._config)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # metadata ---------------------------------------------------------------------
    def refresh(self) -> None:
        future = self.client.cluster.request_update()
        self.client.poll(future=future, timeout_ms=self._settings.get("request_timeout_ms",
                                                                     30000))

    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions, sorted; fails naming the topic when it has none."""
        self.client.add_topic(topic)
        for attempt in range(TOPIC_ATTEMPTS):  # a topic just created may lag in metadata
            self.refresh()
            found = self.client.cluster.partitions_for_topic(topic)
            if found:
                return sorted(found)
            if topic in self.client.cluster.unauthorized_topics:
                raise SnapshotFailed(f"topic {topic}: not authorised to describe it")
            time.sleep(BACKOFF_S[attempt])
        raise SnapshotFailed(f"topic {topic}: not in the cluster's metadata (no such topic, "
                             "or not visible to this principal); no partition can be read")

    def send(self, node: int | str, request: Any) -> Any:
        """`request`'s response from `node` (connecting first); network trouble raises
        kafka.errors.KafkaError, the response's error codes are the caller's."""
        if not self.client.await_ready(node, timeout_ms=10000):
            raise Errors.NodeNotReadyError(f"broker {node} not reachable")
        future = self.client.send(node, request)
        self.client.poll(future=future)
        if not future.is_done:
            raise Errors.KafkaTimeoutError(f"broker {node} did not answer")
        if future.failed():
            raise future.exception
        return future.value

    # requests to a partition's leader ---------------------------------------------
    def ask_leader(self, tp: TopicPartition, build: Callable[[int], Any],
                   operation: Any, what: str) -> tuple:
        """Send ``build(version)`` to `tp`'s leader and return the response's entry for
        `tp`; leader changes, reconnects and retriable errors are retried (ATTEMPTS), any
        other error code fails naming the partition."""
        last = "no leader"
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(BACKOFF_S[attempt])
                self.refresh()
            node = self.client.cluster.leader_for_partition(tp)
            if node is None or node < 0:
                last = "no leader known"
                continue
            try:
                version = self.client.api_version(operation[0], max_version=operation[1])
                response = self.send(node, build(version))
            except Errors.KafkaError as exc:
                last = self.why(exc)
                continue
            entry = partition_entry(response, tp)
            error = Errors.for_code(entry[1])
            if error is Errors.NoError:
                return entry
            last = f"{error.__name__} from broker {node}"
            if not (error.invalid_metadata or error.retriable):
                break
        raise SnapshotFailed(f"{label(tp)}: {what} failed: {last}")

    def list_offset(self, tp: TopicPartition, timestamp: int, isolation: int) -> int:
        """ListOffsets (v2+, which has the isolation level): the first offset whose
        timestamp is at or after `timestamp` (-1 when none), or EARLIEST / LATEST (the high
        watermark, or the last stable offset under READ_COMMITTED)."""

        def build(version: int) -> Any:
            if version < 2:
                raise SnapshotFailed(f"{label(tp)}: the broker speaks ListOffsets v{version};"
                                     " the snapshot needs v2 (Kafka 0.11) or later")
            entry = (tp.partition, -1, timestamp) if version >= 4 else (tp.partition, timestamp)
            return ListOffsetsRequest[version](-1, isolation, [(tp.topic, [entry])])

        entry = self.ask_leader(tp, build, (ListOffsetsRequest, 5), "ListOffsets")
        return int(entry[3])


__all__ = ["ATTEMPTS", "BACKOFF_S", "EARLIEST", "LATEST", "READ_COMMITTED", "READ_UNCOMMITTED",
           "Cluster", "label"]
