"""One focused test per contract rule, fires and does not fire.

All cases run through ONE detection (module fixture) to keep the suite fast; each
case lives in its own topic, so a test only looks at its topic's rows.
"""

from __future__ import annotations

from collections import Counter

import pytest
from frames import END, START, Log
from rule_results import causes, states, units  # noqa: F401

from delivery_audit.anomalies import ANOMALY_NAMES
from delivery_audit.config import AuditConfig, DumpRange, GroupConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.detection import detect


def build_cases() -> Log:
    log = Log()
    for s in (1, 2, 3):
        log.message(s, topic="healthy")
        log.process(s, topic="healthy", group="g2", member="x1")

    # lost_acked: seq 2 acked at offset 2, inside the dump [1, 4), but not in the log
    log.message(1, topic="lost").message(3, topic="lost").send(2, topic="lost")
    # not lost: acked at offset 3, at the dump's end [1, 3) -> pending, not provably lost
    log.message(1, topic="beyond").message(2, topic="beyond").send(3, topic="beyond")

    # lost_unacked: every attempt failed and nothing reached the log
    log.message(1, topic="unacked").send(2, topic="unacked", status="failed", error="timeout")

    # written_despite_failure: the producer saw a timeout, the broker has the record
    log.send(1, topic="wdf", status="timeout").write(1, topic="wdf").process(1, topic="wdf")

    # seq_gap: judged 1, 2, 5, 8; 3 was sent yesterday, 6 is in the log from yesterday
    for s in (1, 2, 5, 8):
        log.message(s, topic="gap")
    log.send(3, topic="gap", at="2026-11-18T12:00:00Z", status="failed")
    log.write(6, topic="gap", at="2026-11-18T12:00:00Z").process(
        6, topic="gap", at="2026-11-18T12:00:01Z", done="2026-11-18T12:00:02Z")

    # seq_gap at the ends of the long range: 2^64 − 2 missing values, more than a long
    # holds, reported as two rows split at zero; a range across zero that fits stays whole
    log.message(-(2**63), offset=0, topic="gap-wide").message(2**63 - 1, offset=1,
                                                              topic="gap-wide")
    log.message(-3, offset=0, topic="gap-zero").message(3, offset=1, topic="gap-zero")

    # dup_write causes
    log.send(1, topic="dup-retry", status="timeout", attempt=1).send(
        1, topic="dup-retry", offset=2, attempt=2)
    log.write(1, topic="dup-retry", offset=1).write(1, topic="dup-retry", offset=2)
    log.process(1, topic="dup-retry").process(2, topic="dup-retry", at="10:01:00",
                                              done="10:01:01")
    log.send(1, topic="dup-idem", idempotent=True).write(1, topic="dup-idem").write(
        1, topic="dup-idem", offset=2).process(1, topic="dup-idem")
    log.send(1, topic="dup-unknown").write(1, topic="dup-unknown").write(
        1, topic="dup-unknown", offset=2).process(1, topic="dup-unknown")

    # redelivery causes, and a retry after failure that is not a redelivery
    log.message(1, topic="redeliver-member").process(
        1, topic="redeliver-member", member="m2", at="10:05:00", done="10:05:01")
    log.message(1, topic="redeliver-event").process(
        1, topic="redeliver-event", at="10:05:00", done="10:05:01")
    log.event("revoked", "10:04:00", topic="redeliver-event")
    log.message(1, topic="redeliver-other").process(
        1, topic="redeliver-other", at="10:05:00", done="10:05:01")
    log.send(1, topic="retry").write(1, topic="retry").process(
        1, topic="retry", outcome="failure").process(1, topic="retry", at="10:01:00",
                                                     done="10:01:01")

    # skipped (went past by a higher attempt / by a commit), pending (lag)
    log.message(1, topic="skip").send(2, topic="skip").write(2, topic="skip").message(
        3, topic="skip")
    log.send(1, topic="skip-commit").write(1, topic="skip-commit").event(
        "commit", "11:00:00", topic="skip-commit", offset=2)
    log.message(1, topic="lag").send(2, topic="lag").write(2, topic="lag").send(
        3, topic="lag").write(3, topic="lag")
    # an unresolved ledger row (no broker record at offset 5) still counts as going past
    log.send(1, topic="unresolved").write(1, topic="unresolved").process(
        5, topic="unresolved")

    # expired_unconsumed: acked at offset 1, below the stated log start 2; offset 0 was
    # consumed before retention, so it is delivered, not expired
    log.send(1, topic="expired", offset=1).message(2, topic="expired").message(
        3, topic="expired")
    log.send(0, topic="expired", offset=0).process(0, topic="expired", key="k", seq=0)

    # write_reorder: seq 3 landed before seq 2
    log.send(1, topic="wreorder").send(2, topic="wreorder", offset=3).send(
        3, topic="wreorder", offset=2)
    log.write(1, topic="wreorder").write(3, topic="wreorder", offset=2).write(
        2, topic="wreorder", offset=3)
    for o, at in ((1, "10:00:02"), (2, "10:00:04"), (3, "10:00:06")):
        log.process(o, topic="wreorder", at=at, done=at)

    # process_reorder: offset 2 processed before offset 1
    for s in (1, 2, 3):
        log.send(s, topic="preorder").write(s, topic="preorder")
    for o, at in ((2, "10:00:02"), (1, "10:00:05"), (3, "10:00:07")):
        log.process(o, topic="preorder", at=at, done=at)

    # key_partition_split: the key's second record went to partition 1
    log.message(1, topic="split").message(2, topic="split", partition=1, offset=0)

    # concurrent_processing: m2 overlaps m1 on partition 0; m3 overlaps only itself
    log.send(1, topic="zombie").write(1, topic="zombie")
    log.process(1, topic="zombie", member="m1", at="10:00:00", done="10:00:10")
    log.process(1, topic="zombie", member="m2", at="10:00:05", done="10:00:06")
    log.send(2, topic="zombie", partition=1, offset=0).write(2, topic="zombie", partition=1,
                                                            offset=0)
    log.process(0, topic="zombie", partition=1, member="m3", at="10:00:00", done="10:00:10")
    log.process(0, topic="zombie", partition=1, member="m3", at="10:00:05", done="10:00:06",
                outcome="failure")

    # not judged: first sent before the window (and duplicated), or inside the grace only
    log.send(1, topic="notjudged", at="2026-11-18T23:59:59Z").write(1, topic="notjudged").write(
        1, topic="notjudged", offset=2)
    log.send(3, topic="notjudged", at="2026-11-20T00:30:00Z", offset=3).write(
        3, topic="notjudged", at="2026-11-20T00:30:01Z")
    return log


# g consumes skip-commit only through its config (its ledger never shows that topic)
CONFIG = AuditConfig(dump_ranges=(DumpRange("expired", 0, 2, 4),),
                     groups=(GroupConfig("g", topics=("skip-commit",)), GroupConfig("g2")))


@pytest.fixture(scope="module")
def result(spark, tmp_path_factory):
    log = build_cases()
    detection = detect(spark, log.frames(spark), AuditWindow.of(START, END), CONFIG)
    path = str(tmp_path_factory.mktemp("rules") / "anomalies")
    written = detection.write_anomalies(path)
    rows = [r.asDict() for r in spark.read.parquet(path).collect()]
    states = [r.asDict() for r in detection.states.select(
        "group_id", "topic", "seq", "state", "successes").collect()]
    return {"rows": rows, "states": states, "judged": written.judged_by_topic,
            "rules": detection.rules}


def test_every_contract_anomaly_has_a_rule(result):
    assert sorted(result["rules"]) == sorted(ANOMALY_NAMES)


def test_healthy_topic_has_no_anomaly(result):
    assert units(result, "healthy") == Counter()
    assert states(result, "healthy") == {1: "delivered_once", 2: "delivered_once",
                                         3: "delivered_once"}
    assert states(result, "healthy", group="g2") == states(result, "healthy")


def test_group_judged_only_on_topics_it_consumes(result):
    assert {r["topic"] for r in result["states"] if r["group_id"] == "g2"} == {"healthy"}


def test_lost_acked_fires_inside_dump_range(result):
    assert units(result, "lost")["lost_acked"] == 1
    assert states(result, "lost")[2] == "lost_acked"


def test_acked_beyond_dump_end_is_pending_not_lost(result):
    assert units(result, "beyond")["lost_acked"] == 0
    assert states(result, "beyond")[3] == "pending"
    pending = [r for r in result["rows"] if r["topic"] == "beyond" and r["anomaly"] == "pending"]
    assert [r["cause"] for r in pending] == ["acked beyond the dump"]


def test_lost_unacked(result):
    u = units(result, "unacked")
    assert (u["lost_unacked"], u["lost_acked"]) == (1, 0)
    assert states(result, "unacked")[2] == "lost_unacked"


def test_written_despite_failure_is_not_a_duplicate(result):
    u = units(result, "wdf")
    assert (u["written_despite_failure"], u["dup_write"]) == (1, 0)
    assert units(result, "healthy")["written_despite_failure"] == 0


def test_seq_gap_counts_values_no_row_carries(result):
    assert units(result, "gap")["seq_gap"] == 2  # 4 and 7; 3 and 6 are carried
    gaps = sorted((r["seq"], r["seq_to"]) for r in result["rows"]
                  if r["topic"] == "gap" and r["anomaly"] == "seq_gap")
    assert gaps == [(4, 4), (7, 7)]


def test_seq_gap_wider_than_a_long(result):
    gaps = sorted((r["seq"], r["seq_to"], r["units"]) for r in result["rows"]
                  if r["topic"] == "gap-wide" and r["anomaly"] == "seq_gap")
    assert gaps == [(-(2**63) + 1, -1, 2**63 - 1), (0, 2**63 - 2, 2**63 - 1)]
    assert units(result, "gap-zero")["seq_gap"] == 5
    assert [(r["seq"], r["seq_to"]) for r in result["rows"]
            if r["topic"] == "gap-zero" and r["anomaly"] == "seq_gap"] == [(-2, 2)]


def test_dup_write_causes(result):
    assert causes(result, "dup_write", "dup-retry") == Counter({"producer_retry": 1})
    assert causes(result, "dup_write", "dup-idem") == Counter({"idempotence_breach": 1})
    assert causes(result, "dup_write", "dup-unknown") == Counter({"unknown": 1})
    assert units(result, "healthy")["dup_write"] == 0


def test_dup_write_processed_twice_is_dup_effect_not_redelivery(result):
    u = units(result, "dup-retry")
    assert (u["dup_effect"], u["redelivery"]) == (1, 0)
    assert states(result, "dup-retry")[1] == "delivered_duplicate"


def test_redelivery_causes(result):
    assert causes(result, "redelivery", "redeliver-member") == Counter({"rebalance": 1})
    assert causes(result, "redelivery", "redeliver-event") == Counter({"rebalance": 1})
    assert causes(result, "redelivery", "redeliver-other") == Counter({"other": 1})
    assert units(result, "redeliver-other")["dup_effect"] == 1


def test_retry_after_failure_is_not_a_redelivery(result):
    u = units(result, "retry")
    assert (u["retry_after_failure"], u["redelivery"], u["dup_effect"]) == (1, 0, 0)
    assert states(result, "retry")[1] == "delivered_once"


def test_skipped_when_group_went_past(result):
    assert units(result, "skip")["skipped"] == 1
    assert states(result, "skip")[2] == "skipped"
    assert units(result, "skip-commit")["skipped"] == 1
    assert units(result, "unresolved")["skipped"] == 1


def test_lag_is_pending_not_skipped(result):
    u = units(result, "lag")
    assert (u["pending"], u["skipped"]) == (2, 0)
    assert states(result, "lag") == {1: "delivered_once", 2: "pending", 3: "pending"}


def test_expired_unconsumed_below_log_start(result):
    assert units(result, "expired")["expired_unconsumed"] == 1
    assert states(result, "expired")[1] == "expired_unconsumed"
    assert states(result, "expired")[0] == "delivered_once"
    assert units(result, "expired")["lost_acked"] == 0


def test_write_reorder(result):
    hits = [r for r in result["rows"] if r["topic"] == "wreorder"
            and r["anomaly"] == "write_reorder"]
    assert [(r["seq"], r["offset"]) for r in hits] == [(2, 3)]
    assert units(result, "healthy")["write_reorder"] == 0
    assert units(result, "wreorder")["process_reorder"] == 0  # consumed in offset order


def test_process_reorder(result):
    hits = [r for r in result["rows"] if r["topic"] == "preorder"
            and r["anomaly"] == "process_reorder"]
    assert [r["offset"] for r in hits] == [1]
    assert units(result, "preorder")["write_reorder"] == 0


def test_key_partition_split(result):
    assert units(result, "split")["key_partition_split"] == 1
    assert units(result, "healthy")["key_partition_split"] == 0


def test_concurrent_processing_counts_both_sides_not_same_member(result):
    hits = [r for r in result["rows"] if r["topic"] == "zombie"
            and r["anomaly"] == "concurrent_processing"]
    assert sorted((r["partition"], r["member_id"]) for r in hits) == [(0, "m1"), (0, "m2")]
    assert causes(result, "redelivery", "zombie") == Counter({"rebalance": 1})


def test_messages_outside_the_window_are_not_judged(result):
    assert "notjudged" not in result["judged"]
    assert units(result, "notjudged") == Counter()
    assert states(result, "notjudged") == {}


def test_states_balance_per_group(result):
    per_group = Counter(r["group_id"] for r in result["states"])
    judged = result["judged"]
    assert per_group["g"] == sum(judged.values())
    assert per_group["g2"] == judged["healthy"]
