"""The report's ``rebalances`` section assembled: round 1 (sources.py, collected here or
by the caller) → timelines (timeline.py); round 2 (diagnosis.py's leave evidence and
linking.py's links) in one Spark action → per group the counts, timeline, evictions and
advice."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from ..collect import collect_all
from ..config import AuditConfig
from .advice import advice
from .diagnosis import diagnose, leave_evidence
from .linking import links
from .settings import Settings, rebalance_settings
from .sources import judged, rebalance_tables
from .timeline import Clusters, cluster_groups, leavers


def rebalance_round2_tables(ledger: DataFrame, clusters: Clusters,
                            settings: dict[str, Settings], anomalies: DataFrame
                            ) -> dict[str, DataFrame]:
    """Round 2: the small tables that need round 1's rebalances (no Spark action).

    * ``rebalance_leave_evidence`` — per leave to diagnose (``l_group``, ``l_member``,
      ``l_t`` leave ms): ``max_gap`` between consecutive processing starts, ``longest``
      attempt, ``batch_span``/``batch_n`` of the longest run of up to max.poll.records
      back-to-back attempts, ``last_activity`` (ms), ``attempts``; absent when nobody left.
    * ``rebalance_links`` — per (group_id, ``r_idx``): ``n`` redeliveries (the
      ``redelivery`` rows of ``anomalies``) linked to the group's rebalance at index
      ``r_idx`` of ``clusters.rebalances[group_id]``, or unlinked (``r_idx`` null).
    """
    tables: dict[str, DataFrame] = {}
    leaves = clusters.leaves()
    if leaves:
        tables["rebalance_leave_evidence"] = leave_evidence(ledger, leaves, settings)
    tables["rebalance_links"] = links(anomalies, clusters, settings)
    return tables


def build_rebalance_report(clusters: Clusters, settings: dict[str, Settings],
                           round2: dict[str, list[dict]]) -> dict[str, Any]:
    """The report's ``rebalances`` section from round 1 (``clusters``) and the collected
    round-2 tables (``rebalance_round2_tables``); sets each rebalance's redeliveries."""
    evidence = {(r["l_group"], r["l_member"], r["l_t"]): r
                for r in round2.get("rebalance_leave_evidence", [])}
    linked: dict[str, int] = {}
    unlinked: dict[str, int] = {}
    for r in round2.get("rebalance_links", []):
        g, n = r["group_id"], int(r["n"])
        if r["r_idx"] is None:
            unlinked[g] = unlinked.get(g, 0) + n
        else:
            clusters.rebalances[g][r["r_idx"]].redeliveries = n
            linked[g] = linked.get(g, 0) + n

    report: dict[str, Any] = {}
    for g in clusters.groups:
        s = settings[g]
        rs = clusters.rebalances[g]
        evictions = []
        for r in rs:
            for m, leave in sorted(leavers(r).items()):
                evictions.append(diagnose(m, leave, evidence.get((g, m, leave["t"])), s))
        st = clusters.stats.get(g)
        counted = [r for r in rs if r.kind == "rebalance"]
        durations = [r.end - r.start for r in counted if r.end is not None]
        report[g] = {
            "rebalance_count": len(counted),
            "source": clusters.source[g],
            "total_rebalance_ms": sum(durations),
            "longest_rebalance_ms": max(durations) if durations else None,
            "poll_interval_evictions": sum(e["diagnosis"] == "poll_interval_exceeded"
                                           for e in evictions),
            "session_timeout_evictions": sum(e["diagnosis"] == "session_timeout"
                                             for e in evictions),
            "redeliveries_linked": linked.get(g, 0),
            "redeliveries_unlinked": unlinked.get(g, 0),
            "p99_processing_ms": st["p99"] if st else None,
            "timeline": [r.entry() for r in rs],
            "evictions": evictions,
            "advice": advice(s, st["p99"] if st else None),
            "processing_ms": ({k: st[k] for k in ("p50", "p99", "max")} if st else
                              {"p50": None, "p99": None, "max": None}),
            "settings": s.as_dict(),
        }
    return report


def rebalance_report(ledger: DataFrame, events: DataFrame, group_ids: list[str],
                     config: AuditConfig, anomalies: DataFrame,
                     round1: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """The ``rebalances`` section (see the package docstring): round 1 collected here, or
    given as ``round1`` by a caller that collected ``rebalance_tables`` with other tables
    of its own; then round 2, one Spark action.

    ``ledger``/``events``: the judged groups' rows (canonical columns); ``group_ids``:
    the judged groups; ``anomalies``: the anomaly table (its ``redelivery`` rows are
    linked to rebalances)."""
    groups = judged(group_ids)
    if not groups:
        return {}
    if round1 is None:
        round1 = collect_all(rebalance_tables(ledger, events, groups))
    clusters = cluster_groups(groups, round1)
    settings = rebalance_settings(config, groups)
    round2 = collect_all(rebalance_round2_tables(ledger, clusters, settings, anomalies))
    return build_rebalance_report(clusters, settings, round2)
