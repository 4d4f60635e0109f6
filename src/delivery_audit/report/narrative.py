"""The incident narrative: report.json's ``narrative``, what happened in the window, why,
to whom and what to do, as one finding per cause (the schema: findings.py), ordered by
severity, then time.

Written from the data, plain Python (no Spark): report.json's figures (the rebalance
section's timelines, evictions, linked redeliveries and advice; the config's groups) and
the published anomaly table read back with pyarrow (digest.py: when, where, who, per
topic and group). The causes, each family in its module:

* write side, one finding per cause over every topic (write_findings.py) — ``acks_loss``
  (``lost_acked``: the broker acknowledged and lost them, with the topics'
  ``lost_unacked``, ``written_despite_failure`` and ``seq_gap`` around them),
  ``send_failure``, ``seq_gap``, ``written_despite_failure`` (the same, in topics without
  a loss), ``producer_retry``, ``idempotence_breach`` and ``dup_write_unknown``
  (``dup_write`` by cause), ``write_reorder``, ``key_partition_split``;
* rebalances, per incident (incidents.py) — ``eviction``, ``rebalance_storm``,
  ``rebalance``, ``zombie``;
* consumer side, per group (consumer_findings.py) — ``commit_before_process``
  (``skipped`` records nobody tried), ``poison_record`` (``skipped`` after failed
  attempts), ``retention`` (``expired_unconsumed``), ``lag``, ``pending_beyond_dump`` and
  ``pending_before_read`` (``pending`` by cause), ``same_member_redelivery``
  (``redelivery`` cause other), ``process_reorder``; and ``retries``
  (``retry_after_failure``, expected) over every group;
* transactions and latency (contract §9, transaction_findings.py) — ``aborted_read_uncommitted``,
  ``aborted_read_committed`` and ``aborted_read`` (per group, by isolation),
  ``hanging_transaction``, ``zombie_write``, ``late_delivery`` (per group);
* any other anomaly with a count (a new catalogue entry): a finding of its own, cause =
  the anomaly's name (here). ``dup_effect`` is the consequence of
  ``dup_write`` and ``redelivery`` and is told there.

The write-side and consumer-side findings are built the same way over the anomaly rows
(row_findings.py: units, span, scope, breakdown and the shared phrases).

``build_narrative(report, anomalies)`` is the one call: ``anomalies`` is the anomaly
table's folder (or a :class:`~.digest.Digest`); without a readable table the findings
come from report.json's counts alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..anomalies import BY_NAME, SEVERITIES
from .consumer_findings import consumer_side_findings
from .digest import Digest
from .findings import Clock, Finding, n, ordered
from .incidents import rebalance_findings
from .row_findings import in_topics, scoped_finding
from .transaction_findings import TOLD as TXN_TOLD
from .transaction_findings import transaction_findings
from .write_findings import write_side_findings

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
        finding = scoped_finding(
            name, {name: x}, f"{name}: {n(count)} {unit}{in_topics(x)}",
            f"{n(count)} {unit} of {name}{in_topics(x)}{clock.span(*x.span())}"
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
    findings = [*write_side_findings(digest, clock), *rebalance_findings(report, digest, clock),
                *consumer_side_findings(digest, report, clock),
                *transaction_findings(digest, report, clock), *_others(digest, report, clock)]
    return ordered(findings)
