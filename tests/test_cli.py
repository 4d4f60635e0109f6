"""The CLI end to end over a small multi-anomaly fixture (tests/data/small), checked
against hand-computed counts, with bad rows in every source."""

from __future__ import annotations

import json
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delivery_audit.audit import Stages
from delivery_audit.cli import COMMANDS_GROUP, app
from delivery_audit.spark_jobs import JOB_LABEL, job_labels

sys.path.append(str(Path(__file__).resolve().parents[1] / "jobs"))
import reconcile  # noqa: E402  (jobs/reconcile.py, the spark-submit job)

pytestmark = pytest.mark.audit  # the CLI as a user runs it (whole audits): not in make test-fast

DATA = Path(__file__).parent / "data" / "small"
WINDOW = ["--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z"]

# Hand-computed: see tests/data/small/README.md
EXPECTED = {
    "lost_acked": 1,  # b/2 acked at offset 6, inside the dump [0, 8), not in the log
    "lost_unacked": 1,  # b/3 failed, never written
    "written_despite_failure": 0,
    "seq_gap": 1,  # a/4 never sent
    "dup_write": 1,  # a/3 at offsets 2 and 3 after a timeout and a retry
    "redelivery": 1,  # offset 1 processed by c1, then by c2 after the rebalance
    "dup_effect": 2,  # a/2 (redelivery) and a/3 (both copies processed)
    "skipped": 0,
    "pending": 1,  # b/4 at offset 7: the group never went past offset 5
    "expired_unconsumed": 0,
    "write_reorder": 0,
    "process_reorder": 0,
    "key_partition_split": 0,
    "concurrent_processing": 0,
    "retry_after_failure": 0,
    # contract §9: no transactions in this day, no latency SLA configured
    "aborted_read": 0,
    "hanging_transaction": 0,
    "zombie_write": 0,
    "late_delivery": 0,
}
STATES = {"delivered_once": 3, "delivered_duplicate": 2, "lost_acked": 1, "lost_unacked": 1,
          "skipped": 0, "expired_unconsumed": 0, "pending": 1}
QUARANTINED = {"sends": 4, "broker": 4, "ledger": 3, "events": 3}


@pytest.fixture(scope="module")
def audited(small_audit):
    """The shared audit of tests/data/small (tests/small_audit.py): the ledger gzipped, the
    broker as CSV, the rest JSON Lines; the sends glob also matches a dated garbage file
    after the window's read bound, which is pruned, never read."""
    return small_audit


def test_exit_code_is_fail_for_a_critical_anomaly(audited):
    assert audited["result"].exit_code == 3, audited["result"].output
    assert audited["report"]["verdict"]["verdict"] == "fail"
    assert "lost_acked" in audited["result"].output


def test_every_anomaly_count_matches_hand_computed(audited):
    counts = {k: v["count"] for k, v in audited["report"]["anomalies"].items()}
    assert counts == EXPECTED
    assert audited["report"]["anomalies"]["dup_write"]["by_cause"]["producer_retry"] == 1
    assert audited["report"]["anomalies"]["redelivery"]["by_cause"] == {"rebalance": 1,
                                                                        "other": 0}


def test_states_and_balance(audited):
    report = audited["report"]
    assert report["judged"] == 8
    assert report["groups"]["billing"]["states"] == STATES
    assert report["groups"]["billing"]["balance_ok"] is True
    assert report["balance_ok"] is True


def test_accounting_with_quarantine(audited, spark):
    inputs = audited["report"]["inputs"]
    for source, n in QUARANTINED.items():
        i = inputs[source]
        assert i["rows_quarantined"] == n, source
        assert i["rows_read"] == i["rows_valid"] + i["rows_quarantined"]
    assert inputs["sends"]["rows_after_window"] == 1
    # the dated file after the read bound was pruned, not read (pruning.py)
    assert inputs["sends"]["files_pruned"] == 1
    assert [Path(f).name for f in inputs["sends"]["files"]] == ["sends.jsonl"]
    assert audited["report"]["window"]["partition_bounds"]["upper"] == "2026-11-20T01:00:00+00:00"
    rows = spark.read.parquet(str(audited["dir"] / "quarantine")).collect()
    by_source: dict[str, list] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(r)
    assert {s: len(v) for s, v in by_source.items()} == QUARANTINED
    sends = {r["row"]: r["reason"] for r in by_source["sends"]}
    assert sends[11] == "duplicate of line 1"
    assert sends[12] == "not valid JSON"
    assert sends[13] == "missing required field 'seq'"
    assert sends[14].startswith("field 'status': wrong type (bool)")
    broker = {r["row"]: r["reason"] for r in by_source["broker"]}  # CSV: line 1 is the header
    assert broker[9] == "field 'offset': not an integer 'x'"
    assert broker[10] == "missing required field 'topic'"
    assert broker[11] == "cells do not match the header's 6 columns"  # RFC 4180
    assert broker[12] == "duplicate of line 7"
    ledger = {r["row"]: r["reason"] for r in by_source["ledger"]}
    assert ledger == {8: "not valid JSON", 9: "missing required field 'member_id'",
                      10: "field 'offset': not an integer 'abc'"}
    assert all(r["file"].endswith("ledger.jsonl.gz") for r in by_source["ledger"])
    events = {r["row"]: r["reason"] for r in by_source["events"]}
    assert events[3].startswith("field 'event': not one of")
    assert events[4] == "missing required field 'ts'"
    assert events[5] == "not valid JSON"


def test_outputs_written_with_manifest_last(audited):
    d = audited["dir"]
    for name in ("report.json", "report.html", "_manifest.json"):
        assert (d / name).is_file(), name
    manifest = json.loads((d / "_manifest.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    assert "report.json" in listed and any(p.startswith("anomalies/") for p in listed)
    assert audited["report"]["anomalies"]["lost_acked"]["severity"] == "critical"
    # what is published is the report: detection's scratch folder is not
    assert not [p for p in listed if p.startswith("anomalies.detection/")]
    assert not (d / "anomalies.detection").exists()
    # the summary says where the window's page and the root's index are
    out = audited["result"].output.replace("\n", "")  # the console folds long paths
    root = audited["out"]
    assert f"all windows: {root}/index.html" in out
    assert (root / "index.html").is_file() and (root / "index.json").is_file()


def test_unmatched_glob_fails_naming_the_input(tmp_path):
    result = CliRunner().invoke(app, [
        "run", "--sends", str(tmp_path / "nothing*.jsonl"), "--broker", str(DATA / "broker.csv"),
        "--ledger", str(DATA / "ledger.jsonl"), *WINDOW, "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "nothing*.jsonl" in result.output


def test_file_that_is_not_gzip_fails_naming_it(tmp_path):
    fake = tmp_path / "sends.jsonl.gz"
    fake.write_text("not gzip at all\n")
    result = CliRunner().invoke(app, [
        "run", "--sends", str(fake), "--broker", str(DATA / "broker.csv"),
        "--ledger", str(DATA / "ledger.jsonl"), *WINDOW, "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "sends.jsonl.gz" in result.output and "not gzip" in result.output


# the report as report/assemble.py puts it together, in docs/report-schema.md's order
REPORT_KEYS = ["schema_version", "run", "window", "config", "inputs", "judged",
               "judged_by_topic", "anomalies", "groups", "balance_ok", "transactions",
               "latency_sla", "input_validation", "rebalances", "verdict", "results_validation",
               "narrative", "remediation"]
RUN_KEYS = ["run_id", "started_at", "tool_version", "spark_version", "spark_session",
            "spark_master", "finished_at", "stages", "spark_jobs", "planning_s", "duration_s"]


def test_the_report_has_every_section_in_order_and_the_page_its_duration(audited):
    report = audited["report"]
    assert list(report) == REPORT_KEYS
    assert list(report["run"]) == RUN_KEYS
    run = report["run"]
    assert run["duration_s"] == round(sum(run["stages"].values()), 3) > 0
    # Spark's planning of the audit's queries: measured, and within the stages' time
    assert 0 < run["planning_s"] < run["stages"]["ingest"] + run["stages"]["detect"]
    assert list(run["stages"])[-1] == "render_html"  # report.json is written after the page
    # the results suite fails on the critical lost_acked too; the verdict names the anomaly
    assert report["results_validation"]["success"] is False
    assert report["verdict"]["reasons"][0].startswith("lost_acked = 1 (critical")
    assert "results validation failed" not in report["verdict"]["reasons"]
    # the page's header: the run's duration up to the page (issue: it showed "– s")
    html = (audited["dir"] / "report.html").read_text(encoding="utf-8")
    shown = re.search(r"· ([0-9][0-9.,]*) s · tool", html)
    assert shown, html[:3000]
    assert 0 < float(shown.group(1).replace(",", "")) <= run["duration_s"]


def test_the_engine_labels_each_stages_spark_jobs(spark):
    """Stages' hook from delivery_audit.spark: the job description names the running stage
    (what jobs/reconcile.py's Spark UI shows), the outer one restored after."""
    sc = spark.sparkContext
    sc.setJobDescription("outer")
    seen = {}
    stages = Stages([job_labels(spark)])
    try:
        with stages.stage("detect"):
            seen["detect"] = sc.getLocalProperty("spark.job.description")
            spark.range(3).count()
        seen["after"] = sc.getLocalProperty("spark.job.description")
    finally:
        sc.setJobDescription(None)
    assert seen == {"detect": f"{JOB_LABEL}detect", "after": "outer"}
    assert JOB_LABEL == "audit: " and "detect" in stages.seconds


def test_master_and_spark_remote_together_fail_before_spark(tmp_path):
    result = CliRunner().invoke(app, [
        "run", "--sends", "s", "--broker", "b", "--ledger", "l", *WINDOW,
        "--out", str(tmp_path / "o"), "--master", "local[1]", "--spark-remote", "sc://h:1"])
    assert result.exit_code == 1 and "not both" in result.output


def test_the_reconcile_job_parses_its_own_arguments(tmp_path, capsys):
    args = ["--sends", "s", "--broker", "b", "--ledger", "l", *WINDOW, "--out",
            str(tmp_path / "o")]
    assert reconcile.main([*args, "--stage", "detect"]) == 2
    assert "--stage 'detect' is not supported" in capsys.readouterr().err
    assert reconcile.main(args[2:]) == 2  # no --sends: argparse's usage error
    assert reconcile.main([*args, "--format", "nosuch=csv"]) == 1
    assert "--format takes SOURCE=FORMAT" in capsys.readouterr().err
    a = reconcile.parser().parse_args([*args, "--events", "e1", "--events", "e2",
                                       "--topic", "t", "--no-notify"])
    assert (a.events, a.topics, a.notify, a.stage) == (["e1", "e2"], ["t"], False, "all")


def test_the_simulators_commands_come_through_the_entry_point_group():
    """`generate` and `lab` are registered by the simulator's distribution (its
    delivery_audit.commands entry point); the engine names no simulator module."""
    names = {ep.name: ep.value for ep in entry_points(group=COMMANDS_GROUP)}
    assert names.get("simulator") == "delivery_audit_sim.cli:add_commands"
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    assert {"run", "index", "explain", "convert", "generate", "lab"} <= commands
    src = Path(__file__).resolve().parents[1] / "src" / "delivery_audit"
    assert [p for p in src.rglob("*.py") if "delivery_audit_sim" in p.read_text()] == []
