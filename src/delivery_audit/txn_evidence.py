"""Contract §9's evidence, read back from the anomaly rows for the page, the narrative and
the remediation (a module below report/ and remediation/, which both read it): pid, epochs,
marker offsets, isolation, the SLA and the measured delay.

Detection writes them into the anomaly table's columns and its ``detail`` text
(detection/transactions.py, detection/delivery_states.py; docs/decisions.md,
"Transactions and delivery latency"):

* ``aborted_read`` — ``cause`` the isolation, ``offset`` the record, ``related_offset`` the
  aborting marker, ``detail`` "pid P epoch E; aborted by the marker at offset M; isolation
  I (where it came from)";
* ``hanging_transaction`` — ``offset``/``related_offset`` the first and last offset, ``ts``
  the first record's timestamp, ``related_ts`` the partition's last record timestamp,
  ``attempts`` its records, ``detail`` "pid P epoch E: N records open for A ms …";
* ``zombie_write`` — ``offset`` the record, ``related_offset`` the first offset holding the
  higher epoch, ``detail`` "pid P epoch E (transaction T) written after epoch E2 at offset O";
* ``late_delivery`` — ``ts`` the judging time, ``related_ts`` the first successful
  processing, ``detail`` "first processed D ms after it was judged; latency_sla_ms S".

A figure the text does not give is None (never guessed). No Spark: plain dicts.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .core.timefmt import epoch_ms, iso_z

__all__ = ["TXN_ANOMALIES", "evidence", "txn_rows"]

TXN_ANOMALIES: tuple[str, ...] = (
    "aborted_read", "hanging_transaction", "zombie_write", "late_delivery")

_PID_EPOCH = re.compile(r"\bpid (-?\d+) epoch (-?\d+|\?)")
_NEWER = re.compile(r"written after epoch (-?\d+)")
_OUTCOME = re.compile(r"\(transaction (\w+)\)")
_SOURCE = re.compile(r"; isolation \w+ \(([^)]*)\)")
_SLA = re.compile(r"latency_sla_ms (\d+)")


def _int(m: re.Match | None, i: int = 1) -> int | None:
    if m is None or m.group(i) == "?":
        return None
    return int(m.group(i))


def _span_ms(row: dict[str, Any]) -> int | None:
    """``related_ts − ts`` in ms: a hanging transaction's age (its first record to the
    partition's last), a late delivery's delay (the judging time to the first processing)."""
    start, end = epoch_ms(row.get("ts")), epoch_ms(row.get("related_ts"))
    return None if start is None or end is None else end - start


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return iso_z(value)
    return str(value)


def evidence(row: dict[str, Any]) -> dict[str, Any]:
    """One §9 anomaly row's evidence as named figures (see the module docstring)."""
    detail = str(row.get("detail") or "")
    pid_epoch = _PID_EPOCH.search(detail)
    out: dict[str, Any] = {
        "anomaly": row.get("anomaly"), "group_id": row.get("group_id"),
        "topic": row.get("topic"), "key": row.get("key"), "seq": row.get("seq"),
        "partition": row.get("partition"), "offset": row.get("offset"),
        "ts": _iso(row.get("ts")), "pid": _int(pid_epoch), "epoch": _int(pid_epoch, 2),
    }
    name = row.get("anomaly")
    if name == "aborted_read":
        source = _SOURCE.search(detail)
        out.update(marker_offset=row.get("related_offset"), isolation=row.get("cause"),
                   isolation_from=source.group(1) if source else None)
    elif name == "hanging_transaction":
        out.update(first_offset=row.get("offset"), last_offset=row.get("related_offset"),
                   records=row.get("attempts"), age_ms=_span_ms(row),
                   last_record_ts=_iso(row.get("related_ts")))
    elif name == "zombie_write":
        newer = _NEWER.search(detail)
        outcome = _OUTCOME.search(detail)
        out.update(newer_epoch=_int(newer), newer_offset=row.get("related_offset"),
                   outcome=outcome.group(1) if outcome else None)
    elif name == "late_delivery":
        out.update(delay_ms=_span_ms(row), sla_ms=_int(_SLA.search(detail)),
                   processed_ts=_iso(row.get("related_ts")))
    return out


def txn_rows(table: pa.Table, name: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of anomaly ``name`` in an anomaly table (``anomaly_table.SCHEMA``), in
    time order then place, as :func:`evidence` dicts (the first ``limit`` when given)."""
    if not table.num_rows or "anomaly" not in table.column_names:
        return []
    rows = table.filter(pc.fill_null(pc.equal(table["anomaly"], name), False))
    if not rows.num_rows:
        return []
    keys = [(c, "ascending") for c in ("ts", "topic", "partition", "offset", "group_id")
            if c in rows.column_names]
    rows = rows.sort_by(keys)
    if limit is not None:
        rows = rows.slice(0, limit)
    return [evidence(r) for r in rows.to_pylist()]
