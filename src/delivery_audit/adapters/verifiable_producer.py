"""kafka-verifiable-producer JSON lines → sends.

``producer_send_success`` → an acked attempt at (partition, offset);
``producer_send_error`` → a failed attempt (``timeout`` when the exception is a
TimeoutException). ``value`` holds the sequence ("N" or "prefix.N", or per
``adapters.seq``); ``send_ts`` and ``ack_ts`` are the event's timestamp (the tool
logs when the callback fires; ``time_ms`` before Kafka 1.0). ``startup_complete`` and
``shutdown_complete`` are not rows.

``tool_data`` (printed once the producer is closed: every callback has fired) holds the
run's totals ``sent`` and ``acked``: they are checked against the success lines of that run
(since its ``startup_complete``). A file with fewer success lines than ``acked`` was
truncated or elided: the ``tool_data`` line becomes an error row naming the missing count,
and the count ``incomplete_producer_output`` (acked sends the file does not show) says so
in the report, instead of the audit silently calling them lost. ``...`` lines of an elided
paste are skipped (kind ``elided``), as are a terminal's ``^C`` and the tool's log4j lines.

The verifiable producer has no transactional mode (checked from 0.9 to 4.0): its sends
carry no ``transactional_id``.
"""

from __future__ import annotations

from .lines import as_int, record_key_seq
from .options import Options
from .tool_lines import tool_json_lines
from .writer import RowWriter

SOURCES = ("sends",)
NOT_ROWS = ("startup_complete", "shutdown_complete")


class _Run:
    """What one run of the tool (from a startup_complete) has printed so far."""

    __slots__ = ("acked", "failed")

    def __init__(self) -> None:
        self.acked = 0
        self.failed = 0


def _check_totals(n: int, line: str, obj: dict, run: _Run, w: RowWriter) -> None:
    acked = as_int(obj.get("acked"))
    sent = as_int(obj.get("sent"))
    if acked is None:
        w.error(n, "tool_data without a numeric 'acked' total", line)
        return
    if run.acked < acked:
        missing = acked - run.acked
        w.count("incomplete_producer_output", missing)
        w.error(n, f"incomplete input: the file holds {run.acked} of {acked} acked sends "
                   f"(tool_data: sent {sent if sent is not None else '?'}, acked {acked}): "
                   f"truncated or elided; the audit would call the other {missing} lost. "
                   "Give the tool's whole output", line)
        return
    if run.acked > acked:
        # more success lines than the run acked: several runs without startup_complete
        # (Kafka < 0.11) in one file, or lines repeated
        w.count("producer_output_mismatch")
    if sent is not None and run.failed < sent - acked:
        w.count("producer_errors_not_shown", sent - acked - run.failed)
    w.skip(n, "tool_summary")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    producer = opts.producer_id or None
    run = _Run()
    for n, line, obj in tool_json_lines(path, w):
        with w.guard(n, line):
            name = obj.get("name")
            if name == "startup_complete":
                run = _Run()
            if name in NOT_ROWS:
                w.skip(n, f"tool_event:{name}")
                continue
            if name == "tool_data":
                _check_totals(n, line, obj, run, w)
                run = _Run()
                continue
            if name not in ("producer_send_success", "producer_send_error"):
                w.error(n, f"unknown verifiable-producer event {str(name)[:40]!r}", line)
                continue
            ts = as_int(obj.get("timestamp"))
            if ts is None:
                ts = as_int(obj.get("time_ms"))  # Kafka 0.9 – 0.11
            if ts is None:
                w.error(n, "no epoch-ms 'timestamp'", line)
                continue
            if name == "producer_send_success":
                run.acked += 1
            else:
                run.failed += 1
            key, seq, why = record_key_seq(obj, opts.seq)
            if why:
                w.error(n, why, line)
                continue
            if seq is None:
                value = obj.get("value")
                w.error(n, f"value {str(value)[:40]!r} carries no sequence number", line)
                continue
            topic = obj.get("topic")
            common = dict(send_ts=ts, topic=topic, key=key, seq=seq, ack_ts=ts,
                          producer_id=producer, idempotent=opts.idempotent)
            if name == "producer_send_success":
                w.row(n, status="acked", partition=obj.get("partition"), offset=obj.get("offset"),
                      **common)
            else:
                exc = str(obj.get("exception") or "")
                msg = str(obj.get("message") or "")
                status = "timeout" if "timeout" in exc.lower() else "failed"
                error = ": ".join(x for x in (exc, msg) if x) or None
                w.row(n, status=status, partition=obj.get("partition"), offset=None,
                      error=error, **common)
