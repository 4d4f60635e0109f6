"""Contract §9 as the reader sees it: report.html's Transactions section, latency against
the SLA and evidence tables; the narrative's findings and advice; remediation's
kafka-transactions commands and replay list; the verdict and the alerts; explain.

The evidence figures are read from one small detection's real anomaly rows (module
fixture: one Spark detection, each case in its own topic or group), so a change of
detection's evidence texts breaks these tests rather than silently emptying the page; the
page, verdict and alert tests render hand-made report dicts (report_fixtures.py).
"""

from __future__ import annotations

import logging
import re
import shlex
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from frames import END, START, Log
from report_fixtures import EVIL, make_report

from delivery_audit.anomaly_table import SCHEMA, read_anomalies
from delivery_audit.config import AuditConfig, GroupConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.explain import composing, printing
from delivery_audit.notify import ALERT_LOGGER, LogNotifier
from delivery_audit.remediation import write_remediation
from delivery_audit.remediation.commands import (
    abort_command,
    commands_text,
    find_hanging_command,
    transaction_advice,
)
from delivery_audit.remediation.replay import replay_table
from delivery_audit.report.digest import Digest
from delivery_audit.report.html import render_html
from delivery_audit.report.narrative import build_narrative
from delivery_audit.report.transactions import evidence, transaction_evidence
from delivery_audit.report.verdict import decide

T7 = dict(transactional=True, pid=7, producer_epoch=0)
LINK = "s3://bucket/reports/dt=2026-11-19/W/report.html"


def build_cases() -> Log:
    log = Log()
    # only aborted: sent inside a transaction that was aborted, never resent (rule 25)
    log.send(1, topic="only-aborted", status="aborted")
    log.write(1, topic="only-aborted", offset=0, **T7).marker(1, "abort", 7,
                                                             topic="only-aborted")
    # aborted reads: the aborted record (pid 7, marker at 1) processed by a
    # read_uncommitted group and by a read_committed one
    log.send(1, topic="aread", status="aborted").write(1, topic="aread", offset=0, **T7)
    log.marker(1, "abort", 7, topic="aread")
    log.message(2, offset=2, topic="aread")
    for group, isolation in (("ru", "read_uncommitted"), ("rc", None)):
        extra = {"isolation": isolation} if isolation else {}
        log.process(0, topic="aread", group=group, **extra)
        log.process(2, topic="aread", group=group)
    # hanging: pid 7's two records open since 10:00 at offsets 0-1; last record at 11:00
    log.send(1, topic="hang", offset=0).write(1, topic="hang", offset=0, at="10:00:00", **T7)
    log.send(2, topic="hang", offset=1).write(2, topic="hang", offset=1, at="10:00:01", **T7)
    log.message(3, offset=2, topic="hang")
    log.broker[-1]["timestamp"] = "11:00:00"
    # zombie: pid 9 epoch 0 lands at offset 1 after epoch 1 wrote at offset 0
    log.message(1, offset=0, topic="zombie")
    log.broker[-1].update(transactional=True, pid=9, producer_epoch=1)
    log.message(2, offset=1, topic="zombie")
    log.broker[-1].update(transactional=True, pid=9, producer_epoch=0)
    log.marker(2, "commit", 9, epoch=1, topic="zombie")
    # late: group "sla" (SLA 5 s) first processes seq 1 10 s after its send
    log.send(1, topic="late").write(1, topic="late")
    log.process(1, topic="late", group="sla", at="10:00:10", done="10:00:11")
    return log


CONFIG = AuditConfig(groups=(
    GroupConfig("g", topics=("only-aborted",)), GroupConfig("ru"),
    GroupConfig("rc", {"isolation.level": "read_committed"}),
    GroupConfig("sla", {"latency_sla_ms": 5000})))


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> pa.Table:
    from delivery_audit.detection import detect

    detection = detect(spark, build_cases().frames(spark), AuditWindow.of(START, END), CONFIG)
    path = tmp_path_factory.mktemp("txn-present") / "anomalies"
    detection.write_anomalies(str(path))
    return read_anomalies(path)


def report_of(t: pa.Table) -> dict:
    """A report whose counts are those of the table (per anomaly, topic, group, cause)."""
    counts: dict[str, int] = {}
    by_topic: dict[str, dict[str, int]] = {}
    for r in t.to_pylist():
        counts[r["anomaly"]] = counts.get(r["anomaly"], 0) + r["units"]
        bt = by_topic.setdefault(r["anomaly"], {})
        bt[r["topic"]] = bt.get(r["topic"], 0) + r["units"]
    report = make_report(counts=counts, by_topic=by_topic)
    report["latency_sla"] = {"sla": {"sla_ms": 5000, "late": counts.get("late_delivery", 0)}}
    return report


# ------------------------------------------------------------------ evidence of the rows


def test_the_evidence_figures_come_from_detections_rows(table):
    ev = transaction_evidence(table)
    reads = {r["group_id"]: r for r in ev["aborted_read"]["rows"]}
    assert set(reads) == {"ru", "rc"}
    ru = reads["ru"]
    assert (ru["topic"], ru["partition"], ru["offset"], ru["pid"], ru["epoch"],
            ru["marker_offset"], ru["isolation"], ru["isolation_from"]) == (
        "aread", 0, 0, 7, 0, 1, "read_uncommitted", "the ledger")
    assert (reads["rc"]["isolation"], reads["rc"]["isolation_from"]) == (
        "read_committed", "the group's config")
    (hang,) = ev["hanging_transaction"]["rows"]
    assert (hang["topic"], hang["pid"], hang["epoch"], hang["first_offset"],
            hang["last_offset"], hang["records"], hang["age_ms"]) == (
        "hang", 7, 0, 0, 1, 2, 3_600_000)
    (zombie,) = ev["zombie_write"]["rows"]
    assert (zombie["topic"], zombie["offset"], zombie["pid"], zombie["epoch"],
            zombie["newer_epoch"], zombie["newer_offset"], zombie["outcome"]) == (
        "zombie", 1, 9, 0, 1, 0, "committed")
    (late,) = ev["late_delivery"]["rows"]
    assert (late["group_id"], late["delay_ms"], late["sla_ms"]) == ("sla", 10_000, 5000)


def test_a_figure_the_row_does_not_give_is_none_not_guessed():
    e = evidence({"anomaly": "zombie_write", "topic": "t", "detail": "something else"})
    assert e["pid"] is None and e["epoch"] is None and e["newer_epoch"] is None
    e = evidence({"anomaly": "late_delivery", "detail": None,
                  "ts": datetime(2026, 11, 19, 10, tzinfo=UTC),
                  "related_ts": datetime(2026, 11, 19, 10, 0, 7, tzinfo=UTC)})
    assert e["delay_ms"] == 7000 and e["sla_ms"] is None  # the delay from the instants


# ------------------------------------------------------------------ remediation


def test_an_identity_with_only_aborted_sends_is_replayed_as_reproduce(table):
    rows = [r for r in replay_table(table).to_pylist() if r["topic"] == "only-aborted"]
    assert [(r["anomaly"], r["action"], r["seq"]) for r in rows] == [
        ("lost_unacked", "re-produce", 1)]


def test_commands_txt_has_the_kafka_transactions_commands_filled_in(table, tmp_path):
    summary = write_remediation(table, tmp_path, report_of(table))
    text = (tmp_path / "remediation" / "commands.txt").read_text("utf-8")
    section = text[text.index("# 6. Transactions"):]
    find = ("kafka-transactions.sh --bootstrap-server <BOOTSTRAP> find-hanging "
            "--topic hang --partition 0")
    abort = ("kafka-transactions.sh --bootstrap-server <BOOTSTRAP> abort --topic hang "
             "--partition 0 --start-offset 0")
    assert find in section.splitlines() and abort in section.splitlines()
    assert "# hang [0]: pid 7 epoch 0, 2 record(s) at offsets 0-1" in section
    # the isolation change for the read_uncommitted group, an escalation for the other
    assert "isolation.level=read_committed    # consumer, group ru" in section.splitlines()
    assert "# group rc: 1 aborted read(s) with isolation.level=read_committed" in section
    assert "#   aread [0] offset 0: pid 7 epoch 0, aborted by the marker at offset 1" in section
    assert "group rc" not in "\n".join(line for line in section.splitlines()
                                      if not line.startswith("#"))
    # the fenced producer's facts and what to fix
    assert ("# zombie [0]: pid 9 wrote 1 record(s) with epoch 0 after epoch 1 had written "
            "at offset 0") in section
    assert "ProducerFencedException" in section
    assert summary["isolation_changes"] == [
        {"group_id": "ru", "setting": "isolation.level", "current": "read_uncommitted",
         "advised": "read_committed", "aborted_reads": 1}]
    assert summary["transaction_commands"] == [
        {"topic": "hang", "partition": 0, "pid": 7, "start_offset": 0, "find_hanging": find,
         "abort": abort}]


def test_write_remediation_from_a_folder_reads_the_transaction_rows(table, tmp_path):
    import pyarrow.parquet as pq

    folder = tmp_path / "anomalies"
    folder.mkdir()
    pq.write_table(table, folder / "part-0.parquet")
    summary = write_remediation(folder, tmp_path / "out", report_of(table))
    assert [c["topic"] for c in summary["transaction_commands"]] == ["hang"]


def test_hostile_topics_stay_one_shell_word_in_the_transaction_commands():
    plain = "t; rm -rf /"
    assert shlex.split(abort_command(plain, 3, 42)) == [
        "kafka-transactions.sh", "--bootstrap-server", "<BOOTSTRAP>", "abort", "--topic",
        plain, "--partition", "3", "--start-offset", "42"]
    assert shlex.split(find_hanging_command(plain, 3))[-4:] == [
        "--topic", plain, "--partition", "3"]
    topic = "t\nrm -rf /"
    rows = [{f.name: None for f in SCHEMA} | {
        "anomaly": "hanging_transaction", "severity": "high", "units": 1, "topic": topic,
        "partition": 3, "offset": 42, "related_offset": 44, "attempts": 3,
        "detail": "pid 5 epoch 1: 3 records open for 90000 ms"}]
    advice = transaction_advice(pa.Table.from_pylist(rows, schema=SCHEMA))
    text = commands_text(make_report(), {}, [], [], [], advice)
    assert "--topic $'t\\nrm -rf /' --partition 3 --start-offset 42" in text
    for line in text.splitlines():  # no value starts a line of its own
        assert line == "" or line.startswith(("#", "kafka-")), line


def test_no_transaction_anomaly_says_none():
    text = commands_text(make_report(), {}, [], [], [], transaction_advice(SCHEMA.empty_table()))
    assert text[text.index("# 6. Transactions"):].splitlines()[1] == "#   none."


# ------------------------------------------------------------------ narrative


def test_each_transaction_anomaly_gets_its_own_finding_with_its_figures(table):
    report = report_of(table)
    findings = {(f["cause"], f["group"]): f
                for f in build_narrative(report, Digest.from_table(table))}
    ru = findings[("aborted_read_uncommitted", "ru")]
    assert ru["severity"] == "critical" and ru["anomalies"] == {"aborted_read": 1}
    assert "pid 7 epoch 0, aborted by the marker at aread-0 offset 1" in ru["text"]
    assert "isolation.level=read_committed on ru's consumers" in ru["fix"]
    rc = findings[("aborted_read_committed", "rc")]
    assert "client or broker fault" in rc["text"]
    assert "escalate" in rc["fix"] and "pid 7 epoch 0" in rc["fix"]
    assert "isolation.level=read_committed on" not in rc["fix"]
    hang = findings[("hanging_transaction", None)]
    assert hang["severity"] == "warning"
    assert "hang-0: pid 7 epoch 0, 2 records from offset 0 open for 3,600 s" in hang["text"]
    assert find_hanging_command("hang", 0) in hang["fix"]
    assert abort_command("hang", 0, 0) in hang["fix"]
    zombie = findings[("zombie_write", None)]
    assert ("pid 9 epoch 0 wrote at zombie-0 offset 1 (committed transaction) after epoch 1 "
            "had written at offset 0") in zombie["text"]
    assert "ProducerFencedException" in zombie["fix"] and "closing the producer" in zombie["fix"]
    late = findings[("late_delivery", "sla")]
    assert "its SLA of 5 s (latency_sla_ms 5,000)" in late["title"]
    assert "delay median 10 s, max 10 s" in late["text"] and "lag" in late["fix"]
    assert late["evidence"][0]["href"] == "#latency-sla"
    assert hang["evidence"][0]["href"] == "#transactions"
    # no generic finding besides the specific ones
    assert not [c for c, _ in findings if c in ("aborted_read", "zombie_write_generic")]


def test_findings_from_the_counts_alone_still_name_the_isolation():
    report = make_report(counts={"aborted_read": 3, "hanging_transaction": 1})
    report["anomalies"]["aborted_read"]["by_cause"] = {
        "read_uncommitted": 3, "read_committed": 0, "unknown": 0}
    causes = {f["cause"] for f in build_narrative(report)}
    assert {"aborted_read_uncommitted", "hanging_transaction"} <= causes


# ------------------------------------------------------------------ the page


def txn_report() -> dict:
    report = make_report(counts={"hanging_transaction": 1, "late_delivery": 2})
    report["transactions"] = [
        {"topic": "orders", "partition": 1, "committed": {"transactions": 4, "records": 12},
         "aborted": {"transactions": 1, "records": 2}, "open": {"transactions": 2, "records": 4},
         "last_record_ts": "2026-11-19T11:05:00Z", "last_stable_offset": 100,
         "oldest_open_age_ms": 300_000,
         "open_transactions": [
             {"pid": 9, "producer_epoch": 0, "first_offset": 100, "last_offset": 102,
              "records": 3, "first_ts": "2026-11-19T11:00:00Z", "age_ms": 300_000,
              "last_stable_offset": 100, "hanging": True},
             {"pid": 11, "producer_epoch": 2, "first_offset": 140, "last_offset": 140,
              "records": 1, "first_ts": "2026-11-19T11:04:50Z", "age_ms": 10_000,
              "last_stable_offset": 140, "hanging": False}]}]
    report["latency_sla"] = {"g1": {"sla_ms": 30_000, "late": 2}}
    return report


def cells(html: str, table_class: str) -> list[list[str]]:
    """The text of each row's cells of the first table of that class."""
    m = re.search(rf'<table class="{table_class}">(.*?)</table>', html, re.S)
    assert m, table_class
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>",
                                                                   row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", m.group(1), re.S)]


def test_the_transactions_section_shows_each_partition_and_its_open_transactions():
    html = render_html(txn_report())
    assert '<h2 id="transactions">Transactions</h2>' in html and 'href="#transactions"' in html
    rows = cells(html, "txns")
    assert rows[1] == ["orders [1]", "4 / 12", "1 / 2", "2 / 4", "100", "5.0 min", "1",
                       "2026-11-19T11:05:00Z"]
    opened = cells(html, "open-txns")
    assert opened[1] == ["9", "0", "100", "102", "3", "2026-11-19T11:00:00Z", "5.0 min", "100",
                         "hanging"]
    assert opened[2][-1] == "open" and opened[2][-2] == "140"


def test_latency_against_the_sla_per_group_with_the_end_to_end_figures():
    insights = {"latency": {"end_to_end_ms_by_group": {
        "g1": {"count": 100, "p50": 1200, "p95": 20_000, "p99": 44_000, "max": 45_000}}}}
    html = render_html(txn_report(), insights)
    rows = cells(html, "sla")
    assert rows[1] == ["g1", "30.00 s", "2", "2.00%", "100", "1.20 s", "20.00 s", "44.00 s",
                       "45.00 s"]
    assert '<span class="bad">44.00 s</span>' in html  # p99 over the SLA


def test_no_transactions_no_section_and_no_sla_no_table():
    html = render_html(make_report())
    assert 'id="transactions"' not in html and 'href="#transactions"' not in html
    assert 'id="latency-sla"' not in html
    report = make_report()
    report.update(transactions=[], latency_sla={"g1": {"sla_ms": None, "late": 0}})
    html = render_html(report)
    assert 'id="transactions"' not in html and 'id="latency-sla"' not in html


def test_the_anomaly_rows_evidence_is_readable(table):
    html = render_html(report_of(table), {"transaction_evidence": transaction_evidence(table)})
    tables = re.findall(r'<h3 id="evidence-(\w+)">.*?<table class="evidence">(.*?)</table>',
                        html, re.S)
    by = {name: [[re.sub(r"<[^>]+>", "", c).strip()
                  for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
                 for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
          for name, body in tables}
    assert set(by) == {"aborted_read", "hanging_transaction", "zombie_write", "late_delivery"}
    reads = {tuple(r[:1]): dict(zip(by["aborted_read"][0], r, strict=True))
             for r in by["aborted_read"][1:]}
    ru = reads[("ru",)]
    assert (ru["pid"], ru["epoch"], ru["marker offset"], ru["isolation"]) == (
        "7", "0", "1", "read_uncommitted (the ledger)")
    late = dict(zip(by["late_delivery"][0], by["late_delivery"][1], strict=True))
    assert (late["delay"], late["SLA"], late["group"]) == ("10.00 s", "5.00 s", "sla")
    zombie = dict(zip(by["zombie_write"][0], by["zombie_write"][1], strict=True))
    assert (zombie["epoch (fenced)"], zombie["newer epoch"],
            zombie["newer epoch first at offset"]) == ("0", "1", "0")
    hang = dict(zip(by["hanging_transaction"][0], by["hanging_transaction"][1], strict=True))
    assert (hang["first offset (last stable offset)"], hang["age"]) == ("0", "60.0 min")
    # the late rows sit under the SLA table, the others under Transactions
    assert html.index('id="transactions"') < html.index('id="evidence-aborted_read"') \
        < html.index('id="latency-sla"') < html.index('id="evidence-late_delivery"')


def test_evidence_values_are_escaped():
    rows = [{f.name: None for f in SCHEMA} | {
        "anomaly": "zombie_write", "severity": "critical", "units": 1, "topic": EVIL,
        "key": EVIL, "seq": 1, "partition": 0, "offset": 3,
        "detail": "pid 1 epoch 0 (transaction committed) written after epoch 1 at offset 2"}]
    ev = transaction_evidence(pa.Table.from_pylist(rows, schema=SCHEMA))
    html = render_html(make_report(counts={"zombie_write": 1}), {"transaction_evidence": ev})
    assert EVIL not in html and "&lt;script&gt;" in html
    assert 'id="transactions"' in html  # transaction anomalies open the section


def test_the_page_shows_the_transaction_commands_of_the_remediation():
    report = make_report(counts={"hanging_transaction": 1})
    report["remediation"] = {"replay": {}, "dedupe": {}, "transaction_commands": [
        {"topic": "orders", "partition": 1, "pid": 9, "start_offset": 100,
         "find_hanging": find_hanging_command("orders", 1),
         "abort": abort_command("orders", 1, 100)}]}
    report["remediation"]["isolation_changes"] = [
        {"group_id": "ru", "setting": "isolation.level", "current": "read_uncommitted",
         "advised": "read_committed", "aborted_reads": 4}]
    html = render_html(report)
    block = html[html.index('<pre class="cmd" id="commands">'):]
    assert ("isolation.level=read_committed    # group ru, currently read_uncommitted: 4 "
            "aborted reads") in block
    shown = block[:block.index("</pre>")].replace("&lt;", "<").replace("&gt;", ">")
    assert abort_command("orders", 1, 100) in shown.splitlines()
    assert find_hanging_command("orders", 1) in shown


# ------------------------------------------------------------------ verdict and alerts


def test_verdict_fails_on_aborted_reads_and_zombies_warns_on_hanging_passes_late():
    cfg = AuditConfig()
    for name, verdict in (("aborted_read", "fail"), ("zombie_write", "fail"),
                          ("hanging_transaction", "warn"), ("late_delivery", "pass")):
        out = decide(make_report(counts={name: 2}), cfg)
        assert out["verdict"] == verdict, (name, out)
        if verdict != "pass":
            assert any(r.startswith(f"{name} = 2") for r in out["reasons"])
    cfg = AuditConfig(thresholds={"late_delivery": {"warn": 1, "fail": 5},
                                  "hanging_transaction": {"fail": 0}})
    assert decide(make_report(counts={"late_delivery": 2}), cfg)["reasons"] == [
        "late_delivery = 2 > warn threshold 1"]
    assert decide(make_report(counts={"hanging_transaction": 1}), cfg)["verdict"] == "fail"


def test_alerts_carry_the_transaction_anomalies_and_findings(caplog, table):
    report = report_of(table)
    report["verdict"] = decide(report, AuditConfig())
    report["narrative"] = build_narrative(report, Digest.from_table(table))
    with caplog.at_level(logging.INFO, logger=ALERT_LOGGER):
        LogNotifier().send(report, LINK)
    msg = caplog.records[-1].getMessage()
    assert "FAIL" in msg and "aborted_read = 2 (critical" in msg
    assert "aborted_read=2 (critical)" in msg and "zombie_write=1 (critical)" in msg
    assert "aborted record processed by" in msg


# ------------------------------------------------------------------ explain


def test_explain_names_a_copys_transaction_and_the_marker():
    at = datetime(2026, 11, 19, 10, tzinfo=UTC)
    story = composing.Story("t", "k", 1)
    story.copies = [{"ts": at, "producer_id": "7", "topic": "t", "partition": 0, "offset": 0,
                     "status": "aborted"}]
    (entry,) = story.timeline()
    assert entry["what"] == "written to the log" and entry["detail"] == "transaction aborted"
    text = printing._evidence_text({"anomaly": "aborted_read", "topic": "t", "partition": 0,
                              "offset": 0, "related_partition": 0, "related_offset": 1,
                              "ts": at, "related_ts": at, "member_id": "m1",
                              "detail": "pid 7 epoch 0; aborted by the marker at offset 1"})
    assert "aborting marker t-0@1" in text and "(written 2026-11-19 10:00:00.000)" in text
    assert "pid 7 epoch 0" in text
