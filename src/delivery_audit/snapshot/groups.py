"""A consumer group's committed offsets, asked of the group's coordinator with kafka-python's
protocol classes (FindCoordinator, then OffsetFetch naming the partitions) over the
snapshot's own connections.

Not KafkaAdminClient.list_consumer_group_offsets: the admin client logs its whole
configuration, SASL password included, at DEBUG; and its OffsetFetch for "all partitions"
is not answered by every broker (librdkafka's mock cluster returns no topics)."""

from __future__ import annotations

import time
from collections import defaultdict

import kafka.errors as Errors
from kafka.protocol.commit import OffsetFetchRequest
from kafka.protocol.find_coordinator import FindCoordinatorRequest
from kafka.structs import TopicPartition

from .cluster import ATTEMPTS, BACKOFF_S, Cluster
from .request import SnapshotFailed


def _coordinator(cluster: Cluster, group: str) -> str:
    version = cluster.client.api_version(FindCoordinatorRequest, max_version=2)
    request = FindCoordinatorRequest[version](group) if version == 0 else \
        FindCoordinatorRequest[version](group, 0)  # key type 0: a consumer group
    node = cluster.client.least_loaded_node()
    if node is None:
        raise Errors.NoBrokersAvailable("no broker to ask for the group's coordinator")
    response = cluster.send(node, request)
    error = Errors.for_code(response.error_code)
    if error is not Errors.NoError:
        raise error()
    return cluster.client.cluster.add_coordinator(response, "group", group)


def _offsets(response, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
    if response.API_VERSION >= 2:
        error = Errors.for_code(response.error_code)
        if error is not Errors.NoError:
            raise error()
    found: dict[TopicPartition, int | None] = {}
    for topic, partitions in response.topics or []:
        for entry in partitions:  # (partition, offset, [leader epoch,] metadata, error)
            error = Errors.for_code(entry[-1])
            if error is not Errors.NoError:
                raise error()
            found[TopicPartition(topic, entry[0])] = entry[1] if entry[1] >= 0 else None
    return {tp: found.get(tp) for tp in tps}


def committed_offsets(cluster: Cluster, group: str, tps: list[TopicPartition]
                      ) -> dict[TopicPartition, int | None]:
    """The group's committed offset per partition (None: nothing committed there)."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in tps:
        by_topic[tp.topic].append(tp.partition)
    last = ""
    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(BACKOFF_S[attempt])
        try:
            node = _coordinator(cluster, group)
            version = cluster.client.api_version(OffsetFetchRequest, max_version=5)
            if version < 1:
                raise SnapshotFailed(f"group {group}: the broker keeps offsets in ZooKeeper "
                                     "(OffsetFetch v0); the snapshot reads Kafka-stored ones")
            response = cluster.send(node, OffsetFetchRequest[version](
                group, [(t, sorted(ps)) for t, ps in by_topic.items()]))
            return _offsets(response, tps)
        except Errors.KafkaError as exc:
            last = cluster.why(exc)
            if not (exc.retriable or exc.invalid_metadata):  # coordinator moved or loading
                break
    raise SnapshotFailed(f"group {group}: committed offsets of "
                         f"{', '.join(sorted(by_topic))} not read: {last}")


__all__ = ["committed_offsets"]
