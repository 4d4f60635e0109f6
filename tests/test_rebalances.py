"""Rebalance forensics and advice (contract §5) on tiny canonical frames.

One detection (for the anomaly table whose redelivery rows are linked) + one
rebalance_report for all cases (module fixtures); each case is its own group and topic.
"""

from __future__ import annotations

import pytest
from frames import END, START, Log
from job_count import spark_jobs

from delivery_audit.collect import collect_all
from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.detection import detect
from delivery_audit.rebalance import (
    advice,
    group_settings,
    rebalance_report,
    rebalance_tables,
)
from delivery_audit.report.insights import build_insights, compute_insights, insight_tables
from delivery_audit.schemas import ANOMALY_SCHEMA

WINDOW = AuditWindow.of(START, END)


def _at(seconds: float) -> str:
    """10:00:00 + seconds, as an ISO time on the audited day (ms precision)."""
    total_ms = int(round(seconds * 1000))
    h, rem = divmod(36_000_000 + total_ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"2026-11-19T{h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"


def build() -> tuple[Log, AuditConfig]:
    log = Log()
    # fans: the seed-000 incident: 1,500 ms per record, 500 per poll, 300 s interval
    for o in range(5):
        log.message(o, topic="fans", group="fans", member="f1")
        log.ledger[-1].update(started_ts=_at(o * 2), finished_ts=_at(o * 2 + 1.5))

    # poll: p1 processes a 10-record batch back to back (10 × 1.5 s = 15 s > 10 s
    # interval), leaves without a reason; p2 takes over and reprocesses offset 9
    for o in range(10):
        log.message(o, topic="poll", group="poll", member="p1")
        log.ledger[-1].update(started_ts=_at(o * 1.5), finished_ts=_at(o * 1.5 + 1.49))
    log.event("assigned", _at(-5), group="poll", member="p1", topic="poll")
    log.event("left_group", _at(15.2), group="poll", member="p1", topic=None, partition=None)
    log.event("revoked", _at(15.3), group="poll", member="p2", topic="poll")
    log.event("assigned", _at(18), group="poll", member="p2", topic="poll")
    log.process(9, topic="poll", group="poll", member="p2", at=_at(19), done=_at(20))
    # the zombie p1 learns late: its commit fails after the rebalance ended
    log.event("commit_failed", _at(25), group="poll", member="p1", topic="poll",
              detail="Commit cannot be completed since the group has already rebalanced")

    # sess: s1 is removed by the coordinator; s2 goes silent for 2 minutes
    log.message(0, topic="sess", group="sess", member="s1")
    log.message(1, topic="sess", group="sess", member="s2", partition=0)
    log.event("assigned", "09:00:00", group="sess", member="s1", topic="sess")
    log.event("assigned", "09:00:00", group="sess", member="s2", topic="sess", partition=1)
    log.event("left_group", "10:00:30", group="sess", member="s1", topic=None, partition=None,
              detail="session timeout (coordinator: member has failed)")
    log.event("left_group", "10:02:03", group="sess", member="s2", topic=None, partition=None)
    log.event("assigned", "10:02:10", group="sess", member="s3", topic="sess")

    # inf: no events; the partition moves from i1 to i2 -> one inferred rebalance
    for o in range(3):
        log.message(o, topic="inf", group="inf", member="i1")
    for o in range(3, 6):
        log.message(o, topic="inf", group="inf", member="i2")
        log.ledger[-1].update(started_ts="10:10:00", finished_ts="10:10:01")
    config = AuditConfig.from_dict({"groups": {
        "fans": {"max.poll.records": 500, "max.poll.interval.ms": 300000,
                 "session.timeout.ms": 10000, "heartbeat.interval.ms": 10000},
        "poll": {"max.poll.records": 10, "max.poll.interval.ms": 10000,
                 "session.timeout.ms": 10000, "heartbeat.interval.ms": 3000},
        "sess": {"session.timeout.ms": 45000},
        "inf": {},
    }})
    return log, config




@pytest.fixture(scope="module")
def inputs(spark):
    """Plain in-memory frames: the judged groups' ledger and events (every group is
    configured, so all of them) and the anomaly table of the same data."""
    log, config = build()
    frames = log.frames(spark)
    anomalies = detect(spark, frames, WINDOW, config).anomalies
    # an in-memory copy: what the report costs is then the report's own jobs
    anomalies = spark.createDataFrame(anomalies.collect(), ANOMALY_SCHEMA)
    groups = sorted(g.group_id for g in config.groups)
    return {"frames": frames, "ledger": frames["ledger"], "events": frames["events"],
            "groups": groups, "config": config, "anomalies": anomalies}


@pytest.fixture(scope="module")
def report(spark, inputs):
    i = inputs
    return rebalance_report(i["ledger"], i["events"], i["groups"], i["config"],
                            i["anomalies"])


def test_fans_advice_500_records_of_1500ms_against_300s(report):
    fans = report["fans"]
    assert fans["processing_ms"]["p99"] == 1500
    mpr = next(a for a in fans["advice"] if a["setting"] == "max.poll.records")
    assert mpr["current"] == 500 and mpr["advised"] == 100 and mpr["ok"] is False
    for text in ("1,500 ms", "500", "750,000 ms (750 s)", "300,000", "far above",
                 "floor(300,000 / 2 / 1,500) = 100"):
        assert text in mpr["reason"], (text, mpr["reason"])
    hb = next(a for a in fans["advice"] if a["setting"] == "heartbeat.interval.ms")
    assert hb["ok"] is False and hb["advised"] == 3333 and "10,000 / 3" in hb["reason"]
    assert fans["rebalance_count"] == 0 and fans["source"] == "none"


def test_advice_arithmetic_directly():
    from delivery_audit.config import AuditConfig

    cfg = AuditConfig.from_dict({"groups": {"g": {"max.poll.records": 500,
                                                  "max.poll.interval.ms": 300000}}})
    out = advice(group_settings(cfg, "g"), 1500)
    assert out[0]["advised"] == 100
    assert advice(group_settings(cfg, "g"), 100)[0]["ok"] is True  # 50 s batch < 150 s
    slow = advice(group_settings(cfg, "g"), 200_000)
    assert slow[0]["setting"] == "max.poll.interval.ms" and slow[0]["advised"] == 400_000


def test_poll_interval_eviction_rebalance_and_linked_redelivery(report):
    poll = report["poll"]
    assert poll["source"] == "events"
    assert poll["rebalance_count"] == 1
    counted = [r for r in poll["timeline"] if r["kind"] == "rebalance"]
    r = counted[0]
    assert r["start"] == _at(15.2) and r["end"] == _at(18) and r["duration_ms"] == 2800
    assert r["members_out"] == ["p1"] and r["members_in"] == ["p2"]
    assert r["zombie_events"] == 1 and r["redeliveries"] == 1
    assert poll["redeliveries_linked"] == 1
    (ev,) = poll["evictions"]
    assert ev["member_id"] == "p1" and ev["diagnosis"] == "poll_interval_exceeded"
    assert "max.poll.interval.ms 10,000" in ev["evidence"]
    assert "10 back-to-back processing attempts" in ev["evidence"]


def test_session_timeout_diagnoses(report):
    sess = {e["member_id"]: e for e in report["sess"]["evictions"]}
    assert sess["s1"]["diagnosis"] == "session_timeout"
    assert "has failed" in sess["s1"]["evidence"]
    assert sess["s2"]["diagnosis"] == "session_timeout"
    assert "silent for 120,000 ms" in sess["s2"]["evidence"]
    assert "session.timeout.ms 45,000" in sess["s2"]["evidence"]


def test_inferred_from_ledger_member_change(report):
    inf = report["inf"]
    assert inf["source"].startswith("inferred")
    assert inf["rebalance_count"] == 1
    (r,) = inf["timeline"]
    assert r["inferred"] and r["members_out"] == ["i1"] and r["members_in"] == ["i2"]
    assert r["partitions"] == ["inf-0"]


def test_rebalance_report_costs_two_spark_jobs(spark, inputs, report):
    i = inputs
    again, jobs = spark_jobs(spark, lambda: rebalance_report(
        i["ledger"], i["events"], i["groups"], i["config"], i["anomalies"]))
    assert jobs == 2
    assert again == report


def test_redeliveries_linked_are_the_anomaly_tables_rows(spark, inputs):
    i = inputs
    without = i["anomalies"].filter(i["anomalies"]["anomaly"] != "redelivery")
    poll = rebalance_report(i["ledger"], i["events"], i["groups"], i["config"],
                            without)["poll"]
    assert poll["redeliveries_linked"] == 0 and poll["redeliveries_unlinked"] == 0
    assert [r["redeliveries"] for r in poll["timeline"]] == [0] * len(poll["timeline"])


def test_round_one_shares_one_collect_with_the_insights(spark, inputs, report):
    """How the audit collects: rebalance round 1 and the insights in one Spark job, then
    round 2; the same report and insights as the functions that collect on their own."""
    i = inputs
    tables = {**rebalance_tables(i["ledger"], i["events"], i["groups"]),
              **insight_tables(i["anomalies"], i["frames"], WINDOW)}
    results, jobs = spark_jobs(spark, lambda: collect_all(tables))
    assert jobs == 1
    assert rebalance_report(i["ledger"], i["events"], i["groups"], i["config"],
                            i["anomalies"], round1=results) == report
    assert build_insights(results, WINDOW) == compute_insights(i["anomalies"], i["frames"],
                                                               WINDOW)


def test_leave_evidence_reads_only_the_leavers_lookback(spark, monkeypatch):
    """A leave's evidence is the leaver's attempts in its lookback, whether the ledger is
    narrowed by a filter (few leaves) or joined with the leaves by time bucket (many)."""
    from datetime import UTC, datetime, timedelta

    from delivery_audit.rebalance import diagnosis

    t0 = datetime(2026, 11, 19, 10, 0, tzinfo=UTC)
    rows = [("g", m, t0 + timedelta(seconds=s), t0 + timedelta(seconds=s + 1))
            for m in ("m1", "m2") for s in range(0, 600, 60)]
    rows.append(("other", "m1", t0, t0))  # another group's member of the same name
    ledger = spark.createDataFrame(
        rows, "group_id string, member_id string, started_ts timestamp, finished_ts timestamp")
    leave_ms = int((t0 + timedelta(seconds=300)).timestamp() * 1000)
    settings = {"g": {"max.poll.interval.ms": 60_000, "session.timeout.ms": 60_000,
                      "max.poll.records": 10}}
    got = {}
    leaves = [("g", "m1", leave_ms), ("g", "m2", leave_ms + 200_000),
              ("g", "m1", leave_ms + 290_000)]
    for exact in (256, 0):
        monkeypatch.setattr(diagnosis, "_EXACT_LEAVES", exact)
        got[exact] = sorted((r.asDict() for r in diagnosis.leave_evidence(
            ledger, leaves, settings).collect()), key=lambda r: (r["l_t"], r["l_member"]))
    # lookback 2 × 60 s + 60 s = 180 s: m1's starts at 120, 180, 240, 300 s; m2's at 360,
    # 420, 480 s; m1's at 420, 480, 540 s (the buckets are 180 s wide: 410 … 590 spans two)
    assert [(r["l_member"], r["attempts"], r["max_gap"]) for r in got[256]] == [
        ("m1", 4, 60_000), ("m2", 3, 60_000), ("m1", 3, 60_000)]
    assert got[0] == got[256]


def test_a_batch_slides_over_a_run_longer_than_max_poll_records(spark):
    """``batch_span``: the longest span of up to max.poll.records back-to-back attempts, a
    window that slides along a busy run longer than that (the attempt mpr − 1 back, or
    the run's first)."""
    from datetime import UTC, datetime, timedelta

    from delivery_audit.rebalance import diagnosis

    t0 = datetime(2026, 11, 19, 10, 0, tzinfo=UTC)
    # one busy run (no pause over 1 s): starts 0, 1, 2, 3.5, 4 s, each 0.9 s long
    rows = [("g", "m1", t0 + timedelta(seconds=s), t0 + timedelta(seconds=s + 0.9))
            for s in (0, 1, 2, 3.5, 4)]
    ledger = spark.createDataFrame(
        rows, "group_id string, member_id string, started_ts timestamp, finished_ts timestamp")
    leave_ms = int((t0 + timedelta(seconds=10)).timestamp() * 1000)
    got = {}
    for mpr in (2, 10):
        settings = {"g": {"max.poll.interval.ms": 60_000, "session.timeout.ms": 60_000,
                          "max.poll.records": mpr}}
        [r] = diagnosis.leave_evidence(ledger, [("g", "m1", leave_ms)], settings).collect()
        got[mpr] = (r["batch_span"], r["batch_n"], r["attempts"])
    # mpr 2: the pairs span 1.9, 1.9, 2.4 (starts 2 → end 4.4), 1.4 s: the widest, 2 attempts
    assert got[2] == (2_400, 2, 5)
    # mpr 10: the whole run, 0 → 4.9 s
    assert got[10] == (4_900, 5, 5)
