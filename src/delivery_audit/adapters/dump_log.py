"""``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``) text → broker.

Understood lines:

* ``Dumping /data/kafka/<topic>-<partition>/00000000000000000000.log``: the topic and
  partition of what follows (else ``adapters.topic`` / ``adapters.partition``); a dump of
  an index, time index, transaction index or producer snapshot is refused on its
  ``Dumping`` line and its entries are skipped (kind ``index_entry``);
* ``Starting offset: N`` (old) / ``Log starting offset: N`` (new) and the tool's other
  notices: not rows (``tool_header``);
* batch lines ``baseOffset: … producerId: … producerEpoch: … baseSequence: …
  isTransactional: … isControl: …`` (with or without ``count``, ``isControl``,
  ``deleteHorizonMs``): not rows; their producer fields and ``isTransactional`` go to
  their records. A batch line followed by no record line (a dump without
  ``--deep-iteration``/``--print-data-log``) is an error: its records cannot be listed;
* record lines ``| offset: N CreateTime: ms keySize: k valueSize: v sequence: s
  headerKeys: [...] key: … payload: …`` (``keysize``/``valuesize`` in some versions,
  ``LogAppendTime`` instead of ``CreateTime``, no ``| `` in the deep-iteration output of
  Kafka 0.11 – 2.x, whose record lines carry ``producerId``, ``producerEpoch`` and
  ``isTransactional`` themselves, and no batch lines) → one broker row each, with
  ``transactional`` from the batch's ``isTransactional``;
* transaction markers (contract §9): the records of a control batch (``isControl: true``)
  or a record line with ``endTxnMarker: COMMIT|ABORT coordinatorEpoch: N`` → a control row
  (``control`` commit/abort, the batch's ``producerId``/``producerEpoch`` as ``pid`` and
  ``producer_epoch``, the marker's offset, no key/seq), counted as ``transaction_markers``.
  Other control records (``controlType: LEADER_CHANGE(2)``, KRaft snapshot headers) are
  skipped (kind ``control_record``, counted as ``control_records``).

The seq comes from the payload (``adapters.seq``; dump-log prints header keys, not
values, so ``from: header`` yields no seq). A record whose key is not printed although
``keySize`` ≥ 0 cannot be attributed and is an error row (dump with ``--print-data-log``);
a record without a key (``keySize: -1``) whose payload is not printed is a row without
seq, counted as ``payload_not_printed``. Anything else is an error row.
"""

from __future__ import annotations

import re

from .lines import open_lines
from .options import Options, extract_seq
from .tool_lines import is_elided, is_log4j
from .writer import RowWriter

SOURCES = ("broker",)

_DUMPING = re.compile(r"^Dumping\s++(?P<path>\S.*)$")
_TOPIC_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_START = re.compile(r"^(?:Log starting|Starting) offset:\s*-?\d+\s*$", re.IGNORECASE)
# possessive and anchored at a word's start: a long run of word characters (a 1 MB
# payload) is tried once, not from each of its characters (quadratic time)
_PAIR = re.compile(r"(?<!\w)(\w++):\s*+(\[[^\]]*+\]|\S++)")
_HEADER_KEYS = re.compile(r"(?:^|\s)headerKeys:\s*\[[^\]]*\]")
_SKIP_PREFIXES = ("Mismatches in :", "Non-consecutive offsets in", "Found ",
                  "The following indexed offsets are not found in the log",
                  "Index offset:", "Indexed offset:", "Index timestamp:", "Ignoring unknown file",
                  "KRaft bootstrap snapshot", "Snapshot end offset:")
_SKIP_PATTERNS = re.compile(r"^(?:-?\d+ is followed by -?\d+|\S.* passed sanity check\.|"
                            r"\S.* is empty\.)$")
_NOT_A_LOG = (".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")


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


def _nonneg(fields: dict[str, str], name: str) -> int | None:
    v = _num(fields, name)
    return v if v is not None and v >= 0 else None


def _bool(fields: dict[str, str], name: str) -> bool | None:
    v = fields.get(name, "").lower()
    return True if v == "true" else False if v == "false" else None


def _lower_keys(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in pairs:
        out.setdefault(k.lower(), v)
    return out


class _Batch:
    __slots__ = ("line", "raw", "records", "base_offset", "last_offset", "producer_id", "epoch",
                 "base_sequence", "control", "transactional")

    def __init__(self, line: int, raw: str, fields: dict[str, str]) -> None:
        self.line = line
        self.raw = raw
        self.records = 0  # record lines seen under it
        self.base_offset = _num(fields, "baseoffset")
        self.last_offset = _num(fields, "lastoffset")
        self.producer_id = _nonneg(fields, "producerid")
        self.epoch = _nonneg(fields, "producerepoch")
        self.base_sequence = _nonneg(fields, "basesequence")
        self.control = _bool(fields, "iscontrol") is True
        self.transactional = _bool(fields, "istransactional")


def _split_record(text: str) -> tuple[str, str | None, str | None]:
    """(structured head, key text, payload text) of a record line. ``key:`` and
    ``payload:`` are looked for after the header keys (``headerKeys: [a:b,key]``)."""
    m_hk = _HEADER_KEYS.search(text)
    after = m_hk.end() if m_hk else 0
    m_payload = re.compile(r"(?:^|\s)payload:\s?").search(text, after)
    m_key = re.compile(r"(?:^|\s)key:\s?").search(text, after)
    if m_key and m_payload and m_key.start() > m_payload.start():
        m_key = None  # "key:" inside the payload
    cut = min([m.start() for m in (m_key, m_payload) if m] or [len(text)])
    head = text[:cut]
    key = payload = None
    if m_payload:
        payload = text[m_payload.end():]
    if m_key:
        key = text[m_key.end(): m_payload.start() if m_payload else len(text)]
    return head, key, payload


def _key_by_size(text: str, key_after: int, size: int) -> str | None:
    """When the key itself contains ' payload: ', cut it by its byte size."""
    tail = text[key_after:]
    enc = tail.encode("utf-8")
    if len(enc) < size:
        return None
    return enc[:size].decode("utf-8", errors="replace")


class _State:
    def __init__(self, opts: Options) -> None:
        self.topic, self.partition = opts.topic, opts.partition
        self.batch: _Batch | None = None
        self.not_a_log = False
        # batches without record lines, not yet reported: (line, raw, base, last offset)
        self.shallow: list[tuple[int, str, int | None, int | None]] = []


def _close_batch(st: _State, w: RowWriter) -> None:
    """End the current batch: a batch line that no record line followed (a dump without
    --deep-iteration) joins the run of such batches, reported once (_report_shallow)."""
    b = st.batch
    st.batch = None
    if b is not None and not b.records:
        st.shallow.append((b.line, b.raw, b.base_offset, b.last_offset))


def _report_shallow(st: _State, w: RowWriter) -> None:
    """One error row for a run of batches printed without their records (a whole dump made
    without --deep-iteration is one mistake, not one per batch): on its first batch line,
    naming the flag; its other batch lines are skipped as ``batch_without_records``."""
    run, st.shallow = st.shallow, []
    if not run:
        return
    first, raw, lo, _ = run[0]
    hi = run[-1][3]
    if len(run) == 1:
        span = f"offsets {lo}–{hi}" if lo is not None and hi is not None else "a batch"
        w.error(first, f"batch of {span} without record lines (a dump without "
                       "--deep-iteration): its records cannot be listed; dump with "
                       "--deep-iteration --print-data-log", raw)
        return
    span = f" (offsets {lo}–{hi})" if lo is not None and hi is not None else ""
    w.error(first, f"{len(run)} batches{span} without record lines, lines {first}–{run[-1][0]} "
                   "(a dump without --deep-iteration): their records cannot be listed; dump "
                   "with --deep-iteration --print-data-log", raw)
    for line, *_ in run[1:]:
        w.skip(line, "batch_without_records")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    st = _State(opts)
    for n, line in open_lines(path, w):
        with w.guard(n, line):
            _line(n, line, st, w, opts)
    _close_batch(st, w)
    _report_shallow(st, w)


def _line(n: int, line: str, st: _State, w: RowWriter, opts: Options) -> None:
    text = line.strip()
    if not text:
        w.skip(n, "blank")
        return
    m = _DUMPING.match(text)
    if m:
        _close_batch(st, w)
        _report_shallow(st, w)
        dumped = m.group("path").strip()
        st.not_a_log = dumped.lower().endswith(_NOT_A_LOG)
        if st.not_a_log:
            w.error(n, "not a log segment (an index, time index, transaction index, "
                       "producer snapshot or KRaft snapshot): its entries are not a topic's "
                       "records; dump the .log file of the segment", line)
            return
        t, p = topic_partition_of(dumped)
        st.topic, st.partition = (t, p) if t is not None else (opts.topic, opts.partition)
        w.recognise(n)
        return
    if st.not_a_log:
        w.skip(n, "index_entry")
        return
    if _START.match(text) or text.startswith(_SKIP_PREFIXES) or _SKIP_PATTERNS.match(text):
        w.skip(n, "tool_header")
        return
    if is_elided(text):
        w.skip(n, "elided")
        return
    if is_log4j(text):
        w.skip(n, "tool_log_line")
        return
    if text.startswith("baseOffset:"):
        _close_batch(st, w)
        st.batch = _Batch(n, line, _lower_keys(_PAIR.findall(text)))
        return
    record = text[1:].lstrip() if text.startswith("|") else text
    batch = st.batch
    _report_shallow(st, w)  # earlier batches without record lines: reported before this line
    if not record.startswith("offset:"):
        if record.startswith(("key:", "payload:")):
            w.error(n, "record line without its offset (dumped with --skip-record-metadata): "
                       "dump without --skip-record-metadata", line)
        else:
            w.error(n, "unrecognised dump-log line", line)
        return
    if batch is not None:
        if not batch.records:
            w.recognise(batch.line)
        batch.records += 1
    head, key, payload = _split_record(record)
    fields = _lower_keys(_PAIR.findall(head))
    offset = _num(fields, "offset")
    key_size = _num(fields, "keysize")
    value_size = _num(fields, "valuesize", "payloadsize")
    marker = fields.get("endtxnmarker")
    if marker is None and re.match(r"(?i)(COMMIT|ABORT)\b", fields.get("controltype", "")):
        marker = fields["controltype"]  # the 0.11 pre-release spelling "controlType: COMMIT"
    control = marker is not None or "controltype" in fields or (
        batch is not None and batch.control)
    if offset is None:
        w.error(n, "record line without a numeric offset", line)
        return
    if control and marker is None:
        w.count("control_records")  # not a transaction marker (e.g. LEADER_CHANGE)
        w.skip(n, "control_record")
        return
    if not control and key_size is None and value_size is None and payload is None:
        if "magic" in fields:  # an old-format (magic 0/1) message set printed shallow
            w.error(n, "a message set line without its records (a dump without "
                       "--deep-iteration): dump with --deep-iteration --print-data-log", line)
        else:
            w.error(n, "not a record line (an index entry? dump the .log segment)", line)
        return
    if st.topic is None or st.partition is None:
        w.error(n, "topic/partition unknown: no 'Dumping …/<topic>-<partition>/…log' "
                   "line; set adapters.topic and adapters.partition", line)
        return
    ts = _num(fields, "createtime", "logappendtime", "timestamp")
    ts = ts if ts is not None and ts >= 0 else None
    pid = batch.producer_id if batch is not None else None
    if pid is None:
        pid = _nonneg(fields, "producerid")
    epoch = batch.epoch if batch is not None else None
    if epoch is None:
        epoch = _nonneg(fields, "producerepoch")
    transactional = batch.transactional if batch is not None else None
    if transactional is None:
        transactional = _bool(fields, "istransactional")
    if control:
        kind = re.sub(r"\W.*", "", str(marker)).lower()
        if kind not in ("commit", "abort"):
            w.error(n, f"unknown transaction marker {str(marker)[:20]!r}", line)
            return
        w.count("transaction_markers")
        w.row(n, topic=st.topic, partition=st.partition, offset=offset, key=None, seq=None,
              timestamp=ts, producer_id=opts.producer_id, pid=pid, producer_epoch=epoch,
              transactional=transactional, control=kind)
        return
    if key_size is not None and key_size >= 0:
        if key is None:
            w.error(n, f"key not printed (keySize {key_size}): cannot attribute the "
                       "record; dump with --print-data-log", line)
            return
        if len(key.encode("utf-8")) != key_size:
            m_key = re.compile(r"(?:^|\s)key:\s?").search(record, len(head))
            exact = _key_by_size(record, m_key.end(), key_size) if m_key else None
            rest = record[m_key.end() + len(exact):] if exact is not None else ""
            m_p = re.match(r"\s*payload:\s?", rest)
            if exact is not None and m_p:
                # the key itself contains " payload: ": cut by its size. Otherwise the
                # printed key is not the raw bytes (a decoder's rendering): kept as printed
                key = exact
                payload = rest[m_p.end():]
    elif key_size is not None and key_size < 0:
        key = None
    if payload is None and opts.seq.source != "header" and (value_size or 0) >= 0:
        w.count("payload_not_printed")
    seq_in_record = _num(fields, "sequence")
    batch_sequence = seq_in_record if seq_in_record is not None and seq_in_record >= 0 \
        else None
    if batch_sequence is None and batch is not None and batch.base_sequence is not None \
            and batch.base_offset is not None:
        batch_sequence = batch.base_sequence + (offset - batch.base_offset)
    w.row(n, topic=st.topic, partition=st.partition, offset=offset, key=key,
          seq=extract_seq(payload, opts.seq) if opts.seq.source != "header" else None,
          timestamp=ts, producer_id=opts.producer_id, pid=pid, producer_epoch=epoch,
          batch_sequence=batch_sequence, transactional=transactional)
