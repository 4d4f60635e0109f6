"""kafka-verifiable-consumer JSON lines (``--verbose``) → ledger or events.

ledger: each ``record_data`` is a successful processing attempt started at the
event's timestamp (the tool processes on receipt: no finished_ts), by the member
named by ``adapters.member`` or the file name, in ``adapters.group`` (or the only
configured group, else "verifiable-consumer").
events: ``partitions_assigned`` / ``partitions_revoked`` → one row per partition;
``offsets_committed`` → ``commit`` per partition (the committed offset is the next to
read), ``commit_failed`` with the error when ``success`` is false.
Every other event (startup, ``records_consumed`` summaries, shutdown) is not a row of
the source being converted and is skipped.
"""

from __future__ import annotations

from .lines import as_int, json_lines, record_key_seq
from .options import Options
from .writer import RowWriter

SOURCES = ("ledger", "events")
DEFAULT_GROUP = "verifiable-consumer"


def _partitions(obj: dict, field: str) -> list[dict] | None:
    parts = obj.get(field)
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    return parts


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    group = opts.group or DEFAULT_GROUP
    member = opts.member_for(origin)
    for n, line, obj in json_lines(path, w):
        with w.guard(n, line):
            name = obj.get("name")
            ts = as_int(obj.get("timestamp"))
            wanted = ("record_data",) if source == "ledger" else (
                "partitions_assigned", "partitions_revoked", "offsets_committed")
            if name not in wanted:
                if not isinstance(name, str):
                    w.error(n, "no event 'name'", line)
                else:
                    w.skip(n, f"tool_event:{name}")
                continue
            if ts is None:
                w.error(n, "no epoch-ms 'timestamp'", line)
                continue
            if name == "record_data":
                key, seq, why = record_key_seq(obj, opts.seq)
                if why:
                    w.error(n, why, line)
                    continue
                w.row(n, group_id=group, member_id=member, topic=obj.get("topic"),
                      partition=obj.get("partition"), offset=obj.get("offset"), key=key, seq=seq,
                      started_ts=ts, outcome="success")
                continue
            field = "offsets" if name == "offsets_committed" else "partitions"
            parts = _partitions(obj, field)
            if parts is None:
                w.error(n, f"'{field}' is not a list of objects", line)
                continue
            if not parts:
                w.skip(n, f"empty:{name}")  # an empty assignment/commit changes nothing
                continue
            if name == "offsets_committed":
                ok = obj.get("success", True) is not False
                event = "commit" if ok else "commit_failed"
                detail = None if ok else (str(obj.get("error") or "commit failed"))
                for p in parts:
                    w.row(n, group_id=group, member_id=member, ts=ts, event=event,
                          topic=p.get("topic"), partition=p.get("partition"),
                          offset=p.get("offset"), detail=detail)
            else:
                event = "assigned" if name == "partitions_assigned" else "revoked"
                for p in parts:
                    w.row(n, group_id=group, member_id=member, ts=ts, event=event,
                          topic=p.get("topic"), partition=p.get("partition"))
