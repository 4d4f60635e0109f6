"""The lab end to end: a real rebalance on librdkafka's mock Kafka cluster, recorded by the
client recorders, dumped, and audited."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.lab]


def test_lab_finds_the_rebalance_redelivery_and_diagnoses_the_poll_interval(spark, tmp_path):
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    from delivery_audit_sim.lab import GROUP, BrokerUnavailable, MockCluster, run_lab

    try:
        MockCluster().stop()
    except BrokerUnavailable as exc:
        pytest.skip(f"the lab broker cannot start here: {exc}")

    res = run_lab(tmp_path, spark=spark, echo=lambda *_: None)
    report = res.report
    assert any("stalling" in n for n in res.notes), res.notes
    assert any("commit failed" in n for n in res.notes), res.notes

    inputs = report["inputs"]
    assert inputs["broker"]["rows_valid"] == 40 and inputs["sends"]["rows_valid"] == 40
    assert all(i["rows_quarantined"] == 0 for i in inputs.values()), inputs

    red = report["anomalies"]["redelivery"]
    assert red["count"] >= 1 and red["by_cause"]["rebalance"] >= 1, red
    assert report["anomalies"]["lost_acked"]["count"] == 0

    reb = report["rebalances"][GROUP]
    assert reb["rebalance_count"] >= 1 and reb["redeliveries_linked"] >= 1, reb
    slow = [e for e in reb["evictions"] if e["member_id"] == "slow"]
    assert slow and slow[0]["diagnosis"] == "poll_interval_exceeded", reb["evictions"]
    assert (res.workdir / "reports").exists()
    assert res.destination.endswith(report["window"]["id"])
