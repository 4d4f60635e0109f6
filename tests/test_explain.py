"""`delivery-audit explain`: the published evidence table and the stories told from it.

The end-to-end cases read the folder tests/small_audit.py publishes (its session fixture:
no audit of their own): c1 processes offset 1 (key a, seq 2), c1 is revoked and c2
assigned at 10:30, c2 processes offset 1 again (a redelivery, cause rebalance). The unit
cases build tiny pyarrow tables of the published schemas (no Spark).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3_server import s3_endpoint  # noqa: F401 - the fixture
from typer.testing import CliRunner

from delivery_audit import anomaly_table
from delivery_audit.cli import app
from delivery_audit.detection import evidence_table
from delivery_audit.explain.answering import explain
from delivery_audit.explain.composing import PER_ANOMALY, _relation, compose
from delivery_audit.explain.reading import Published
from delivery_audit.explain.selecting import Query, select


def run(*args: str):
    result = CliRunner().invoke(app, ["explain", *args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result


def redelivered(folder) -> dict:
    rows = pq.read_table(folder / "anomalies").to_pylist()
    found = [r for r in rows if r["anomaly"] == "redelivery"]
    assert len(found) == 1, found
    return found[0]


# -- on a real audit's published folder ----------------------------------------------

def test_evidence_holds_the_rows_of_the_anomalous_messages_only(small_audit):
    folder = small_audit["dir"]
    evidence = pq.read_table(folder / "evidence").to_pylist()
    anomalies = pq.read_table(folder / "anomalies").to_pylist()
    named = {(r["topic"], r["key"], r["seq"]) for r in anomalies
             if r["anomaly"] != "seq_gap"}
    kept = {(r["topic"], r["key"], r["seq"]) for r in evidence if r["source"] != "events"}
    assert kept == named
    assert ("orders", "a", 1) not in kept  # delivered once: no anomaly, no evidence
    processed = sorted((r["member_id"], r["status"], r["generation"]) for r in evidence
                       if r["source"] == "ledger" and r["key"] == "a" and r["seq"] == 2)
    assert processed == [("c1", "success", 1), ("c2", "success", 2)]
    events = sorted((r["status"], r["member_id"]) for r in evidence if r["source"] == "events")
    assert events == [("assigned", "c2"), ("revoked", "c1")]
    manifest = json.loads((folder / "_manifest.json").read_text())
    assert "evidence/evidence.parquet" in {f["path"] for f in manifest["files"]}


def test_explain_a_redelivered_key_shows_both_processings_and_the_rebalance(small_audit):
    folder = small_audit["dir"]
    r = redelivered(folder)
    text = " ".join(run("--report", str(folder), "--key", r["key"], "--topic",
                        r["topic"]).output.split())
    assert "billing processing #1: success" in text and "billing processing #2: success" in text
    assert "c1" in text and "c2" in text
    assert "billing: rebalance" in text
    assert "lies between processing #1 by c1 and #2 by c2" in text
    assert "redelivery" in text and "rebalance" in text

    data = json.loads(run("--report", str(folder), "--key", r["key"], "--topic", r["topic"],
                          "--seq", str(r["seq"]), "--json").output)
    assert data["found"] and data["matched"] == 1
    story = data["stories"][0]
    assert (story["key"], story["seq"]) == (r["key"], r["seq"])
    assert [(p["n"], p["member_id"], p["ts"]) for p in story["processings"]] == [
        (1, "c1", "2026-11-19T10:01:01.000Z"), (2, "c2", "2026-11-19T10:31:00.000Z")]
    between = [b for b in story["rebalances"] if b["relation"]]
    assert len(between) == 1
    assert "10:01:01" < between[0]["start"][11:19] <= "10:31:00"
    assert between[0]["relation"] == "between processing #1 by c1 and #2 by c2"
    assert {a["anomaly"] for a in story["anomalies"]} >= {"redelivery", "dup_effect"}
    kinds = [e["kind"] for e in story["timeline"]]
    assert kinds.index("rebalance") > kinds.index("processing")  # in time order
    assert [e["what"] for e in story["timeline"] if e["kind"] == "event"] == [
        "billing: revoked", "billing: assigned"]


def test_explain_a_record_by_partition_and_offset(small_audit):
    folder = small_audit["dir"]
    r = redelivered(folder)
    data = json.loads(run("--report", str(folder), "--partition", f"{r['topic']}:{r['partition']}",
                          "--offset", str(r["offset"]), "--json").output)
    assert [(s["key"], s["seq"]) for s in data["stories"]] == [(r["key"], r["seq"])]


def test_a_key_in_no_anomaly_is_said_to_be_so(small_audit):
    folder = small_audit["dir"]
    text = run("--report", str(folder), "--key", "nobody", "--topic", "orders").output
    assert "key 'nobody' of topic orders was not involved in any anomaly" in " ".join(
        text.split())
    data = json.loads(run("--report", str(folder), "--key", "a", "--topic", "orders",
                          "--seq", "1", "--json").output)
    assert not data["found"] and data["stories"] == []
    assert "not involved in any anomaly" in data["message"]
    data = json.loads(run("--report", str(folder), "--key", "a", "--topic", "nope",
                          "--json").output)
    assert data["message"].startswith("topic nope is not in this report")


def test_explain_asks_for_a_message_or_a_record(small_audit):
    result = CliRunner().invoke(app, ["explain", "--report", str(small_audit["dir"]),
                                      "--key", "a"])
    assert result.exit_code == 1 and "--key K --topic T" in result.output
    result = CliRunner().invoke(app, ["explain", "--report", "/nonexistent", "--key", "a",
                                      "--topic", "t"])
    assert result.exit_code == 1 and "not a report folder" in result.output


def test_explain_reads_a_report_published_to_s3(small_audit, s3_endpoint, tmp_path,  # noqa: F811
                                                monkeypatch):
    import boto3

    from delivery_audit.storage import publish

    staged = tmp_path / "staged"
    shutil.copytree(small_audit["dir"], staged, ignore=shutil.ignore_patterns("_manifest.json"))
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(
        Bucket="explain")
    rel = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"
    publish(staged, "s3://explain/reports", rel, endpoint_url=s3_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    r = redelivered(small_audit["dir"])
    data = json.loads(run("--report", f"s3://explain/reports/{rel}", "--key", r["key"],
                          "--topic", r["topic"], "--seq", str(r["seq"]), "--json").output)
    assert [p["member_id"] for p in data["stories"][0]["processings"]] == ["c1", "c2"]
    result = CliRunner().invoke(app, ["explain", "--report", "s3://explain/reports/none",
                                      "--key", "a", "--topic", "orders"])
    assert result.exit_code == 1 and "no published report" in result.output


# -- the evidence of a detection on tiny frames ---------------------------------------

@pytest.mark.audit  # a whole detection / ingest: not in make test-fast
def test_evidence_is_written_in_detections_one_job_and_capped(spark, tmp_path, monkeypatch):
    """Sources read from Parquet, as the audit stages them (a scan is what the optimizer's
    runtime filters would pick: a Spark job each); at most PER_ANOMALY rows of an anomaly
    bring their message in, the first by seq."""
    from frames import END, START, Log
    from job_count import spark_jobs

    from delivery_audit.config import AuditConfig
    from delivery_audit.core.window import AuditWindow
    from delivery_audit.detection import detect

    log = Log()
    log.message(1, key="ok")
    for seq in (1, 2, 3):  # never acked, never written: lost_unacked
        log.send(seq, key="lost", status="timeout")
    log.process(1, member="m2", at="10:05:00", done="10:05:01")  # ok/1 again: redelivery
    log.event("revoked", "10:04:00", member="m1").event("assigned", "10:04:30", member="m2")
    log.event("commit", "10:04:31", member="m2", offset=1)
    frames = {}
    for name, df in log.frames(spark).items():
        df.write.parquet(str(tmp_path / name))
        frames[name] = spark.read.parquet(str(tmp_path / name))
    monkeypatch.setattr(evidence_table, "PER_ANOMALY", 2)
    detection = detect(spark, frames, AuditWindow.of(START, END), AuditConfig())
    _, jobs = spark_jobs(spark, lambda: detection.write_anomalies(
        tmp_path / "anomalies", evidence=tmp_path / "evidence"))
    assert jobs == 1
    rows = pq.read_table(tmp_path / "evidence").to_pylist()
    assert sorted({(r["key"], r["seq"]) for r in rows if r["source"] != "events"}) == [
        ("lost", 1), ("lost", 2), ("ok", 1)]
    assert sorted((r["source"], r["member_id"] or "") for r in rows if r["key"] == "ok") == [
        ("broker", ""), ("ledger", "m1"), ("ledger", "m2"), ("sends", "")]
    assert sorted(r["status"] for r in rows if r["source"] == "events") == [
        "assigned", "revoked"]  # commits left out


# -- the selection and the story, on tiny tables --------------------------------------

def at(hhmmss: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-19T{hhmmss}+00:00").astimezone(UTC)


def evidence_row(source: str, **values) -> dict:
    return {f.name: values.get(f.name) for f in evidence_table.arrow_schema()} | {
        "source": source}


def anomaly_row(anomaly: str, **values) -> dict:
    return {f.name: values.get(f.name) for f in anomaly_table.SCHEMA} | {
        "anomaly": anomaly, "severity": values.get("severity", "high"), "units": 1}


REPORT = {
    "window": {"start": "2026-11-19T00:00:00Z", "end": "2026-11-20T00:00:00Z"},
    "judged_by_topic": {"t": 3},
    "rebalances": {"g": {
        "settings": {"max.poll.interval.ms": {"value": 60_000, "from": "config"}},
        "timeline": [
            {"start": "2026-11-19T10:00:30.000Z", "end": "2026-11-19T10:00:40.000Z",
             "duration_ms": 10_000, "generation": 2, "trigger": "left_group by m1",
             "members_in": [], "members_out": ["m1"], "partitions": ["t-0"]},
            {"start": "2026-11-19T10:00:31.000Z", "end": "2026-11-19T10:00:32.000Z",
             "duration_ms": 1000, "generation": 5, "trigger": "elsewhere",
             "members_in": [], "members_out": [], "partitions": ["t-7"]},
            {"start": "2026-11-19T13:00:00.000Z", "end": "2026-11-19T13:00:01.000Z",
             "duration_ms": 1000, "generation": 3, "trigger": "much later",
             "members_in": [], "members_out": [], "partitions": ["t-0"]}],
        "evictions": [{"member_id": "m1", "left_at": "2026-11-19T10:00:30.000Z",
                       "how": "left_group", "diagnosis": "poll_interval_exceeded",
                       "evidence": "its leave says: poll timeout"}]}},
}


@pytest.fixture()
def published() -> Published:
    ev = [
        evidence_row("sends", topic="t", key="k", seq=1, partition=0, offset=5, ts=at("10:00:00"),
                     status="acked", attempt=1, producer_id="p1"),
        evidence_row("broker", topic="t", key="k", seq=1, partition=0, offset=5,
                     ts=at("10:00:00")),
        evidence_row("ledger", topic="t", key="k", seq=1, partition=0, offset=5, group_id="g",
                     member_id="m1", ts=at("10:00:10"), end_ts=at("10:00:11"), status="success"),
        evidence_row("ledger", topic="t", key="k", seq=1, partition=0, offset=5, group_id="g",
                     member_id="m2", ts=at("10:00:50"), end_ts=at("10:00:51"), status="success"),
        evidence_row("sends", topic="t", key="k", seq=3, partition=0, offset=6, ts=at("11:00:00"),
                     status="acked"),
        evidence_row("events", topic="t", partition=0, group_id="g", member_id="m2",
                     ts=at("10:00:40"), status="assigned"),
        evidence_row("events", topic="t", partition=0, offset=6, group_id="g", member_id="m1",
                     ts=at("10:00:35"), status="commit_failed"),
        evidence_row("events", topic="t", partition=0, offset=9, group_id="g", member_id="m1",
                     ts=at("10:00:36"), status="commit_failed"),
        evidence_row("events", topic="t", partition=3, group_id="g", member_id="m2",
                     ts=at("10:00:40"), status="assigned"),
        evidence_row("events", group_id="g", member_id="m1", ts=at("10:00:30"),
                     status="left_group"),
        evidence_row("events", group_id="g", member_id="m1", ts=at("12:00:00"),
                     status="joined_group"),
    ]
    anomalies = [
        anomaly_row("redelivery", cause="rebalance", group_id="g", topic="t", key="k", seq=1,
                    partition=0, offset=5, member_id="m2", related_member_id="m1",
                    ts=at("10:00:50"), related_ts=at("10:00:10")),
        anomaly_row("seq_gap", severity="medium", topic="t", key="k", seq=2, seq_to=2,
                    detail="between seq 1 and 3"),
        anomaly_row("lost_acked", severity="critical", topic="t", key="k", seq=3, partition=0,
                    offset=6),
        anomaly_row("lost_unacked", topic="t", key="k", seq=4),  # beyond the evidence's cap
    ]
    return Published(
        "mem", REPORT, pa.Table.from_pylist(anomalies, schema=anomaly_table.SCHEMA),
        pa.Table.from_pylist(ev, schema=evidence_table.arrow_schema()))


def test_select_finds_messages_by_key_seq_and_record(published):
    assert select(published, Query("t", key="k")) == (
        [("t", "k", 1), ("t", "k", 3)], [("t", "k", 4)])
    assert select(published, Query("t", key="k", seq=3)) == ([("t", "k", 3)], [])
    assert select(published, Query("t", partition=0, offset=5)) == ([("t", "k", 1)], [])
    assert select(published, Query("t", key="other")) == ([], [])
    assert select(published, Query("t", partition=0, offset=99)) == ([], [])


def test_a_story_numbers_processings_and_places_the_rebalance_between_them(published):
    story = compose(published, ("t", "k", 1), timedelta(minutes=5))
    assert [(p["n"], p["member_id"]) for p in story.processings] == [(1, "m1"), (2, "m2")]
    assert [a["anomaly"] for a in story.anomalies] == ["redelivery"]
    # the group's rebalance on t-0 in the span, not the one on t-7 nor the one hours later
    assert [(r["generation"], r["relation"]) for r in story.rebalances] == [
        (2, "between processing #1 by m1 and #2 by m2")]
    assert [v["member_id"] for v in story.evictions] == ["m1"]
    # t-0's assignment and the member's leave are listed; t-3's and the event hours later
    # are not; a commit failing at offset 6 tells of offset 5 (the next to read), one at 9
    # is counted only
    assert [(e["status"], e["offset"]) for e in story.events] == [
        ("left_group", None), ("commit_failed", 6), ("assigned", None)]
    assert [(o["status"], o["n"]) for o in story.other_events] == [("commit_failed", 1)]
    kinds = [e["kind"] for e in story.timeline()]
    assert kinds.index("eviction") < kinds.index("rebalance") < len(kinds) - 1
    assert kinds[-1] == "processing"


def test_a_rebalance_before_the_first_processing_is_linked_within_the_poll_interval(published):
    processings = [{"n": 1, "member_id": "a", "ts": at("10:00:10")},
                   {"n": 2, "member_id": "b", "ts": at("10:00:50")}]
    assert _relation(at("10:00:05"), processings, 60_000).startswith(
        "linked to processings #1 by a and #2 by b (it began 5,000 ms before #1)")
    assert _relation(at("09:58:00"), processings, 60_000) is None
    assert _relation(at("10:00:55"), processings, 60_000) is None


def test_answers_say_why_there_is_no_story(published):
    answer = explain(published, Query("t", key="other"))
    assert not answer.found and answer.message.startswith(
        "key 'other' of topic t was not involved in any anomaly of this window "
        "(2026-11-19T00:00:00Z → 2026-11-20T00:00:00Z)")
    answer = explain(published, Query("t", key="k", seq=2))
    assert answer.message == ("key 'k' seq 2 of topic t was never sent: seq_gap "
                              "(between seq 1 and 3)")
    answer = explain(published, Query("x", key="k"))
    assert answer.message.startswith("topic x is not in this report")
    answer = explain(published, Query("t", key="k"), limit=2)
    assert [s.seq for s in answer.stories] == [1, 3] and answer.matched == 3
    assert answer.message.startswith("3 messages match; the first 2 by seq are shown")
    beyond = explain(published, Query("t", key="k", seq=4)).stories[0]
    assert beyond.note and "holds none of its rows" in beyond.note
    assert [a["anomaly"] for a in beyond.anomalies] == ["lost_unacked"]
    assert PER_ANOMALY == evidence_table.PER_ANOMALY


def test_json_answer_is_plain_json(published):
    data = explain(published, Query("t", key="k", seq=1)).to_json()
    text = json.dumps(data)
    assert json.loads(text)["stories"][0]["processings"][1]["ts"] == "2026-11-19T10:00:50.000Z"
    assert data["seq_gaps"] == []
