"""The incident narrative: report.json's ``narrative``, what happened in the window, why,
to whom and what to do, as one finding per cause (the schema: findings.py), ordered by
severity, then time.

Written from the data, plain Python (no Spark): report.json's figures (the rebalance
section's timelines, evictions, linked redeliveries and advice; the config's groups) and
the published anomaly table read back with pyarrow (digest.py: when, where, who, per
topic and group). The causes:

* write side, one finding per cause over every topic — ``acks_loss`` (``lost_acked``: the
  broker acknowledged and lost them, with the topics' ``lost_unacked``,
  ``written_despite_failure`` and ``seq_gap`` around them), ``send_failure``,
  ``seq_gap``, ``written_despite_failure`` (the same, in topics without a loss),
  ``producer_retry``, ``idempotence_breach`` and ``dup_write_unknown`` (``dup_write`` by
  cause), ``write_reorder``, ``key_partition_split``;
* rebalances, per incident (incidents.py) — ``eviction``, ``rebalance_storm``,
  ``rebalance``, ``zombie``;
* consumer side, per group — ``commit_before_process`` (``skipped`` records nobody tried),
  ``poison_record`` (``skipped`` after failed attempts), ``retention``
  (``expired_unconsumed``), ``lag`` and ``pending_beyond_dump`` (``pending`` by cause),
  ``same_member_redelivery`` (``redelivery`` cause other), ``process_reorder``; and
  ``retries`` (``retry_after_failure``, expected) over every group;
* transactions and latency (contract §9, transaction_findings.py) — ``aborted_read_uncommitted``,
  ``aborted_read_committed`` and ``aborted_read`` (per group, by isolation),
  ``hanging_transaction``, ``zombie_write``, ``late_delivery`` (per group);
* any other anomaly with a count (a new catalogue entry): a finding of its own, cause =
  the anomaly's name. ``dup_effect`` is the consequence of
  ``dup_write`` and ``redelivery`` and is told there.

``build_narrative(report, anomalies)`` is the one call: ``anomalies`` is the anomaly
table's folder (or a :class:`~.digest.Digest`); without a readable table the findings
come from report.json's counts alone.

Size: the narrative's assembly (findings, incidents and digest live in their own modules);
what remains is one story built in one pass over the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..anomalies import BY_NAME, SEVERITIES
from .digest import Digest
from .findings import (
    ANOMALY_ROWS,
    SECTION,
    Clock,
    Finding,
    ms_of,
    n,
    names,
    ordered,
    parts,
    plural,
    where,
)
from .incidents import rebalance_findings
from .transaction_findings import TOLD as TXN_TOLD
from .transaction_findings import transaction_findings

RESTART_MS = 5 * 60_000  # a rebalance this soon after a skipped record: its crash/restart
_WRITE_EVIDENCE = [("per topic", SECTION["topics"]),
                   ("partitions × anomalies", SECTION["partitions"]),
                   ("anomaly rows (Parquet)", ANOMALY_ROWS)]


def _group_evidence(group: str) -> list[tuple[str, str]]:
    return [(f"delivery states of {group}", SECTION["groups"]),
            ("partitions × anomalies", SECTION["partitions"]),
            ("anomaly rows (Parquet)", ANOMALY_ROWS)]


def _breakdown(pieces: dict[str, Digest]) -> list[dict[str, Any]]:
    """Per (group, topic): each anomaly's units in ``pieces`` (anomaly → its rows)."""
    scopes: dict[tuple, dict[str, int]] = {}
    for name, d in pieces.items():
        for s in d.by_scope():
            scopes.setdefault((s["group"], s["topic"]), {})[name] = s["units"]
    return [{"group": g, "topic": t, "anomalies": a}
            for (g, t), a in sorted(scopes.items(), key=lambda kv: (str(kv[0][0]),
                                                                   str(kv[0][1])))]


def _finding(cause: str, pieces: dict[str, Digest], title: str, text: str, fix: str | None,
             *, group: str | None = None, evidence=None) -> Finding:
    """A finding over the rows of ``pieces`` (anomaly → its rows): their units, span and
    scope."""
    spans = [d.span() for d in pieces.values()]
    firsts = [a for a, _ in spans if a is not None]
    lasts = [b for _, b in spans if b is not None]
    topics = sorted({t for d in pieces.values() for t in d.values("topic")})
    members = sorted({m for d in pieces.values() for m in d.values("member_id")})
    return Finding(cause, {k: d.units() for k, d in pieces.items()}, title, text, fix,
                   at=min(firsts) if firsts else None, until=max(lasts) if lasts else None,
                   group=group, topic=topics[0] if len(topics) == 1 else None,
                   members=members if group else [],
                   evidence=evidence or (_group_evidence(group) if group else _WRITE_EVIDENCE),
                   breakdown=_breakdown(pieces))


def _in(d: Digest) -> str:
    """' in payments' / ' in orders 15, payments 23' (by topic)."""
    by = d.by("topic")
    if not by:
        return ""
    if len(by) == 1:
        return f" in {next(iter(by))}"
    return f" in {parts(by)}"


def _at(d: Digest) -> str:
    """' (payments-1 offsets 4283129–4283132, …)': where the rows sit, the partitions
    with the most rows first."""
    r = d.ranges(limit=5)
    if not r:
        return ""
    return f" ({where(r[:4])}{', …' if len(r) > 4 else ''})"


# --------------------------------------------------------------------------- write side


def _be(k: int) -> str:
    return "was" if k == 1 else "were"


def _it(k: int) -> str:
    return "it" if k == 1 else "them"


def _its(k: int) -> str:
    return "its" if k == 1 else "their"


def _acks_loss(d: Digest, clock: Clock) -> tuple[list[Finding], list[str]]:
    """The ``acks_loss`` finding and the topics it covers."""
    lost = d.where("lost_acked")
    k = lost.units()
    if not k:
        return [], []
    topics = list(lost.by("topic"))
    near = {a: d.where(a, topic=topics)
            for a in ("lost_unacked", "written_despite_failure", "seq_gap")}
    near = {a: x for a, x in near.items() if x.units()}
    around = []
    if "lost_unacked" in near:
        around.append(f"{plural(near['lost_unacked'].units(), 'send')} failed for good "
                      f"(lost_unacked)")
    if "written_despite_failure" in near:
        w = near["written_despite_failure"].units()
        around.append(f"{plural(w, 'send')} reported failed or timed out {_be(w)} written "
                      f"anyway (written_despite_failure: a blind resend duplicates {_it(w)})")
    if "seq_gap" in near:
        g = near["seq_gap"].units()
        around.append(f"{plural(g, 'seq value')} {_be(g)} never sent (seq_gap)")
    text = (f"{plural(k, 'acknowledged message')}{_in(lost)} {'is' if k == 1 else 'are'} "
            f"missing from the log{clock.span(*lost.span())}: the broker acknowledged "
            f"{_it(k)} and lost {_it(k)} — a leader failover with acks=1 or an unclean "
            f"leader election{_at(lost)}.")
    if around:
        text += f" Around {_it(k)}: {'; '.join(around)}."
    return [_finding(
        "acks_loss", {"lost_acked": lost, **near},
        f"{plural(k, 'acknowledged message')} lost by the broker{_in(lost)}", text,
        "acks=all with min.insync.replicas ≥ 2 and unclean.leader.election.enable=false; "
        "re-produce the lost messages (lost_acked, lost_unacked) from their source.")], topics


def _send_side(d: Digest, skip_topics: list[str], clock: Clock) -> list[Finding]:
    """lost_unacked, seq_gap and written_despite_failure outside the acks_loss topics."""
    out = []

    def rest(a: str) -> Digest:
        x = d.where(a)
        return Digest(x.table.filter(_not_in_topics(x, skip_topics))) if skip_topics else x

    x = rest("lost_unacked")
    if k := x.units():
        out.append(_finding(
            "send_failure", {"lost_unacked": x},
            f"{plural(k, 'message')} never written: every send failed{_in(x)}",
            f"{plural(k, 'message')}{_in(x)} {_be(k)} never written"
            f"{clock.span(*x.span())}: every send attempt failed or timed out and the broker "
            f"has no copy.",
            "handle send errors (the send callback) and resend with enable.idempotence=true "
            "and a delivery.timeout.ms that covers broker failovers; re-produce these "
            "messages."))
    x = rest("seq_gap")
    if k := x.units():
        out.append(_finding(
            "seq_gap", {"seq_gap": x}, f"{plural(k, 'seq value')} never sent{_in(x)}",
            f"{plural(k, 'seq value')} between a key's lowest and highest seq {_be(k)} never "
            f"sent{_in(x)}: the application dropped {_it(k)} before sending (a full buffer, "
            f"an error before send(), a crash).",
            "find where the producer application drops messages before send() "
            "(BufferExhaustedException, exceptions before the send) and re-produce them."))
    x = rest("written_despite_failure")
    if k := x.units():
        out.append(_finding(
            "written_despite_failure", {"written_despite_failure": x},
            f"{plural(k, 'failed send')} written anyway{_in(x)}",
            f"{plural(k, 'message')}{_in(x)} reported as failed or timed out {_be(k)} written "
            f"by the broker{clock.span(*x.span())}: the acknowledgement was lost, so a blind "
            f"resend duplicates {_it(k)}.",
            "resend only with enable.idempotence=true (the broker drops the duplicate)."))
    return out


# dup_write's causes: (finding cause, what, why, fix)
_DUPLICATES = {
    "producer_retry": (
        "producer_retry", "extra broker {copies} from producer retries without idempotence",
        "a send timed out after its write had landed and was sent again",
        "enable.idempotence=true (with acks=all); until then de-duplicate downstream by "
        "(topic, key, seq) (remediation/dedupe)."),
    "idempotence_breach": (
        "idempotence_breach", "{records} written twice by idempotent producers",
        "an idempotent producer was re-initialised with a batch in flight (a restart or an "
        "epoch bump), which idempotence does not cover",
        "transactions (transactional.id) for exactly-once across producer restarts, or "
        "de-duplicate downstream by (topic, key, seq)."),
    "unknown": (
        "dup_write_unknown", "extra broker {copies} behind a single acknowledged send",
        "a retry inside the client that the application never saw (retries without "
        "idempotence), or a producer that does not log every attempt",
        "enable.idempotence=true; log every send attempt to tell the cause."),
    None: ("dup_write_unknown", "extra broker {copies}", "the cause is not recorded",
           "enable.idempotence=true; de-duplicate downstream by (topic, key, seq)."),
}


def _duplicates(d: Digest, clock: Clock) -> list[Finding]:
    out = []
    for c, (cause, what, why, fix) in _DUPLICATES.items():
        x = d.where("dup_write", cause=c)
        if not (k := x.units()):
            continue
        copies = "copy" if k == 1 else "copies"
        what = what.format(copies=copies, records="record" if k == 1 else "records")
        out.append(_finding(
            cause, {"dup_write": x}, f"{n(k)} {what}{_in(x)}",
            f"{n(k)} {what}{_in(x)}{clock.span(*x.span())}: {why}. Every group consuming "
            f"{'it' if len(x.by('topic')) == 1 else 'them'} processed the extra {copies} "
            f"too (dup_effect).", fix))
    return out


def _ordering(d: Digest, clock: Clock) -> list[Finding]:
    out = []
    x = d.where("write_reorder")
    if k := x.units():
        out.append(_finding(
            "write_reorder", {"write_reorder": x},
            f"{plural(k, 'record')} written out of order{_in(x)}",
            f"{plural(k, 'record')}{_in(x)} landed after a higher seq of {_its(k)} key"
            f"{clock.span(*x.span())}: a failed batch was retried after a later one had been "
            f"written (max.in.flight.requests.per.connection > 1 without idempotence).",
            "enable.idempotence=true (keeps the order with up to 5 requests in flight), or "
            "max.in.flight.requests.per.connection=1."))
    x = d.where("key_partition_split")
    if k := x.units():
        out.append(_finding(
            "key_partition_split", {"key_partition_split": x},
            f"{plural(k, 'key')} split across partitions{_in(x)}",
            f"{plural(k, 'key')}{_in(x)} had records in more than one partition"
            f"{clock.span(*x.span())}: per-key order no longer holds between them (the topic's "
            f"partition count changed, or records without a key / a custom partitioner).",
            "do not add partitions to a keyed topic in place (create a new topic and "
            "migrate); give every record a key."))
    return out


def _write_side(d: Digest, clock: Clock) -> list[Finding]:
    loss, topics = _acks_loss(d, clock)
    return [*loss, *_send_side(d, topics, clock), *_duplicates(d, clock), *_ordering(d, clock)]


def _not_in_topics(d: Digest, topics: list[str]):
    return pc.invert(pc.fill_null(pc.is_in(d.table["topic"], pa.array(topics, pa.string())),
                                  False))


# --------------------------------------------------------------------------- consumer side


def _restarts(x: Digest, rebalances: dict[str, Any] | None, clock: Clock) -> str:
    """'; the group rebalanced right after: 01:28:29 joined_group by billing-1 (…)': the
    group's rebalances that started within RESTART_MS after one of the records."""
    seen = []
    for e in (rebalances or {}).get("timeline") or []:
        start = ms_of(e.get("start"))
        if start is not None and len(x.where(since=start - RESTART_MS, until=start)):
            seen.append(f"{clock(start)} {e.get('trigger') or e.get('kind') or '?'}")
    return f"; the group rebalanced soon after: {'; '.join(seen[:3])}" if seen else ""


def _skipped(d: Digest, g: str, rebalances: dict[str, Any] | None, clock: Clock
             ) -> list[Finding]:
    out = []
    skipped = d.where("skipped", group=g)
    retries = d.where("retry_after_failure", group=g)
    x = skipped.retried(retries, False)
    if k := x.units():
        out.append(_finding(
            "commit_before_process", {"skipped": x},
            f"{plural(k, 'record')} skipped by {g}: committed past, never processed",
            f"{plural(k, 'record')}{_in(x)} {_be(k)} never processed by {g}, yet the group "
            f"went past {_it(k)}{_at(x)}: it committed the offsets before processing and "
            f"then crashed or restarted (commit before process), or its offsets were reset. "
            f"{'It was' if k == 1 else 'They were'} sent{clock.span(*x.span())}"
            f"{_restarts(x, rebalances, clock)}.",
            "commit only after processing (enable.auto.commit=false and a commit after the "
            "handler); reprocess the skipped offsets (kafka-consumer-groups.sh "
            "--reset-offsets --to-offset, remediation/replay).", group=g))
    x = skipped.retried(retries, True)
    if k := x.units():
        out.append(_finding(
            "poison_record", {"skipped": x},
            f"{plural(k, 'record')} given up by {g} after failed attempts",
            f"{plural(k, 'record')}{_in(x)} failed in {g}'s handler and {_be(k)} then "
            f"skipped{_at(x)}: {'a poison record' if k == 1 else 'poison records'}, "
            f"dead-lettered or dropped.",
            "fix the handler for these records and reprocess them (from the dead-letter "
            "topic or their offsets).", group=g))
    return out


def _pending(d: Digest, g: str, read_until: str, clock: Clock) -> list[Finding]:
    out = []
    pending = d.where("pending", group=g)
    x = pending.where(cause="lag")
    if k := x.units():
        stalled = x.ranges(limit=100)
        where_ = names([f"{r['topic']}-{r['partition']}" for r in stalled])
        one = " — one stalled partition" if len(stalled) == 1 else ""
        out.append(_finding(
            "lag", {"pending": x}, f"{plural(k, 'record')} not yet processed by {g}{one}",
            f"{plural(k, 'record')}{_in(x)}, written{clock.span(*x.span())}, {_be(k)} still "
            f"unprocessed by {g} when the audit stopped reading at {read_until}{_at(x)}: "
            f"lag, not loss — the group has not gone past {_it(k)}.",
            f"check {g}'s consumer of {where_} (paused, stuck on a record, or too slow); a "
            f"later run shows whether {'it' if k == 1 else 'they'} arrived.", group=g))
    x = Digest(pending.table.filter(pc.invert(pc.fill_null(
        pc.equal(pending.table["cause"], "lag"), False))))
    if k := x.units():
        out.append(_finding(
            "pending_beyond_dump", {"pending": x},
            f"{plural(k, 'message')} acknowledged beyond the dump, pending for {g}",
            f"{plural(k, 'message')}{_in(x)} {_be(k)} acknowledged at offsets past the end of "
            f"the broker dump and not processed by {g}: the dump ends too early to judge "
            f"{_it(k)}.", "dump the topic up to the end of the grace period.", group=g))
    return out


def _group(d: Digest, g: str, rebalances: dict[str, Any] | None, read_until: str,
           clock: Clock) -> list[Finding]:
    """The consumer-side findings of one group."""
    out = [*_skipped(d, g, rebalances, clock)]
    x = d.where("expired_unconsumed", group=g)
    if k := x.units():
        out.append(_finding(
            "retention", {"expired_unconsumed": x},
            f"{plural(k, 'message')} deleted by retention before {g} read {_it(k)}",
            f"{plural(k, 'message')}{_in(x)}, sent{clock.span(*x.span())}, {_be(k)} deleted "
            f"by retention before {g} processed {_it(k)}: {_its(k)} offsets lie below the log "
            f"start offset{_at(x)}.",
            f"keep retention.ms above the longest time {g} can fall behind (and alert on its "
            f"lag long before); re-produce the expired messages from their source "
            f"(remediation/replay).", group=g))
    out += _pending(d, g, read_until, clock)
    x = d.where("redelivery", group=g, cause="other")
    if k := x.units():
        out.append(_finding(
            "same_member_redelivery", {"redelivery": x},
            f"{plural(k, 'record')} processed twice by the same member of {g}",
            f"{plural(k, 'record')}{_in(x)} {_be(k)} processed successfully again by the same "
            f"member of {g}{clock.span(*x.span())}, with no rebalance in between: a batch "
            f"retried whole after one of its records failed, or offsets committed late.",
            "retry only the failed record (commit per record, or a retry topic), and make "
            "processing idempotent.", group=g))
    x = d.where("process_reorder", group=g)
    if k := x.units():
        out.append(_finding(
            "process_reorder", {"process_reorder": x},
            f"{plural(k, 'record')} processed out of order by {g}",
            f"{plural(k, 'record')}{_in(x)} {_be(k)} processed by {g} before a lower offset "
            f"of the same key{clock.span(*x.span())}: the records of one key were handled in "
            f"parallel.",
            "process the records of one key on one worker (key-ordered parallel "
            "processing).", group=g))
    return out


def _consumer_side(d: Digest, report: dict[str, Any], clock: Clock) -> list[Finding]:
    read_until = clock(ms_of((report.get("window") or {}).get("read_until")))
    groups = sorted(set(d.values("group_id")) | set(report.get("groups") or {}))
    rebalances = report.get("rebalances") or {}
    out = [f for g in groups
           for f in _group(d, g, rebalances.get(g) if isinstance(rebalances.get(g), dict)
                           else None, read_until, clock)]
    x = d.where("retry_after_failure")
    if k := x.units():
        out.append(_finding(
            "retries", {"retry_after_failure": x},
            f"{plural(k, 'processing attempt')} retried after a failure",
            f"{plural(k, 'processing attempt')} followed a failed attempt on the same record "
            f"({parts(x.by('group_id'))}){clock.span(*x.span())}: retries, expected — not "
            f"duplicates.", None,
            evidence=[("anomalies", SECTION["anomalies"]),
                      ("consumer groups", SECTION["groups"])]))
    return out


# --------------------------------------------------------------------------- the rest


_TOLD = {"lost_acked", "lost_unacked", "written_despite_failure", "seq_gap", "dup_write",
         "redelivery", "skipped", "pending", "expired_unconsumed", "write_reorder",
         "process_reorder", "key_partition_split", "concurrent_processing",
         "retry_after_failure"} | TXN_TOLD  # contract §9: transaction_findings.py


def _others(d: Digest, report: dict[str, Any], clock: Clock) -> list[Finding]:
    """A finding per anomaly with a count that no cause above tells."""
    anomalies = report.get("anomalies") or {}
    told = set(_TOLD)
    if any(int((anomalies.get(a) or {}).get("count") or 0) for a in ("dup_write",
                                                                      "redelivery")):
        told.add("dup_effect")
    out = []
    for name, a in anomalies.items():
        if name in told or not isinstance(a, dict) or not int(a.get("count") or 0):
            continue
        x = d.where(name)
        count = x.units() or int(a["count"])
        spec = BY_NAME.get(name)
        definition = spec.definition if spec else (a.get("definition") or "")
        unit = a.get("unit") or (spec.unit if spec else "units")
        finding = _finding(
            name, {name: x}, f"{name}: {n(count)} {unit}{_in(x)}",
            f"{n(count)} {unit} of {name}{_in(x)}{clock.span(*x.span())}"
            f"{': ' + definition if definition else ''}.", None)
        finding.anomalies = {name: count}
        severity = a.get("severity") or (spec.severity if spec else "info")
        finding.floor = severity if severity in SEVERITIES else "info"
        if not finding.breakdown:
            finding.breakdown = [{"group": None, "topic": t, "anomalies": {name: v}}
                                 for t, v in (a.get("by_topic") or {}).items() if v]
        out.append(finding)
    return out


def build_narrative(report: dict[str, Any], anomalies: str | Path | Digest | None = None
                    ) -> list[dict[str, Any]]:
    """report.json's ``narrative`` (the module docstring): ``anomalies`` is the anomaly
    table's folder or a Digest of it; None or an unreadable table: report.json alone."""
    digest = anomalies if isinstance(anomalies, Digest) else (
        Digest.from_parquet(anomalies) if anomalies is not None else Digest.empty())
    counted = sum(int((a or {}).get("count") or 0) for a in (report.get("anomalies") or {})
                  .values() if isinstance(a, dict))
    if not len(digest) and counted:
        digest = Digest.from_report(report)
    clock = Clock((report.get("window") or {}).get("start"))
    findings = [*_write_side(digest, clock), *rebalance_findings(report, digest, clock),
                *_consumer_side(digest, report, clock),
                *transaction_findings(digest, report, clock), *_others(digest, report, clock)]
    return ordered(findings)
