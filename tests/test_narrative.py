"""The incident narrative (report/narrative.py) on small hand-made reports and anomaly rows:
each cause → its finding with its numbers, the order (severity, then time), the fallback
without an anomaly table, and escaping on the page. The generated mixed day's narrative is
checked against the generator's truth in test_scenarios.py (its audit, no other)."""

from __future__ import annotations

from html.parser import HTMLParser

import pyarrow as pa
import pyarrow.parquet as pq
from markupsafe import escape
from report_fixtures import EVIL, make_report

from delivery_audit.report.digest import Digest
from delivery_audit.report.html import render_html
from delivery_audit.report.narrative import build_narrative

DAY = "2025-01-01T"


def rows(anomaly: str, k: int, *, t0: str = "10:00:00", topic: str = "orders",
         group: str | None = None, cause: str | None = None, partition: int = 0,
         offset: int = 100, member: str | None = None, related: str | None = None,
         step_s: int = 1) -> list[dict]:
    """k anomaly rows one second apart from t0, at consecutive offsets."""
    h, m, s = (int(x) for x in t0.split(":"))
    out = []
    for i in range(k):
        sec = h * 3600 + m * 60 + s + i * step_s
        out.append({"anomaly": anomaly, "cause": cause, "group_id": group, "topic": topic,
                    "partition": partition, "offset": offset + i, "member_id": member,
                    "related_member_id": related, "units": 1,
                    "ts": f"{DAY}{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z"})
    return out


def report_for(anomaly_rows: list[dict], **extra) -> dict:
    """A report whose counts are those of the rows (per anomaly, topic, group, cause)."""
    counts: dict[str, int] = {}
    by_topic: dict[str, dict[str, int]] = {}
    for r in anomaly_rows:
        counts[r["anomaly"]] = counts.get(r["anomaly"], 0) + r["units"]
        t = by_topic.setdefault(r["anomaly"], {})
        t[r["topic"]] = t.get(r["topic"], 0) + r["units"]
    report = make_report(counts=counts, by_topic=by_topic)
    report.update(extra)
    return report


def narrate(anomaly_rows: list[dict], **extra) -> list[dict]:
    return build_narrative(report_for(anomaly_rows, **extra), Digest.from_rows(anomaly_rows))


def one(findings: list[dict], cause: str, group: str | None = None) -> dict:
    got = [f for f in findings if f["cause"] == cause and (group is None or f["group"] == group)]
    assert len(got) == 1, [(f["cause"], f["group"]) for f in findings]
    return got[0]


# --------------------------------------------------------------------------- rebalances


def fans_rebalances(evictions=1, redeliveries=(101, 0), second_gap_s=150) -> dict:
    """fans-push-service: consumer-2 evicted at 16:21:04 (poll timeout), the rebalance
    hands its partitions to consumer-1; consumer-2 rejoins second_gap_s after."""
    timeline = [
        {"start": f"{DAY}00:00:00.000Z", "end": f"{DAY}00:00:30.000Z", "duration_ms": 30_000,
         "kind": "initial", "trigger": "joined_group by consumer-1", "partitions": [],
         "redeliveries": 0},
        {"start": f"{DAY}16:21:04.000Z", "end": f"{DAY}16:21:07.000Z", "duration_ms": 3_000,
         "kind": "rebalance", "trigger": "left_group by consumer-2 (poll timeout)",
         "members_out": ["consumer-2"],
         "partitions": [f"fans-push-{p}" for p in range(10)], "redeliveries": redeliveries[0]},
    ]
    end = 16 * 3600 + 21 * 60 + 7 + second_gap_s
    timeline.append(
        {"start": f"{DAY}{end // 3600:02d}:{end // 60 % 60:02d}:{end % 60:02d}.000Z",
         "end": f"{DAY}{end // 3600:02d}:{end // 60 % 60:02d}:{end % 60 + 0:02d}.500Z",
         "duration_ms": 500, "kind": "rebalance", "trigger": "joined_group by consumer-2",
         "members_in": ["consumer-2"], "partitions": ["fans-push-0"],
         "redeliveries": redeliveries[1]})
    evs = [{"member_id": "consumer-2", "left_at": f"{DAY}16:21:04.000Z", "how": "left_group",
            "diagnosis": "poll_interval_exceeded", "evidence": "its leave says: poll timeout"}]
    if evictions == 2:
        evs.append({"member_id": "consumer-1", "left_at": f"{DAY}16:21:05.000Z",
                    "how": "lost", "diagnosis": "session_timeout",
                    "evidence": "the coordinator says: heartbeat expired"})
    return {"fans-push-service": {
        "rebalance_count": 2, "timeline": timeline, "evictions": evs,
        "redeliveries_linked": sum(redeliveries),
        "processing_ms": {"p50": 40, "p99": 1_500, "max": 1_540},
        "advice": [{"setting": "max.poll.records", "current": 500, "advised": 100,
                    "ok": False, "reason": "…"},
                   {"setting": "heartbeat.interval.ms", "current": 3000, "advised": 3000,
                    "ok": True, "reason": "…"}],
        "settings": {"max.poll.records": {"value": 500, "from": "config"},
                     "max.poll.interval.ms": {"value": 300_000, "from": "config"},
                     "session.timeout.ms": {"value": 10_000, "from": "config"},
                     "heartbeat.interval.ms": {"value": 3_000, "from": "config"}}}}


def storm_rows(overlaps=198, again=101) -> list[dict]:
    return (rows("concurrent_processing", overlaps, t0="16:21:06", topic="fans-push",
                 group="fans-push-service", member="consumer-1", related="consumer-2",
                 partition=9, step_s=0)
            + rows("redelivery", again, t0="16:21:08", topic="fans-push",
                   group="fans-push-service", cause="rebalance", member="consumer-1",
                   related="consumer-2", partition=9, step_s=0))


def test_an_eviction_is_told_with_its_arithmetic_its_consequences_and_the_fix():
    findings = narrate(storm_rows(), rebalances=fans_rebalances())
    f = one(findings, "eviction")
    assert f["group"] == "fans-push-service" and f["topic"] == "fans-push"
    assert f["anomalies"] == {"redelivery": 101, "concurrent_processing": 198}
    assert f["at"] == f"{DAY}16:21:04.000Z" and f["severity"] == "warning"
    assert f["members"] == ["consumer-1", "consumer-2"]
    text = f["text"]
    assert text.startswith("16:21:04 consumer-2 (fans-push-service) went longer than "
                           "max.poll.interval.ms 300 s without a poll")
    assert "500 records × p99 1,500 ms/record = 750 s > 300 s" in text
    assert "moved 10 partitions (fans-push-0, fans-push-1, fans-push-2 and 7 more) to " \
           "consumer-1" in text
    assert "101 records were processed twice by consumer-1 after consumer-2" in text
    assert "198 processing attempts overlapped while consumer-2 kept working" in text
    assert "rebalanced 2 times" in text  # the rejoin 150 s later belongs to the incident
    assert f["fix"].startswith("max.poll.records ≤ 100")
    assert f["title"] == ("consumer-2 (fans-push-service) evicted: max.poll.interval.ms "
                          "exceeded — 101 records processed twice")
    assert {"#groups", "#timeline"} <= {e["href"] for e in f["evidence"]}
    # every overlapping attempt and redelivery is told once, by the incident
    assert not [g for g in findings if g["cause"] in ("zombie", "rebalance")]


def test_two_evictions_in_one_chain_are_a_storm_and_a_late_rebalance_is_not_in_it():
    findings = narrate(storm_rows(), rebalances=fans_rebalances(evictions=2,
                                                               second_gap_s=3600))
    storm = one(findings, "rebalance_storm")
    assert storm["title"].startswith("Rebalance storm in fans-push-service: 1 rebalance, "
                                     "2 evictions")
    assert "consumer-1 (fans-push-service) sent no heartbeat for longer than " \
           "session.timeout.ms 10 s" in storm["text"]
    assert "session.timeout.ms" in storm["fix"] and "max.poll.records ≤ 100" in storm["fix"]
    # the rejoin an hour later is no incident: nothing happened in it
    assert len([f for f in findings if f["group"] == "fans-push-service"]) == 1


def test_overlaps_and_redeliveries_outside_every_incident_are_a_zombie_and_a_rebalance():
    late = (rows("concurrent_processing", 4, t0="20:00:00", topic="fans-push",
                 group="fans-push-service", member="consumer-1", related="consumer-3")
            + rows("redelivery", 3, t0="21:00:00", topic="fans-push", group="fans-push-service",
                   cause="rebalance", member="consumer-3", related="consumer-1"))
    findings = narrate(storm_rows() + late, rebalances=fans_rebalances())
    assert one(findings, "eviction")["anomalies"] == {"redelivery": 101,
                                                       "concurrent_processing": 198}
    zombie = one(findings, "zombie")
    assert zombie["anomalies"] == {"concurrent_processing": 4}
    assert zombie["members"] == ["consumer-1", "consumer-3"]
    assert zombie["at"] == f"{DAY}20:00:00.000Z"
    assert one(findings, "rebalance")["anomalies"] == {"redelivery": 3}


# --------------------------------------------------------------------------- write side


def test_acks_loss_tells_the_loss_with_what_failed_around_it_and_send_failures_apart():
    data = (rows("lost_acked", 4, t0="01:36:40", topic="payments", partition=3, offset=10)
            + rows("lost_unacked", 2, t0="01:36:41", topic="payments")
            + rows("seq_gap", 3, topic="payments") + rows("written_despite_failure", 1,
                                                          topic="payments")
            + rows("lost_unacked", 5, t0="09:00:00", topic="orders"))
    findings = narrate(data)
    loss = one(findings, "acks_loss")
    assert loss["anomalies"] == {"lost_acked": 4, "lost_unacked": 2, "seq_gap": 3,
                                 "written_despite_failure": 1}
    assert loss["topic"] == "payments" and loss["severity"] == "critical"
    assert loss["text"].startswith("4 acknowledged messages in payments are missing from the "
                                   "log from 01:36:40 to 01:36:43")
    assert "payments-3 offsets 10–13" in loss["text"]
    assert "2 sends failed for good" in loss["text"] and "acks=all" in loss["fix"]
    sends = one(findings, "send_failure")
    assert sends["anomalies"] == {"lost_unacked": 5} and sends["topic"] == "orders"


def test_each_dup_write_cause_is_its_own_finding_with_its_topics():
    data = (rows("dup_write", 15, topic="orders", cause="producer_retry")
            + rows("dup_write", 23, topic="payments", cause="producer_retry", t0="01:10:39")
            + rows("dup_write", 6, topic="orders", cause="idempotence_breach")
            + rows("dup_write", 2, topic="orders", cause="unknown"))
    findings = narrate(data)
    retry = one(findings, "producer_retry")
    assert retry["anomalies"] == {"dup_write": 38} and retry["topic"] is None
    assert retry["title"] == ("38 extra broker copies from producer retries without "
                              "idempotence in payments 23, orders 15")
    assert retry["at"] == f"{DAY}01:10:39.000Z"
    assert "enable.idempotence=true" in retry["fix"]
    assert {(b["topic"], b["anomalies"]["dup_write"]) for b in retry["breakdown"]} == {
        ("orders", 15), ("payments", 23)}
    assert one(findings, "idempotence_breach")["anomalies"] == {"dup_write": 6}
    assert one(findings, "dup_write_unknown")["anomalies"] == {"dup_write": 2}
    # dup_effect, the consequence, is told there rather than alone
    report = report_for(data)
    report["anomalies"]["dup_effect"]["count"] = 46
    assert not [f for f in build_narrative(report, Digest.from_rows(data))
                if f["cause"] == "dup_effect"]


def test_write_reorder_and_key_splits():
    findings = narrate(rows("write_reorder", 3, topic="fans-push")
                       + rows("key_partition_split", 2, topic="orders"))
    assert one(findings, "write_reorder")["anomalies"] == {"write_reorder": 3}
    assert "max.in.flight" in one(findings, "write_reorder")["text"]
    assert one(findings, "key_partition_split")["text"].startswith(
        "2 keys in orders had records in more than one partition")


# --------------------------------------------------------------------------- consumer side


def test_skipped_records_split_into_commit_before_process_and_poison_records():
    never = rows("skipped", 6, topic="payments", group="billing", partition=1, offset=4283129)
    poison = rows("skipped", 2, t0="06:03:04", topic="payments", group="billing",
                  partition=2, offset=902765)
    retries = rows("retry_after_failure", 2, t0="06:03:05", topic="payments", group="billing",
                   partition=2, offset=902765)
    restart = {"billing": {"timeline": [
        {"start": f"{DAY}10:00:08.000Z", "end": f"{DAY}10:00:08.500Z", "kind": "rebalance",
         "trigger": "joined_group by billing-1 (static member restarted)", "redeliveries": 0}],
        "evictions": [], "settings": {}}}
    findings = narrate(never + poison + retries, rebalances=restart)
    cbp = one(findings, "commit_before_process", "billing")
    assert cbp["anomalies"] == {"skipped": 6} and cbp["severity"] == "critical"
    assert "payments-1 offsets 4283129–4283134" in cbp["text"]
    assert "10:00:08 joined_group by billing-1 (static member restarted)" in cbp["text"]
    assert "--reset-offsets" in cbp["fix"]
    bad = one(findings, "poison_record", "billing")
    assert bad["anomalies"] == {"skipped": 2} and "payments-2 offsets 902765–902766" in \
        bad["text"]
    assert one(findings, "retries")["anomalies"] == {"retry_after_failure": 2}


def test_retention_lag_redelivery_by_the_same_member_and_process_reorder():
    data = (rows("expired_unconsumed", 41, t0="00:01:09", topic="payments", group="billing")
            + rows("pending", 34, t0="23:43:32", topic="orders", group="shipping", cause="lag",
                   partition=4)
            + rows("pending", 2, topic="orders", group="shipping",
                   cause="acked beyond the dump")
            + rows("redelivery", 5, topic="orders", group="billing", cause="other",
                   member="billing-1", related="billing-1")
            + rows("process_reorder", 7, topic="payments", group="billing"))
    findings = narrate(data)
    ret = one(findings, "retention", "billing")
    assert ret["anomalies"] == {"expired_unconsumed": 41}
    assert ret["text"].startswith("41 messages in payments, sent from 00:01:09 to 00:01:49, "
                                  "were deleted by retention before billing processed them")
    lag = one(findings, "lag", "shipping")
    assert lag["anomalies"] == {"pending": 34} and lag["severity"] == "info"
    assert lag["title"].endswith("— one stalled partition") and "orders-4" in lag["fix"]
    assert "stopped reading at 2025-01-02 01:00:00" in lag["text"]
    assert one(findings, "pending_beyond_dump", "shipping")["anomalies"] == {"pending": 2}
    assert one(findings, "same_member_redelivery", "billing")["members"] == ["billing-1"]
    assert one(findings, "process_reorder", "billing")["anomalies"] == {"process_reorder": 7}


def test_an_anomaly_no_cause_tells_gets_a_plain_finding():
    report = make_report()  # an anomaly outside the catalogue (a newer report's)
    report["anomalies"]["future_anomaly"] = {"count": 3, "severity": "critical",
                                             "unit": "processings", "by_topic": {"t": 3}}
    data = rows("future_anomaly", 3, topic="t", group="g1")
    f = one(build_narrative(report, Digest.from_rows(data)), "future_anomaly")
    assert f["anomalies"] == {"future_anomaly": 3} and f["severity"] == "critical"
    assert f["text"].startswith("3 processings of future_anomaly in t")


# --------------------------------------------------------------------------- order, fallback


def test_findings_are_ordered_by_severity_then_time_and_numbered():
    data = (rows("retry_after_failure", 1, t0="00:30:00", group="g1")  # info
            + rows("write_reorder", 1, t0="01:00:00")  # medium → warning
            + rows("dup_write", 1, t0="05:00:00", cause="producer_retry")  # high → warning
            + rows("dup_write", 1, t0="03:00:00", cause="unknown")  # high, earlier
            + rows("lost_acked", 1, t0="23:00:00")  # critical, latest
            + rows("expired_unconsumed", 1, t0="22:00:00", group="g1"))  # critical
    findings = narrate(data)
    assert [f["cause"] for f in findings] == [
        "retention", "acks_loss", "dup_write_unknown", "producer_retry", "write_reorder",
        "retries"]
    assert [f["severity"] for f in findings] == ["critical", "critical", "warning", "warning",
                                                 "warning", "info"]
    assert [f["id"] for f in findings] == [f"f{i}" for i in range(1, 7)]


def test_without_a_readable_table_the_counts_still_tell(tmp_path):
    report = make_report(counts={"lost_acked": 2, "dup_write": 5})
    for missing in (None, tmp_path / "absent"):
        findings = build_narrative(report, missing)
        assert one(findings, "acks_loss")["anomalies"] == {"lost_acked": 2}
        assert one(findings, "producer_retry")["anomalies"] == {"dup_write": 5}
        assert one(findings, "acks_loss")["at"] is None
    assert build_narrative(make_report(), None) == []


def test_the_table_is_read_back_from_parquet_as_spark_writes_it(tmp_path):
    """Spark's timestamps come back from Parquet without a zone (UTC instants)."""
    table = pa.table({
        "anomaly": ["lost_acked"], "severity": ["critical"], "cause": [None],
        "units": pa.array([1], pa.int64()), "group_id": [None], "topic": ["payments"],
        "partition": pa.array([3], pa.int32()), "offset": pa.array([7], pa.int64()),
        "ts": pa.array([1_735_725_600_000_000_000], pa.timestamp("ns"))})  # 2025-01-01T10:00
    (tmp_path / "anomalies").mkdir()
    pq.write_table(table, tmp_path / "anomalies" / "part-0.parquet")
    f = one(build_narrative(make_report(counts={"lost_acked": 1}), tmp_path / "anomalies"),
            "acks_loss")
    assert f["at"] == "2025-01-01T10:00:00.000Z" and "payments-3 offset 7" in f["text"]


# --------------------------------------------------------------------------- on the page


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.links += [v for a, v in attrs if a == "href"]


def test_the_page_opens_with_the_narrative_escaped_and_links_only_inside_the_report():
    data = rows("lost_acked", 1, topic=EVIL) + rows("dup_write", 2, topic=EVIL,
                                                      cause="producer_retry")
    report = report_for(data)
    report["narrative"] = build_narrative(report, Digest.from_rows(data))
    report["narrative"][0]["evidence"] += [{"label": EVIL, "href": "javascript:alert(1)"},
                                           {"label": "away", "href": "https://evil.example/"}]
    html = render_html(report, {})
    page = Page()
    page.feed(html)
    assert "<script" not in html and "script" not in page.tags
    assert html.index('id="narrative"') < html.index('id="anomalies"')
    assert html.count('class="finding ') == 2 and 'id="finding-f1"' in html
    assert str(escape(f"1 acknowledged message lost by the broker in {EVIL}")) in html
    assert not [h for h in page.links if ":" in h]  # no javascript:, no other site
    assert "anomalies/" in page.links and "#topics" in page.links
    assert str(escape(EVIL)) in html[html.index('id="finding-f1"'):]  # the label, as text


def test_many_findings_fold_after_the_sixth():
    data = [r for i in range(8) for r in rows("skipped", 1, group=f"g{i}", offset=i)]
    report = report_for(data)
    report["narrative"] = build_narrative(report, Digest.from_rows(data))
    assert len(report["narrative"]) == 8
    html = render_html(report, {})
    section = html[html.index('id="narrative"'):html.index("</section>")]
    assert "2 more findings</summary>" in section
    assert section.index('id="finding-f6"') < section.index("<details>") < \
        section.index('id="finding-f7"')
