"""The verdict rules: defaults, allow_critical, global and per-topic thresholds, balance,
results validation; a test for every way to fail."""

from __future__ import annotations

import pytest
from report_fixtures import make_report

from delivery_audit.anomalies import ANOMALIES, STATES
from delivery_audit.config import AuditConfig
from delivery_audit.quality import validate_results
from delivery_audit.report.verdict import decide, threshold_checks


def test_clean_report_passes():
    assert decide(make_report(), AuditConfig()) == {"verdict": "pass", "reasons": []}


def test_medium_and_info_pass_by_default():
    r = make_report(counts={"seq_gap": 4, "pending": 10, "retry_after_failure": 3})
    assert decide(r, AuditConfig())["verdict"] == "pass"


def test_high_warns_critical_fails():
    assert decide(make_report(counts={"dup_write": 1}), AuditConfig())["verdict"] == "warn"
    out = decide(make_report(counts={"dup_write": 1, "skipped": 2}), AuditConfig())
    assert out["verdict"] == "fail"
    assert out["reasons"][0].startswith("skipped = 2")
    assert any("dup_write" in r for r in out["reasons"])


def test_allow_critical_downgrades_to_warn():
    out = decide(make_report(counts={"lost_acked": 1}), AuditConfig(allow_critical=True))
    assert out["verdict"] == "warn"


def test_global_threshold():
    r = make_report(counts={"dup_write": 5})
    cfg = AuditConfig(thresholds={"dup_write": {"warn": 2, "fail": 10}})
    assert decide(r, cfg)["verdict"] == "warn"
    cfg = AuditConfig(thresholds={"dup_write": {"warn": 2, "fail": 4}})
    assert decide(r, cfg) == {"verdict": "fail",
                              "reasons": ["dup_write = 5 > fail threshold 4"]}
    cfg = AuditConfig(thresholds={"dup_write": {"warn": 5}})
    assert decide(r, cfg)["verdict"] == "pass"  # count must be greater than the limit
    cfg = AuditConfig(thresholds={"seq_gap": {"fail": 0}})
    assert decide(make_report(counts={"seq_gap": 1}), cfg)["verdict"] == "fail"


def test_topic_threshold_judges_its_topic_and_global_the_rest():
    r = make_report(counts={"dup_write": 7}, topics=("orders", "logs"),
                    by_topic={"dup_write": {"orders": 1, "logs": 6}})
    cfg = AuditConfig(topic_thresholds={"logs": {"dup_write": {"warn": 10, "fail": 100}}},
                      thresholds={"dup_write": {"fail": 0}})
    out = decide(r, cfg)
    assert out["verdict"] == "fail"
    assert out["reasons"] == [
        "dup_write (topics without their own threshold) = 1 > fail threshold 0"]
    checks = {(c.anomaly, c.scope): c.count for c in threshold_checks(r, cfg)
              if c.anomaly == "dup_write"}
    assert checks == {("dup_write", "logs"): 6, ("dup_write", "*"): 1}
    cfg = AuditConfig(topic_thresholds={"orders": {"dup_write": {"fail": 0}}})
    out = decide(r, cfg)
    assert out["verdict"] == "fail"
    assert "dup_write on topic orders = 1 > fail threshold 0" in out["reasons"]


def test_balance_broken_fails():
    r = make_report()
    r["balance_ok"] = False
    r["groups"]["g1"]["balance_ok"] = False
    r["groups"]["g1"]["states"]["delivered_once"] = 99
    out = decide(r, AuditConfig())
    assert out["verdict"] == "fail"
    assert any("group g1: delivery states sum to 99, judged 100" in x for x in out["reasons"])


def test_invalid_thresholds_rejected():
    with pytest.raises(ValueError, match="unknown anomaly"):
        decide(make_report(), AuditConfig(thresholds={"dup_writes": {"fail": 1}}))
    with pytest.raises(ValueError, match="unknown level"):
        decide(make_report(), AuditConfig(thresholds={"dup_write": {"error": 1}}))
    with pytest.raises(ValueError, match="non-negative"):
        decide(make_report(), AuditConfig(topic_thresholds={"t": {"dup_write": {"fail": -1}}}))


# --------------------------------------------------------------------------- every way to fail
# decide() is the one place the verdict is made (audit.py only passes it the results
# validation); each path to "fail" below, with a report that would otherwise pass or warn.

CRITICAL = [a.name for a in ANOMALIES if a.severity == "critical"]


def _fails(out: dict, reason: str) -> None:
    assert out["verdict"] == "fail", out
    assert reason in out["reasons"], out["reasons"]


def test_fail_when_the_overall_balance_is_broken_alone():
    r = make_report(balance_ok=False)  # every group balanced, the report's total is not
    _fails(decide(r, AuditConfig()), "delivery states do not add up to the judged messages")


def test_fail_when_one_groups_balance_is_broken():
    states = dict.fromkeys(STATES, 0) | {"delivered_once": 90}
    groups = {"g1": {"topics": ["orders"], "judged": 100, "states": states,
                     "balance_ok": False}}
    r = make_report(groups=groups, balance_ok=True)
    _fails(decide(r, AuditConfig()), "group g1: delivery states sum to 90, judged 100")


@pytest.mark.parametrize("name", CRITICAL)
def test_fail_for_every_critical_anomaly_unless_allowed(name):
    r = make_report(counts={name: 1})
    _fails(decide(r, AuditConfig()), f"{name} = 1 (critical; allow_critical is off)")
    assert decide(r, AuditConfig(allow_critical=True))["verdict"] == "warn"


def test_fail_for_a_critical_anomaly_outside_the_catalogue_by_its_stated_severity():
    r = make_report()
    r["anomalies"]["new_kind"] = {"count": 2, "severity": "critical", "by_topic": {}}
    _fails(decide(r, AuditConfig()), "new_kind = 2 (critical; allow_critical is off)")


def test_fail_over_a_global_fail_threshold_of_a_medium_anomaly():
    r = make_report(counts={"seq_gap": 3})  # medium: passes without a threshold
    assert decide(r, AuditConfig())["verdict"] == "pass"
    _fails(decide(r, AuditConfig(thresholds={"seq_gap": {"warn": 0, "fail": 2}})),
           "seq_gap = 3 > fail threshold 2")


def test_fail_over_a_topic_fail_threshold_only_for_that_topic():
    r = make_report(counts={"dup_write": 5}, topics=("orders", "logs"),
                    by_topic={"dup_write": {"orders": 4, "logs": 1}})
    cfg = AuditConfig(topic_thresholds={"orders": {"dup_write": {"fail": 3}},
                                        "logs": {"dup_write": {"fail": 3}}})
    _fails(decide(r, cfg), "dup_write on topic orders = 4 > fail threshold 3")
    assert not any("logs" in x for x in decide(r, cfg)["reasons"])


def test_fail_over_the_global_threshold_for_the_topics_without_their_own():
    r = make_report(counts={"dup_write": 5}, topics=("orders", "logs"),
                    by_topic={"dup_write": {"orders": 2, "logs": 3}})
    cfg = AuditConfig(topic_thresholds={"logs": {"dup_write": {"fail": 10}}},
                      thresholds={"dup_write": {"fail": 1}})
    _fails(decide(r, cfg),
           "dup_write (topics without their own threshold) = 2 > fail threshold 1")


def test_fail_when_the_results_validation_failed_passed_in_or_in_the_report():
    r = make_report(counts={"dup_write": 1})  # warn on its own
    assert decide(r, AuditConfig())["verdict"] == "warn"
    failed = {"success": False, "failed": ["expect_column_pair_values_to_be_equal"]}
    out = decide(r, AuditConfig(), failed)
    _fails(out, "results validation failed")
    assert out["reasons"] == ["results validation failed", "dup_write = 1 (high)"]
    _fails(decide({**r, "results_validation": failed}, AuditConfig()),
           "results validation failed")
    passed = {"success": True, "failed": []}
    assert decide(r, AuditConfig(), passed)["verdict"] == "warn"
    assert decide({**r, "results_validation": passed}, AuditConfig())["verdict"] == "warn"


def test_a_failed_results_validation_adds_no_reason_to_a_run_that_fails_already():
    """The results suite re-checks the critical counts: a lost message fails both; the
    reasons name the lost message, not the suite a second time."""
    r = make_report(counts={"lost_acked": 1})
    out = decide(r, AuditConfig(), {"success": False, "failed": ["critical"]})
    assert out == {"verdict": "fail",
                   "reasons": ["lost_acked = 1 (critical; allow_critical is off)"]}


def test_a_report_that_breaks_the_results_suite_fails_the_run():
    """The results suite (GX, quality/results.py) on a report whose figures disagree (a count
    that is not the sum of its per-topic counts) fails; decide() turns that into a fail,
    although the figures alone only pass."""
    r = make_report(counts={"seq_gap": 4}, by_topic={"seq_gap": {"orders": 3}})
    assert decide(r, AuditConfig())["verdict"] == "pass"
    results = validate_results(r, AuditConfig())
    assert results["success"] is False
    _fails(decide(r, AuditConfig(), results), "results validation failed")
