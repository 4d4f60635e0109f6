"""The catalogue of anomalies and delivery states (audit contract §4).

Each anomaly is declared here once: its name, severity, counting unit, whether it is
counted per consumer group, the functions under ``detection/`` that decide it (from where
its inputs are computed to where its row is emitted), and its definition in one line. The
report's tables, detection's list of rules (``detection.Detection.rules``) and
docs/anomalies.md (``python -m delivery_audit.anomalies``; a test keeps the file equal to
it) are made from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnomalySpec:
    name: str
    severity: str  # critical | high | medium | info
    unit: str
    per_group: bool
    # "module:function" below delivery_audit: every function a reader follows from the
    # rule's inputs to the anomaly row, in that order (tests/test_catalogue.py resolves them)
    decided_by: tuple[str, ...]
    definition: str


ANOMALIES: tuple[AnomalySpec, ...] = (
    AnomalySpec(
        "lost_acked",
        "critical",
        "messages",
        False,
        (
            "detection.facts:facts_from",
            "detection.keyed.leaves:send_rows",
            "detection.keyed.identity_facts:identities",
            "detection.keyed.routed_rows:identity_rows",
            "detection.write_side:identity_rules",
            "detection.write_side:lost_acked",
        ),
        "acked, no broker copy, acked offset inside the dump range",
    ),
    AnomalySpec(
        "lost_unacked",
        "high",
        "messages",
        False,
        (
            "detection.keyed.identity_facts:identities",
            "detection.keyed.routed_rows:identity_rows",
            "detection.write_side:identity_rules",
            "detection.write_side:lost_unacked",
        ),
        "never acked and no broker copy",
    ),
    AnomalySpec(
        "written_despite_failure",
        "info",
        "messages",
        False,
        (
            "detection.keyed.identity_facts:identities",
            "detection.keyed.routed_rows:identity_rows",
            "detection.write_side:identity_rules",
            "detection.write_side:written_despite_failure",
        ),
        "every attempt failed/timed out, yet the broker has the message",
    ),
    AnomalySpec(
        "seq_gap",
        "medium",
        "missing seq values",
        False,
        (
            "detection.keyed.routed_rows:identity_rows",
            "detection.write_side:identity_rules",
            "detection.write_side:seq_gap",
        ),
        "seq values between a key's lowest and highest judged seq never sent",
    ),
    AnomalySpec(
        "dup_write",
        "high",
        "extra broker copies",
        False,
        (
            "detection.keyed.routed_rows:copy_rows",
            "detection.write_side:dup_write",
            "detection.write_side:dup_write_cause",
        ),
        "one identity at two or more broker offsets",
    ),
    AnomalySpec(
        "redelivery",
        "high",
        "extra successful processings",
        True,
        (
            "detection.keyed.routed_rows:ledger_out",
            "detection.consumer:_by_record",
            "detection.consumer:_emitted",
            "detection.redelivery:moved",
            "detection.redelivery:same_member",
            "detection.redelivery:_row",
            "detection.redelivery:with_event_cause",
        ),
        "the same record processed successfully again by the same group",
    ),
    AnomalySpec(
        "dup_effect",
        "high",
        "extra successful processings",
        True,
        (
            "detection.keyed.leaves:success_rows",
            "detection.delivery_states:extra_successes",
            "detection.delivery_states:dup_effect",
            "detection.delivery_states:states_pass",
        ),
        "one identity successfully processed more than once by a group",
    ),
    AnomalySpec(
        "skipped",
        "critical",
        "messages",
        True,
        (
            "detection.facts:facts_from",
            "detection.keyed.leaves:ledger_rows",
            "detection.keyed.identity_facts:_reach_bits",
            "detection.keyed.identity_facts:identities",
            "detection.keyed.identity_facts:successes_by_slot",
            "detection.keyed.routed_rows:pair_rows",
            "detection.delivery_states:state",
            "detection.delivery_states:_state_anomalies",
            "detection.delivery_states:states_pass",
        ),
        "never processed, and the group went past it",
    ),
    AnomalySpec(
        "pending",
        "info",
        "messages",
        True,
        (
            "detection.facts:facts_from",
            "detection.keyed.leaves:send_rows",
            "detection.keyed.identity_facts:_reach_bits",
            "detection.keyed.identity_facts:identities",
            "detection.keyed.identity_facts:successes_by_slot",
            "detection.keyed.routed_rows:pair_rows",
            "detection.delivery_states:state",
            "detection.delivery_states:_state_anomalies",
            "detection.delivery_states:states_pass",
        ),
        "not processed yet and the group has not gone past it: lag, not loss",
    ),
    AnomalySpec(
        "expired_unconsumed",
        "critical",
        "messages",
        True,
        (
            "detection.facts:facts_from",
            "detection.keyed.leaves:send_rows",
            "detection.keyed.identity_facts:identities",
            "detection.keyed.identity_facts:successes_by_slot",
            "detection.keyed.routed_rows:pair_rows",
            "detection.delivery_states:state",
            "detection.delivery_states:_state_anomalies",
            "detection.delivery_states:states_pass",
        ),
        "acked below the log start offset and never processed: deleted by retention",
    ),
    AnomalySpec(
        "write_reorder",
        "medium",
        "records",
        False,
        (
            "detection.keyed.routed_rows:copy_rows",
            "detection.ordering:write_reorder",
        ),
        "a first copy in a partition whose seq is lower than one already written",
    ),
    AnomalySpec(
        "process_reorder",
        "medium",
        "records",
        True,
        (
            "detection.keyed.routed_rows:ledger_out",
            "detection.consumer:_by_record",
            "detection.start_order:_max_seen",
            "detection.consumer:_emitted",
            "detection.ordering:process_reorder",
        ),
        "a first successful processing whose offset is lower than one already processed",
    ),
    AnomalySpec(
        "key_partition_split",
        "medium",
        "keys",
        False,
        (
            "detection.keyed.routed_rows:copy_rows",
            "detection.write_side:key_move",
            "detection.write_side:first_move",
        ),
        "a key whose records sit in more than one partition of a topic",
    ),
    AnomalySpec(
        "concurrent_processing",
        "high",
        "attempts",
        True,
        (
            "detection.keyed.routed_rows:ledger_out",
            "detection.start_order:_figures",
            "detection.consumer:_candidate",
            "detection.concurrency:overlapping_attempts",
            "detection.concurrency:concurrent_processing",
        ),
        "an attempt overlapping one by a different member on the same partition",
    ),
    AnomalySpec(
        "retry_after_failure",
        "info",
        "attempts",
        True,
        (
            "detection.keyed.routed_rows:ledger_out",
            "detection.consumer:_by_record",
            "detection.consumer:_emitted",
            "detection.retries:retry_after_failure",
        ),
        "an attempt that follows a failed one on the same record: expected",
    ),
    AnomalySpec(
        "aborted_read",
        "critical",
        "processings",
        True,
        (
            "detection.transactions:outcomes",
            "detection.keyed.routed_rows:ledger_joined",
            "detection.keyed.routed_rows:ledger_out",
            "detection.transactions:isolation_cause",
            "detection.transactions:aborted_read",
        ),
        "a successful processing of a record whose transaction was aborted",
    ),
    AnomalySpec(
        "hanging_transaction",
        "high",
        "transactions",
        False,
        (
            "detection.transactions:outcomes",
            "detection.transactions:per_transaction",
            "detection.transactions:hanging_rows",
            "detection.transactions:hanging_transaction",
        ),
        "an open transaction older than transaction_timeout_ms at the partition's last "
        "record: it pins the last stable offset",
    ),
    AnomalySpec(
        "zombie_write",
        "critical",
        "records",
        False,
        (
            "detection.transactions:outcomes",
            "detection.keyed.routed_rows:copy_rows",
            "detection.transactions:zombie_write",
        ),
        "a transactional record with a lower producer epoch than one already written by "
        "its pid in the partition: a fenced producer's write landed",
    ),
    AnomalySpec(
        "late_delivery",
        "medium",
        "messages",
        True,
        (
            "detection.keyed.leaves:success_rows",
            "detection.keyed.identity_facts:successes_by_slot",
            "detection.keyed.routed_rows:pair_rows",
            "detection.delivery_states:late_delivery",
            "detection.delivery_states:states_pass",
        ),
        "first successful processing more than the group's latency_sla_ms after the "
        "message's judging time",
    ),
)

ANOMALY_NAMES: tuple[str, ...] = tuple(a.name for a in ANOMALIES)
BY_NAME: dict[str, AnomalySpec] = {a.name: a for a in ANOMALIES}
SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "info")

# the published evidence keeps the identities of at most this many anomaly rows of each
# anomaly (detection/evidence_table.py writes it, explain.py says so when it stops short)
PER_ANOMALY = 5000

DUP_WRITE_CAUSES: tuple[str, ...] = ("producer_retry", "idempotence_breach", "unknown")
REDELIVERY_CAUSES: tuple[str, ...] = ("rebalance", "other")
ABORTED_READ_CAUSES: tuple[str, ...] = ("read_uncommitted", "read_committed", "unknown")
# pending's cause without a copy when the acked offset lies in an offsets file's
# [log_start, read_from) (rule 26); the others: "lag" (a copy), "acked beyond the dump"
PENDING_BEFORE_READ = "acked before the read"

STATES: tuple[str, ...] = (
    "delivered_once",
    "delivered_duplicate",
    "lost_acked",
    "lost_unacked",
    "skipped",
    "expired_unconsumed",
    "pending",
)


def catalogue_markdown() -> str:
    """docs/anomalies.md: the catalogue as a Markdown table."""
    lines = [
        "# Anomalies",
        "",
        "Generated from `src/delivery_audit/anomalies.py` by `python -m "
        "delivery_audit.anomalies`; do not edit by hand (a test compares them).",
        "",
        "| anomaly | severity | counted in | per group | decided by | definition |",
        "|---|---|---|---|---|---|",
    ]
    for a in ANOMALIES:
        where = ", ".join(f"`{r.replace(':', '.')}`" for r in a.decided_by)
        lines.append(
            f"| `{a.name}` | {a.severity} | {a.unit} | "
            f"{'yes' if a.per_group else 'no'} | {where} | {a.definition} |"
        )
    lines += [
        "",
        "Delivery states, one per (group, judged identity): "
        + ", ".join(f"`{s}`" for s in STATES)
        + ".",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
