"""Remediation artefacts (remediation/): the replay and dedupe lists from a tiny anomaly
table, the offset-reset commands and settings, formula-safe CSV, and a real audit's
published folder (tests/small_audit.py's, no new audit) carrying them in its manifest."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shlex
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from job_count import spark_jobs

from delivery_audit.anomaly_table import SCHEMA, read_anomalies
from delivery_audit.remediation import write_remediation
from delivery_audit.remediation.commands import (
    commands_text,
    config_changes,
    offset_resets,
    producer_changes,
    reset_command,
    shell_arg,
)
from delivery_audit.remediation.csv_cells import safe_text, write_csv
from delivery_audit.remediation.dedupe import dedupe_table
from delivery_audit.remediation.replay import replay_table

T0 = datetime(2026, 11, 19, 16, 29, tzinfo=UTC)


def row(anomaly: str, **values) -> dict:
    r = {f.name: None for f in SCHEMA}
    r.update({"anomaly": anomaly, "severity": "high", "units": 1, **values})
    return r


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


ROWS = [
    row("lost_acked", topic="payments", key="k1", seq=7, partition=3, offset=100, ts=T0,
        attempts=1, severity="critical"),
    row("lost_unacked", topic="payments", key="k1", seq=8, ts=T0, attempts=2),
    row("expired_unconsumed", group_id="billing", topic="payments", key="k2", seq=1,
        partition=0, offset=5, severity="critical"),
    row("skipped", group_id="billing", topic="payments", key="k3", seq=4, partition=1,
        offset=42, severity="critical"),
    row("skipped", group_id="billing", topic="payments", key="k3", seq=3, partition=1,
        offset=41, severity="critical"),
    row("skipped", group_id="billing", topic="payments", key="k4", seq=9, partition=1,
        offset=50, severity="critical"),
    row("skipped", group_id="shipping", topic="payments", key="k3", seq=3, partition=1,
        offset=41, severity="critical"),
    row("dup_write", cause="producer_retry", topic="orders", key="k5", seq=1, partition=2,
        offset=11, related_partition=2, related_offset=10, ts=T0, attempts=2,
        detail="copies: 2"),
    row("redelivery", cause="rebalance", group_id="fans", topic="fans-push", key="k6", seq=2,
        partition=9, offset=77, member_id="consumer-1", related_member_id="consumer-2",
        ts=T0, related_ts=T0),
    row("dup_effect", group_id="fans", topic="fans-push", key="k6", seq=2, partition=9,
        offset=77, related_partition=9, related_offset=77, member_id="consumer-1",
        related_member_id="consumer-2", attempts=2),
    # neither replayed nor deduplicated
    row("pending", group_id="billing", topic="payments", key="k9", seq=1, partition=1,
        offset=60),
    row("write_reorder", topic="orders", key="k5", seq=0, partition=2, offset=12),
    row("seq_gap", topic="orders", key="k5", seq=3, seq_to=4, units=2),
]

REPORT = {
    "window": {"id": "20261119T000000Z_20261120T000000Z", "start": "2026-11-19T00:00:00Z",
               "end": "2026-11-20T00:00:00Z"},
    "verdict": {"verdict": "fail", "reasons": []},
    "anomalies": {"dup_write": {"count": 1, "by_cause": {"producer_retry": 1},
                                "by_topic": {"orders": 1}},
                  "lost_acked": {"count": 1, "by_topic": {"payments": 1}}},
    "rebalances": {
        "fans": {"advice": [
            {"setting": "max.poll.records", "current": 500, "advised": 98, "ok": False,
             "reason": "p99 1,529 ms × 500 = 764.5 s per batch, far above 300 s"},
            {"setting": "heartbeat.interval.ms", "current": 3000, "advised": 3000,
             "ok": True, "reason": "fine"}]},
        "billing": {"advice": [{"setting": "max.poll.records", "current": 500,
                                "advised": None, "ok": None, "reason": "no times"}]},
    },
}


# --------------------------------------------------------------------------- the lists


def test_replay_lists_each_message_to_reproduce_or_reprocess():
    t = replay_table(table(ROWS))
    rows = t.to_pylist()
    assert t.column_names[:2] == ["anomaly", "action"]
    assert [(r["anomaly"], r["group_id"], r["key"], r["seq"]) for r in rows] == [
        ("lost_acked", None, "k1", 7), ("lost_unacked", None, "k1", 8),
        ("expired_unconsumed", "billing", "k2", 1),
        # per identity, in seq order: a re-produce keeps each key's order
        ("skipped", "billing", "k3", 3), ("skipped", "shipping", "k3", 3),
        ("skipped", "billing", "k3", 4), ("skipped", "billing", "k4", 9)]
    actions = {r["anomaly"]: r["action"] for r in rows}
    assert actions == {"lost_acked": "re-produce", "lost_unacked": "re-produce",
                       "expired_unconsumed": "re-produce", "skipped": "re-process"}
    lost = rows[0]
    assert (lost["partition"], lost["offset"], lost["ts"], lost["attempts"]) == (3, 100, T0, 1)


def test_dedupe_lists_extra_copies_and_processings_with_their_evidence():
    rows = dedupe_table(table(ROWS)).to_pylist()
    assert [r["anomaly"] for r in rows] == ["dup_write", "redelivery", "dup_effect"]
    dup = rows[0]
    assert (dup["cause"], dup["offset"], dup["related_offset"], dup["attempts"]) == (
        "producer_retry", 11, 10, 2)
    red = rows[1]
    assert (red["group_id"], red["member_id"], red["related_member_id"], red["cause"]) == (
        "fans", "consumer-1", "consumer-2", "rebalance")
    assert rows[2]["units"] == 1


def test_offset_resets_per_group_and_partition_from_the_first_skipped_offset():
    resets = offset_resets(table(ROWS), reach={("billing", "payments", 1): 120})
    assert resets == [
        {"group_id": "billing", "topic": "payments", "partition": 1, "to_offset": 41,
         "skipped": 3, "ranges": [[41, 42], [50, 50]], "reached": 120},
        {"group_id": "shipping", "topic": "payments", "partition": 1, "to_offset": 41,
         "skipped": 1, "ranges": [[41, 41]], "reached": None}]
    assert reset_command(resets[0]) == (
        "kafka-consumer-groups.sh --bootstrap-server <BOOTSTRAP> --group billing "
        "--topic payments:1 --reset-offsets --to-offset 41 --dry-run")


def test_settings_come_from_the_advice_and_the_causes():
    changes = config_changes(REPORT)
    assert [(c["group_id"], c["setting"], c["current"], c["advised"]) for c in changes] == [
        ("fans", "max.poll.records", 500, 98)]  # ok and unknown advice are no change
    producer = producer_changes(REPORT)
    assert producer[0]["settings"] == ["enable.idempotence=true", "acks=all"]
    assert "min.insync.replicas=2" in producer[1]["topic_settings"]
    assert producer_changes({"anomalies": {}}) == []


def test_commands_text_has_the_dry_runs_and_the_settings():
    t = table(ROWS)
    resets = offset_resets(t)
    text = commands_text(REPORT, {"replay": {"rows": 7, "csv": "remediation/replay.csv"}},
                         resets, config_changes(REPORT), producer_changes(REPORT))
    lines = text.splitlines()
    commands = [ln for ln in lines if ln.startswith("kafka-consumer-groups.sh")]
    assert commands == [reset_command(r) for r in resets]
    assert all(c.endswith("--dry-run") for c in commands)
    assert "--execute" in text  # it says how to apply a reviewed dry run
    assert "max.poll.records=98    # currently 500" in lines
    assert "enable.idempotence=true    # producer" in lines
    # every other line is a comment or blank: nothing else is meant to run
    rest = [ln for ln in lines if ln and not ln.startswith("#") and ln not in commands]
    assert all("=" in ln and "    # " in ln for ln in rest), rest


def test_hostile_names_stay_one_shell_word_and_never_start_a_line():
    evil_group = "g'; rm -rf / #"
    assert shlex.split(shell_arg(evil_group)) == [evil_group]
    assert shlex.split(reset_command({"group_id": evil_group, "topic": "t p", "partition": 0,
                                      "to_offset": 5}))[3:7] == [
        "--group", evil_group, "--topic", "t p:0"]
    newline_group = "g\nrm -rf /"
    rows = [row("skipped", group_id=newline_group, topic="t", key="k", seq=1, partition=0,
                offset=3)]
    text = commands_text({"rebalances": {newline_group: {"advice": [
        {"setting": "max.poll.records", "current": 5, "advised": 1, "ok": False,
         "reason": "x\nrm -rf ~"}]}}}, {}, offset_resets(table(rows)),
        config_changes({"rebalances": {newline_group: {"advice": [
            {"setting": "max.poll.records", "current": 5, "advised": 1, "ok": False,
             "reason": "x\nrm -rf ~"}]}}}), [])
    assert not [ln for ln in text.splitlines() if ln.startswith("rm")]
    assert "--group $'g\\nrm -rf /'" in text


# --------------------------------------------------------------------------- CSV


@pytest.mark.parametrize("value", ['=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0",
                                   "-2+3", "@SUM(1+1)", "\t=1", "\r=1"])
def test_formula_cells_are_neutralised(value):
    assert safe_text(value) == "'" + value


def test_csv_neutralises_text_but_keeps_numbers_and_parquet_keeps_everything(tmp_path):
    evil = '=HYPERLINK("http://evil.example","click")'
    rows = [row("lost_acked", topic="t", key=evil, seq=-5, partition=0, offset=1, ts=T0,
                detail="@SUM(1+1)"),
            row("lost_unacked", topic="t", key="plain, \"quoted\"\nkey", seq=2)]
    summary = write_remediation(table(rows), tmp_path, {})
    assert summary["replay"]["rows"] == 2
    text = (tmp_path / "remediation" / "replay.csv").read_bytes().decode("utf-8")
    got = list(csv.DictReader(io.StringIO(text, newline="")))
    assert got[0]["key"] == "'" + evil and got[0]["detail"] == "'@SUM(1+1)"
    assert got[0]["seq"] == "-5"  # a number, not text: unchanged
    assert got[0]["ts"] == "2026-11-19T16:29:00Z"
    assert got[1]["key"] == "plain, \"quoted\"\nkey" and got[1]["partition"] == ""
    assert text.count("\r\n") >= 3  # RFC 4180 records
    exact = pq.read_table(tmp_path / "remediation" / "replay.parquet").to_pylist()
    assert exact[0]["key"] == evil and exact[0]["seq"] == -5


def test_write_csv_neutralises_header_and_empty_table(tmp_path):
    write_csv(pa.table({"=x": pa.array([], pa.string())}), tmp_path / "e.csv")
    assert (tmp_path / "e.csv").read_bytes() == b"'=x\r\n"


# --------------------------------------------------------------------------- the folder


def test_write_remediation_reads_the_table_and_writes_identical_files(tmp_path):
    folder = tmp_path / "anomalies"
    folder.mkdir()
    pq.write_table(table(ROWS), folder / "part-0.parquet")
    a = write_remediation(folder, tmp_path / "a", REPORT)
    b = write_remediation(read_anomalies(folder), tmp_path / "b", REPORT)
    assert a == b
    assert a["replay"]["by_anomaly"] == {"lost_acked": 1, "lost_unacked": 1,
                                         "expired_unconsumed": 1, "skipped": 4}
    assert a["dedupe"]["by_anomaly"] == {"dup_write": 1, "redelivery": 1, "dup_effect": 1}
    assert a["offset_resets_total"] == 2 and len(a["config_changes"]) == 1
    names = sorted(p.name for p in (tmp_path / "a" / "remediation").iterdir())
    assert names == ["commands.txt", "dedupe.csv", "dedupe.parquet", "replay.csv",
                     "replay.parquet"]
    for name in names:  # a re-run writes byte-identical files
        assert (tmp_path / "a" / "remediation" / name).read_bytes() == \
            (tmp_path / "b" / "remediation" / name).read_bytes(), name


def test_an_audit_without_anomalies_still_writes_empty_lists(tmp_path):
    summary = write_remediation(tmp_path / "missing", tmp_path, {})
    assert summary["replay"]["rows"] == 0 and summary["offset_resets"] == []
    assert (tmp_path / "remediation" / "replay.csv").read_text().startswith("anomaly,action,")
    assert "none: no skipped record" in (tmp_path / "remediation" / "commands.txt").read_text()


@pytest.mark.audit
def test_published_folder_carries_remediation_listed_in_the_manifest(small_audit):
    d, report = small_audit["dir"], small_audit["report"]
    manifest = json.loads((d / "_manifest.json").read_text())
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    for name in ("replay.parquet", "replay.csv", "dedupe.parquet", "dedupe.csv",
                 "commands.txt"):
        path = f"remediation/{name}"
        assert path in listed, path
        assert hashlib.sha256((d / path).read_bytes()).hexdigest() == listed[path]
    rem = report["remediation"]
    assert "remediation" in report["run"]["stages"]
    replay = pq.read_table(d / "remediation" / "replay.parquet").to_pylist()
    for name in ("lost_acked", "lost_unacked", "skipped", "expired_unconsumed"):
        n = sum(1 for r in replay if r["anomaly"] == name)
        assert n == report["anomalies"][name]["count"], name
        assert rem["replay"]["by_anomaly"].get(name, 0) == n
    assert report["anomalies"]["lost_acked"]["count"] >= 1  # the check above can fail
    dedupe = pq.read_table(d / "remediation" / "dedupe.parquet").to_pylist()
    for name in ("dup_write", "redelivery", "dup_effect"):
        units = sum(r["units"] for r in dedupe if r["anomaly"] == name)
        assert units == report["anomalies"][name]["count"], name
    html = (d / "report.html").read_text("utf-8")
    for href in ('href="remediation/replay.csv"', 'href="remediation/dedupe.parquet"',
                 'href="remediation/commands.txt"'):
        assert href in html


@pytest.mark.audit
def test_remediation_and_offset_strips_run_no_spark_job(spark, small_audit, tmp_path):
    from delivery_audit.report.offsets import partition_offsets

    d = small_audit["dir"]

    def build():
        summary = write_remediation(d / "anomalies", tmp_path, small_audit["report"])
        return summary, partition_offsets(read_anomalies(d / "anomalies"))

    (summary, strips), jobs = spark_jobs(spark, build)
    assert jobs == 0
    assert summary["replay"]["rows"] >= 1 and strips["partitions"]
