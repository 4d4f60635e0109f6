"""``kafka-dump-log.sh --print-data-log`` text → broker.

Understood lines:

* ``Dumping /data/kafka/<topic>-<partition>/00000000000000000000.log``: the topic and
  partition of what follows (else ``adapters.topic`` / ``adapters.partition``);
* ``Starting offset: N`` (old) / ``Log starting offset: N`` (new): not rows;
* batch lines ``baseOffset: … producerId: … producerEpoch: … baseSequence: …
  isControl: …`` (with or without ``deleteHorizonMs``): not rows; their producer
  fields go to their records; the records of a control batch (``isControl: true``,
  ``endTxnMarker``) are transaction markers, skipped and counted as control_records;
* record lines ``| offset: N CreateTime: ms keySize: k valueSize: v sequence: s
  headerKeys: [...] key: … payload: …`` (``keysize``/``valuesize`` in some versions,
  ``LogAppendTime`` instead of ``CreateTime``, no ``| `` in the oldest deep-iteration
  output) → one broker row each.

The seq comes from the payload (``adapters.seq``; dump-log prints header keys, not
values, so ``from: header`` yields no seq). A record whose key is not printed although
``keySize`` ≥ 0 cannot be attributed and is an error row. Anything else is an error row.
"""

from __future__ import annotations

import re

from .lines import open_lines
from .options import Options, extract_seq
from .writer import RowWriter

SOURCES = ("broker",)

_DUMPING = re.compile(r"^Dumping\s++(?P<path>\S.*)$")
_TOPIC_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_START = re.compile(r"^(?:Log starting|Starting) offset:\s*-?\d+\s*$", re.IGNORECASE)
# possessive and anchored at a word's start: a long run of word characters (a 1 MB
# payload) is tried once, not from each of its characters (quadratic time)
_PAIR = re.compile(r"(?<!\w)(\w++):\s*+(\[[^\]]*+\]|\S++)")
_SKIP_PREFIXES = ("Mismatches in :", "Non-consecutive offsets in", "Found ",
                  "The following indexed offsets are not found in the log")


def topic_partition_of(path: str) -> tuple[str | None, int | None]:
    parts = [p for p in re.split(r"[\\/]", path) if p]
    if len(parts) >= 2:
        m = _TOPIC_DIR.match(parts[-2])
        if m:
            return m.group("topic"), int(m.group("partition"))
    return None, None


def _num(fields: dict[str, str], *names: str) -> int | None:
    for name in names:
        v = fields.get(name)
        if v is not None and re.fullmatch(r"-?\d+", v):
            return int(v)
    return None


def _lower_keys(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in pairs:
        out.setdefault(k.lower(), v)
    return out


class _Batch:
    __slots__ = ("base_offset", "producer_id", "epoch", "base_sequence", "control")

    def __init__(self, fields: dict[str, str]) -> None:
        self.base_offset = _num(fields, "baseoffset")
        pid = _num(fields, "producerid")
        self.producer_id = pid if pid is not None and pid >= 0 else None
        epoch = _num(fields, "producerepoch")
        self.epoch = epoch if epoch is not None and epoch >= 0 else None
        seq = _num(fields, "basesequence")
        self.base_sequence = seq if seq is not None and seq >= 0 else None
        self.control = fields.get("iscontrol", "false").lower() == "true"


def _split_record(text: str) -> tuple[str, str | None, str | None, bool]:
    """(structured head, key text, payload text, is a control record)."""
    control = " endTxnMarker:" in f" {text}"
    m_payload = re.search(r"(?:^|\s)payload:\s?", text)
    m_key = re.search(r"(?:^|\s)key:\s?", text)
    if m_key and m_payload and m_key.start() > m_payload.start():
        m_key = None  # "key:" inside the payload
    cut = min([m.start() for m in (m_key, m_payload) if m] or [len(text)])
    head = text[:cut]
    key = payload = None
    if m_payload:
        payload = text[m_payload.end():]
    if m_key:
        key = text[m_key.end(): m_payload.start() if m_payload else len(text)]
    return head, key, payload, control


def _key_by_size(text: str, key_after: int, size: int) -> str | None:
    """When the key itself contains ' payload: ', cut it by its byte size."""
    tail = text[key_after:]
    enc = tail.encode("utf-8")
    if len(enc) < size:
        return None
    return enc[:size].decode("utf-8", errors="replace")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    topic, partition = opts.topic, opts.partition
    batch: _Batch | None = None
    for n, line in open_lines(path, w):
        with w.guard(n, line):
            text = line.strip()
            if not text:
                w.skip(n, "blank")
                continue
            m = _DUMPING.match(text)
            if m:
                t, p = topic_partition_of(m.group("path").strip())
                if t is not None:
                    topic, partition = t, p
                w.recognise(n)
                batch = None
                continue
            if _START.match(text) or text.startswith(_SKIP_PREFIXES):
                w.skip(n, "tool_header")
                continue
            if text.startswith("baseOffset:"):
                batch = _Batch(_lower_keys(_PAIR.findall(text)))
                w.recognise(n)
                continue
            record = text[1:].lstrip() if text.startswith("|") else text
            if not record.startswith("offset:"):
                w.error(n, "unrecognised dump-log line", line)
                continue
            head, key, payload, control = _split_record(record)
            fields = _lower_keys(_PAIR.findall(head))
            offset = _num(fields, "offset")
            key_size = _num(fields, "keysize")
            value_size = _num(fields, "valuesize")
            if control or (batch is not None and batch.control):
                w.count("control_records")
                w.skip(n, "control_record")
                continue
            if offset is None:
                w.error(n, "record line without a numeric offset", line)
                continue
            if key_size is None and value_size is None and payload is None:
                w.error(n, "not a record line (an index entry? dump the .log segment)", line)
                continue
            if topic is None or partition is None:
                w.error(n, "topic/partition unknown: no 'Dumping …/<topic>-<partition>/…log' "
                           "line; set adapters.topic and adapters.partition", line)
                continue
            if key_size is not None and key_size >= 0:
                if key is None:
                    w.error(n, f"key not printed (keySize {key_size}): cannot attribute the "
                               "record; dump with --print-data-log", line)
                    continue
                if len(key.encode("utf-8")) != key_size:
                    m_key = re.search(r"(?:^|\s)key:\s?", record)
                    exact = _key_by_size(record, m_key.end(), key_size) if m_key else None
                    if exact is not None:
                        key = exact
                        rest = record[m_key.end() + len(exact):]
                        m_p = re.match(r"\s*payload:\s?", rest)
                        payload = rest[m_p.end():] if m_p else payload
            elif key_size is not None and key_size < 0:
                key = None
            ts = _num(fields, "createtime", "logappendtime", "timestamp")
            seq_in_record = _num(fields, "sequence")
            batch_sequence = seq_in_record if seq_in_record is not None and seq_in_record >= 0 \
                else None
            if batch_sequence is None and batch is not None and batch.base_sequence is not None \
                    and batch.base_offset is not None:
                batch_sequence = batch.base_sequence + (offset - batch.base_offset)
            pid = batch.producer_id if batch is not None else None
            if pid is None:
                own = _num(fields, "producerid")
                pid = own if own is not None and own >= 0 else None
            epoch = batch.epoch if batch is not None else None
            if epoch is None:
                own = _num(fields, "producerepoch")
                epoch = own if own is not None and own >= 0 else None
            w.row(n, topic=topic, partition=partition, offset=offset, key=key,
                  seq=extract_seq(payload, opts.seq) if opts.seq.source != "header" else None,
                  timestamp=ts if ts is not None and ts >= 0 else None,
                  producer_id=opts.producer_id, pid=pid, producer_epoch=epoch,
                  batch_sequence=batch_sequence)
