"""The librdkafka-log adapter (adapters/librdkafka_log.py), wording by wording. No Spark.

Every line is librdkafka's own output: copied from a public issue (URL beside it), or
written by librdkafka v2.16.0 itself (the confluent-kafka 2.16.1 wheel, debug=cgrp) for a
two-member group on its mock cluster, in tests/data/librdkafka/ (how: its README). The C
source of each wording is noted (file, facility, librdkafka versions).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delivery_audit.adapters import ADAPTERS, convert
from delivery_audit.adapters.librdkafka_log import claims, parse
from delivery_audit.config import AuditConfig

DATA = Path(__file__).parent / "data" / "librdkafka"


def _run(tmp_path: Path, text: str, options: dict | None = None, name: str = "host-a.log",
         fmt: str = "librdkafka-log"):
    """(rows, error rows, extra counts, line account) of ``text`` as one file ``name``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    accounts: list = []
    written, counts = convert(fmt, "events", [str(path)], [name], tmp_path / "out",
                              AuditConfig.from_dict({"adapters": options or {}}),
                              accounts=accounts)
    rows = [json.loads(line) for line in open(written[0], encoding="utf-8")]
    account = accounts[0]
    assert account.unaccounted == 0
    return ([r for r in rows if "__error" not in r], [r for r in rows if "__error" in r],
            counts, account)


def _events(rows) -> list[tuple]:
    return [(r["__line"], r["event"], r["topic"], r["partition"]) for r in rows]


# cl-rdkafka #57 (librdkafka 1.3): rdkafka_cgrp.c rd_kafka_cgrp_max_poll_interval_check_tmr_cb,
# facility MAXPOLL, the same wording since 1.0
MAXPOLL = ("%4|1583796667.962|MAXPOLL|rdkafka#consumer-1| [thrd:main]: Application maximum poll "
           "interval (300000ms) exceeded by 226ms (adjust max.poll.interval.ms for long-running "
           "message processing): leaving group")


def test_maxpoll_is_a_poll_interval_leave_at_librdkafkas_epoch_time(tmp_path):
    rows, errors, _, _ = _run(tmp_path, MAXPOLL + "\n", {"group": "g"})
    assert errors == []
    (r,) = rows
    assert (r["event"], r["group_id"], r["member_id"], r["ts"]) == (
        "left_group", "g", "host-a", 1583796667962)
    assert r["detail"] == ("poll interval exceeded (max.poll.interval.ms 300000, exceeded by "
                           "226 ms); instance rdkafka#consumer-1")


def test_maxpoll_without_group_is_an_error_naming_the_option(tmp_path):
    rows, errors, _, _ = _run(tmp_path, MAXPOLL + "\n")
    assert rows == []
    assert "set adapters.group" in errors[0]["__error"]


def test_the_consumer_error_printed_later_is_the_same_leave(tmp_path):
    # the .NET application's print of ERR__MAX_POLL_EXCEEDED (librdkafka #3732): its text
    # "Local: Maximum application poll interval (max.poll.interval.ms) exceeded" (rdkafka.c)
    app = ("2022-02-15 02:30:54,356 [1] INFO xxx.TDS.Formator.Executor.Program - Error occurred:"
           "Local: Maximum application poll interval (max.poll.interval.ms) exceeded")
    rows, _, _, account = _run(tmp_path, MAXPOLL + "\n" + app + "\n", {"group": "g"})
    assert _events(rows) == [(1, "left_group", None, None)]
    assert account.recognised == 2
    alone, _, _, _ = _run(tmp_path, app + "\n", {"group": "g"}, name="b.log")
    assert [(r["ts"], r["detail"]) for r in alone] == [(1644892254356, "poll interval exceeded")]


def test_a_group_line_whose_reason_quotes_maxpoll_is_not_a_second_leave():
    # written by librdkafka 2.16.0 (tests/data/librdkafka/mock-2.16-python-logger.log, line 220)
    line = ('2026-11-26 06:00:53,972 DEBUG kafka - REBALANCE [rdkafka#consumer-3] [thrd:main]: '
            'Group "billing" initiating rebalance (EAGER) in state up (join-state steady) with 1 '
            'assigned partition(s) (lost): max.poll.interval.ms exceeded')
    p = parse(line)
    assert (p.fac, p.name) == ("REBALANCE", "rdkafka#consumer-3")
    assert p.msg.startswith('Group "billing" initiating rebalance')


# confluent-kafka-go #638 (librdkafka 1.6): rdkafka_cgrp.c rd_kafka_cgrp_session_timeout_check,
# facility SESSTMOUT (1.5+); the instance name carries the client.id
SESSTMOUT = ("%4|1618971141.824|SESSTMOUT|d0f13160-2ad1-4437-929c-fd79c1b73095#consumer-2| "
             "[thrd:main]: Consumer group session timed out (in join-state steady) after 10263 ms "
             "without a successful response from the group coordinator (broker 2, last error was "
             "Local: Broker transport failure): revoking assignment and rejoining group")


def test_session_timeout(tmp_path):
    rows, _, _, _ = _run(tmp_path, SESSTMOUT + "\n", {"group": "g"})
    (r,) = rows
    assert r["event"] == "left_group" and r["ts"] == 1618971141824
    assert r["detail"].startswith("session timeout (no coordinator response for 10263 ms; "
                                  "broker 2, last error was Local: Broker transport failure)")
    assert r["detail"].endswith("instance d0f13160-2ad1-4437-929c-fd79c1b73095#consumer-2")


def test_maxpoll_then_leave_is_one_leave(tmp_path):
    # python #552 (librdkafka 1.5): MAXPOLL and LEAVE (rdkafka_cgrp.c rd_kafka_cgrp_leave,
    # "leave (in state S)") of the same leave
    text = ("%4|1610634034.520|MAXPOLL|rdkafka#consumer-1| [thrd:main]: Application maximum poll "
            "interval (6000ms) exceeded by 55ms (adjust max.poll.interval.ms for long-running "
            "message processing): leaving group\n"
            '%7|1610634034.520|LEAVE|rdkafka#consumer-1| [thrd:main]: Group "my_consumer_unique_id"'
            ": leave (in state up)\n")
    rows, _, _, account = _run(tmp_path, text, {"group": "my_consumer_unique_id"})
    assert _events(rows) == [(1, "left_group", None, None)]
    assert account.recognised == 2


def test_a_leave_after_an_unplaced_maxpoll_keeps_its_cause(tmp_path):
    # the same two lines without adapters.group: MAXPOLL names no group (an error row), the
    # LEAVE line does: the leave is written once, with its cause
    text = ("%4|1610634034.520|MAXPOLL|rdkafka#consumer-1| [thrd:main]: Application maximum poll "
            "interval (6000ms) exceeded by 55ms (adjust max.poll.interval.ms for long-running "
            "message processing): leaving group\n"
            '%7|1610634034.520|LEAVE|rdkafka#consumer-1| [thrd:main]: Group "my_consumer_unique_id"'
            ": leave (in state up)\n")
    rows, errors, _, _ = _run(tmp_path, text)
    assert [e["__line"] for e in errors] == [1]
    (r,) = rows
    assert r["group_id"] == "my_consumer_unique_id"
    assert r["detail"] == ("poll interval exceeded (max.poll.interval.ms 6000, exceeded by "
                           "55 ms); LeaveGroup; instance rdkafka#consumer-1")


def test_two_session_timeouts_are_two_leaves(tmp_path):
    second = SESSTMOUT.replace("1618971141.824", "1619023533.125")
    rows, _, _, _ = _run(tmp_path, SESSTMOUT + "\n" + second + "\n", {"group": "g"})
    assert [r["ts"] for r in rows] == [1618971141824, 1619023533125]


def test_delegated_revoke_of_librdkafka_0_9_without_partitions(tmp_path):
    # librdkafka #568 (0.9.0, the examples' "RDKAFKA-7-FAC: name:" layout, no thread tag):
    # rdkafka_cgrp.c rd_kafka_rebalance_op, facility ASSIGN
    text = ('1456576794.650 RDKAFKA-7-ASSIGN: rdkafka#consumer-1: Group "g1": delegating revoke '
            "of 1 partition(s) to application rebalance callback\n")
    rows, _, _, _ = _run(tmp_path, text)
    (r,) = rows
    assert (r["group_id"], r["event"], r["topic"], r["ts"]) == ("g1", "revoked", None,
                                                                1456576794650)
    assert r["detail"] == "revoke of 1 partition(s); instance rdkafka#consumer-1"


def test_new_assignment_without_a_rebalance_callback(tmp_path):
    # librdkafka #5345 (2.13.0, manual assign(), no instance name): rdkafka_cgrp.c
    # rd_kafka_cgrp_assign, facility ASSIGN; the partitions are not listed
    text = ('%7|1770120035.565|ASSIGN| [thrd:main]: Group "7b6d2f90-8022-430e-927b-461861fdb95f": '
            "new assignment of 128 partition(s) in join-state init\n"
            "%7|1770120035.565|CLEARASSIGN| [thrd:main]: No current assignment to clear\n")
    rows, _, _, account = _run(tmp_path, text)
    (r,) = rows
    assert (r["event"], r["topic"], r["detail"]) == ("assigned", None, "assign of 128 partition(s)")
    assert account.skipped == {"unrelated_log_line": 1}


def test_a_rebalance_with_partition_lists_written_by_librdkafka_2_16(tmp_path):
    """confluent-kafka-python's logger ("FAC [instance] [thrd:main]: …" after asctime): the
    ASSIGNMENT lists give the partitions of each delegated assign, a revoke takes the
    member's current assignment, MAXPOLL then LOST then its revoke, the close's LEAVE."""
    path = DATA / "mock-2.16-python-logger.log"
    rows, errors, _, account = _run(tmp_path, path.read_text(encoding="utf-8"),
                                    {"group": "billing"}, name=path.name)
    assert errors == []
    assert _events(rows) == [
        (60, "assigned", "orders", 0), (60, "assigned", "orders", 1),
        (112, "revoked", "orders", 0), (112, "revoked", "orders", 1),
        (169, "assigned", "orders", 0),
        (217, "left_group", None, None),
        (221, "lost", "orders", 0),
        (275, "assigned", "orders", 1),
        (322, "revoked", "orders", 1),
        (364, "left_group", None, None),
    ]
    assert {r["member_id"] for r in rows} == {"mock-2.16-python-logger"}
    assert rows[0]["ts"] == 1795672839803  # 2026-11-26 06:00:39,803 (UTC)
    assert rows[5]["detail"].startswith("poll interval exceeded (max.poll.interval.ms 6000, "
                                        "exceeded by 92 ms)")
    assert rows[-1]["detail"] == "LeaveGroup; instance rdkafka#consumer-3"
    # the DUMP_ALL / GRPASSIGNMENT lists and the application's completing assign() give nothing
    assert account.rows == 10 and account.lines == 372


def test_client_log_hands_librdkafka_lines_over(tmp_path):
    """librdkafka's stderr layout (%7|epoch|FAC|instance| …) given as client-log: the same
    rows as the librdkafka-log format."""
    text = (DATA / "mock-2.16-stderr.log").read_text(encoding="utf-8")
    direct, _, _, _ = _run(tmp_path / "a", text, {"group": "billing"})
    handed, _, _, account = _run(tmp_path / "b", text, {"group": "billing"}, fmt="client-log")
    assert _events(handed) == _events(direct) == [
        (52, "assigned", "orders", 1), (104, "revoked", "orders", 1),
        (157, "assigned", "orders", 0), (204, "revoked", "orders", 0),
        (245, "left_group", None, None)]
    assert [r["ts"] for r in handed] == [r["ts"] for r in direct]
    assert account.lines == 262


# messenger-kafka #28 (librdkafka 1.5): rdkafka_cgrp.c rd_kafka_cgrp_op_handle_OffsetCommit,
# facility COMMITFAIL; the list is rd_kafka_topic_partition_list_str's "t[p]@offset(err)"
COMMITFAIL = ("%4|1606832093.118|COMMITFAIL|rdkafka#consumer-10| [thrd:main]: Offset commit "
              "(manual) failed for 1/1 partition(s): Broker: Unknown member: "
              "messages[0]@3(Broker: Unknown member)")


def test_commit_failed_per_listed_partition(tmp_path):
    rows, _, _, _ = _run(tmp_path, COMMITFAIL + "\n", {"group": "messages-consumer"})
    (r,) = rows
    assert (r["event"], r["topic"], r["partition"], r["offset"]) == ("commit_failed", "messages",
                                                                    0, 3)
    assert r["detail"].startswith("offset commit (manual) failed: Broker: Unknown member")


def test_commit_failed_lists_of_librdkafka_2_4_carry_a_topic_id(tmp_path):
    # rdkafka_partition.c rd_kafka_topic_partition_list_str since 2.4.0 (KIP-848, #4634):
    # "%s(%s)[%d]@%lld(%s)" of topic, topic id ("(null)" when unknown), partition, offset,
    # error; the COMMITFAIL wording (rdkafka_cgrp.c) with "in join-state" (1.6+)
    line = ("%4|1717000000.250|COMMITFAIL|rdkafka#consumer-1| [thrd:main]: Offset commit "
            "(manual) failed for 2/2 partition(s) in join-state wait-unassign-to-complete: "
            "Broker: Unknown member: orders((null))[0]@17(Broker: Unknown member), "
            "orders(kZyy6bnJRm2pd2dTlbV2Rg)[1]@4(Broker: Unknown member)")
    rows, _, _, _ = _run(tmp_path, line + "\n", {"group": "g"})
    assert [(r["topic"], r["partition"], r["offset"]) for r in rows] == [("orders", 0, 17),
                                                                         ("orders", 1, 4)]


def test_node_rdkafka_event_log_objects(tmp_path):
    # node-rdkafka #832: the application's JSON line around an event.log object (its time in
    # "timestamp"); node-rdkafka #823: a COMMITFAIL event.log object logged alone, without
    # time, which takes the time of the line before it
    app = ('{"timestamp":"2020-08-18 05:30:01.71","title":"ERROR","file":"index.js","line":135,'
           '"data":{"message":"Kafka consumer group event log: xxx","data":{"severity":7,'
           '"fac":"FETCH","message":"[thrd:sasl_ssl://xxx]: sasl_ssl://xxx: Fetch topic xxx [5] '
           'at offset 19476 (v10)"}}}')
    bare = ('{"severity":4,"fac":"COMMITFAIL","message":"[thrd:main]: Offset commit (cgrp auto '
            'commit timer) failed for 0/1 partition(s): test[0]@8747(Broker: Unknown member)"}')
    p = parse(app)
    assert (p.fac, p.iso) == ("FETCH", "2020-08-18 05:30:01.71")
    assert p.msg == "sasl_ssl://xxx: Fetch topic xxx [5] at offset 19476 (v10)"
    rows, _, _, account = _run(tmp_path, app + "\n" + bare + "\n", {"group": "consumer-group-1"})
    (r,) = rows
    assert (r["__line"], r["ts"], r["topic"], r["partition"], r["offset"]) == (
        2, 1597728601710, "test", 0, 8747)
    assert r["detail"] == ("offset commit (cgrp auto commit timer) failed: Broker: Unknown "
                           "member")
    assert account.skipped == {"unrelated_log_line": 1}


def test_go_log_event_layout():
    # confluent-kafka-go kafka/log.go LogEvent.String(): "[%v][%s][%s][%d]%s" of the RFC 3339
    # time, instance, tag, level and message (the message of cl-rdkafka #57), printed with
    # log.Printf("%s\n", le) as in confluent-kafka-go #777 (no public paste of this layout
    # with a group event was found: built from the binding's format string)
    line = ("2020/03/10 00:11:07 [2020-03-09T23:31:07Z][rdkafka#consumer-1][MAXPOLL][4]"
            "[thrd:main]: Application maximum poll interval (300000ms) exceeded by 226ms (adjust "
            "max.poll.interval.ms for long-running message processing): leaving group")
    p = parse(line)
    assert (p.fac, p.name, p.iso) == ("MAXPOLL", "rdkafka#consumer-1", "2020-03-09T23:31:07Z")
    assert p.msg.startswith("Application maximum poll interval")
    assert claims(line)


def test_dotnet_handler_line_without_time_takes_none(tmp_path):
    # confluent-kafka-dotnet #1220 (librdkafka 1.3): a LogHandler printing Handle/Level/Message
    line = ('Handle: rdkafka#consumer-1\tLevel: Debug\tMessage:[thrd:main]: Group "myGroup" '
            "changed state init -> query-coord (v1, join-state init)")
    p = parse(line)
    assert p.name == "rdkafka#consumer-1" and p.msg.startswith('Group "myGroup" changed state')
    rows, errors, _, account = _run(tmp_path, line + "\n")
    assert rows == [] and errors == [] and account.recognised == 1


def test_members_stay_distinct_across_files_and_instances(tmp_path):
    # confluent-kafka-go #654 (librdkafka 1.7): four consumers of one process, each with its
    # own client.id; every file of rdkafka#consumer-1 is its own member
    text = (Path(__file__).parent / "data" / "wild" / "librdkafka" /
            "confluent-kafka-go-654-sesstmout-many-clients.log").read_text(encoding="utf-8")
    rows, _, _, _ = _run(tmp_path, text, {"group": "g"}, name="node-7.log")
    assert [r["member_id"] for r in rows] == [
        "node-7", "node-7/AE_RES_rslinmnmeftlotvpha_1#consumer-13",
        "node-7/NSE_FOrslinmnmeftlotvpha_1#consumer-11",
        "node-7/NSE_FOrslinmnmeftlotvpha_2#consumer-2"]
    a, _, _, _ = _run(tmp_path / "a", MAXPOLL + "\n", {"group": "g"}, name="worker-a.log")
    b, _, _, _ = _run(tmp_path / "b", MAXPOLL + "\n", {"group": "g"}, name="worker-b.log")
    assert (a[0]["member_id"], b[0]["member_id"]) == ("worker-a", "worker-b")


def test_a_line_naming_no_group_never_takes_the_last_group_seen(tmp_path):
    text = ('%7|1610634033.335|HEARTBEAT|rdkafka#consumer-1| [thrd:main]: Group "other" heartbeat '
            "error response in state up (join-state steady, 1 partition(s) assigned): Broker: "
            "Group rebalance in progress\n" + MAXPOLL + "\n")
    rows, errors, _, _ = _run(tmp_path, text)
    assert rows == [] and [e["__line"] for e in errors] == [2]


@pytest.mark.parametrize(("line", "kind"), [
    # librdkafka #3928 (1.9): rdkafka_txnmgr.c, facility TXNERR
    ("%1|1657854002.147|TXNERR|rdkafka#producer-3| [thrd:main]: Fatal transaction error: Producer "
     "fenced by newer instance: Failed to acquire transactional PID from broker TxnCoordinator/3: "
     "Broker: There is a newer producer with the same transactionalId which fences the current "
     "one (_FENCED)", "producer_fencing"),
    # librdkafka #3003 (1.5): INVALID_PRODUCER_EPOCH through an application's logger
    ("19:08:27.215617745 [Error ] [KAFKA_PRODUCER] [anonymous] [0] [FATAL] [thrd:main]: Fatal "
     "error: Broker: Producer attempted an operation with an old epoch: Failed to add offsets to "
     "transaction: Broker: Producer attempted an operation with an old epoch", "producer_fencing"),
    # apache/kafka #3343: the Java producer's exception line
    ("org.apache.kafka.common.errors.ProducerFencedException: Producer attempted an operation "
     "with an old epoch. Either there is a newer producer with the same transactionalId, or the "
     "producer's transaction has been expired by the broker.", "producer_fencing"),
    # rdkafka_txnmgr.c rd_kafka_txn_complete (1.4+), facility TXNCOMPLETE, debug=eos
    ("%7|1646583429.877|TXNCOMPLETE|rdkafka#producer-5| [thrd:main]: Transaction successfully "
     "aborted", "transaction_abort"),
])
def test_fencing_and_abort_lines_are_counted_not_events(tmp_path, line, kind):
    for fmt in ("librdkafka-log", "client-log"):
        rows, errors, counts, account = _run(tmp_path / fmt, line + "\n", {"group": "g"}, fmt=fmt)
        assert rows == [] and errors == []
        assert account.skipped == {kind: 1}
        assert counts[f"{kind}_lines"] == 1


def test_registered_as_a_format():
    from delivery_audit.ingest.files import ADAPTER_FORMATS

    assert ADAPTERS["librdkafka-log"].SOURCES == ("events",)
    assert ADAPTER_FORMATS["librdkafka-log"] == ("events",)


def test_a_year_less_time_needs_a_day(tmp_path):
    # rust-rdkafka #433: tracing's "Jan 18 00:47:06.807" has no year
    line = ("  Jan 18 00:47:06.807  WARN librdkafka: librdkafka: MAXPOLL [thrd:main]: Application "
            "maximum poll interval (300000ms) exceeded by 399ms (adjust max.poll.interval.ms for "
            "long-running message processing): leaving group")
    _, errors, _, _ = _run(tmp_path, line + "\n", {"group": "g"})
    assert "set adapters.date" in errors[0]["__error"]
    rows, _, _, _ = _run(tmp_path / "d", line + "\n", {"group": "g", "date": "2022-03-01"})
    assert rows[0]["ts"] == 1642466826807  # 2022-01-18T00:47:06.807Z: the year of the option
