"""kafka-verifiable-consumer JSON lines → ledger or events.

ledger: each ``record_data`` (``--verbose``) is a successful processing attempt started at
the event's timestamp (the tool processes on receipt: no finished_ts), by the member named
by ``adapters.member`` or the file name, in ``adapters.group`` (or the only configured
group, else "verifiable-consumer").

Without ``--verbose`` the tool prints only ``records_consumed`` summaries, one per poll:
``{"partitions":[{"topic":t,"partition":p,"count":N,"minOffset":A,"maxOffset":B}]}``. A
summary that follows no ``record_data`` line of its poll is expanded to one ledger row per
offset A..B (outcome success, no key/seq: the audit resolves them from the broker dump by
topic, partition and offset), counted as ``expanded_offsets``. When N ≠ B − A + 1 the poll
skipped offsets the tool does not name (compacted away, transaction markers, aborted
records under read_committed): every offset of the range is still written (which of them
were read is unknown), and the summary is counted under ``records_consumed_gaps`` with the
offsets in question under ``records_consumed_gap_offsets``. A summary of a poll whose
records were printed (``--verbose``) is not expanded again (kind ``tool_summary``).

events: ``partitions_assigned`` / ``partitions_revoked`` → one row per partition;
``offsets_committed`` → ``commit`` per partition (the committed offset is the next to
read), ``commit_failed`` with the error when ``success`` is false.
Every other event (``startup_complete``, ``shutdown_complete``, summaries) is not a row of
the source being converted and is skipped. A ``^C`` the terminal echoed before a line is
not part of it; ``...`` (an elided paste) and the tool's log4j lines are skipped
(tool_lines.py).
"""

from __future__ import annotations

from .lines import as_int, record_key_seq
from .options import Options
from .tool_lines import tool_json_lines
from .writer import RowWriter

SOURCES = ("ledger", "events")
DEFAULT_GROUP = "verifiable-consumer"
# a summary whose offset range exceeds its count by more than this is not expanded: the
# range cannot stand for what one poll read (max.poll.records is 500 by default)
MAX_GAP = 100_000


def _partitions(obj: dict, field: str) -> list[dict] | None:
    parts = obj.get(field)
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    return parts


def _expand(n: int, line: str, obj: dict, w: RowWriter, group: str, member: str,
            ts: int) -> None:
    """One ledger row per offset of each partition summary of a ``records_consumed``."""
    parts = _partitions(obj, "partitions")
    if parts is None:
        w.error(n, "'partitions' is not a list of objects", line)
        return
    checked = []
    for p in parts:
        lo, hi, count = as_int(p.get("minOffset")), as_int(p.get("maxOffset")), \
            as_int(p.get("count"))
        if lo is None or hi is None or lo < 0 or hi < lo:
            w.error(n, "records_consumed partition without minOffset ≤ maxOffset", line)
            return
        span = hi - lo + 1
        if count is not None and count > span:
            w.error(n, f"records_consumed count {count} exceeds maxOffset − minOffset + 1 = "
                       f"{span}", line)
            return
        if count is not None and span - count > MAX_GAP:
            w.error(n, f"records_consumed: {count} records over {span} offsets: too sparse "
                       "to expand; run the consumer with --verbose", line)
            return
        checked.append((p, lo, hi, count, span))
    if not checked:
        w.skip(n, "empty:records_consumed")
        return
    for p, lo, hi, count, span in checked:
        if count is not None and count != span:
            w.count("records_consumed_gaps")
            w.count("records_consumed_gap_offsets", span - count)
        for offset in range(lo, hi + 1):
            w.row(n, group_id=group, member_id=member, topic=p.get("topic"),
                  partition=p.get("partition"), offset=offset, key=None, seq=None,
                  started_ts=ts, outcome="success")
        w.count("expanded_offsets", span)


def convert_file(path: str, origin: str, source: str, w: RowWriter, opts: Options) -> None:
    group = opts.group or DEFAULT_GROUP
    member = opts.member_for(origin)
    wanted = ("record_data", "records_consumed") if source == "ledger" else (
        "partitions_assigned", "partitions_revoked", "offsets_committed")
    printed = 0  # record_data lines since the last records_consumed (--verbose)
    for n, line, obj in tool_json_lines(path, w):
        with w.guard(n, line):
            name = obj.get("name")
            ts = as_int(obj.get("timestamp"))
            if name == "records_consumed" and source == "ledger" and printed:
                printed = 0
                w.skip(n, "tool_summary")  # its records were printed one by one
                continue
            if name not in wanted:
                if not isinstance(name, str):
                    w.error(n, "no event 'name'", line)
                else:
                    w.skip(n, f"tool_event:{name}")
                continue
            if ts is None:
                w.error(n, "no epoch-ms 'timestamp'", line)
                continue
            if name == "records_consumed":
                _expand(n, line, obj, w, group, member, ts)
                continue
            if name == "record_data":
                printed += 1
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
