"""The log as the broker holds it: a minimal Kafka Fetch (v4) client that reads record
batches raw, control batches included, the way `kafka-dump-log.sh` shows a segment.

Consumers never receive control records (transaction markers), and the Python client
exposes no batch header (producer id, epoch, isTransactional), so the transactions lab
reads the partitions over the wire itself: one Fetch per batch, from offset 0 up to the
high watermark, isolation read_uncommitted. Only what the lab needs is implemented:
record batches of magic v2, uncompressed (the lab's producer sets compression none).

    for row in read_partition("127.0.0.1:9092", "orders", 0):
        ...  # dicts: offset, key, headers, timestamp, pid, producer_epoch,
             #        base_sequence/sequence, transactional, control ("commit"/"abort"/None)
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

FETCH = 1
FETCH_VERSION = 4
ATTR_COMPRESSION = 0x07
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
CONTROL_TYPES = {0: "abort", 1: "commit"}


class RawLogError(RuntimeError):
    """The broker's answer cannot be read by this minimal client."""


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise RawLogError(f"truncated: need {n} bytes at {self.pos} of {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def varint(self) -> int:  # zigzag
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def varbytes(self) -> bytes | None:
        n = self.varint()
        return None if n < 0 else self.take(n)

    def string(self) -> str | None:
        n = self.unpack(">h")
        return None if n < 0 else self.take(n).decode("utf-8")


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    attributes: int
    base_timestamp: int
    pid: int
    producer_epoch: int
    base_sequence: int
    records: list[dict[str, Any]]

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)


def _records(r: _Reader, count: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(count):
        length = r.varint()
        rec = _Reader(r.take(length))
        rec.take(1)  # attributes (unused)
        ts_delta = rec.varint()
        offset_delta = rec.varint()
        key = rec.varbytes()
        value = rec.varbytes()
        headers = []
        for _h in range(rec.varint()):
            hkey = rec.varbytes()
            headers.append(((hkey or b"").decode("utf-8"), rec.varbytes()))
        out.append({"offset_delta": offset_delta, "timestamp_delta": ts_delta, "key": key,
                    "value": value, "headers": headers})
    return out


def parse_batches(records: bytes) -> list[Batch]:
    """The record batches (magic 2) in a Fetch response's records field."""
    batches = []
    r = _Reader(records)
    while len(records) - r.pos >= 12:
        base_offset = r.unpack(">q")
        length = r.unpack(">i")
        if len(records) - r.pos < length:
            break  # a partial batch at the end of the response: fetched again next time
        body = _Reader(r.take(length))
        body.unpack(">i")  # partition leader epoch
        magic = body.unpack(">b")
        if magic != 2:
            raise RawLogError(f"record batch magic {magic} at offset {base_offset}")
        body.unpack(">I")  # crc
        attributes = body.unpack(">h")
        last_delta = body.unpack(">i")
        base_ts = body.unpack(">q")
        body.unpack(">q")  # max timestamp
        pid = body.unpack(">q")
        epoch = body.unpack(">h")
        base_seq = body.unpack(">i")
        count = body.unpack(">i")
        if attributes & ATTR_COMPRESSION:
            raise RawLogError(f"compressed batch at offset {base_offset}: the lab's "
                              "producer must use compression.type none")
        batches.append(Batch(base_offset, base_offset + last_delta, attributes, base_ts,
                             pid, epoch, base_seq, _records(body, count)))
    return batches


class BrokerConnection:
    """One TCP connection to a broker speaking the Kafka protocol (requests v1 headers)."""

    def __init__(self, address: str, client_id: str = "delivery-audit-rawlog",
                 timeout: float = 10.0) -> None:
        host, _, port = address.rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._client_id = client_id.encode()
        self._correlation = 0

    def _request(self, api_key: int, version: int, body: bytes) -> _Reader:
        self._correlation += 1
        header = struct.pack(">hhih", api_key, version, self._correlation,
                             len(self._client_id)) + self._client_id
        payload = header + body
        self._sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        r = _Reader(self._recv(size))
        if r.unpack(">i") != self._correlation:
            raise RawLogError("response for another request")
        return r

    def _recv(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self._sock.recv(n)
            if not chunk:
                raise RawLogError("the broker closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def fetch(self, topic: str, partition: int, offset: int,
              max_bytes: int = 1 << 20) -> tuple[int, list[Batch]]:
        """(high watermark, batches from `offset`) of one partition, read_uncommitted."""
        t = topic.encode()
        body = struct.pack(">iiiib", -1, 0, 0, max_bytes, 0)  # replica, wait, min, max, iso
        body += struct.pack(">ih", 1, len(t)) + t
        body += struct.pack(">iiqi", 1, partition, offset, max_bytes)
        r = self._request(FETCH, FETCH_VERSION, body)
        r.unpack(">i")  # throttle time
        if r.unpack(">i") != 1:
            raise RawLogError("expected one topic in the Fetch response")
        r.string()
        if r.unpack(">i") != 1:
            raise RawLogError("expected one partition in the Fetch response")
        r.unpack(">i")  # partition
        error = r.unpack(">h")
        hwm = r.unpack(">q")
        r.unpack(">q")  # last stable offset
        for _ in range(max(r.unpack(">i"), 0)):  # aborted transactions
            r.unpack(">q")
            r.unpack(">q")
        if error:
            raise RawLogError(f"Fetch {topic}[{partition}]@{offset}: error code {error}")
        size = r.unpack(">i")
        return hwm, parse_batches(r.take(size) if size > 0 else b"")

    def close(self) -> None:
        self._sock.close()


def read_partition(address: str, topic: str, partition: int) -> Iterator[dict[str, Any]]:
    """Every record of a partition, data and control, as dicts in offset order."""
    conn = BrokerConnection(address)
    try:
        offset = 0
        while True:
            hwm, batches = conn.fetch(topic, partition, offset)
            if offset >= hwm:
                return
            if not batches:
                raise RawLogError(f"{topic}[{partition}]: no batch at offset {offset} "
                                  f"below the high watermark {hwm}")
            for b in batches:
                if b.last_offset < offset:
                    continue
                for rec in b.records:
                    off = b.base_offset + rec["offset_delta"]
                    if off < offset:
                        continue
                    control = None
                    if b.is_control:
                        k = _Reader(rec["key"] or b"")
                        k.unpack(">h")  # control record version
                        ctype = k.unpack(">h")
                        control = CONTROL_TYPES.get(ctype, f"type-{ctype}")
                    yield {
                        "offset": off, "key": rec["key"], "headers": rec["headers"],
                        "timestamp": b.base_timestamp + rec["timestamp_delta"],
                        "pid": b.pid, "producer_epoch": b.producer_epoch,
                        "sequence": (b.base_sequence + rec["offset_delta"]
                                     if b.base_sequence >= 0 else None),
                        "transactional": b.transactional, "control": control,
                    }
                offset = b.last_offset + 1
    finally:
        conn.close()


__all__ = ["Batch", "BrokerConnection", "RawLogError", "parse_batches", "read_partition"]
