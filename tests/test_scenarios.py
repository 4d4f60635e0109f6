"""For every generated scenario, the audit finds exactly the generator's truth.json:
every anomaly count, the dup_write and redelivery causes, judged and per-group states; and
the mixed day's narrative names each injected fault with the truth's numbers.

One Spark audit checks every scenario: each scenario's topics and groups get the
scenario's name as a prefix, so the scenarios cannot meet, and each truth is compared
with the rows of its own topics and groups. The audit (run_audit, published) is the
session's (tests/shared_audits.py), which test_connect.py also compares with a Spark Connect
client's. The exactly-once scenario's truth follows
contract §9 (transactions, latency); it is expected to fail until the engine detects §9.
"""

from __future__ import annotations

from collections import Counter

import pytest

from delivery_audit.anomalies import ANOMALY_NAMES, STATES
from delivery_audit_sim.generator import SCENARIOS

pytestmark = pytest.mark.audit  # whole audits of generated scenarios: not in make test-fast


@pytest.fixture(scope="module")
def audited(scenario_day, scenario_audit):
    """The session's audit of every scenario in one input (tests/shared_audits.py: run_audit,
    generated code on; test_connect.py compares it with a Connect client's)."""
    assert scenario_audit["factory_mode"] == "FALLBACK"  # generated code was on
    return {"truths": scenario_day["truths"], **scenario_audit}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_audit_matches_truth(audited, scenario):
    truth, report, prefix = audited["truths"][scenario], audited["report"], f"{scenario}."
    counts: Counter = Counter()
    causes: dict[str, Counter] = {a: Counter() for a in truth["by_cause"]}
    for r in audited["rows"]:
        if r["topic"].startswith(prefix):
            counts[r["anomaly"]] += r["units"]
            if r["anomaly"] in causes:
                causes[r["anomaly"]][r["cause"]] += r["units"]
    # the truth's names: the catalogue's, and §9's for the exactly-once scenario
    assert set(ANOMALY_NAMES) <= set(truth["anomalies"])
    assert {a: counts[a] for a in truth["anomalies"]} == truth["anomalies"]
    for anomaly in causes:
        assert {c: causes[anomaly][c] for c in truth["by_cause"][anomaly]} == \
            truth["by_cause"][anomaly], anomaly
    judged = sum(n for t, n in report["judged_by_topic"].items() if t.startswith(prefix))
    assert judged == truth["judged"]
    for group, expected in truth["groups"].items():
        got = report["groups"][prefix + group]
        assert got["judged"] == expected["judged"], group
        assert {s: got["states"][s] for s in STATES} == expected["states"], group
        assert got["balance_ok"], group


def test_accounting_holds_for_the_combined_inputs(audited):
    for source, counts in audited["report"]["inputs"].items():
        assert counts["rows_read"] == counts["rows_valid"] + counts["rows_quarantined"], source
    assert audited["report"]["balance_ok"]


def test_detection_reads_each_source_from_one_staged_parquet_leaf(audited):
    """Detection's plans start from one leaf per source (ingest.stage_valid): over the
    ingestion plan, building the rules' plans took most of a small audit's time. A source
    holding rule 5's later copies leaves them out by row id over that leaf (no rewrite)."""
    work = audited["work"]
    assert set(audited["frames"]) == {"sends", "broker", "ledger", "events"}
    filtered = 0
    for source, df in audited["frames"].items():
        lines = df["tree"].splitlines()
        assert "parquet" in lines[-1].lower() and len(lines) in (1, 3), (source, lines)
        if len(lines) == 3:  # Project, Filter NOT _rid IN (…), the leaf
            assert "_rid" in lines[1] and "Filter" in lines[1], (source, lines)
            filtered += 1
    # the scenario's inputs hold exact duplicates (log_duplicates) in some source
    assert filtered >= 1
    for source, df in audited["frames"].items():
        files = df["files"]
        assert files and all(str(work) in f for f in files), (source, files)


# --------------------------------------------------------------------------- the narrative

# truth.json's "injected" entries that are not fault kinds
NOT_FAULTS = {"base", "log_duplicates", "rows", "format", "story"}
# fault kinds that leave no anomaly, so no finding
UNTOLD = {"late_catchup": "consumed late but within the grace period: delivered",
          "unattributable_records": "records without a seq form no identity"}


def _narrated(truth: dict) -> dict[str, tuple[set[str], str | None, dict[str, int]]]:
    """Per fault kind of the mixed scenario: the finding causes that tell it, the group it
    hits (plan_mixed; None: the write side, any of its topics) and the numbers the findings
    must carry, from the truth."""
    injected, anomalies, causes = truth["injected"], truth["anomalies"], truth["by_cause"]
    storm = injected["rebalance_storm"]["reprocessed_records"]
    splits = {"key_partition_split": anomalies["key_partition_split"]}
    return {
        "leader_failover": ({"acks_loss"}, None, {
            a: injected["leader_failover"][a]
            for a in ("lost_acked", "lost_unacked", "written_despite_failure", "seq_gap")}),
        "producer_retry": ({"producer_retry"}, None,
                           {"dup_write": injected["producer_retry"]["extra_copies"]}),
        "idempotence_breach": ({"idempotence_breach"}, None,
                               {"dup_write": causes["dup_write"]["idempotence_breach"]}),
        "unknown_dup": ({"dup_write_unknown"}, None,
                        {"dup_write": causes["dup_write"]["unknown"]}),
        "write_reorder": ({"write_reorder"}, None,
                          {"write_reorder": injected["write_reorder"]["late_records"]}),
        # a key moved by the partition-count change, and the null key of a legacy producer
        "key_partition_split": ({"key_partition_split"}, None, splits),
        "null_key_stream": ({"key_partition_split"}, None, splits),
        "rebalance_storm": ({"eviction", "rebalance_storm"}, "fans-push-service", {
            "redelivery": storm, "concurrent_processing": anomalies["concurrent_processing"]}),
        "session_timeout_redelivery": ({"eviction"}, "shipping",
                                       {"redelivery": causes["redelivery"]["rebalance"] - storm}),
        "batch_redelivery": ({"same_member_redelivery"}, "billing",
                             {"redelivery": causes["redelivery"]["other"]}),
        "commit_before_process": ({"commit_before_process"}, "billing", {
            "skipped": injected["commit_before_process"]["skipped_records"]}),
        # one record given up per poison instance
        "poison_record": ({"poison_record"}, "billing",
                          {"skipped": injected["poison_record"]["instances"]}),
        "retention_expiry": ({"retention"}, "billing",
                             {"expired_unconsumed": anomalies["expired_unconsumed"]}),
        "consumer_lag_at_end": ({"lag"}, "shipping", {"pending": anomalies["pending"]}),
        "multithreaded_reorder": ({"process_reorder"}, "billing",
                                  {"process_reorder": anomalies["process_reorder"]}),
        "retry_to_success": ({"retries"}, None,
                             {"retry_after_failure": anomalies["retry_after_failure"]}),
    }


def _told(narrative: list[dict], prefix: str, causes: set[str] | None = None,
          group: str | None = None) -> Counter:
    """The units the findings (of ``causes``; all) tell for the scenario's groups and
    topics (``group``: that group's only)."""
    out: Counter = Counter()
    for f in narrative:
        if causes is not None and f["cause"] not in causes:
            continue
        for part in f["breakdown"]:
            g, t = part["group"], part["topic"]
            mine = (g == prefix + group if group else
                    (g or "").startswith(prefix) or (g is None and (t or "").startswith(prefix)))
            if mine:
                out.update(part["anomalies"])
    return out


def test_the_mixed_days_narrative_names_each_injected_fault_with_the_truths_numbers(audited):
    truth, report, prefix = audited["truths"]["mixed"], audited["report"], "mixed."
    narrative = report["narrative"]
    faults = {k: v for k, v in truth["injected"].items() if k not in NOT_FAULTS}
    expected = _narrated(truth)
    assert set(faults) <= set(expected) | set(UNTOLD), "a fault kind the narrative ignores"
    for kind, counts in faults.items():
        if kind in UNTOLD or not any(counts.values()):
            continue
        causes, group, numbers = expected[kind]
        assert numbers and all(numbers.values()), (kind, numbers)
        told = _told(narrative, prefix, causes, group)
        assert {a: told[a] for a in numbers} == numbers, kind
    # every unit of every anomaly is told once, by one cause (dup_effect: by its causes)
    told = _told(narrative, prefix)
    assert {a: told[a] for a in truth["anomalies"] if a != "dup_effect"} == \
        {a: v for a, v in truth["anomalies"].items() if a != "dup_effect"}
    # the storm as the issue tells it: who left, why, and what it cost
    storm = next(f for f in narrative if f["group"] == prefix + "fans-push-service"
                 and f["cause"] in ("eviction", "rebalance_storm"))
    reprocessed = truth["injected"]["rebalance_storm"]["reprocessed_records"]
    assert "max.poll.interval.ms" in storm["text"] and storm["members"]
    assert f"{reprocessed} records were processed twice" in storm["text"]
    assert storm["fix"].startswith("max.poll.records ≤ ")
    ranks = [("critical", "warning", "info").index(f["severity"]) for f in narrative]
    assert ranks == sorted(ranks) and [f["id"] for f in narrative][:2] == ["f1", "f2"]
    # and the page opens with it
    html = audited["html"]
    assert html.index('id="narrative"') < html.index('id="anomalies"')
    assert html.count('class="finding ') == len(narrative)
