"""The labs end to end: a real rebalance and real transactions on librdkafka's mock Kafka
cluster, recorded by the client recorders, read as `snapshot` reads a cluster, and audited.
The recordings are made in the background from the session's start (tests/lab_recordings.py:
the fixtures ``lab_recording`` and ``txn_recording``); the audits run here."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.lab]  # in make test too (make test-lab: these alone)


def test_lab_finds_the_rebalance_redelivery_and_diagnoses_the_poll_interval(
        spark, lab_recording):
    from delivery_audit_sim.lab import GROUP, audit_lab

    res = audit_lab(lab_recording, spark)
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


# ---- the transactions lab (contract §9) ------------------------------------------------

def _rows(paths: list[str]) -> list[dict]:
    import json

    return [json.loads(line) for p in paths for line in open(p, encoding="utf-8")
            if line.strip()]


def test_transactions_lab_records_aborted_sends_markers_and_both_isolation_levels(
        txn_recording):
    from delivery_audit_sim.lab_txn import GROUPS, TRANSACTIONAL_ID

    rec = txn_recording
    sends = _rows(rec.files["sends"])
    broker = _rows(rec.files["broker"])
    ledger = _rows(rec.files["ledger"])
    assert rec.plan.count("abort-resend") == 2 and rec.plan.count("abort-drop") == 2

    # sends: every row of the transactional producer, aborted ones with their offsets
    assert {s["transactional_id"] for s in sends} == {TRANSACTIONAL_ID}
    aborted = [s for s in sends if s["status"] == "aborted"]
    acked = [s for s in sends if s["status"] == "acked"]
    assert len(aborted) == 16 and len(acked) == 24 and len(sends) == 40
    assert all(s["offset"] is not None for s in aborted)
    ident = {(s["key"], s["seq"]) for s in acked}
    resent = {(s["key"], s["seq"]) for s in aborted} & ident
    assert len(resent) == 8  # aborted, then committed in the next transaction (attempt 2)
    assert all(s["attempt"] == 2 for s in acked if (s["key"], s["seq"]) in resent)

    # broker: markers as control rows with the real pid; data rows transactional
    control = [b for b in broker if b["control"] is not None]
    data = [b for b in broker if b["control"] is None]
    assert {b["control"] for b in control} == {"commit", "abort"}
    assert all(b["pid"] is not None and b["transactional"] for b in broker)
    assert len({b["pid"] for b in broker}) == 1
    assert len(data) == 40 and len(broker) == len({(b["partition"], b["offset"])
                                                  for b in broker})
    # the dump agrees with the producer: aborted sends sit at aborted offsets
    assert {(s["partition"], s["offset"]) for s in aborted} == rec.aborted_offsets
    # an abort marker follows every aborted record of its partition before any commit
    for part, off in rec.aborted_offsets:
        later = sorted((b["offset"], b["control"]) for b in control
                       if b["partition"] == part and b["offset"] > off)
        assert later and later[0][1] == "abort", (part, off, later)

    # ledger: read_uncommitted processed the aborted records, read_committed none
    by_group = {g: [r for r in ledger if r["group_id"] == g] for g in GROUPS}
    for g, iso in GROUPS.items():
        assert by_group[g] and {r["isolation"] for r in by_group[g]} == {iso}
    seen = {g: {(r["partition"], r["offset"]) for r in rows} for g, rows in by_group.items()}
    assert rec.aborted_offsets <= seen["lab-txn-uncommitted"]
    assert not rec.aborted_offsets & seen["lab-txn-committed"]
    assert len(by_group["lab-txn-committed"]) == 24
    # no marker offset was ever delivered to a consumer
    markers = {(b["partition"], b["offset"]) for b in control}
    assert not markers & (seen["lab-txn-committed"] | seen["lab-txn-uncommitted"])
    # committed copies: one broker offset per identity, processed once by read_committed
    committed = [b for b in data if (b["partition"], b["offset"]) not in rec.aborted_offsets]
    assert len({(b["key"], b["seq"]) for b in committed}) == len(committed) == 24
    keys = [(r["key"], r["seq"]) for r in by_group["lab-txn-committed"]]
    assert len(set(keys)) == len(keys)


def test_transactions_lab_finds_its_aborted_reads_and_no_false_duplicates(
        spark, txn_recording):
    from delivery_audit_sim.lab_txn import audit_transactions

    report = audit_transactions(txn_recording, spark).report
    assert all(i["rows_quarantined"] == 0 for i in report["inputs"].values()), \
        report["inputs"]
    groups = report["groups"]
    assert groups["lab-txn-uncommitted"]["anomalies"]["aborted_read"] == 16
    assert groups["lab-txn-committed"]["anomalies"]["aborted_read"] == 0
    assert groups["lab-txn-committed"]["anomalies"]["dup_effect"] == 0
    assert groups["lab-txn-uncommitted"]["anomalies"]["dup_effect"] == 0
    assert report["anomalies"]["dup_write"]["count"] == 0
    assert report["anomalies"]["lost_unacked"]["count"] == 8  # aborted, never sent again
    assert report["anomalies"]["seq_gap"]["count"] == 0
