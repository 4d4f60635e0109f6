"""Record batches as a Fetch returns them, turned into canonical broker rows: what
kafka-dump-log shows of a segment, from the wire.

The Fetch asks with isolation level read_uncommitted, so the broker returns every batch,
aborted ones and the control batches that hold transaction markers (consumer libraries drop
those; the protocol does not). kafka-python's ``MemoryRecords`` splits the response's
``records`` bytes into batches (``DefaultRecordBatch``, magic 2: producer id, epoch, base
sequence, ``is_transactional``, ``is_control_batch``; decompressed on iteration by its
codecs) and a control batch's records come out as ``ControlRecord`` (``.abort`` /
``.commit``). A response may end in a partial batch; MemoryRecords stops before it and the
next Fetch starts there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kafka.errors as Errors
from kafka.protocol.fetch import FetchRequest
from kafka.record import MemoryRecords
from kafka.record.default_records import ControlRecord, DefaultRecordBatch
from kafka.structs import TopicPartition

from ..adapters.options import SeqRule, extract_seq
from ..fields import FIELDS
from ..recorders.writer import SEQ_HEADER, as_text, header_seq
from .cluster import label
from .request import SnapshotFailed

BROKER_FIELDS = tuple(f.name for f in FIELDS["broker"])
FETCH = (FetchRequest, 10)  # v10: zstd batches are only served to Fetch v10+
_PAYLOAD_SEQ = SeqRule()  # adapters.seq's default: the payload's trailing number


def fetch_request(version: int, tp: TopicPartition, offset: int, max_bytes: int) -> Any:
    """A one-partition Fetch at `offset`, read_uncommitted, no wait, no fetch session."""
    if version < 4:
        raise SnapshotFailed(f"{label(tp)}: the broker speaks Fetch v{version}; the snapshot "
                             "needs v4 (Kafka 0.11, record batches) or later")
    head = (-1, 0, 0, max_bytes, 0)  # replica, max wait ms, min bytes, max bytes, isolation
    if version == 4:
        return FetchRequest[4](*head, [(tp.topic, [(tp.partition, offset, max_bytes)])])
    if version <= 6:
        return FetchRequest[version](*head, [(tp.topic, [(tp.partition, offset, -1,
                                                          max_bytes)])])
    session = (0, -1)  # no incremental fetch session: session id 0, final epoch
    if version <= 8:
        parts = [(tp.partition, offset, -1, max_bytes)]
    else:
        parts = [(tp.partition, -1, offset, -1, max_bytes)]  # current leader epoch unknown
    return FetchRequest[version](*head, *session, [(tp.topic, parts)], [])


def batches_of(entry: tuple) -> list[Any]:
    """The complete record batches in a Fetch response's partition entry (records last)."""
    records = entry[-1]
    if not records:
        return []
    return list(MemoryRecords(bytes(records)))


def _seq(record: Any) -> int | None:
    """The `seq` header (the recorders' convention), else adapters.seq's default rule on the
    payload (what the dump-log adapter applies to a printed payload)."""
    if any(k == SEQ_HEADER for k, _v in record.headers):
        return header_seq(record.headers, SEQ_HEADER)
    return extract_seq(as_text(record.value), _PAYLOAD_SEQ)


def _row(**values: Any) -> dict[str, Any]:
    return {name: values.get(name) for name in BROKER_FIELDS}


def rows_of_batch(batch: Any, tp: TopicPartition, lo: int, hi: int
                  ) -> Iterator[dict[str, Any]]:
    """The canonical broker rows of `batch`'s records with offsets in [lo, hi)."""
    v2 = isinstance(batch, DefaultRecordBatch)
    pid = batch.producer_id if v2 and batch.producer_id >= 0 else None
    epoch = batch.producer_epoch if pid is not None else None
    transactional = bool(v2 and batch.is_transactional)
    base_seq = batch.base_sequence if v2 and batch.base_sequence >= 0 else None
    try:
        for record in batch:
            offset = record.offset
            if offset < lo:
                continue
            if offset >= hi:
                return
            # librdkafka's mock writes markers with timestamp 0: no time rather than 1970
            ts = record.timestamp if record.timestamp and record.timestamp > 0 else None
            if isinstance(record, ControlRecord):
                kind = "abort" if record.abort else "commit" if record.commit else None
                if kind is None:
                    continue  # another control type (none is defined today): not a marker
                yield _row(topic=tp.topic, partition=tp.partition, offset=offset,
                           timestamp=ts, pid=pid, producer_epoch=epoch,
                           transactional=transactional, control=kind)
                continue
            yield _row(topic=tp.topic, partition=tp.partition, offset=offset,
                       key=as_text(record.key), seq=_seq(record), timestamp=ts, pid=pid,
                       producer_epoch=epoch,
                       batch_sequence=None if base_seq is None
                       else base_seq + (offset - batch.base_offset),
                       transactional=transactional)
    except Errors.UnsupportedCodecError as exc:
        raise SnapshotFailed(f"{label(tp)}: a batch at offset {batch.base_offset} is "
                             f"compressed with a codec this Python lacks ({exc}); install "
                             "its kafka-python extra (lz4, python-snappy or zstandard)"
                             ) from None


def next_offset(batch: Any) -> int:
    """The offset after `batch` (its last offset + 1, records compacted away or not)."""
    return batch.next_offset if isinstance(batch, DefaultRecordBatch) else \
        max((r.offset for r in batch), default=batch.base_offset) + 1


__all__ = ["BROKER_FIELDS", "FETCH", "batches_of", "fetch_request", "next_offset",
           "rows_of_batch"]
