"""Transactions and delivery latency (contract §9, rules 20–25): one test per rule, fires
and does not fire; and the §9 inputs in every reader (JSON Lines, CSV, Parquet).

As in test_rules.py, every case runs through ONE detection (module fixture), each case in
its own topic (or group), so a test only looks at its own rows.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from frames import END, START, Log
from rule_results import causes, states, units

from delivery_audit.config import AuditConfig, GroupConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.detection import detect
from delivery_audit.report.summary import build_transactions

T7 = dict(transactional=True, pid=7, producer_epoch=0)


def build_cases() -> Log:
    log = Log()
    # rule 22: an aborted write, re-sent and committed: one copy, delivered once; the
    # group went past the aborted offset (and the markers) without skipping anything
    log.send(1, topic="resent", status="aborted", at="10:00:00")
    log.write(1, topic="resent", offset=0, **T7).marker(1, "abort", 7, topic="resent")
    log.send(1, topic="resent", offset=2, at="10:00:01")
    log.write(1, topic="resent", offset=2, **T7).marker(3, "commit", 7, topic="resent")
    log.process(2, topic="resent")

    # rule 23: an aborted attempt makes a duplicate's cause producer_retry
    log.send(1, topic="dup-aborted", status="aborted").send(1, topic="dup-aborted", offset=1)
    log.write(1, topic="dup-aborted", offset=1).write(1, topic="dup-aborted", offset=2)
    log.process(1, topic="dup-aborted")
    # rule 23: every attempt aborted, yet a committed copy exists
    log.send(1, topic="wdf-aborted", status="aborted").write(1, topic="wdf-aborted")
    log.process(1, topic="wdf-aborted")
    # rule 25: seen only in an aborted copy, never acked: lost_unacked (never committed)
    log.write(1, topic="only-aborted", offset=0, **T7).marker(1, "abort", 7,
                                                             topic="only-aborted")

    # rule 20/12: markers occupy offsets 1 and 3; the group reads 0, 2 and 4
    for seq, offset in ((1, 0), (2, 2), (3, 4)):
        log.send(seq, topic="markers", offset=offset)
        log.write(seq, topic="markers", offset=offset, **T7)
        log.process(offset, topic="markers")
    log.marker(1, "commit", 7, topic="markers").marker(3, "commit", 7, topic="markers")
    log.marker(5, "commit", 7, topic="markers")

    # hanging_transaction: open since 10:00 when the partition's last record is at 11:00;
    # a transaction open 30 s at its partition's last record is not hanging
    log.send(1, topic="hang-old", offset=0).write(1, topic="hang-old", offset=0,
                                                  at="10:00:00", **T7)
    log.send(2, topic="hang-old", offset=1).write(2, topic="hang-old", offset=1, at="10:00:01",
                                                  **T7)
    log.message(3, offset=2, topic="hang-old")
    log.broker[-1]["timestamp"] = "11:00:00"
    log.send(1, topic="hang-recent", offset=0).write(1, topic="hang-recent", offset=0,
                                                     at="10:59:30", **T7)
    log.message(2, offset=1, topic="hang-recent")
    log.broker[-1]["timestamp"] = "11:00:00"

    # zombie_write: epoch 0 lands after epoch 1 of the same pid (the marker of epoch 1
    # commits both); same-epoch writes and rows without an epoch are no zombies
    log.message(1, offset=0, topic="zombie")
    log.broker[-1].update(transactional=True, pid=9, producer_epoch=1)
    log.message(2, offset=1, topic="zombie")
    log.broker[-1].update(transactional=True, pid=9, producer_epoch=0)
    log.marker(2, "commit", 9, epoch=1, topic="zombie")
    for seq, epoch in ((1, 3), (2, 3), (3, None)):
        log.message(seq, offset=seq - 1, topic="same-epoch")
        log.broker[-1].update(transactional=True, pid=4, producer_epoch=epoch)
    log.marker(3, "commit", 4, epoch=3, topic="same-epoch")

    # aborted_read: the aborted record processed by groups of each isolation; the row's own
    # isolation wins over its group's config; a failed processing is no aborted read
    log.send(1, topic="aread", status="aborted").write(1, topic="aread", offset=0, **T7)
    log.marker(1, "abort", 7, topic="aread")
    log.message(2, offset=2, topic="aread")
    for group, isolation in (("ru", "read_uncommitted"), ("rc", None), ("unk", None),
                             ("own", "read_uncommitted")):
        extra = {"isolation": isolation} if isolation else {}
        log.process(0, topic="aread", group=group, **extra)
        log.process(2, topic="aread", group=group)
    log.process(0, topic="aread", group="fail", outcome="failure")
    log.process(2, topic="aread", group="fail")

    # late_delivery: sla 5 s for group "sla"; seq 1 processed after 10 s, seq 2 after 3 s;
    # group "nosla" processes late too, with no SLA
    log.send(1, topic="late").write(1, topic="late").send(2, topic="late").write(2, topic="late")
    for group in ("sla", "nosla"):
        log.process(1, topic="late", group=group, at="10:00:10", done="10:00:11")
        log.process(2, topic="late", group=group, at="10:00:03", done="10:00:04")
    return log


CONFIG = AuditConfig(groups=(
    GroupConfig("g", topics=("only-aborted",)), GroupConfig("ru"),
    GroupConfig("rc", {"isolation.level": "read_committed"}), GroupConfig("unk"),
    GroupConfig("own", {"isolation.level": "read_committed"}), GroupConfig("fail"),
    GroupConfig("sla", {"latency_sla_ms": 5000}), GroupConfig("nosla")))


@pytest.fixture(scope="module")
def result(spark, tmp_path_factory):
    from job_count import spark_jobs

    tmp = tmp_path_factory.mktemp("txn")
    frames = {}  # read from Parquet, as the audit stages them
    for name, df in build_cases().frames(spark).items():
        df.write.parquet(str(tmp / name))
        frames[name] = spark.read.parquet(str(tmp / name))
    detection = detect(spark, frames, AuditWindow.of(START, END), CONFIG)
    path = str(tmp / "anomalies")
    written, jobs = spark_jobs(spark, lambda: detection.write_anomalies(path))
    rows = [r.asDict() for r in spark.read.parquet(path).collect()]
    st = [r.asDict() for r in detection.states.select(
        "group_id", "topic", "seq", "state", "successes").collect()]
    return {"rows": rows, "states": st, "judged": written.judged_by_topic,
            "transactions": written.transactions, "jobs": jobs}


def test_transactions_cost_no_spark_job(result):
    """The transactions' exchange and aggregates run inside detection's one write."""
    assert result["jobs"] == 1


def rows_of(result, anomaly: str, topic: str) -> list[dict]:
    return [r for r in result["rows"] if r["anomaly"] == anomaly and r["topic"] == topic]


def test_aborted_copy_resent_and_committed_is_no_duplicate_nor_loss(result):
    u = units(result, "resent")
    assert u == Counter(), u
    assert states(result, "resent") == {1: "delivered_once"}


def test_an_aborted_attempt_is_a_retry_and_not_an_ack(result):
    assert causes(result, "dup_write", "dup-aborted") == Counter({"producer_retry": 1})
    assert units(result, "wdf-aborted")["written_despite_failure"] == 1
    assert units(result, "resent")["written_despite_failure"] == 0


def test_an_identity_only_in_aborted_copies_is_lost_unacked(result):
    assert result["judged"]["only-aborted"] == 1  # judged by its aborted copy's timestamp
    assert units(result, "only-aborted")["lost_unacked"] == 1
    assert states(result, "only-aborted") == {1: "lost_unacked"}


def test_passing_marker_offsets_is_not_skipping(result):
    assert units(result, "markers") == Counter()
    assert states(result, "markers") == {1: "delivered_once", 2: "delivered_once",
                                         3: "delivered_once"}


def test_hanging_transaction_fires_on_an_old_open_transaction_only(result):
    hits = rows_of(result, "hanging_transaction", "hang-old")
    assert [(r["partition"], r["offset"], r["related_offset"], r["attempts"]) for r in hits] \
        == [(0, 0, 1, 2)]
    assert "open for 3600000 ms" in hits[0]["detail"] and "pid 7" in hits[0]["detail"]
    assert rows_of(result, "hanging_transaction", "hang-recent") == []
    # open rows are copies: pending for a group that has not gone past them, here skipped
    # (the group processed a later offset)
    assert states(result, "hang-recent")[1] == "skipped"


def test_transactions_section(result):
    by_tp = {(t["topic"], t["partition"]): t for t in result["transactions"]}
    assert set(by_tp) >= {("resent", 0), ("markers", 0), ("hang-old", 0), ("zombie", 0)}
    resent = by_tp[("resent", 0)]
    assert (resent["committed_txns"], resent["aborted_txns"], resent["open_txns"]) == (1, 1, 0)
    assert (resent["committed_records"], resent["aborted_records"]) == (1, 1)
    report = build_transactions(result["transactions"], 60_000, (0, 2**62))
    old = next(t for t in report if t["topic"] == "hang-old")
    assert old["open"] == {"transactions": 1, "records": 2}
    assert old["last_stable_offset"] == 0 and old["oldest_open_age_ms"] == 3_600_000
    assert old["open_transactions"][0]["hanging"] is True
    recent = next(t for t in report if t["topic"] == "hang-recent")
    assert recent["oldest_open_age_ms"] == 30_000
    assert recent["open_transactions"][0]["hanging"] is False
    assert (old["hanging_transactions"], recent["hanging_transactions"]) == (1, 0)
    assert next(t for t in report if t["topic"] == "markers")["last_stable_offset"] is None


def test_zombie_write_fires_on_a_lower_epoch_not_on_the_same_epoch(result):
    hits = rows_of(result, "zombie_write", "zombie")
    assert [(r["seq"], r["offset"], r["related_offset"]) for r in hits] == [(2, 1, 0)]
    assert "epoch 0" in hits[0]["detail"] and "after epoch 1" in hits[0]["detail"]
    assert rows_of(result, "zombie_write", "same-epoch") == []


def test_aborted_read_cause_per_isolation(result):
    by_group = {r["group_id"]: r for r in rows_of(result, "aborted_read", "aread")}
    assert {g: r["cause"] for g, r in by_group.items()} == {
        "ru": "read_uncommitted", "rc": "read_committed", "unk": "unknown",
        "own": "read_uncommitted"}
    assert (by_group["ru"]["offset"], by_group["ru"]["related_offset"]) == (0, 1)
    assert "pid 7" in by_group["rc"]["detail"] and "marker at offset 1" in by_group["rc"]["detail"]
    # the aborted read is no delivery: the committed record alone is delivered once
    assert states(result, "aread", group="unk") == {1: "lost_unacked", 2: "delivered_once"}
    assert units(result, "aread", group="fail")["aborted_read"] == 0


def test_late_delivery_over_the_sla_only(result):
    late = rows_of(result, "late_delivery", "late")
    assert [(r["group_id"], r["seq"]) for r in late] == [("sla", 1)]
    assert "10000 ms" in late[0]["detail"] and "5000" in late[0]["detail"]
    assert units(result, "late", group="nosla")["late_delivery"] == 0


def test_no_late_delivery_without_an_sla(result):
    assert all(r["anomaly"] != "late_delivery" or r["group_id"] == "sla"
               for r in result["rows"])


# -- config ---------------------------------------------------------------------------

def test_config_transactions_and_sla():
    cfg = AuditConfig.from_dict({"latency_sla_ms": 2000, "groups": {
        "a": {"latency_sla_ms": 500, "isolation.level": "READ_COMMITTED"}, "b": {}}})
    assert (cfg.transaction_timeout_ms, cfg.sla_ms("a"), cfg.sla_ms("b")) == (60_000, 500, 2000)
    assert (cfg.isolation("a"), cfg.isolation("b")) == ("read_committed", None)
    assert AuditConfig().sla_ms("a") is None
    assert AuditConfig.from_dict({"transaction_timeout_ms": "900"}).transaction_timeout_ms == 900
    for bad, where in (({"transaction_timeout_ms": "soon"}, "transaction_timeout_ms"),
                       ({"latency_sla_ms": -1}, "latency_sla_ms"),
                       ({"groups": {"a": {"latency_sla_ms": True}}}, "groups.a.latency_sla_ms"),
                       ({"groups": {"a": {"isolation.level": "serializable"}}},
                        "groups.a.isolation.level")):
        with pytest.raises(ValueError, match=where.replace(".", r"\.")):
            AuditConfig.from_dict(bad)


# -- inputs: the §9 fields in every reader ----------------------------------------------

_BROKER_ROWS = [
    # (row, quarantine reason or None)
    (dict(offset=0, key="k", seq=1, pid=7, producer_epoch=0, transactional=True), None),
    (dict(offset=1, pid=7, producer_epoch=0, transactional=True, control="COMMIT"), None),
    (dict(offset=2, transactional=True, control="abort"), "control row without pid"),
    (dict(offset=3, key="k", seq=2, transactional=True), "transactional row without pid"),
    (dict(offset=4, key="k", seq=3, transactional=False), None),
    (dict(offset=5, pid=7, control="rollback"), "field 'control'"),
]


def _broker_files(tmp_path) -> list[str]:
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ["topic", "partition", "offset", "key", "seq", "timestamp", "pid",
             "producer_epoch", "transactional", "control"]
    out = []
    for fmt in ("jsonl", "csv", "parquet"):
        rows = [{"topic": f"t-{fmt}", "partition": 0, "timestamp": 1795082400000, **r}
                for r, _ in _BROKER_ROWS]
        path = tmp_path / f"broker.{fmt}"
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif fmt == "csv":
            with path.open("w", newline="") as fh:
                w = csv.DictWriter(fh, names)
                w.writeheader()
                for r in rows:
                    w.writerow({k: ("true" if v is True else "false" if v is False else v)
                                for k, v in r.items()})
        else:
            types = {"topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(),
                     "key": pa.string(), "seq": pa.int64(), "timestamp": pa.int64(),
                     "pid": pa.int64(), "producer_epoch": pa.int32(),
                     "transactional": pa.bool_(), "control": pa.string()}
            pq.write_table(pa.table({n: pa.array([r.get(n) for r in rows], types[n])
                                     for n in names}), str(path))
        out.append(str(path))
    return out


@pytest.mark.audit  # ingestion of files: not in make test-fast
def test_section9_fields_in_every_reader(spark, tmp_path):
    from delivery_audit.ingest import ingest_all, resolve

    sends = tmp_path / "sends.jsonl"
    sends.write_text(json.dumps(dict(send_ts="2026-11-19T10:00:00Z", topic="t", key="k",
                                     seq=1, status="ABORTED", transactional_id="tx-1")) + "\n")
    ledger = tmp_path / "ledger.csv"
    ledger.write_text("group_id,member_id,topic,partition,offset,started_ts,outcome,isolation\n"
                      "g,m,t,0,0,2026-11-19T10:00:00Z,success,Read_Uncommitted\n"
                      "g,m,t,0,1,2026-11-19T10:00:01Z,success,serializable\n")
    window = AuditWindow.of(START, END)
    got = ingest_all(spark, {"broker": resolve("broker", _broker_files(tmp_path)),
                             "sends": resolve("sends", [str(sends)]),
                             "ledger": resolve("ledger", [str(ledger)])},
                     window, AuditConfig(), tmp_path / "work").sources
    broker = got["broker"]
    quarantined = {(r["file"].rsplit(".", 1)[-1], int(r["row"])): r["reason"]
                   for r in broker.quarantine.collect()}
    for fmt in ("jsonl", "csv", "parquet"):
        for i, (row, reason) in enumerate(_BROKER_ROWS):
            line = i + 2 if fmt == "csv" else i + 1  # the CSV header is line 1
            got_reason = quarantined.get((fmt, line))
            if reason is None:
                assert got_reason is None, (fmt, row, got_reason)
            else:
                assert got_reason is not None and reason in got_reason, (fmt, row, got_reason)
    assert broker.counts["rows_read"] == 18 and broker.counts["rows_quarantined"] == 9
    valid = {(r["topic"], r["offset"]): r for r in broker.valid.collect()}
    assert valid[("t-csv", 1)]["control"] == "commit" and valid[("t-csv", 1)]["seq"] is None
    assert valid[("t-parquet", 0)]["transactional"] is True
    assert valid[("t-jsonl", 4)]["transactional"] is False
    s = got["sends"].valid.collect()
    assert [(r["status"], r["transactional_id"]) for r in s] == [("aborted", "tx-1")]
    led = got["ledger"]
    assert [r["isolation"] for r in led.valid.collect()] == ["read_uncommitted"]
    assert [r["reason"] for r in led.quarantine.collect()][0].startswith("field 'isolation'")
    # the GX input suites take the new values and columns: a marker has no key or seq of
    # its own, so it does not count as a record without one
    from delivery_audit.quality import validate_inputs

    suites = validate_inputs({s: {**i.counts, **i.metrics} for s, i in got.items()}, window,
                             AuditConfig())
    assert broker.metrics["key_nulls"] == 0 and broker.metrics["seq_nulls"] == 0
    assert suites["sends"]["success"], suites["sends"]
    assert suites["broker"]["failed"] == [f for f in suites["broker"]["failed"]
                                          if "quarantined_share" in json.dumps(f)]


# -- report.html ------------------------------------------------------------------------

def test_html_shows_transactions_and_the_sla_only_when_present():
    from report_fixtures import make_report

    from delivery_audit.report.html import render_html

    report = make_report()
    assert 'id="transactions"' not in render_html(report, {})
    rows = [{"topic": "orders", "partition": 3, "committed_txns": 2, "committed_records": 5,
             "aborted_txns": 1, "aborted_records": 2, "open_txns": 1, "open_records": 1,
             "last_ms": 1795086000000,
             "open": [{"first_offset": 41, "pid": 7, "epoch": 0, "last_offset": 41,
                       "first_ms": 1795082400000, "records": 1, "age_ms": 3_600_000}]}]
    report["transactions"] = build_transactions(rows, 60_000, (0, 2**62))
    report["latency_sla"] = {"g1": {"sla_ms": 5000, "late": 3}, "g2": {"sla_ms": None,
                                                                       "late": 0}}
    html = render_html(report, {})
    part = html[html.index('id="transactions"'):html.index('id="top-keys"')]
    assert "orders" in part and ">41<" in part and "60.0 min" in part
    assert "g1" in part and "g2" not in part
