"""``take_snapshot``: every partition of the topics read over the Kafka protocol, as record
batches, into canonical broker rows under ``out/broker/`` and the offsets taken at the start
into ``out/offsets.json`` (contract §9.1).

Order of work: the partitions' offsets (log start, end, last stable, the range to read) and
the groups' committed offsets are taken first, at ``taken_at``; then each partition is read
[read_from, read_to) batch by batch from its leader, each batch's rows streamed to the
partition's gzip file. Any failure discards the staging folder: nothing is published."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime

import kafka.errors as Errors
from kafka.structs import TopicPartition
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
    TimeRemainingColumn

from .batches import FETCH, batches_of, fetch_request, next_offset, rows_of_batch
from .client_config import scrub, to_kafka_python
from .cluster import Cluster, label
from .groups import committed_offsets
from .offsets import PartitionRange, offsets_document, partition_range
from .request import SnapshotFailed, SnapshotRequest, SnapshotResult
from .staging import PartitionFile, Staging

MAX_BYTES = 1 << 20  # per Fetch: the memory a partition's read holds at once
MAX_BYTES_CEILING = 64 << 20  # a single batch larger than this is refused
EMPTY_FETCHES = 5  # Fetches in a row without a batch below the end before giving up


class _Counts:
    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.records = 0
        self.controls = 0

    def add(self, row: dict, r: PartitionRange) -> None:
        if self.limit is not None and self.records + self.controls >= self.limit:
            raise SnapshotFailed(
                f"{label(r.tp)}: more than --max-records {self.limit} records (reached at "
                f"offset {row['offset']}); nothing written. Narrow --from/--to or the "
                "topics, or raise the limit")
        if row["control"] is None:
            self.records += 1
        else:
            self.controls += 1


def _read_partition(cluster: Cluster, r: PartitionRange, out: PartitionFile,
                    counts: _Counts, advance) -> None:
    """[read_from, read_to) of one partition, batch by batch, into `out`."""
    offset, max_bytes, empty = r.read_from, MAX_BYTES, 0
    while offset < r.read_to:
        entry = cluster.ask_leader(
            r.tp, lambda v, o=offset, m=max_bytes: fetch_request(v, r.tp, o, m), FETCH,
            f"Fetch at offset {offset}")
        try:
            batches = batches_of(entry)
        except Errors.KafkaError as exc:
            raise SnapshotFailed(f"{label(r.tp)}: the batch at offset {offset} cannot be "
                                 f"decoded: {type(exc).__name__}") from None
        moved = False
        for batch in batches:
            after = next_offset(batch)
            if after <= offset:
                continue  # a batch before the offset asked (the broker sends whole batches)
            for row in rows_of_batch(batch, r.tp, offset, r.read_to):
                counts.add(row, r)
                out.write(row)
            offset, moved = min(after, r.read_to), True
            if offset >= r.read_to:
                break
        if moved:
            empty, max_bytes = 0, MAX_BYTES
            advance(offset - r.read_from)
            continue
        if entry[-1] and max_bytes < MAX_BYTES_CEILING:
            max_bytes *= 4  # only part of a batch came back: ask for more bytes
            continue
        empty += 1
        if empty >= EMPTY_FETCHES:
            raise SnapshotFailed(f"{label(r.tp)}: no record batch at offset {offset}, below "
                                 f"the end {r.read_to} taken at the start")


@contextlib.contextmanager
def _progress(show: bool, ranges: list[PartitionRange]) -> Iterator[dict]:
    """A progress bar per partition (offsets read of the range) on stderr when `show`."""
    if not show:
        yield {r.tp: (lambda _n: None) for r in ranges}
        return
    bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=False)
    with bars:
        yield {r.tp: (lambda n, t=bars.add_task(label(r.tp), total=r.read_to - r.read_from):
                      bars.update(t, completed=n))
               for r in ranges}


def take_snapshot(request: SnapshotRequest) -> SnapshotResult:
    """Read the topics and publish the snapshot under ``request.out``; SnapshotFailed
    (naming the topic-partition, never a secret) leaves nothing there."""
    if not request.topics:
        raise SnapshotFailed("no topic to read (--topic)")
    if request.max_records is not None and request.max_records < 0:
        raise SnapshotFailed("--max-records must be 0 or more")
    if request.start and request.end and request.end <= request.start:
        raise SnapshotFailed("--to must be after --from")
    config = dict(request.client_config)
    settings = to_kafka_python(config)
    staging = Staging(request.out)
    try:
        with Cluster(request.bootstrap_servers, settings, config) as cluster:
            taken_at = datetime.now(UTC)
            tps = [tp for topic in dict.fromkeys(request.topics)
                   for tp in _partitions(cluster, topic)]
            ranges = [partition_range(cluster, tp, request.start, request.end) for tp in tps]
            committed = {g: committed_offsets(cluster, g, tps)
                         for g in dict.fromkeys(request.groups)}
            counts = _Counts(request.max_records)
            with _progress(request.progress, ranges) as advance:
                for r in ranges:
                    out = staging.partition_file(r.topic, r.partition)
                    try:
                        _read_partition(cluster, r, out, counts, advance[r.tp])
                    finally:
                        out.close()
            offsets_path, files = staging.publish(offsets_document(taken_at, ranges,
                                                                   committed))
    except SnapshotFailed as exc:
        staging.discard()
        raise SnapshotFailed(scrub(exc, config)) from None
    except BaseException:
        staging.discard()
        raise
    return SnapshotResult(str(request.out), offsets_path, files, counts.records,
                          counts.controls)


def _partitions(cluster: Cluster, topic: str) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in cluster.partitions(topic)]


__all__ = ["take_snapshot"]
