"""The offsets a snapshot takes when it starts (contract §9.1): per partition the log start,
the end (high watermark), the last stable offset and the range it reads; per group the
committed offsets. ``offsets_document`` is offsets.json's shape, exactly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kafka.structs import TopicPartition

from ..core.timefmt import epoch_ms, iso_z
from .cluster import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, Cluster


@dataclass(frozen=True)
class PartitionRange:
    topic: str
    partition: int
    log_start: int
    end: int  # the high watermark when the snapshot started
    last_stable: int
    read_from: int
    read_to: int  # exclusive

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "log_start": self.log_start,
                "end": self.end, "last_stable": self.last_stable,
                "read_from": self.read_from, "read_to": self.read_to}


def read_range(log_start: int, end: int, from_offset: int | None,
               to_offset: int | None) -> tuple[int, int]:
    """[read_from, read_to): from the first offset at or after --from (the log start without
    it), to the first offset at or after --to (the end without it). An offset lookup that
    finds no record at or after the time (-1) means the end; the range never leaves
    [log_start, end] and is empty rather than reversed."""
    lo = log_start if from_offset is None else (end if from_offset < 0 else from_offset)
    hi = end if to_offset is None or to_offset < 0 else to_offset
    lo = min(max(lo, log_start), end)
    hi = min(max(hi, lo), end)
    return lo, hi


def partition_range(cluster: Cluster, tp: TopicPartition, start: datetime | None,
                    end: datetime | None) -> PartitionRange:
    """The partition's offsets now, and the range to read."""
    log_start = cluster.list_offset(tp, EARLIEST, READ_UNCOMMITTED)
    high = cluster.list_offset(tp, LATEST, READ_UNCOMMITTED)
    stable = cluster.list_offset(tp, LATEST, READ_COMMITTED)
    from_offset = None if start is None else cluster.list_offset(tp, epoch_ms(start),
                                                                 READ_UNCOMMITTED)
    to_offset = None if end is None else cluster.list_offset(tp, epoch_ms(end),
                                                             READ_UNCOMMITTED)
    lo, hi = read_range(log_start, high, from_offset, to_offset)
    return PartitionRange(tp.topic, tp.partition, log_start, high, stable, lo, hi)


def offsets_document(taken_at: datetime, ranges: list[PartitionRange],
                     committed: dict[str, dict[TopicPartition, int | None]]) -> dict[str, Any]:
    """offsets.json (contract §9.1): partitions in (topic, partition) order, groups in the
    order asked, each with every partition read (committed null where nothing is)."""
    groups = [{"group": group, "topic": tp.topic, "partition": tp.partition,
               "committed": offsets[tp]}
              for group, offsets in committed.items()
              for tp in sorted(offsets)]
    return {"taken_at": iso_z(taken_at, "milliseconds"),
            "partitions": [r.to_json() for r in sorted(ranges,
                                                       key=lambda r: (r.topic, r.partition))],
            "groups": groups}


__all__ = ["PartitionRange", "offsets_document", "partition_range", "read_range"]
