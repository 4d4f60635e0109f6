"""The narrative's consumer-side causes, per group: ``commit_before_process`` and
``poison_record`` (``skipped``, without or after failed attempts, with the group's
rebalances soon after), ``retention`` (``expired_unconsumed``), ``lag``,
``pending_beyond_dump`` and ``pending_before_read`` (``pending`` by cause: an offsets
file's read started after the acked offset, rule 26), ``same_member_redelivery``
(``redelivery`` cause other), ``process_reorder``; and ``retries``
(``retry_after_failure``, expected) over every group."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..anomalies import PENDING_BEFORE_READ as BEFORE_READ
from .digest import Digest
from .findings import SECTION, Clock, Finding, ms_of, names, parts, plural
from .row_findings import at_offsets, in_topics, it_them, its_their, scoped_finding, was_were

RESTART_MS = 5 * 60_000  # a rebalance this soon after a skipped record: its crash/restart


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
        out.append(scoped_finding(
            "commit_before_process", {"skipped": x},
            f"{plural(k, 'record')} skipped by {g}: committed past, never processed",
            f"{plural(k, 'record')}{in_topics(x)} {was_were(k)} never processed by {g}, yet the "
            f"group went past {it_them(k)}{at_offsets(x)}: it committed the offsets before "
            f"processing and then crashed or restarted (commit before process), or its offsets "
            f"were reset. {'It was' if k == 1 else 'They were'} sent{clock.span(*x.span())}"
            f"{_restarts(x, rebalances, clock)}.",
            "commit only after processing (enable.auto.commit=false and a commit after the "
            "handler); reprocess the skipped offsets (kafka-consumer-groups.sh "
            "--reset-offsets --to-offset, remediation/replay).", group=g))
    x = skipped.retried(retries, True)
    if k := x.units():
        out.append(scoped_finding(
            "poison_record", {"skipped": x},
            f"{plural(k, 'record')} given up by {g} after failed attempts",
            f"{plural(k, 'record')}{in_topics(x)} failed in {g}'s handler and {was_were(k)} then "
            f"skipped{at_offsets(x)}: {'a poison record' if k == 1 else 'poison records'}, "
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
        out.append(scoped_finding(
            "lag", {"pending": x}, f"{plural(k, 'record')} not yet processed by {g}{one}",
            f"{plural(k, 'record')}{in_topics(x)}, written{clock.span(*x.span())}, {was_were(k)} "
            f"still unprocessed by {g} when the audit stopped reading at "
            f"{read_until}{at_offsets(x)}: lag, not loss — the group has not gone past "
            f"{it_them(k)}.",
            f"check {g}'s consumer of {where_} (paused, stuck on a record, or too slow); a "
            f"later run shows whether {'it' if k == 1 else 'they'} arrived.", group=g))
    x = pending.where(cause=BEFORE_READ)  # rule 26: an offsets file's read started later
    if k := x.units():
        out.append(scoped_finding(
            "pending_before_read", {"pending": x},
            f"{plural(k, 'message')} acknowledged before the snapshot's read, pending for {g}",
            f"{plural(k, 'message')}{in_topics(x)} {was_were(k)} acknowledged at offsets still in "
            f"the log but before the offsets file's read_from{at_offsets(x)}, and not processed "
            f"by {g}: the read started too late to judge {it_them(k)}.",
            "take the snapshot from the log start (no --from), or from before the window.",
            group=g))
    x = Digest(pending.table.filter(pc.invert(pc.fill_null(
        pc.is_in(pending.table["cause"], pa.array(["lag", BEFORE_READ])), False))))
    if k := x.units():
        out.append(scoped_finding(
            "pending_beyond_dump", {"pending": x},
            f"{plural(k, 'message')} acknowledged beyond the dump, pending for {g}",
            f"{plural(k, 'message')}{in_topics(x)} {was_were(k)} acknowledged at offsets past the "
            f"end of the broker dump and not processed by {g}: the dump ends too early to judge "
            f"{it_them(k)}.", "dump the topic up to the end of the grace period.", group=g))
    return out


def _group(d: Digest, g: str, rebalances: dict[str, Any] | None, read_until: str,
           clock: Clock) -> list[Finding]:
    """The consumer-side findings of one group."""
    out = [*_skipped(d, g, rebalances, clock)]
    x = d.where("expired_unconsumed", group=g)
    if k := x.units():
        out.append(scoped_finding(
            "retention", {"expired_unconsumed": x},
            f"{plural(k, 'message')} deleted by retention before {g} read {it_them(k)}",
            f"{plural(k, 'message')}{in_topics(x)}, sent{clock.span(*x.span())}, {was_were(k)} "
            f"deleted by retention before {g} processed {it_them(k)}: {its_their(k)} offsets lie "
            f"below the log start offset{at_offsets(x)}.",
            f"keep retention.ms above the longest time {g} can fall behind (and alert on its "
            f"lag long before); re-produce the expired messages from their source "
            f"(remediation/replay).", group=g))
    out += _pending(d, g, read_until, clock)
    x = d.where("redelivery", group=g, cause="other")
    if k := x.units():
        out.append(scoped_finding(
            "same_member_redelivery", {"redelivery": x},
            f"{plural(k, 'record')} processed twice by the same member of {g}",
            f"{plural(k, 'record')}{in_topics(x)} {was_were(k)} processed successfully again by "
            f"the same member of {g}{clock.span(*x.span())}, with no rebalance in between: a batch "
            f"retried whole after one of its records failed, or offsets committed late.",
            "retry only the failed record (commit per record, or a retry topic), and make "
            "processing idempotent.", group=g))
    x = d.where("process_reorder", group=g)
    if k := x.units():
        out.append(scoped_finding(
            "process_reorder", {"process_reorder": x},
            f"{plural(k, 'record')} processed out of order by {g}",
            f"{plural(k, 'record')}{in_topics(x)} {was_were(k)} processed by {g} before a lower "
            f"offset of the same key{clock.span(*x.span())}: the records of one key were handled "
            f"in parallel.",
            "process the records of one key on one worker (key-ordered parallel "
            "processing).", group=g))
    return out


def consumer_side_findings(d: Digest, report: dict[str, Any], clock: Clock) -> list[Finding]:
    read_until = clock(ms_of((report.get("window") or {}).get("read_until")))
    groups = sorted(set(d.values("group_id")) | set(report.get("groups") or {}))
    rebalances = report.get("rebalances") or {}
    out = [f for g in groups
           for f in _group(d, g, rebalances.get(g) if isinstance(rebalances.get(g), dict)
                           else None, read_until, clock)]
    x = d.where("retry_after_failure")
    if k := x.units():
        out.append(scoped_finding(
            "retries", {"retry_after_failure": x},
            f"{plural(k, 'processing attempt')} retried after a failure",
            f"{plural(k, 'processing attempt')} followed a failed attempt on the same record "
            f"({parts(x.by('group_id'))}){clock.span(*x.span())}: retries, expected — not "
            f"duplicates.", None,
            evidence=[("anomalies", SECTION["anomalies"]),
                      ("consumer groups", SECTION["groups"])]))
    return out
