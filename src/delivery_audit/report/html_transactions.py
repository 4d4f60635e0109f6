"""report.html's contract §9 sections as view models: the transactions per partition
(open ones listed, hanging ones counted), latency against each group's SLA, and the §9
anomalies' evidence tables."""

from __future__ import annotations

from typing import Any

from ..anomalies import BY_NAME
from .html_style import ms_text, num_text

MAX_OPEN_SHOWN = 20  # open transactions listed per partition on the page


def transaction_rows(report: dict) -> list[dict]:
    """report.json's ``transactions`` per (topic, partition) for the page: the counts, the
    open transactions (hanging ones first flagged) and how many hang."""
    out = []
    for t in report.get("transactions") or []:
        if not isinstance(t, dict):
            continue
        opened = [o for o in t.get("open_transactions") or [] if isinstance(o, dict)]
        out.append({
            "topic": t.get("topic"), "partition": t.get("partition"),
            **{k: {"transactions": num_text((t.get(k) or {}).get("transactions")),
                   "records": num_text((t.get(k) or {}).get("records"))}
               for k in ("committed", "aborted", "open")},
            "last_stable_offset": t.get("last_stable_offset"),
            "oldest_open": ms_text(t.get("oldest_open_age_ms"))
            if t.get("oldest_open_age_ms") is not None else "–",
            "last_record_ts": t.get("last_record_ts"),
            # all of the partition's, not only the listed ones (report.json lists 100)
            "hanging": int(t.get("hanging_transactions")
                           or sum(1 for o in opened if o.get("hanging"))),
            "open_rows": [{"pid": o.get("pid"), "epoch": num_text(o.get("producer_epoch")),
                           "first_offset": o.get("first_offset"),
                           "last_offset": o.get("last_offset"),
                           "records": num_text(o.get("records")),
                           "first_ts": o.get("first_ts") or "–",
                           "age": ms_text(o.get("age_ms")), "lso": o.get("last_stable_offset"),
                           "hanging": bool(o.get("hanging"))} for o in opened[:MAX_OPEN_SHOWN]],
            "open_listed": len(opened),
        })
    return out


def latency_sla_rows(report: dict, insights: dict) -> list[dict]:
    """Per group with a latency SLA (or late deliveries): the SLA, its late_delivery count
    and the end-to-end latency figures of insights (broker timestamp → processed)."""
    e2e = (insights.get("latency") or {}).get("end_to_end_ms_by_group") or {}
    out = []
    for g, s in sorted((report.get("latency_sla") or {}).items()):
        if not isinstance(s, dict) or (s.get("sla_ms") is None and not s.get("late")):
            continue
        lat = e2e.get(g) or {}
        judged = ((report.get("groups") or {}).get(g) or {}).get("judged")
        late = int(s.get("late") or 0)
        out.append({"group_id": g, "sla": ms_text(s.get("sla_ms")), "late": late,
                    "share": f"{late / judged:.2%}" if judged else "–",
                    "count": num_text(lat.get("count")),
                    **{k: ms_text(lat.get(k)) for k in ("p50", "p95", "p99", "max")},
                    "over": lat.get("p99") is not None and s.get("sla_ms") is not None
                    and float(lat["p99"]) > float(s["sla_ms"])})
    return out


def _at(e: dict) -> str:
    return f"{e.get('topic')} [{e.get('partition')}]" if e.get("partition") is not None\
        else str(e.get("topic") or "–")


def _opt(value: Any) -> str:
    return "–" if value is None else num_text(value)


def _key(e: dict) -> str:
    return "–" if e.get("seq") is None else f"{e.get('key')} #{e.get('seq')}"


# per §9 anomaly: its evidence columns (label, the cell from report/transactions.evidence)
_EVIDENCE_COLUMNS: dict[str, list[tuple[str, Any]]] = {
    "aborted_read": [
        ("group", lambda e: e.get("group_id") or "–"), ("partition", _at),
        ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("pid", lambda e: _opt(e.get("pid"))), ("epoch", lambda e: _opt(e.get("epoch"))),
        ("marker offset", lambda e: _opt(e.get("marker_offset"))),
        ("isolation", lambda e: (e.get("isolation") or "unknown")
         + (f" ({e['isolation_from']})" if e.get("isolation_from") else "")),
        ("processed at", lambda e: e.get("ts") or "–")],
    "hanging_transaction": [
        ("partition", _at), ("pid", lambda e: _opt(e.get("pid"))),
        ("epoch", lambda e: _opt(e.get("epoch"))),
        ("first offset (last stable offset)", lambda e: _opt(e.get("first_offset"))),
        ("last offset", lambda e: _opt(e.get("last_offset"))),
        ("records", lambda e: _opt(e.get("records"))),
        ("first record", lambda e: e.get("ts") or "–"),
        ("age", lambda e: ms_text(e.get("age_ms")))],
    "zombie_write": [
        ("partition", _at), ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("pid", lambda e: _opt(e.get("pid"))),
        ("epoch (fenced)", lambda e: _opt(e.get("epoch"))),
        ("newer epoch", lambda e: _opt(e.get("newer_epoch"))),
        ("newer epoch first at offset", lambda e: _opt(e.get("newer_offset"))),
        ("transaction", lambda e: e.get("outcome") or "–"),
        ("written at", lambda e: e.get("ts") or "–")],
    "late_delivery": [
        ("group", lambda e: e.get("group_id") or "–"), ("partition", _at),
        ("offset", lambda e: _opt(e.get("offset"))), ("key #seq", _key),
        ("judged at (sent)", lambda e: e.get("ts") or "–"),
        ("first processed", lambda e: e.get("processed_ts") or "–"),
        ("delay", lambda e: ms_text(e.get("delay_ms"))),
        ("SLA", lambda e: ms_text(e.get("sla_ms")))],
}


def txn_evidence_tables(insights: dict) -> list[dict]:
    """insights' ``transaction_evidence`` (report/transactions.py) as tables: per §9
    anomaly with rows, its evidence columns and the rows shown of its total."""
    data = insights.get("transaction_evidence") or {}
    out = []
    for name, cols in _EVIDENCE_COLUMNS.items():
        d = data.get(name)
        if not isinstance(d, dict) or not d.get("rows"):
            continue
        spec = BY_NAME.get(name)
        out.append({"name": name, "severity": spec.severity if spec else "info",
                    "columns": [c for c, _ in cols],
                    "rows": [[str(f(e)) for _, f in cols] for e in d["rows"]],
                    "total": int(d.get("total") or len(d["rows"]))})
    return out
