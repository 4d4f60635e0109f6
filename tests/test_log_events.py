# ruff: noqa: E501  (verbatim tool output and log lines)
"""Consumer client logs and broker GroupCoordinator logs → events (contract §6).

The Spring Kafka and coordinator lines are verbatim from the incident write-ups in
/work/shared/seeds (000 and 001)."""

from __future__ import annotations

import json
from pathlib import Path

from samples import JAVA_POLL, KAFKA_PYTHON, SERVER_LOG, SPRING

from delivery_audit.adapters import convert
from delivery_audit.adapters.client_log import partitions_of
from delivery_audit.config import AuditConfig


def _events(tmp_path, fmt, text, config=None, name="app.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out, counts = convert(fmt, "events", [str(path)], [name], tmp_path / "out",
                          config or AuditConfig())
    rows = [json.loads(x) for p in out for x in Path(p).read_text().splitlines()]
    return rows, counts


def test_partition_lists():
    assert partitions_of("[fans-push-9, fans-push-0]") == [("fans-push", 9), ("fans-push", 0)]
    assert partitions_of("my-topic-1, my-topic-12") == [("my-topic", 1), ("my-topic", 12)]
    assert partitions_of("{TopicPartition(topic='a', partition=3)} for group g") == [("a", 3)]
    assert partitions_of("[]") == []


def test_spring_kafka_seed_lines(tmp_path):
    cfg = AuditConfig.from_dict({"adapters": {"date": "2026-11-19"}})
    rows, counts = _events(tmp_path, "client-log", SPRING, cfg)
    assert all("__error" not in r for r in rows)
    got = [(r["event"], r["topic"], r["partition"], r["offset"]) for r in rows]
    assert got == [
        ("commit_failed", "fans-push", 9, 103226), ("commit_failed", "fans-push", 0, 135409),
        ("commit_failed", "fans-push", 1, 103491),
        ("revoked", "fans-push", 9, None), ("revoked", "fans-push", 0, None),
        ("revoked", "fans-push", 1, None),
        ("joined_group", None, None, None),
        ("assigned", "fans-push", 3, None), ("assigned", "fans-push", 4, None)]
    assert {(r["group_id"], r["member_id"]) for r in rows} == {("fans-push-service", "consumer-2")}
    assert rows[0]["ts"] == 1795086904278  # 2026-11-19T11:15:04.278Z
    assert rows[0]["detail"].startswith("Commit cannot be completed since the group has")
    assert rows[0]["__line"] == 1 and rows[3]["__line"] == 2
    assert rows[6]["generation"] == 12 and rows[7]["generation"] == 12
    # Spring's "partitions revoked:" echoes the client's revoke: written once
    assert counts["duplicate_log_events"] == 3
    assert counts["skipped_lines"] == 2  # one unrelated line, the echo (no row of its own)


def test_time_only_lines_without_a_day_are_error_rows(tmp_path):
    rows, _ = _events(tmp_path, "client-log", SPRING)
    bad = [r for r in rows if "__error" in r]
    assert len(bad) == 5 and "adapters.date" in bad[0]["__error"]
    assert bad[0]["__raw"].startswith("11:15:04.278")
    # the day may also come from the audit window
    path = tmp_path / "w.log"
    path.write_text(SPRING, encoding="utf-8")
    from delivery_audit.core.window import AuditWindow

    out, _ = convert("client-log", "events", [str(path)], ["w.log"], tmp_path / "o2",
                     AuditConfig(), window=AuditWindow.of("2026-11-19T00:00:00Z",
                                                          "2026-11-20T00:00:00Z"))
    first = json.loads(Path(out[0]).read_text().splitlines()[0])
    assert first["ts"] == 1795086904278


def test_java_poll_timeout_leave_and_exception_lines(tmp_path):
    rows, counts = _events(tmp_path, "client-log", JAVA_POLL)
    got = [(r["event"], r["member_id"], r["group_id"], r["partition"], r["detail"][:12]
            if r["detail"] else None) for r in rows if "__error" not in r]
    assert got == [
        ("left_group", "consumer-orders-1", "orders", None, "poll timeout"),
        ("lost", "consumer-orders-1", "orders", 0, None),
        ("lost", "consumer-orders-1", "orders", 1, None)]
    assert counts["duplicate_log_events"] == 1  # the LeaveGroup line repeats the leave
    # the CommitFailedException line continues the [main] line, and [main] had printed no
    # [Consumer … groupId=…] prefix before it: no group is guessed (issue 15)
    bad = [r for r in rows if "__error" in r]
    assert [r["__line"] for r in bad] == [4]
    assert "consumer group unknown" in bad[0]["__error"]
    assert bad[0]["__error"].endswith("set adapters.group")
    cfg = AuditConfig.from_dict({"adapters": {"group": "orders"}})
    rows, _ = _events(tmp_path, "client-log", JAVA_POLL, cfg)
    commit = [r for r in rows if r["event"] == "commit_failed"]
    assert [(r["__line"], r["group_id"], r["member_id"]) for r in commit] == [(4, "orders", "app")]
    assert commit[0]["ts"] == 1709287209000  # the previous line's time


def test_kafka_python_lines(tmp_path):
    rows, _ = _events(tmp_path, "client-log", KAFKA_PYTHON, name="worker-7.log")
    got = [(r["event"], r["group_id"], r["member_id"], r["partition"], r["detail"])
           for r in rows if "__error" not in r]
    assert got == [("revoked", "answer_action", "worker-7", 0, None),
                   ("revoked", "answer_action", "worker-7", 1, None),
                   ("assigned", "answer_action", "worker-7", 1, None)]
    # "Heartbeat poll expired, leaving group" names no group: not "the last group seen"
    assert [(r["__line"], "set adapters.group" in r["__error"]) for r in rows
            if "__error" in r] == [(2, True)]
    cfg = AuditConfig.from_dict({"adapters": {"group": "answer_action"}})
    rows, _ = _events(tmp_path, "client-log", KAFKA_PYTHON, cfg, name="worker-7.log")
    assert [(r["event"], r["detail"]) for r in rows if r["__line"] == 2] == [
        ("left_group", "poll timeout")]


def test_coordinator_seed_lines(tmp_path):
    rows, counts = _events(tmp_path, "coordinator-log", SERVER_LOG, name="server.log")
    got = [(r["event"], r["group_id"], r["member_id"], r["generation"]) for r in rows]
    assert got == [
        ("revoked", "answer_action", None, 741), ("revoked", "answer_action", None, 742),
        ("revoked", "answer_action", None, 742), ("assigned", "answer_action", None, 743),
        ("left_group", "answer_action", "kafka-python-1.3.5", None),
        ("revoked", "orders", None, 5), ("left_group", "orders", "consumer-orders-1", None),
        ("left_group", "orders", "consumer-orders-2", None)]
    assert rows[0]["ts"] == 1563376837266 and rows[0]["__line"] == 1
    assert rows[4]["detail"].startswith("session timeout")
    assert "3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f" in rows[4]["detail"]
    assert rows[6]["detail"].startswith("poll timeout")
    assert rows[7]["detail"].startswith("LeaveGroup: the consumer is being closed")
    assert counts["skipped_lines"] == 2
    keep = AuditConfig.from_dict({"adapters": {"member_uuid": "keep"}})
    rows, _ = _events(tmp_path, "coordinator-log", SERVER_LOG, keep, name="server.log")
    assert rows[4]["member_id"] == "kafka-python-1.3.5-3feb5deb-de82-40a4-8da9-1c6ec7d1ca4f"
