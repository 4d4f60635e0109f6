"""kafka-verifiable-producer JSON lines → sends.

``producer_send_success`` → an acked attempt at (partition, offset);
``producer_send_error`` → a failed attempt (``timeout`` when the exception is a
TimeoutException). ``value`` holds the sequence ("N" or "prefix.N", or per
``adapters.seq``); ``send_ts`` and ``ack_ts`` are the event's timestamp (the tool
logs when the callback fires). ``startup_complete``, ``tool_data`` and
``shutdown_complete`` are not rows.
"""

from __future__ import annotations

from .lines import as_int, json_lines, record_key_seq
from .options import Options
from .writer import RowWriter

SOURCES = ("sends",)
NOT_ROWS = ("startup_complete", "shutdown_complete", "tool_data")


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    producer = opts.producer_id or None
    for n, line, obj in json_lines(path, w):
        with w.guard(n, line):
            name = obj.get("name")
            if name in NOT_ROWS:
                w.skip(n, f"tool_event:{name}")
                continue
            if name not in ("producer_send_success", "producer_send_error"):
                w.error(n, f"unknown verifiable-producer event {str(name)[:40]!r}", line)
                continue
            ts = as_int(obj.get("timestamp"))
            if ts is None:
                w.error(n, "no epoch-ms 'timestamp'", line)
                continue
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
