"""The verdict rules: defaults, allow_critical, global and per-topic thresholds, balance."""

from __future__ import annotations

import pytest
from report_fixtures import make_report

from delivery_audit.config import AuditConfig
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
