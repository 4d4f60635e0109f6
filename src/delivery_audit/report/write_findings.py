"""The narrative's write-side causes, one finding per cause over every topic:
``acks_loss`` (``lost_acked`` with the topics' ``lost_unacked``,
``written_despite_failure`` and ``seq_gap`` around it), ``send_failure``, ``seq_gap``,
``written_despite_failure`` (outside the acks_loss topics), ``producer_retry``,
``idempotence_breach`` and ``dup_write_unknown`` (``dup_write`` by cause),
``write_reorder`` and ``key_partition_split``."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .digest import Digest
from .findings import Clock, Finding, n, plural
from .row_findings import at_offsets, in_topics, it_them, its_their, scoped_finding, was_were


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
        around.append(f"{plural(w, 'send')} reported failed or timed out {was_were(w)} written "
                      f"anyway (written_despite_failure: a blind resend duplicates {it_them(w)})")
    if "seq_gap" in near:
        g = near["seq_gap"].units()
        around.append(f"{plural(g, 'seq value')} {was_were(g)} never sent (seq_gap)")
    text = (f"{plural(k, 'acknowledged message')}{in_topics(lost)} {'is' if k == 1 else 'are'} "
            f"missing from the log{clock.span(*lost.span())}: the broker acknowledged "
            f"{it_them(k)} and lost {it_them(k)} — a leader failover with acks=1 or an unclean "
            f"leader election{at_offsets(lost)}.")
    if around:
        text += f" Around {it_them(k)}: {'; '.join(around)}."
    return [scoped_finding(
        "acks_loss", {"lost_acked": lost, **near},
        f"{plural(k, 'acknowledged message')} lost by the broker{in_topics(lost)}", text,
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
        out.append(scoped_finding(
            "send_failure", {"lost_unacked": x},
            f"{plural(k, 'message')} never written: every send failed{in_topics(x)}",
            f"{plural(k, 'message')}{in_topics(x)} {was_were(k)} never written"
            f"{clock.span(*x.span())}: every send attempt failed or timed out and the broker "
            f"has no copy.",
            "handle send errors (the send callback) and resend with enable.idempotence=true "
            "and a delivery.timeout.ms that covers broker failovers; re-produce these "
            "messages."))
    x = rest("seq_gap")
    if k := x.units():
        out.append(scoped_finding(
            "seq_gap", {"seq_gap": x}, f"{plural(k, 'seq value')} never sent{in_topics(x)}",
            f"{plural(k, 'seq value')} between a key's lowest and highest seq {was_were(k)} never "
            f"sent{in_topics(x)}: the application dropped {it_them(k)} before sending (a full "
            f"buffer, an error before send(), a crash).",
            "find where the producer application drops messages before send() "
            "(BufferExhaustedException, exceptions before the send) and re-produce them."))
    x = rest("written_despite_failure")
    if k := x.units():
        out.append(scoped_finding(
            "written_despite_failure", {"written_despite_failure": x},
            f"{plural(k, 'failed send')} written anyway{in_topics(x)}",
            f"{plural(k, 'message')}{in_topics(x)} reported as failed or timed out {was_were(k)} "
            f"written by the broker{clock.span(*x.span())}: the acknowledgement was lost, so a "
            f"blind resend duplicates {it_them(k)}.",
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
        out.append(scoped_finding(
            cause, {"dup_write": x}, f"{n(k)} {what}{in_topics(x)}",
            f"{n(k)} {what}{in_topics(x)}{clock.span(*x.span())}: {why}. Every group consuming "
            f"{'it' if len(x.by('topic')) == 1 else 'them'} processed the extra {copies} "
            f"too (dup_effect).", fix))
    return out


def _ordering(d: Digest, clock: Clock) -> list[Finding]:
    out = []
    x = d.where("write_reorder")
    if k := x.units():
        out.append(scoped_finding(
            "write_reorder", {"write_reorder": x},
            f"{plural(k, 'record')} written out of order{in_topics(x)}",
            f"{plural(k, 'record')}{in_topics(x)} landed after a higher seq of {its_their(k)} key"
            f"{clock.span(*x.span())}: a failed batch was retried after a later one had been "
            f"written (max.in.flight.requests.per.connection > 1 without idempotence).",
            "enable.idempotence=true (keeps the order with up to 5 requests in flight), or "
            "max.in.flight.requests.per.connection=1."))
    x = d.where("key_partition_split")
    if k := x.units():
        out.append(scoped_finding(
            "key_partition_split", {"key_partition_split": x},
            f"{plural(k, 'key')} split across partitions{in_topics(x)}",
            f"{plural(k, 'key')}{in_topics(x)} had records in more than one partition"
            f"{clock.span(*x.span())}: per-key order no longer holds between them (the topic's "
            f"partition count changed, or records without a key / a custom partitioner).",
            "do not add partitions to a keyed topic in place (create a new topic and "
            "migrate); give every record a key."))
    return out


def write_side_findings(d: Digest, clock: Clock) -> list[Finding]:
    loss, topics = _acks_loss(d, clock)
    return [*loss, *_send_side(d, topics, clock), *_duplicates(d, clock), *_ordering(d, clock)]


def _not_in_topics(d: Digest, topics: list[str]):
    return pc.invert(pc.fill_null(pc.is_in(d.table["topic"], pa.array(topics, pa.string())),
                                  False))
