"""The catalogue of anomalies and delivery states (audit contract §4).

One place lists every anomaly name, its severity, its counting unit, whether it
is counted per consumer group, and the module that decides it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnomalySpec:
    name: str
    severity: str  # critical | high | medium | info
    unit: str
    per_group: bool
    decided_in: str
    definition: str


ANOMALIES: tuple[AnomalySpec, ...] = (
    AnomalySpec("lost_acked", "critical", "messages", False, "detection.write_side",
                "acked, no broker copy, acked offset inside the dump range"),
    AnomalySpec("lost_unacked", "high", "messages", False, "detection.write_side",
                "never acked and no broker copy"),
    AnomalySpec("written_despite_failure", "info", "messages", False, "detection.write_side",
                "every attempt failed/timed out, yet the broker has the message"),
    AnomalySpec("seq_gap", "medium", "missing seq values", False, "detection.write_side",
                "seq values between a key's lowest and highest judged seq never sent"),
    AnomalySpec("dup_write", "high", "extra broker copies", False, "detection.write_side",
                "one identity at two or more broker offsets"),
    AnomalySpec("redelivery", "high", "extra successful processings", True,
                "detection.redelivery",
                "the same record processed successfully again by the same group"),
    AnomalySpec("dup_effect", "high", "extra successful processings", True,
                "detection.delivery_states",
                "one identity successfully processed more than once by a group"),
    AnomalySpec("skipped", "critical", "messages", True, "detection.delivery_states",
                "never processed, and the group went past it"),
    AnomalySpec("pending", "info", "messages", True, "detection.delivery_states",
                "not processed yet and the group has not gone past it: lag, not loss"),
    AnomalySpec("expired_unconsumed", "critical", "messages", True,
                "detection.delivery_states",
                "acked below the log start offset and never processed: deleted by retention"),
    AnomalySpec("write_reorder", "medium", "records", False, "detection.ordering",
                "a first copy in a partition whose seq is lower than one already written"),
    AnomalySpec("process_reorder", "medium", "records", True, "detection.ordering",
                "a first successful processing whose offset is lower than one already processed"),
    AnomalySpec("key_partition_split", "medium", "keys", False, "detection.write_side",
                "a key whose records sit in more than one partition of a topic"),
    AnomalySpec("concurrent_processing", "high", "attempts", True, "detection.concurrency",
                "an attempt overlapping one by a different member on the same partition"),
    AnomalySpec("retry_after_failure", "info", "attempts", True, "detection.retries",
                "an attempt that follows a failed one on the same record: expected"),
)

ANOMALY_NAMES: tuple[str, ...] = tuple(a.name for a in ANOMALIES)
BY_NAME: dict[str, AnomalySpec] = {a.name: a for a in ANOMALIES}
SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "info")

DUP_WRITE_CAUSES: tuple[str, ...] = ("producer_retry", "idempotence_breach", "unknown")
REDELIVERY_CAUSES: tuple[str, ...] = ("rebalance", "other")

STATES: tuple[str, ...] = (
    "delivered_once",
    "delivered_duplicate",
    "lost_acked",
    "lost_unacked",
    "skipped",
    "expired_unconsumed",
    "pending",
)
