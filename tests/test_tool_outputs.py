# ruff: noqa: E501  (tool output lines)
"""Kafka's tools' output as people have it (issue 15) and transaction markers (contract §9):
kafka-verifiable-consumer without --verbose, kafka-verifiable-producer's tool_data totals,
kafka-console-consumer's summary and 4.x fields, kafka-dump-log of Kafka 1.0 to 4.x. No Spark.

Lines marked "Kafka x.y" follow the wording of that version's tool source
(VerifiableConsumer.java, VerifiableProducer.java, DefaultMessageFormatter.java,
DumpLogSegments.scala); the verbatim real pastes are the samples of tests/data/wild/tools/."""

from __future__ import annotations

import json
from pathlib import Path

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig


def _run(tmp_path: Path, fmt: str, source: str, text: str, options: dict | None = None,
         name: str = "input.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    accounts: list = []
    out, counts = convert(fmt, source, [str(path)], [name], tmp_path / "out",
                          AuditConfig.from_dict({"adapters": options or {}}), accounts=accounts)
    rows = [json.loads(x) for p in out for x in Path(p).read_text().splitlines()]
    account = accounts[0]
    assert account.unaccounted == 0
    assert account.recognised + sum(account.skipped.values()) + account.error_lines \
        == account.lines
    return [r for r in rows if "__error" not in r], [r for r in rows if "__error" in r], \
        counts, account


# ------------------------------------------------------------ kafka-verifiable-consumer

QUIET_CONSUMER = """\
{"timestamp":1656870242436,"name":"startup_complete"}
{"timestamp":1656870242772,"name":"partitions_assigned","partitions":[{"topic":"verify-test","partition":0}]}
{"timestamp":1656870242861,"name":"records_consumed","count":3,"partitions":[{"topic":"verify-test","partition":0,"count":3,"minOffset":0,"maxOffset":2}]}
{"timestamp":1656870242869,"name":"offsets_committed","offsets":[{"topic":"verify-test","partition":0,"offset":3}],"success":true}
{"timestamp":1656870243000,"name":"records_consumed","count":3,"partitions":[{"topic":"verify-test","partition":0,"count":2,"minOffset":3,"maxOffset":5},{"topic":"verify-test","partition":1,"count":1,"minOffset":7,"maxOffset":7}]}
{"timestamp":1656870243100,"name":"records_consumed","count":0,"partitions":[]}
^C{"timestamp":1656870251627,"name":"partitions_revoked","partitions":[{"topic":"verify-test","partition":0}]}
{"timestamp":1656870251654,"name":"shutdown_complete"}
"""


def test_records_consumed_expanded_to_offsets(tmp_path):
    ok, bad, counts, account = _run(tmp_path, "kafka-verifiable-consumer", "ledger",
                                     QUIET_CONSUMER, {"group": "test-group"}, "c1.jsonl")
    assert bad == []
    assert [(r["partition"], r["offset"]) for r in ok] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 7)]
    assert {(r["key"], r["seq"], r["outcome"], r["group_id"], r["member_id"]) for r in ok} \
        == {(None, None, "success", "test-group", "c1")}
    assert [r["started_ts"] for r in ok][:4] == [1656870242861] * 3 + [1656870243000]
    assert [r["__line"] for r in ok] == [3, 3, 3, 5, 5, 5, 5]
    assert counts["expanded_offsets"] == 7
    # 2 records over offsets 3..5: one offset of the range was not read (a marker, a
    # compacted or aborted record): said, not trusted silently
    assert (counts["records_consumed_gaps"], counts["records_consumed_gap_offsets"]) == (1, 1)
    assert account.skipped == {"tool_event:startup_complete": 1, "tool_event:partitions_assigned": 1,
                               "tool_event:offsets_committed": 1, "empty:records_consumed": 1,
                               "tool_event:partitions_revoked": 1, "tool_event:shutdown_complete": 1}


def test_records_consumed_events_and_interrupt(tmp_path):
    ok, bad, _, account = _run(tmp_path, "kafka-verifiable-consumer", "events", QUIET_CONSUMER)
    assert bad == []
    assert [(r["event"], r["partition"], r["offset"], r["__line"]) for r in ok] == [
        ("assigned", 0, None, 2), ("commit", 0, 3, 4), ("revoked", 0, None, 7)]
    assert account.skipped["tool_event:records_consumed"] == 3


def test_verbose_summary_not_expanded_twice(tmp_path):
    text = "\n".join([
        '{"timestamp":1,"name":"record_data","key":null,"value":"0","topic":"t","partition":0,"offset":0}',
        '{"timestamp":1,"name":"record_data","key":null,"value":"1","topic":"t","partition":0,"offset":1}',
        '{"timestamp":2,"name":"records_consumed","count":2,"partitions":[{"topic":"t","partition":0,"count":2,"minOffset":0,"maxOffset":1}]}',
        '{"timestamp":3,"name":"records_consumed","count":1,"partitions":[{"topic":"t","partition":0,"count":1,"minOffset":2,"maxOffset":2}]}',
    ])
    ok, _, counts, account = _run(tmp_path, "kafka-verifiable-consumer", "ledger", text)
    # the first summary repeats the two record_data rows; the second has none printed
    assert [(r["offset"], r["seq"]) for r in ok] == [(0, 0), (1, 1), (2, None)]
    assert account.skipped == {"tool_summary": 1} and counts["expanded_offsets"] == 1


def test_records_consumed_impossible_counts_are_errors(tmp_path):
    text = "\n".join([
        '{"timestamp":1,"name":"records_consumed","count":5,"partitions":[{"topic":"t","partition":0,"count":5,"minOffset":0,"maxOffset":1}]}',
        '{"timestamp":1,"name":"records_consumed","count":2,"partitions":[{"topic":"t","partition":0,"count":2,"minOffset":0,"maxOffset":9000000}]}',
        '{"timestamp":1,"name":"records_consumed","count":2,"partitions":[{"topic":"t","partition":0,"count":2,"minOffset":4,"maxOffset":1}]}',
        "not json",
    ])
    ok, bad, _, _ = _run(tmp_path, "kafka-verifiable-consumer", "ledger", text)
    assert ok == []
    reasons = [b["__error"] for b in bad]
    assert "exceeds maxOffset − minOffset + 1 = 2" in reasons[0]
    assert "run the consumer with --verbose" in reasons[1]
    assert "minOffset ≤ maxOffset" in reasons[2]
    assert reasons[3].startswith("not valid JSON")


# ------------------------------------------------------------ kafka-verifiable-producer

def _send(i: int) -> str:
    return (f'{{"timestamp":1676819590{300 + i},"name":"producer_send_success","key":null,'
            f'"value":"{i}","offset":{i},"partition":0,"topic":"verify-test"}}')


def test_tool_data_matching_totals(tmp_path):
    text = "\n".join(['{"timestamp":1676819590041,"name":"startup_complete"}',
                      "[2023-02-20 00:13:10,167] WARN [Producer clientId=producer-1] Error while fetching metadata with correlation id 1 : {verify-test=LEADER_NOT_AVAILABLE} (org.apache.kafka.clients.NetworkClient)",
                      *[_send(i) for i in range(3)],
                      '{"timestamp":1676819590329,"name":"shutdown_complete"}',
                      '{"timestamp":1676819590329,"name":"tool_data","sent":3,"acked":3,"target_throughput":-1,"avg_throughput":34.6}'])
    ok, bad, counts, account = _run(tmp_path, "kafka-verifiable-producer", "sends", text)
    assert bad == [] and [r["seq"] for r in ok] == [0, 1, 2]
    assert "incomplete_producer_output" not in counts
    assert account.skipped == {"tool_event:startup_complete": 1, "tool_log_line": 1,
                               "tool_event:shutdown_complete": 1, "tool_summary": 1}


def test_tool_data_more_acked_than_shown_is_incomplete_input(tmp_path):
    text = "\n".join(['{"timestamp":1,"name":"startup_complete"}', _send(0), _send(1), "...",
                      _send(499999),
                      '{"timestamp":2,"name":"shutdown_complete"}',
                      '{"timestamp":2,"name":"tool_data","sent":500000,"acked":500000,"target_throughput":-1,"avg_throughput":9000.0}'])
    ok, bad, counts, account = _run(tmp_path, "kafka-verifiable-producer", "sends", text)
    assert len(ok) == 3  # the sends shown are rows; the rest are not made up
    assert [b["__line"] for b in bad] == [7]
    assert "the file holds 3 of 500000 acked sends" in bad[0]["__error"]
    assert "would call the other 499997 lost" in bad[0]["__error"]
    assert counts["incomplete_producer_output"] == 499997
    assert account.skipped["elided"] == 1


def test_tool_data_per_run_and_old_time_ms(tmp_path):
    # Kafka 0.10: "time_ms", no timestamp on shutdown_complete / tool_data
    old = ('{"time_ms":1470000000000,"name":"producer_send_success","topic":"t","partition":0,'
           '"offset":0,"key":null,"value":"0"}')
    text = "\n".join([old, '{"name":"shutdown_complete"}',
                      '{"name":"tool_data","sent":1,"acked":1,"target_throughput":-1,"avg_throughput":1.0}',
                      '{"timestamp":1,"name":"startup_complete"}', _send(1),
                      '{"timestamp":2,"name":"tool_data","sent":2,"acked":2,"target_throughput":-1,"avg_throughput":1.0}'])
    ok, bad, counts, _ = _run(tmp_path, "kafka-verifiable-producer", "sends", text)
    assert ok[0]["send_ts"] == 1470000000000 and ok[0]["ack_ts"] == 1470000000000
    assert [b["__line"] for b in bad] == [6]  # the second run shows 1 of its 2 acked sends
    assert counts["incomplete_producer_output"] == 1


# ------------------------------------------------------------ kafka-console-consumer

def test_console_4x_fields_do_not_shift_key_and_value(tmp_path):
    text = "\n".join([
        # print.timestamp/partition/offset/delivery/epoch/headers/key/value (Kafka 4.x order)
        "CreateTime:1730000000000\tPartition:0\tOffset:5\tDelivery:1\tEpoch:0\tseq:5,trace:x\tk1\t5",
        "CreateTime:1730000000001\tPartition:0\tOffset:6\tDelivery:NOT_PRESENT\tEpoch:NOT_PRESENT\tNO_HEADERS\tnull\t6",
        "NO_TIMESTAMP\tPartition:1\tOffset:0\tEpoch:3\tNO_HEADERS\tvalue-only.7",
        "^C",
        "Processed a total of 3 messages",
    ])
    ok, bad, counts, account = _run(tmp_path, "kafka-console-consumer", "broker", text,
                                     {"topic": "orders"})
    assert bad == []
    assert [(r["partition"], r["offset"], r["key"], r["seq"], r["timestamp"]) for r in ok] == [
        (0, 5, "k1", 5, 1730000000000), (0, 6, None, 6, 1730000000001), (1, 0, None, 7, None)]
    assert account.skipped == {"interrupt": 1, "tool_summary": 1}
    assert "incomplete_console_output" not in counts


def test_console_summary_checked(tmp_path):
    text = "CreateTime:1\tPartition:0\tOffset:0\tk\t0\n^CProcessed a total of 4 messages\n"
    ok, _, counts, account = _run(tmp_path, "kafka-console-consumer", "broker", text,
                                  {"topic": "t"})
    assert len(ok) == 1 and counts["incomplete_console_output"] == 3
    assert account.skipped == {"tool_summary": 1}
    text = "CreateTime:1\tPartition:0\tOffset:0\tk\t0\nCreateTime:1\tPartition:0\tOffset:1\tk\t1\nProcessed a total of 1 messages\n"
    _, _, counts, _ = _run(tmp_path, "kafka-console-consumer", "broker", text, {"topic": "t"})
    assert counts["console_summary_mismatch"] == 1


def test_console_refusals_name_the_option(tmp_path):
    _, bad, _, _ = _run(tmp_path, "kafka-console-consumer", "broker",
                        "CreateTime:1528595323503\tnull\tHello\n", {"topic": "t"})
    assert "--property print.partition=true --property print.offset=true" in bad[0]["__error"]
    _, bad, _, _ = _run(tmp_path, "kafka-console-consumer", "broker",
                        "Partition:0\tOffset:1\tk\tv\n")
    assert "set adapters.topic" in bad[0]["__error"]
    _, bad, _, _ = _run(tmp_path, "kafka-console-consumer", "ledger",
                        "NO_TIMESTAMP\tPartition:0\tOffset:1\tk\tv\n", {"topic": "t"})
    assert "print.timestamp=true" in bad[0]["__error"]


# ------------------------------------------------------------ kafka-dump-log

DUMP_1_0 = """\
Dumping /tmp/kafka-logs/transaction-0/00000000000000635791.log
Starting offset: 635791
offset: 635791 position: 0 CreateTime: 1590738831653 isvalid: true keysize: -1 valuesize: 51200 magic: 2 compresscodec: NONE producerId: -1 producerEpoch: -1 sequence: -1 isTransactional: false headerKeys: []
offset: 635792 position: 51272 CreateTime: 1590738831657 isvalid: true keysize: 3 valuesize: 5 magic: 2 compresscodec: NONE producerId: -1 producerEpoch: -1 sequence: -1 isTransactional: false headerKeys: []
offset: 635793 position: 51350 CreateTime: 1590738831700 isvalid: true keysize: 1 valuesize: 1 magic: 2 compresscodec: NONE producerId: 4000 producerEpoch: 2 sequence: 0 isTransactional: true headerKeys: [] key: a payload: 5
offset: 635794 position: 51420 CreateTime: 1590738831800 isvalid: true keysize: 4 valuesize: 6 magic: 2 compresscodec: NONE producerId: 4000 producerEpoch: 2 sequence: -1 isTransactional: true headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 3
"""


def test_dump_log_1_0_deep_iteration(tmp_path):
    ok, bad, counts, _ = _run(tmp_path, "kafka-dump-log", "broker", DUMP_1_0)
    assert [(r["offset"], r["key"], r["seq"], r["pid"], r["transactional"], r["control"])
            for r in ok] == [(635791, None, None, None, False, None),
                             (635793, "a", 5, 4000, True, None),
                             (635794, None, None, 4000, True, "abort")]
    assert ok[2]["producer_epoch"] == 2 and ok[0]["topic"] == "transaction"
    # keysize 3 but no key printed: refused, naming the option
    assert [b["__line"] for b in bad] == [4]
    assert "dump with --print-data-log" in bad[0]["__error"]
    assert counts["payload_not_printed"] == 1 and counts["transaction_markers"] == 1


DUMP_3_X = """\
Dumping /var/lib/kafka/data/payments-1/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 9 producerEpoch: 4 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000001 size: 90 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 1 sequence: 0 headerKeys: [a:b,key] key: k0 payload: 0
| offset: 1 CreateTime: 1700000000001 keySize: 2 valueSize: 1 sequence: 1 headerKeys: [payload: x] key: k1 payload: 1
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 9 producerEpoch: 4 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 90 CreateTime: 1700000000050 size: 78 magic: 2 compresscodec: none crc: 2 isvalid: true
| offset: 2 CreateTime: 1700000000050 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty position: 168 CreateTime: 1700000000060 size: 80 magic: 2 compresscodec: none crc: 3 isvalid: true
| offset: 3 CreateTime: 1700000000060 keySize: 4 valueSize: 10 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)
baseOffset: 4 lastOffset: 6 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 248 CreateTime: 1700000000070 size: 90 magic: 2 compresscodec: none crc: 4 isvalid: true
...
"""


def test_dump_log_markers_header_keys_and_shallow_batches(tmp_path):
    ok, bad, counts, account = _run(tmp_path, "kafka-dump-log", "broker", DUMP_3_X)
    assert [(r["offset"], r["key"], r["seq"], r["control"], r["pid"], r["producer_epoch"],
             r["transactional"]) for r in ok] == [
        (0, "k0", 0, None, 9, 4, True), (1, "k1", 1, None, 9, 4, True),
        (2, None, None, "abort", 9, 4, True)]
    assert ok[0]["topic"] == "payments" and ok[0]["partition"] == 1
    # the last batch has no record line: a shallow dump of offsets 4–6, refused
    assert [b["__line"] for b in bad] == [10]
    assert "offsets 4–6 without record lines" in bad[0]["__error"]
    assert "--deep-iteration --print-data-log" in bad[0]["__error"]
    assert counts["control_records"] == 1 and counts["transaction_markers"] == 1
    assert account.skipped == {"tool_header": 1, "control_record": 1, "elided": 1}


def test_dump_log_without_dumping_line(tmp_path):
    text = ("| offset: 7 CreateTime: 1 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: 7\n"
            "| key: k payload: 8\n")
    ok, bad, _, _ = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert ok == [] and "set adapters.topic and adapters.partition" in bad[0]["__error"]
    assert "--skip-record-metadata" in bad[1]["__error"]
    ok, _, _, _ = _run(tmp_path, "kafka-dump-log", "broker", text, {"topic": "t", "partition": 4})
    assert [(r["topic"], r["partition"], r["offset"], r["seq"]) for r in ok] == [("t", 4, 7, 7)]


def test_dump_log_of_an_index_is_refused(tmp_path):
    text = ("Dumping /tmp/kafka-logs/test-0/00000000000000000000.index\n"
            "offset: 1 position: 16674\noffset: 2 position: 33398\n")
    ok, bad, _, account = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert ok == [] and [b["__line"] for b in bad] == [1]
    assert "dump the .log file" in bad[0]["__error"]
    assert account.skipped == {"index_entry": 2}


def test_dump_log_2_8_record_lines(tmp_path):
    # Kafka 2.8's record line repeats the batch's fields (DumpLogSegments.scala at 2.8.0)
    text = """\
Dumping /data/t-0/00000000000000000000.log
Starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 12 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1 size: 70 magic: 2 compresscodec: NONE crc: 1 isvalid: true
| offset: 0 isValid: true crc: null keySize: 1 valueSize: 2 CreateTime: 1 baseOffset: 0 lastOffset: 0 baseSequence: 0 lastSequence: 0 producerEpoch: 0 partitionLeaderEpoch: 0 batchSize: 70 magic: 2 compressType: NONE position: 0 sequence: 0 headerKeys: [] key: k payload: 42
"""
    ok, bad, _, _ = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert bad == []
    assert [(r["offset"], r["key"], r["seq"], r["pid"], r["batch_sequence"]) for r in ok] == [
        (0, "k", 42, 12, 0)]


def test_dump_log_marker_spellings(tmp_path):
    # "controlType: COMMIT" (the 0.11 pre-release spelling) and "endTxnMarker: ABORT"
    text = """\
Dumping /data/t-2/00000000000000000000.log
offset: 9 position: 0 CreateTime: 5 isvalid: true keysize: 4 valuesize: 6 magic: 2 compresscodec: NONE producerId: 3 producerEpoch: 1 sequence: -1 isTransactional: true headerKeys: [] controlType: COMMIT coordinatorEpoch: 0
offset: 10 position: 78 CreateTime: 6 isvalid: true keysize: 4 valuesize: 6 magic: 2 compresscodec: NONE producerId: 3 producerEpoch: 1 sequence: -1 isTransactional: true headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0
"""
    ok, bad, counts, _ = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert bad == []
    assert [(r["offset"], r["control"], r["pid"], r["producer_epoch"], r["topic"], r["partition"])
            for r in ok] == [(9, "commit", 3, 1, "t", 2), (10, "abort", 3, 1, "t", 2)]
    assert counts["transaction_markers"] == 2


def test_console_print_value_false(tmp_path):
    text = "CreateTime:1\tPartition:0\tOffset:3\tpayload.3\n"
    ok, _, _, _ = _run(tmp_path, "kafka-console-consumer", "broker", text,
                       {"topic": "t", "console": {"value": False}})
    assert [(r["key"], r["seq"]) for r in ok] == [("payload.3", None)]
    ok, _, _, _ = _run(tmp_path, "kafka-console-consumer", "broker", text, {"topic": "t"})
    assert [(r["key"], r["seq"]) for r in ok] == [(None, 3)]  # a lone field is the value


def test_dump_log_old_format_shallow_line(tmp_path):
    # DumpLogSegments 1.0 without --deep-iteration on a magic 1 segment: "offset: <lastOffset>
    # position: …" per message set (no record fields)
    text = ("Dumping /k/t-0/00000000000000000000.log\nStarting offset: 0\n"
            "offset: 3 position: 0 CreateTime: 1 isvalid: true size: 120 magic: 1 compresscodec: GZIP crc: 99\n"
            "offset: 4 position: 16674\n")
    ok, bad, _, _ = _run(tmp_path, "kafka-dump-log", "broker", text)
    assert ok == [] and [b["__line"] for b in bad] == [3, 4]
    assert "--deep-iteration --print-data-log" in bad[0]["__error"]
    assert "index entry" in bad[1]["__error"]
