"""The narrative's findings for contract §9: aborted reads (per group and isolation),
hanging transactions, fenced producers' writes (zombie_write) and late deliveries (per
group), each with its figures (pid, epochs, marker offsets, the SLA and the measured
delays: txn_evidence.py reads them from the rows) and its advice.

Causes: ``aborted_read_uncommitted`` (a setting: isolation.level), ``aborted_read_committed``
(a client or broker fault, to escalate), ``aborted_read`` (the isolation is not known),
``hanging_transaction``, ``zombie_write``, ``late_delivery``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..remediation.commands import abort_command, find_hanging_command
from ..txn_evidence import evidence
from .digest import Digest
from .findings import SECTION, Clock, Finding, iso, ms_of, n, plural, seconds

TOLD: frozenset[str] = frozenset(
    {"aborted_read", "hanging_transaction", "zombie_write", "late_delivery"})
EXAMPLES = 3
_TXN_EVIDENCE = [("transactions", "#transactions"), ("anomalies", SECTION["anomalies"]),
                 ("anomaly rows (Parquet)", "anomalies/")]
_SLA_EVIDENCE = [("latency against the SLA", "#latency-sla"),
                 ("anomalies", SECTION["anomalies"]), ("anomaly rows (Parquet)", "anomalies/")]


def _rows(x: Digest, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows' evidence, in time order (the first ``limit``)."""
    t = x.table.sort_by([("t", "ascending"), ("topic", "ascending"),
                         ("partition", "ascending"), ("offset", "ascending")])
    if limit is not None:
        t = t.slice(0, limit)
    return [evidence({**r, "ts": iso(r["t"]), "related_ts": iso(r["rt"])})
            for r in t.to_pylist()]


def _in(x: Digest) -> str:
    by = x.by("topic")
    if not by or None in by:
        return ""
    return f" in {', '.join(str(t) for t in by)}"


def _tp(e: dict[str, Any]) -> str:
    return f"{e['topic']}-{e['partition']}"


def _pid(e: dict[str, Any]) -> str:
    if e.get("pid") is None:
        return "an unnamed producer"
    epoch = f" epoch {e['epoch']}" if e.get("epoch") is not None else ""
    return f"pid {e['pid']}{epoch}"


def _finding(cause: str, name: str, x: Digest, title: str, text: str, fix: str,
             *, group: str | None = None) -> Finding:
    first, last = x.span()
    topics = x.values("topic")
    return Finding(cause, {name: x.units()}, title, text, fix, at=first, until=last,
                   group=group, topic=topics[0] if len(topics) == 1 else None,
                   members=x.values("member_id") if group else [],
                   evidence=_SLA_EVIDENCE if name == "late_delivery" else _TXN_EVIDENCE,
                   breakdown=[{"group": s["group"], "topic": s["topic"],
                               "anomalies": {name: s["units"]}} for s in x.by_scope()])


# ------------------------------------------------------------------------ aborted reads

_ISOLATION = {
    "read_uncommitted": (
        "aborted_read_uncommitted",
        "{g} reads with isolation.level=read_uncommitted, so it is handed the records of "
        "transactions that were later aborted",
        "set isolation.level=read_committed on {g}'s consumers (remediation/commands.txt); "
        "then undo downstream what the aborted records changed."),
    "read_committed": (
        "aborted_read_committed",
        "{g} reads with isolation.level=read_committed, which never hands out an aborted "
        "record: a client or broker fault, not a setting",
        "escalate to the client library's and the brokers' maintainers (with their "
        "versions): {facts}; undo downstream what the aborted records changed."),
    "unknown": (
        "aborted_read",
        "neither {g}'s ledger nor the config says its isolation.level (Kafka's default is "
        "read_uncommitted)",
        "set isolation.level=read_committed explicitly on {g}'s consumers (and record it "
        "in the ledger or the config); if it already was, escalate as a client or broker "
        "fault: {facts}."),
}


def _marker_facts(rows: list[dict[str, Any]]) -> str:
    """'pid 7 epoch 2, aborted by the marker at orders-0 offset 120; …'."""
    out = []
    seen = set()
    for e in rows:
        k = (e["topic"], e["partition"], e.get("pid"), e.get("marker_offset"))
        if k in seen:
            continue
        seen.add(k)
        marker = (f", aborted by the marker at {_tp(e)} offset {e['marker_offset']}"
                  if e.get("marker_offset") is not None else "")
        out.append(f"{_pid(e)}{marker}")
    return "; ".join(out[:EXAMPLES]) + ("; …" if len(out) > EXAMPLES else "")


def aborted_reads(d: Digest, clock: Clock) -> list[Finding]:
    """One finding per (group, isolation) with aborted reads."""
    out = []
    rows = d.where("aborted_read")
    for g in rows.values("group_id") or ([None] if len(rows) else []):
        mine = rows.where(group=g)
        said = pc.fill_null(mine.table["cause"], "unknown")
        for cause in ("read_uncommitted", "read_committed", "unknown"):
            if cause == "unknown":
                mask = pc.invert(pc.is_in(said, pa.array(["read_uncommitted", "read_committed"])))
            else:
                mask = pc.equal(said, cause)
            x = Digest(mine.table.filter(mask))
            if not (k := x.units()):
                continue
            finding_cause, why, fix = _ISOLATION[cause]
            name = g if g is not None else "a group"
            facts = _marker_facts(_rows(x, 50))
            out.append(_finding(
                finding_cause, "aborted_read", x,
                f"{plural(k, 'aborted record')} processed by {name}"
                f"{' (read_uncommitted)' if cause == 'read_uncommitted' else ''}",
                f"{n(k)} successful {'processing' if k == 1 else 'processings'} by {name} of "
                f"{'a record' if k == 1 else 'records'} from aborted transactions{_in(x)}"
                f"{clock.span(*x.span())}"
                f"{': ' + facts if facts else ''}. {why.format(g=name)}.",
                fix.format(g=name, facts=facts or "the pid, epoch and marker offset of the "
                                                  "anomaly rows"), group=g))
    return out


# ------------------------------------------------------------------ hanging transactions

def hanging(d: Digest, clock: Clock) -> list[Finding]:
    x = d.where("hanging_transaction")
    if not (k := x.units()):
        return []
    rows = _rows(x, 50)
    told = []
    for e in rows[:EXAMPLES]:
        age = f" open for {seconds(e['age_ms'])}" if e.get("age_ms") is not None else " open"
        since = f" since {clock(ms_of(e['ts']))}" if e.get("ts") else ""
        records = f"{plural(int(e['records']), 'record')} " if e.get("records") else ""
        told.append(f"{_tp(e)}: {_pid(e)}, {records}from offset {e['first_offset']}{age}"
                    f"{since}")
    more = f"; and {n(k - EXAMPLES)} more" if k > EXAMPLES else ""
    fix = "confirm, then abort it with Kafka's kafka-transactions.sh (brokers 3.0+): "
    cmds = [f"{find_hanging_command(e['topic'], e['partition'])}, then "
            f"{abort_command(e['topic'], e['partition'], e['first_offset'])}"
            for e in rows[:EXAMPLES] if e.get("first_offset") is not None]
    fix += "; ".join(cmds) if cmds else "find-hanging, then abort --start-offset"
    fix += (" (remediation/commands.txt lists every one). Then find why the producer left it "
            "open: it crashed or hung mid-transaction and no instance re-initialised its "
            "transactional.id (init_transactions aborts it), or the coordinator never wrote its "
            "marker (a broker fault: find-hanging confirms it).")
    return [_finding(
        "hanging_transaction", "hanging_transaction", x,
        f"{plural(k, 'transaction')} left open{_in(x)}: read_committed consumers blocked",
        f"{plural(k, 'transaction')}{_in(x)} {'was' if k == 1 else 'were'} still open at "
        f"the partition's last record, longer than transaction_timeout_ms: "
        f"{'; '.join(told)}{more}. Each pins its partition's last stable offset at its first "
        f"offset: read_committed consumers read no further until it ends.", fix)]


# ------------------------------------------------------------------------ zombie writes

def zombies(d: Digest, clock: Clock) -> list[Finding]:
    x = d.where("zombie_write")
    if not (k := x.units()):
        return []
    rows = _rows(x, 200)
    told, seen = [], set()
    for e in rows:
        key = (e["topic"], e["partition"], e.get("pid"), e.get("epoch"))
        if key in seen:
            continue
        seen.add(key)
        newer = (f" after epoch {e['newer_epoch']} had written at offset {e['newer_offset']}"
                 if e.get("newer_epoch") is not None else "")
        outcome = f" ({e['outcome']} transaction)" if e.get("outcome") else ""
        told.append(f"{_pid(e)} wrote at {_tp(e)} offset {e['offset']}{outcome}{newer}")
    more = "; …" if len(told) > EXAMPLES else ""
    return [_finding(
        "zombie_write", "zombie_write", x,
        f"{plural(k, 'record')} written by fenced producers{_in(x)}",
        f"{plural(k, 'record')}{_in(x)} {'was' if k == 1 else 'were'} written with an older "
        f"producer epoch than one its pid had already used in the partition"
        f"{clock.span(*x.span())}: {'; '.join(told[:EXAMPLES])}{more}. A producer instance "
        f"kept writing after a newer instance with the same transactional.id fenced it (the "
        f"pid's transactional.id is in the producers' logs and the sends' transactional_id).",
        "a fenced producer must stop: handle ProducerFencedException (and "
        "InvalidProducerEpochException) by closing the producer, never by retrying with it; "
        "make sure no two live instances share a transactional.id; if the zombie's "
        "transactions committed, compensate downstream for its records.")]


# ---------------------------------------------------------------------- late deliveries

def _delays(x: Digest) -> pa.Array:
    t = x.table
    d = pc.subtract(t["rt"], t["t"])
    return pc.drop_null(d)


def late(d: Digest, report: dict[str, Any], clock: Clock) -> list[Finding]:
    out = []
    rows = d.where("late_delivery")
    slas = report.get("latency_sla") or {}
    for g in rows.values("group_id"):
        x = rows.where(group=g)
        if not (k := x.units()):
            continue
        sample = _rows(x, 1)
        sla = (slas.get(g) or {}).get("sla_ms") if isinstance(slas.get(g), dict) else None
        sla = sla if sla is not None else (sample[0].get("sla_ms") if sample else None)
        delays = _delays(x)
        figures = ""
        if len(delays):
            q = pc.quantile(delays, q=[0.5]).to_pylist()[0]
            mx = pc.max(delays).as_py()
            figures = f" (delay median {seconds(q)}, max {seconds(mx)})"
        sla_text = f"its SLA of {seconds(sla)} (latency_sla_ms {n(sla)})" if sla is not None \
            else "its SLA"
        out.append(_finding(
            "late_delivery", "late_delivery", x,
            f"{plural(k, 'message')} processed by {g} later than {sla_text}",
            f"{plural(k, 'message')}{_in(x)}, sent{clock.span(*x.span())}, "
            f"{'was' if k == 1 else 'were'} first processed by {g} more than {sla_text} "
            f"after {'it was' if k == 1 else 'they were'} sent{figures}.",
            f"reduce {g}'s lag: more consumers (up to the partitions), a faster or "
            f"parallel handler, max.poll.records sized to the handler; alert on its consumer "
            f"lag well below the SLA. If its lag stays low, the time is spent before the "
            f"record is readable (slow produce, or long transactions: read_committed "
            f"consumers wait for the commit): compare the end-to-end latency in the report.",
            group=g))
    return out


def transaction_findings(d: Digest, report: dict[str, Any], clock: Clock) -> list[Finding]:
    """Every §9 finding (see the module docstring)."""
    return [*aborted_reads(d, clock), *hanging(d, clock), *zombies(d, clock),
            *late(d, report, clock)]
