"""The HTML report's aggregates, computed with Spark on small crafted frames."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from job_count import spark_jobs

from delivery_audit.core.window import AuditWindow
from delivery_audit.report.html import render_html
from delivery_audit.report.insights import compute_insights
from delivery_audit.schemas import ANOMALY_SCHEMA, canonical_schema
from delivery_audit.spark import local_frame

WINDOW = AuditWindow.of("2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", 60)
T0 = datetime(2025, 1, 1, 0, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def frame(spark, schema, rows: list[dict]):
    return local_frame(spark, [tuple(r.get(f.name) for f in schema.fields) for r in rows], schema)


def anomaly(name, severity, **kw):
    return {"anomaly": name, "severity": severity, "units": kw.pop("units", 1), **kw}




@pytest.fixture(scope="module")
def inputs(spark):
    """The anomaly table and the frames: plain in-memory frames."""
    anomalies = frame(spark, ANOMALY_SCHEMA, [
        anomaly("dup_write", "high", topic="orders", key="k1", seq=1, partition=0, offset=5,
                ts=at(30)),
        anomaly("dup_write", "high", topic="orders", key="k1", seq=2, partition=0, offset=6,
                ts=at(35)),
        anomaly("lost_acked", "critical", topic="orders", key="k1", seq=3, partition=1,
                offset=9, ts=at(95)),
        anomaly("skipped", "critical", topic="orders", key="k1", seq=4, partition=1,
                offset=10, group_id="g1", ts=at(96)),
        anomaly("seq_gap", "medium", topic="orders", key="k2", seq=10, seq_to=14, units=5,
                ts=at(200)),
        anomaly("redelivery", "high", topic="orders", key=None, partition=2, offset=1,
                group_id="g1", member_id="m2", ts=at(61)),
        anomaly("pending", "info", topic="orders", key="k3", partition=2, offset=2,
                group_id="g1"),  # no ts
    ])
    sends = frame(spark, canonical_schema("sends"), [
        {"send_ts": at(i), "topic": "orders", "key": "k", "seq": i, "status": "acked",
         "partition": 0, "offset": i, "ack_ts": at(i) + timedelta(milliseconds=10 * (i + 1))}
        for i in range(10)
    ] + [{"send_ts": at(1), "topic": "orders", "seq": 99, "status": "failed"}])
    broker = frame(spark, canonical_schema("broker"), [
        {"topic": "orders", "partition": 0, "offset": i, "seq": i, "timestamp": at(i)}
        for i in range(10)])
    ledger = frame(spark, canonical_schema("ledger"), [
        {"group_id": "g1", "member_id": "m1", "topic": "orders", "partition": 0, "offset": i,
         "started_ts": at(i), "finished_ts": at(i) + timedelta(seconds=2), "outcome": "success"}
        for i in range(10)
    ] + [  # a later redelivery of offset 0 must not count: the first success is used
        {"group_id": "g1", "member_id": "m2", "topic": "orders", "partition": 0, "offset": 0,
         "started_ts": at(50), "finished_ts": at(51), "outcome": "success"},
        {"group_id": "g2", "member_id": "x", "topic": "orders", "partition": 0, "offset": 3,
         "started_ts": at(3), "finished_ts": at(3) + timedelta(seconds=1),
         "outcome": "failure"},
    ])
    events = frame(spark, canonical_schema("events"), [
        {"group_id": "g1", "member_id": "m1", "ts": at(60.2), "event": "revoked"},
        {"group_id": "g1", "member_id": "m2", "ts": at(60.5), "event": "assigned"},
        {"group_id": "g1", "member_id": "m2", "ts": at(60.7), "event": "commit"},  # not a marker
        {"group_id": "g2", "member_id": "<x>", "ts": at(120), "event": "lost"},
    ])
    frames = {"sends": sends, "broker": broker, "ledger": ledger, "events": events}
    return anomalies, frames


@pytest.fixture(scope="module")
def insights(inputs):
    anomalies, frames = inputs
    return compute_insights(anomalies, frames, WINDOW, top_n=2)


def test_one_spark_job(spark, inputs, insights):
    anomalies, frames = inputs
    again, jobs = spark_jobs(spark, lambda: compute_insights(anomalies, frames, WINDOW,
                                                             top_n=2))
    assert jobs == 1
    assert again == insights


def test_json_safe(insights):
    json.dumps(insights)


def test_timeline(insights):
    tl = insights["timeline"]
    series = {(s["hour"], s["anomaly"]): s["units"] for s in tl["series"]}
    assert series[("2025-01-01T00:00:00Z", "dup_write")] == 2
    assert series[("2025-01-01T01:00:00Z", "lost_acked")] == 1
    assert series[("2025-01-01T03:00:00Z", "seq_gap")] == 5
    assert tl["undated_units"] == 1


def test_rebalance_markers(insights):
    markers = {(m["group_id"], m["minute"]): m for m in insights["rebalance_markers"]}
    g1 = markers[("g1", "2025-01-01T01:00:00Z")]
    assert g1["events"] == {"assigned": 1, "revoked": 1}
    assert g1["members"] == ["m1", "m2"]
    assert ("g2", "2025-01-01T02:00:00Z") in markers
    assert len(markers) == 2


def test_heatmap(insights):
    cells = {(c["topic"], c["partition"], c["anomaly"]): c["units"]
             for c in insights["heatmap"]["cells"]}
    assert cells[("orders", 0, "dup_write")] == 2
    assert cells[("orders", 1, "lost_acked")] == 1
    assert ("orders", 2, "pending") in cells
    assert insights["heatmap"]["partitions_total"] == 3


def test_latency(insights):
    lat = insights["latency"]
    produce = lat["produce_ms"]
    assert produce["count"] == 10
    assert produce["max"] == pytest.approx(100.0)
    assert produce["p50"] == pytest.approx(50.0)
    e2e = lat["end_to_end_ms"]
    assert e2e["count"] == 10 and e2e["max"] == pytest.approx(2000.0)  # first success only
    assert set(lat["end_to_end_ms_by_group"]) == {"g1"}


def test_top_keys(insights):
    top = insights["top_keys"]
    assert [(t["key"], t["units"]) for t in top] == [("k2", 5), ("k1", 4)]
    k1 = top[1]
    assert k1["anomalies"] == {"dup_write": 2, "lost_acked": 1, "skipped": 1}
    assert len(k1["examples"]) == 3
    assert k1["examples"][0]["severity"] == "critical"  # worst first
    assert k1["examples"][0]["ts"] == "2025-01-01T01:35:00Z"


def test_renders(insights):
    from report_fixtures import make_report

    html = render_html(make_report(counts={"dup_write": 2}), insights)
    assert "&lt;x&gt;" in html and "<x>" not in html
