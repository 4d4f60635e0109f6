# ruff: noqa: E501  (verbatim tool output and log lines)
"""Adapters (contract §6): real tool output → canonical JSON Lines with file/line origins."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from samples import CONSOLE, CONSUMER, NEW_DUMP, OLD_DUMP, PRODUCER

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig


def _write(tmp: Path, name: str, text: str, gz: bool = False) -> str:
    path = tmp / name
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def _run(tmp_path, fmt, source, text, config=None, name="input.txt", gz=False):
    path = _write(tmp_path, name, text, gz)
    out, counts = convert(fmt, source, [path], [f"origin/{name}"], tmp_path / "out",
                          config or AuditConfig())
    rows = [json.loads(x) for p in out for x in Path(p).read_text().splitlines()]
    return rows, counts


def _ok(rows):
    return [r for r in rows if "__error" not in r]


def _bad(rows):
    return [r for r in rows if "__error" in r]


def test_dump_log_new_spelling(tmp_path):
    rows, counts = _run(tmp_path, "kafka-dump-log", "broker", NEW_DUMP, gz=True,
                        name="seg.txt.gz")
    ok = _ok(rows)
    assert [(r["topic"], r["partition"], r["offset"]) for r in ok] == [
        ("orders", 3, 0), ("orders", 3, 1), ("orders", 3, 2), ("orders", 3, 3), ("orders", 3, 4)]
    r0, r1, marker, r3, r4 = ok
    assert (r0["key"], r0["seq"], r0["timestamp"]) == ("k-1", 7, 1742739702864)
    assert (r0["pid"], r0["producer_epoch"], r0["batch_sequence"]) == (1, 0, 0)
    assert (r0["transactional"], r0["control"]) == (True, None)
    assert r1["key"] is None and r1["seq"] is None  # a text payload: unattributable
    # the COMMIT marker of the transactional batch is a control row (contract §9)
    assert (marker["control"], marker["pid"], marker["producer_epoch"]) == ("commit", 1, 0)
    assert (marker["key"], marker["seq"], marker["batch_sequence"]) == (None, None, None)
    assert marker["timestamp"] == 1742739702900 and marker["transactional"] is True
    assert (r3["key"], r3["seq"]) == ("x payload: y", 9)  # the key is cut by its keySize
    assert (r3["pid"], r3["producer_epoch"], r3["batch_sequence"]) == (7, 2, 5)
    assert r3["transactional"] is False
    assert r4["batch_sequence"] == 6  # baseSequence + (offset - baseOffset)
    assert counts["transaction_markers"] == 1 and "control_records" not in counts
    assert counts["skipped_lines"] == 5  # Dumping, Log starting offset, 3 batch lines
    bad = _bad(rows)
    assert [(b["__line"], b["__error"]) for b in bad] == [
        (11, "unrecognised dump-log line"), (12, "record line without a numeric offset")]
    assert bad[0]["__raw"] == "this is not a dump line"
    assert all(r["__file"] == "origin/seg.txt.gz" for r in rows)
    assert r0["__line"] == 4


def test_dump_log_old_spelling(tmp_path):
    rows, counts = _run(tmp_path, "kafka-dump-log", "broker", OLD_DUMP)
    ok, bad = _ok(rows), _bad(rows)
    assert len(ok) == 1 and (ok[0]["topic"], ok[0]["key"], ok[0]["seq"]) == ("legacy", "k1", 42)
    assert ok[0]["pid"] is None and ok[0]["batch_sequence"] is None
    assert len(bad) == 1 and "key not printed" in bad[0]["__error"]
    assert counts["skipped_lines"] == 3


def test_dump_log_without_dumping_line_needs_topic(tmp_path):
    text = "| offset: 5 CreateTime: 1 keySize: -1 valueSize: 1 payload: 5\n"
    rows, _ = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert "topic/partition unknown" in _bad(rows)[0]["__error"]
    cfg = AuditConfig.from_dict({"adapters": {"topic": "t", "partition": 2}})
    rows, _ = _run(tmp_path, "kafka-dump-log", "broker", text, cfg)
    assert (rows[0]["topic"], rows[0]["partition"], rows[0]["seq"]) == ("t", 2, 5)


def test_verifiable_producer(tmp_path):
    rows, counts = _run(tmp_path, "kafka-verifiable-producer", "sends", "\n".join(PRODUCER))
    ok, bad = _ok(rows), _bad(rows)
    assert [(r["seq"], r["status"], r["key"]) for r in ok] == [
        (0, "acked", None), (1, "acked", "k"), (2, "timeout", "k"), (3, "failed", None)]
    assert ok[0]["send_ts"] == 1646221252222 and ok[0]["offset"] == 0
    assert ok[2]["offset"] is None and "TimeoutException: Expiring" in ok[2]["error"]
    assert counts["skipped_lines"] == 3  # startup, tool_data, shutdown
    assert [(b["__line"], b["__error"][:14]) for b in bad] == [
        (7, "not valid JSON"), (8, "value 'abc' ca")]


def test_verifiable_consumer_ledger_and_events(tmp_path):
    cfg = AuditConfig.from_dict({"adapters": {"group": "vgroup"}})
    text = "\n".join(CONSUMER)
    ledger, lc = _run(tmp_path, "kafka-verifiable-consumer", "ledger", text, cfg,
                      name="consumer-a.jsonl")
    assert [(r["offset"], r["seq"], r["member_id"], r["group_id"], r["outcome"])
            for r in ledger] == [(0, 0, "consumer-a", "vgroup", "success"),
                                 (1, 1, "consumer-a", "vgroup", "success")]
    assert lc["skipped_lines"] == 8
    events, ec = _run(tmp_path, "kafka-verifiable-consumer", "events", text, cfg,
                      name="consumer-a.jsonl")
    assert [(r["event"], r["partition"], r["offset"]) for r in events] == [
        ("assigned", 0, None), ("assigned", 1, None), ("commit", 0, 2),
        ("commit_failed", 0, 2), ("revoked", 0, None)]
    assert events[3]["detail"] == "CommitFailedException: rebalanced"
    assert events[0]["__line"] == events[1]["__line"] == 2


def test_console_consumer(tmp_path):
    cfg = AuditConfig.from_dict({"adapters": {"topic": "orders",
                                              "seq": {"from": "header", "name": "seq"}}})
    rows, counts = _run(tmp_path, "kafka-console-consumer", "broker", CONSOLE, cfg)
    ok, bad = _ok(rows), _bad(rows)
    assert [(r["partition"], r["offset"], r["key"], r["seq"]) for r in ok] == [
        (0, 42, "key-1", None), (1, 7, None, None), (1, 8, "k", 19)]
    assert counts["skipped_lines"] == 1
    assert len(bad) == 1 and "Partition:" in bad[0]["__error"] and bad[0]["__line"] == 4
    # default seq rule: the payload is N or prefix.N
    rows, _ = _run(tmp_path, "kafka-console-consumer", "broker", CONSOLE,
                   AuditConfig.from_dict({"adapters": {"topic": "orders"}}))
    assert [r["seq"] for r in _ok(rows)] == [17, 18, None]
    # json and regex rules; the ledger form
    cfg = AuditConfig.from_dict({"adapters": {"topic": "orders", "group": "g", "member": "m",
                                              "seq": {"from": "json", "name": "n"}}})
    rows, _ = _run(tmp_path, "kafka-console-consumer", "ledger", CONSOLE, cfg)
    assert [(r["group_id"], r["member_id"], r["seq"], r["started_ts"]) for r in _ok(rows)][2] \
        == ("g", "m", 1, 1700000000002)
    cfg = AuditConfig.from_dict({"adapters": {"topic": "o",
                                              "seq": {"from": "regex", "pattern": r"\.(\d+)$"}}})
    rows, _ = _run(tmp_path, "kafka-console-consumer", "broker", CONSOLE, cfg)
    assert [r["seq"] for r in _ok(rows)] == [17, None, None]


def test_bad_seq_rule_is_a_config_error(tmp_path):
    with pytest.raises(ValueError, match="pattern"):
        _run(tmp_path, "kafka-console-consumer", "broker", CONSOLE,
             AuditConfig.from_dict({"adapters": {"seq": {"from": "regex"}}}))


@pytest.mark.audit  # a whole detection / ingest: not in make test-fast
def test_end_to_end_ingest_counts_and_quarantine_origin(spark, tmp_path):
    from delivery_audit.core.window import AuditWindow
    from delivery_audit.ingest import ingest, resolve

    dump = _write(tmp_path, "orders.dump.txt", NEW_DUMP)
    prod = _write(tmp_path, "producer.jsonl", "\n".join(PRODUCER) + "\n")
    window = AuditWindow.of("2022-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    cfg = AuditConfig()
    broker = ingest(spark, resolve("broker", [dump], fmt="kafka-dump-log"), window, cfg)
    c = broker.counts
    assert c["rows_read"] == c["rows_valid"] + c["rows_quarantined"] == 7
    assert (c["rows_valid"], c["rows_quarantined"], c["transaction_markers"]) == (5, 2, 1)
    q = {(r["file"], r["row"]): r["reason"] for r in broker.quarantine.collect()}
    assert q == {(dump, 11): "unrecognised dump-log line",
                 (dump, 12): "record line without a numeric offset"}
    sends = ingest(spark, resolve("sends", [prod], fmt="kafka-verifiable-producer"), window,
                   cfg)
    c = sends.counts
    assert c["rows_read"] == c["rows_valid"] + c["rows_quarantined"] == 6
    assert c["rows_quarantined"] == 2 and c["skipped_lines"] == 3
    raws = {r["row"]: r["raw"] for r in sends.quarantine.collect()}
    assert raws[7] == "not json at all"
