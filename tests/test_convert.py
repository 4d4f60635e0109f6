# ruff: noqa: E501  (verbatim log lines)
"""`delivery-audit convert` (no Spark), `--format auto` and the line framing of the text-log
adapters (issue 15).

Real lines only: the samples of tests/data/wild/framing/ (sources in their expected files)
and, for the layouts no public paste was found in (grep -r, syslog, kubectl --prefix, ECS and
Quarkus JSON, a CSV export with a header), a real Kafka line wrapped the way that tool or
platform wraps it; each such test names both sources. Kafka lines used for wrapping:

* KAFFE: https://github.com/spreedly/kaffe/issues/92 (Kafka 2.3 broker, first paste)
* REVOKE: https://github.com/atleon/atleon/issues/422 (Java client 3.x, fourth comment)
* SPRING: the seed incident lines of tests/samples.py (Spring Kafka, time-only)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from samples import CONSOLE, CONSUMER, NEW_DUMP, PRODUCER, SERVER_LOG, SPRING
from typer.testing import CliRunner

from delivery_audit.adapters import ADAPTERS, convert
from delivery_audit.adapters.convert_command import UsageError, parse_options
from delivery_audit.adapters.framing import csv_layout, frame_text, framed_lines
from delivery_audit.adapters.sniff import SniffError, sniff
from delivery_audit.adapters.writer import RowWriter
from delivery_audit.cli import app
from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from tests.wild import WILD

FRAMING = WILD / "framing"
KAFFE = "[2019-07-23 09:12:56,387] INFO [GroupCoordinator 0]: Stabilized group test_consumer generation 14 (__consumer_offsets-7) (kafka.coordinator.group.GroupCoordinator)"
KAFFE_MS = 1563873176387
REVOKE = "[Consumer clientId=stream-name, groupId=group-name] Revoke previously assigned partitions topic-0, topic-1, topic-2, topic-3, topic-4, topic-5"
runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _cli(*args: str):
    return runner.invoke(app, ["convert", *args])


def _summary(*args: str) -> dict:
    result = _cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _rows(out_dir: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(out_dir.rglob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]


def _text(line: str) -> str | None:
    return frame_text(line).text


def _events(tmp_path: Path, text: str, fmt: str = "client-log", options: dict | None = None,
            window=None, name: str = "app.log") -> tuple[list[dict], object]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    accounts: list = []
    written, _ = convert(fmt, "events", [str(path)], [name], tmp_path / "out",
                         AuditConfig.from_dict({"adapters": options or {}}), window=window,
                         accounts=accounts)
    return [json.loads(x) for x in Path(written[0]).read_text().splitlines()], accounts[0]


# ------------------------------------------------------------------------ the command


def test_convert_summary_on_real_samples(tmp_path):
    csv_sample = FRAMING / "csv-newest-first-atleon422-a.csv"
    compose = FRAMING / "compose-coordinator-kaffe92.log"
    doc = _summary("--format", "auto", "--source", "events", str(csv_sample), str(compose),
                   "--out", str(tmp_path / "out"))
    first, second = doc["files"]
    assert (first["format"], second["format"]) == ("client-log", "coordinator-log")
    assert "CSV export" in first["format_reason"] and "GroupCoordinator" in second["format_reason"]
    assert {k: first[k] for k in ("lines", "rows", "recognised", "skipped", "error_rows",
                                  "unaccounted")} == {
        "lines": 5, "rows": 13, "recognised": 2, "skipped": {"unrelated_log_line": 3},
        "error_rows": 0, "unaccounted": 0}
    # 4 coordinator rows and a joined_group from each "(reason: Adding new member …)"
    assert (second["lines"], second["rows"], second["skipped"]) == (
        5, 6, {"unrelated_log_line": 1})
    assert doc["total"] == {"files": 2, "lines": 10, "rows": 19, "recognised": 6,
                            "skipped": {"unrelated_log_line": 4}, "error_rows": 0,
                            "unaccounted": 0}
    rows = _rows(tmp_path / "out")
    assert len(rows) == 19 and {r["__file"] for r in rows} == {str(csv_sample), str(compose)}
    # the same rows as adapters.convert, the code `run` stages sources with
    direct = _rows_of_convert(tmp_path / "direct", "coordinator-log", compose)
    assert [r for r in rows if r["__file"] == str(compose)] == direct


def _rows_of_convert(out: Path, fmt: str, path: Path) -> list[dict]:
    written, _ = convert(fmt, "events", [str(path)], [str(path)], out, AuditConfig())
    return [json.loads(x) for x in Path(written[0]).read_text().splitlines()]


def test_convert_lists_error_rows_and_an_option_fixes_them(tmp_path):
    faust = str(FRAMING / "python-traceback-faust104.log")
    result = _cli("--format", "client-log", "--source", "events", faust, "--out",
                  str(tmp_path / "a"))
    assert result.exit_code == 0, result.output  # converted, with an error row
    out = _flat(result.stdout)
    assert (f"{faust}:1: consumer group unknown: the line names no group (no [Consumer … "
            "groupId=…] prefix, no 'for group'); set adapters.group") in out
    assert "0 rows, 1 error rows from 15 lines (0 recognised, 14 skipped, 0 unaccounted)" in out
    config = tmp_path / "audit.json"  # --option goes over the config's adapters:
    config.write_text(json.dumps({"adapters": {"group": "another-group", "date": "2018-05-09"}}))
    doc = _summary("--format", "client-log", "--source", "events", faust, "--config",
                   str(config), "--option", "group=risk-faust-v15", "--out", str(tmp_path / "b"))
    f = doc["files"][0]
    assert (f["rows"], f["error_rows"], f["skipped"]) == (
        1, 0, {"blank": 2, "stack_trace": 6, "unrelated_log_line": 6})
    assert _rows(tmp_path / "b")[0]["group_id"] == "risk-faust-v15"


def test_convert_shows_the_first_errors_and_how_many_more(tmp_path):
    # the faust line eight times, no group: eight error rows, five listed
    line = (FRAMING / "python-traceback-faust104.log").read_text().splitlines()[0]
    path = tmp_path / "many.log"
    path.write_text("\n".join([line] * 8) + "\n")
    result = _cli("--format", "client-log", "--source", "events", str(path), "--out",
                  str(tmp_path / "out"))
    out = _flat(result.stdout)
    assert result.exit_code == 0
    assert f"{path}:5: consumer group unknown" in out and f"{path}:6:" not in out
    assert f"… and 3 more error rows in {path}" in out


def test_convert_usage_errors_exit_2(tmp_path):
    csv_sample = str(FRAMING / "csv-newest-first-atleon422-a.csv")
    out = str(tmp_path / "out")
    cases = [
        (["--format", "nope", "--source", "events", csv_sample], "unknown format 'nope'"),
        (["--format", "client-log", "--source", "sends", csv_sample],
         "format 'client-log' does not carry sends (it feeds events)"),
        (["--format", "auto", "--source", "broker", csv_sample],
         f"{csv_sample}: looks like client-log"),
        (["--format", "client-log", "--source", "events", "--option", "date", csv_sample],
         "--option takes KEY=VALUE"),
        (["--format", "client-log", "--source", "events", str(tmp_path / "absent.log")],
         "no such file"),
        (["--format", "client-log", "--source", "events", "--option", "date=yesterday",
          csv_sample], "Invalid isoformat string"),
    ]
    for args, message in cases:
        result = _cli(*args, "--out", out)
        assert result.exit_code == 2, (args, result.output)
        assert message in _flat(result.output), (args, result.output)


def test_convert_unreadable_input_exits_1(tmp_path):
    path = tmp_path / "cut.log.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00cut")  # a gzip header and nothing whole after it
    for fmt in ("client-log", "auto"):
        result = _cli("--format", fmt, "--source", "events", str(path), "--out",
                      str(tmp_path / "out"))
        assert result.exit_code == 1, fmt
        assert f"{path}: cannot be read" in _flat(result.output)


def test_convert_auto_refuses_a_file_it_cannot_tell(tmp_path):
    # sarama's own log lines (https://github.com/bsm/sarama-cluster/issues/212): no wording
    # of a Kafka tool, the Java client or the broker
    path = tmp_path / "sarama.log"
    path.write_text(
        "[sarama]2018/01/18 04:38:29 client/coordinator requesting coordinator for consumergroup test-cg from 10.0.0.1:9092\n"
        "[sarama]2018/01/18 04:38:29 client/coordinator coordinator for consumergroup test-cg is #146 (10.0.0.1:9092)\n")
    result = _cli("--format", "auto", "--source", "events", str(path), "--out",
                  str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"{path}: cannot tell its format from its first 2 lines" in _flat(result.output)
    assert "give --format" in _flat(result.output)


def test_convert_imports_no_pyspark(tmp_path):
    """In a fresh interpreter: the CLI module and a whole conversion leave pyspark unloaded."""
    sample = str(FRAMING / "compose-coordinator-kaffe92.log")
    code = (
        "import sys\n"
        "import delivery_audit.cli as cli\n"
        "assert 'pyspark' not in sys.modules, 'the CLI module imports pyspark'\n"
        f"cli.app(['convert', '--format', 'auto', '--source', 'events', {sample!r}, "
        f"'--out', {str(tmp_path / 'out')!r}, '--json'], standalone_mode=False)\n"
        "print('PYSPARK', 'pyspark' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("PYSPARK False")
    expected = json.loads(Path(sample + ".expected.json").read_text(encoding="utf-8"))["rows"]
    assert json.loads(done.stdout[:done.stdout.rindex("PYSPARK")])["total"]["rows"] \
        == len(expected) == 6


def test_parse_options():
    assert parse_options(["date=2024-01-16", "partition=3", "seq.from=header", "seq.name=seq",
                          'member={"*-a.log": "consumer-a"}', "group=orders", "idempotent=true"]
                         ) == {"date": "2024-01-16", "partition": 3,
                               "seq": {"from": "header", "name": "seq"},
                               "member": {"*-a.log": "consumer-a"}, "group": "orders",
                               "idempotent": True}
    assert parse_options(["date=20240116"]) == {"date": "20240116"}  # a date stays text
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_options(["seq..from=x"])


# ------------------------------------------------------------------------ --format auto


@pytest.mark.parametrize(("text", "fmt"), [
    ("\n".join(PRODUCER), "kafka-verifiable-producer"),
    ("\n".join(CONSUMER), "kafka-verifiable-consumer"),
    (NEW_DUMP, "kafka-dump-log"),
    (CONSOLE, "kafka-console-consumer"),
    (SPRING, "client-log"),
    (SERVER_LOG, "coordinator-log"),
], ids=["producer", "consumer", "dump-log", "console", "spring", "server-log"])
def test_sniff_tool_outputs_and_logs(tmp_path, text, fmt):
    path = tmp_path / "input.txt"
    path.write_text(text)
    assert sniff(str(path)).fmt == fmt


@pytest.mark.parametrize(("sample", "fmt", "why"), [
    ("compose-coordinator-kaffe92.log", "coordinator-log", "'GroupCoordinator'"),
    ("kibana-coordinator-kafkajs633.log", "coordinator-log", "'GroupCoordinator' (line 4)"),
    ("compose-container-name-dotnet1460.log", "coordinator-log", "[Broker id=1]"),
    ("csv-newest-first-atleon445.csv", "client-log", "(a CSV export)"),
    ("json-logstash-spring-kafka3703.log", "client-log", "org.springframework.kafka"),
    ("json-logstash-quarkus-smallrye2589.log", "client-log", "smallrye"),
    ("viewer-bar-kafka-python1418.log", "client-log", "kafka.coordinator"),
    ("python-traceback-faust104.log", "client-log", "CommitFailedError"),
    ("java-stack-trace-connect-hdfs19.log", "client-log", "(line 1)"),
])
def test_sniff_real_samples(sample, fmt, why):
    got = sniff(str(FRAMING / sample))
    assert got.fmt == fmt and why in got.reason


def test_sniff_librdkafka(tmp_path):
    # confluent-kafka-python debug lines: https://github.com/confluentinc/confluent-kafka-python/issues/1684
    path = tmp_path / "rdkafka.log"
    path.write_text(
        '%7|1701266707.240|CGRPQUERY|sim-ordotest2#consumer-1| [thrd:main]: sasl_ssl://hidden.url.windows.net:9093/bootstrap: Group "sim-ordotest2": querying for coordinator: intervaled in state query-coord\n'
        '%7|1701266707.242|CGRPSTATE|sim-ordotest2#consumer-1| [thrd:main]: Group "sim-ordotest2" changed state query-coord -> wait-coord (join-state init)\n')
    adapter = next((f for f in ADAPTERS if "librdkafka" in f), None)
    if adapter is None:  # this version has no librdkafka adapter: refused, saying what it is
        with pytest.raises(SniffError, match="librdkafka log lines"):
            sniff(str(path))
    else:
        assert sniff(str(path)).fmt == adapter


def test_sniff_a_java_client_log_with_a_fencing_line_is_a_client_log(tmp_path):
    """A producer-fencing line is counted by every text adapter (librdkafka_log.claims), but
    it is not librdkafka's layout: a Java client log holding one stays a client log."""
    sample = (FRAMING / "json-logstash-spring-kafka3703.log").read_text(encoding="utf-8")
    path = tmp_path / "client.log"
    # the Java producer's exception line, apache/kafka #3343
    path.write_text("org.apache.kafka.common.errors.ProducerFencedException: Producer "
                    "attempted an operation with an old epoch. Either there is a newer producer "
                    "with the same transactionalId, or the producer's transaction has been "
                    "expired by the broker.\n" + sample, encoding="utf-8")
    assert sniff(str(path)).fmt == "client-log"


def test_sniff_refuses_a_tie_and_an_empty_file(tmp_path):
    path = tmp_path / "both.log"
    path.write_text(KAFFE + "\n" + SPRING.splitlines()[1] + "\n")
    with pytest.raises(SniffError, match="give --format coordinator-log or client-log"):
        sniff(str(path))
    empty = tmp_path / "empty.log"
    empty.write_text("\n")
    with pytest.raises(SniffError, match="empty.log: empty"):
        sniff(str(empty))


def test_run_accepts_auto_per_file(tmp_path):
    """`run --format events=auto`: resolve accepts it; each file is sniffed by convert."""
    from delivery_audit.ingest.files import InputError, resolve

    files = [str(FRAMING / "compose-coordinator-kaffe92.log"),
             str(FRAMING / "csv-newest-first-atleon422-c.csv")]
    resolved = resolve("events", files, fmt="auto")
    assert resolved.fmt == "auto"
    chosen: list = []
    written, counts = convert("auto", "events", list(resolved.files), list(resolved.origins),
                              tmp_path / "out", AuditConfig(), sniffed=chosen)
    assert [c.fmt for c in chosen] == ["coordinator-log", "client-log"]
    assert counts["adapter_rows"] == 6 + 6
    with pytest.raises(InputError, match="looks like client-log .* does not carry ledger"):
        convert("auto", "ledger", files[1:], files[1:], tmp_path / "x", AuditConfig())


# ------------------------------------------------------------------------ framing


def test_container_prefixes():
    # docker compose v1 (the kaffe92 sample), v2 ("kafka-1  | ") and a container_name
    # (confluent-kafka-dotnet#1460), with compose's colours; kubectl logs --prefix
    # ("[pod/<pod>/<container>] ", kubectl's documented form) around the KAFFE line
    assert _text("kafka_1  | " + KAFFE) == KAFFE[:KAFFE.rindex(" (kafka.")]
    assert _text("kafka-1  | " + KAFFE) == _text(KAFFE)
    assert _text("kafka         | " + KAFFE) == _text(KAFFE)
    assert _text("\x1b[36mkafka-1  |\x1b[0m " + KAFFE) == _text(KAFFE)
    assert _text("[pod/kafka-0/kafka] " + KAFFE) == _text(KAFFE)
    assert _text("[pod/kafka-0/kafka] kafka-1  | " + KAFFE) == _text(KAFFE)
    # a log line with a level before " | " keeps it (not a service name)
    assert _text("INFO | started") == "INFO | started"


def test_grep_prefixes():
    # grep -r / grep -H / grep -n over rotated server.log files (log4j's DailyRollingFileAppender
    # names them server.log.YYYY-MM-DD-HH) around the KAFFE line
    for prefix in ("server.log.2019-07-23-09:", "logs/server.log:", "logs/server.log:1234:",
                   "/var/log/kafka/server.log.2019-07-23-09:88:"):
        assert _text(prefix + KAFFE) == _text(KAFFE), prefix
    # a stack frame behind a file name is still a stack frame
    assert frame_text("logs/server.log:\tat kafka.server.KafkaApis.handle(KafkaApis.scala:123)"
                      ).skip == "stack_trace"
    # an ISO timestamp is not a file name
    iso = "2019-07-23T09:12:56.387Z " + REVOKE
    assert _text(iso) == iso


def test_syslog_prefixes():
    # rsyslog/journald (BSD form) and RFC 5424, around the KAFFE line: its own time wins
    assert _text("Jul 23 09:12:56 broker-1 kafka[1234]: " + KAFFE) == _text(KAFFE)
    assert _text("Jul 23 09:12:56 broker-1 kafka-server-start.sh[1234]: " + KAFFE) == _text(KAFFE)
    assert _text("2019-07-23T09:12:56.400000+00:00 broker-1 kafka[1234]: " + KAFFE) == _text(KAFFE)
    # a unit whose log4j pattern has no date ("%p %m (%c)%n"): syslog's time, time-only
    # (the day from adapters.date or the window)
    bare = KAFFE[KAFFE.index("] ") + 2:]
    assert _text("Jul 23 09:12:56 broker-1 kafka[1234]: " + bare) == "09:12:56 " + _text(bare)
    assert _text("2019-07-23T09:12:56Z broker-1 kafka[1234]: " + bare) == \
        "2019-07-23T09:12:56Z " + _text(bare)


def test_log_viewer_prefixes_inner_timestamp_wins():
    # CloudWatch/Graylog exports and `docker logs -t` / `kubectl logs --timestamps`
    assert _text("2019-07-23T09:12:57.000Z " + KAFFE) == _text(KAFFE)
    assert _text("2019-07-23T09:12:56.387654321Z " + KAFFE) == _text(KAFFE)
    # the viewer's time alone (the message has none of its own) stays the line's time
    assert _text("2025-09-26T06:03:02.617Z " + REVOKE) == "2025-09-26T06:03:02.617Z " + REVOKE
    # Loki/Grafana "<epoch ms><TAB><line>"
    assert _text("1563873176400\t" + KAFFE) == _text(KAFFE)
    assert _text("1758866582617\t" + REVOKE) == "2025-09-26T06:03:02.617Z " + REVOKE
    # Kibana's time on a line of its own (kibana-coordinator-kafkajs633.log)
    assert frame_text("Jan 17, 2020 @ 15:54:24.877").skip == "viewer_timestamp"


def test_json_structured_logs():
    lines = (FRAMING / "json-logstash-spring-kafka3703.log").read_text().splitlines()
    assert _text(lines[2]) == ("2024-12-17T09:40:14.172599074Z [noBeanNameSet-C-1] INFO "
                               "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator - "
                               "[Consumer clientId=consumer-event-1, groupId=consumer-event] "
                               "Failing OffsetCommit request since the consumer is not part of an active group")
    want = ("2025-09-26T06:03:02.617Z [kafka-consumer-1] INFO "
            "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker - " + REVOKE)
    logger = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"
    # Spring Boot 3.4 structured logging, ECS (flat dotted keys)
    ecs = {"@timestamp": "2025-09-26T06:03:02.617Z", "log.level": "INFO", "process.pid": 7,
           "process.thread.name": "kafka-consumer-1", "service.name": "app", "log.logger": logger,
           "message": REVOKE, "ecs.version": "8.11"}
    assert _text(json.dumps(ecs)) == want
    # ECS nested (logstash ecs encoders)
    nested = {"@timestamp": "2025-09-26T06:03:02.617Z", "log": {"level": "INFO", "logger": logger},
              "process": {"thread": {"name": "kafka-consumer-1"}}, "message": REVOKE}
    assert _text(json.dumps(nested)) == want
    # Quarkus quarkus-logging-json
    quarkus = {"timestamp": "2025-09-26T06:03:02.617Z", "sequence": 1, "loggerClassName": "org.slf4j.impl.Slf4jLogger",
               "loggerName": logger, "level": "INFO", "message": REVOKE, "threadName": "kafka-consumer-1",
               "threadId": 40, "mdc": {}, "hostName": "app-1", "processName": "app", "processId": 7}
    assert _text(json.dumps(quarkus)) == want
    # log4j2 JsonLayout: the instant in seconds and nanoseconds
    log4j2 = {"instant": {"epochSecond": 1758866582, "nanoOfSecond": 617000000},
              "thread": "kafka-consumer-1", "level": "INFO", "loggerName": logger, "message": REVOKE}
    assert _text(json.dumps(log4j2)) == want
    # Docker's json-file driver: the original line inside, its own time wins
    docker = {"log": KAFFE + "\n", "stream": "stdout", "time": "2019-07-23T09:12:56.500Z"}
    assert _text(json.dumps(docker)) == _text(KAFFE)
    # GELF (Graylog): seconds with a fraction, a numeric syslog level (not a word: left out)
    gelf = {"version": "1.1", "host": "app-1", "short_message": REVOKE, "timestamp": 1758866582.617,
            "level": 6, "_logger_name": logger, "_thread_name": "kafka-consumer-1"}
    assert _text(json.dumps(gelf)) == want.replace(" INFO ", " ")
    # a JSON object that is no log event (no message) stays as it is
    assert _text('{"name":"startup_complete"}') == '{"name":"startup_complete"}'


def test_csv_export_with_header_sorted_newest_first(tmp_path):
    # a log platform's export with a header (Graylog: "timestamp","source","message"), newest
    # first, one message with its stack trace inside the quoted cell: the atleon#422 lines
    # and the connect-hdfs#19 trace
    text = ('"timestamp","source","message"\n'
            '"2025-08-19T14:53:05.961Z","i-1","[Consumer clientId=stream-name, groupId=group-name] Successfully joined group with generation Generation{generationId=2926, memberId=\'stream-name-68a6c332-4451-46ec-a5e9-ca5c4b2eead6\', protocol=\'range\'}"\n'
            '"2025-08-19T14:53:00.688Z","i-1","[Consumer clientId=stream-name, groupId=group-name] Revoke previously assigned partitions topic-0, topic-1"\n'
            '"2025-08-19T14:52:59.000Z","i-1","User provided listener org.apache.kafka.connect.runtime.WorkerSinkTask$HandleRebalance failed on partition assignment:\n'
            'java.lang.UnsupportedOperationException\n'
            'at java.util.Collections$UnmodifiableCollection.clear(Collections.java:1094)"\n')
    rows, account = _events(tmp_path, text, name="export.csv")
    assert [(r["event"], r.get("partition"), r["__line"]) for r in rows] == [
        ("revoked", 0, 3), ("revoked", 1, 3), ("joined_group", None, 2)]
    assert rows[0]["generation"] is None  # in time order the join comes after the revocation
    assert account.skipped == {"csv_header": 1, "stack_trace": 1, "unrelated_log_line": 2}
    assert account.lines == 6 and account.unaccounted == 0


def test_csv_export_kibana_time_column(tmp_path):
    # Kibana Discover's CSV ("@timestamp",message with its "Jan 17, 2020 @ …" dates) holding
    # the kafkajs#633 broker lines as a log shipper stores them: the message without its time
    text = ('"@timestamp",message\n'
            '"Jan 17, 2020 @ 10:24:24.877","[GroupCoordinator 3]: Group plus1connect-group-authenticator-256297f8-4159-4d2b-b2cb-487028b3fa5b with generation 2 is now empty (__consumer_offsets-43) (kafka.coordinator.group.GroupCoordinator)"\n'
            '"Jan 17, 2020 @ 10:24:24.876","[GroupCoordinator 3]: Member plus1connect-c5d594c6-18fe-48af-9eef-24c3fe88e0a0 in group plus1connect-group-authenticator-256297f8-4159-4d2b-b2cb-487028b3fa5b has failed, removing it from the group (kafka.coordinator.group.GroupCoordinator)"\n')
    rows, account = _events(tmp_path, text, fmt="coordinator-log", name="kibana.csv")
    assert [(r["event"], r["ts"], r["__line"]) for r in rows] == [
        ("left_group", 1579256664876, 3), ("revoked", 1579256664877, 2)]
    assert account.skipped == {"csv_header": 1}


@pytest.mark.parametrize(("header", "cols"), [
    ('"_time","host","source","sourcetype","_raw"', (0, 4)),  # Splunk
    ("@timestamp,@message,@logStream,@log", (0, 1)),  # CloudWatch Logs Insights
    ("Date,Host,Service,Message", (0, 3)),  # Datadog
    ('"timestamp","source","message","level","thread_name","logger_name"', (0, 2)),  # Graylog
    ('"Time","Line"', (0, 1)),  # Grafana (Loki)
], ids=["splunk", "cloudwatch", "datadog", "graylog", "grafana"])
def test_csv_export_headers(header, cols):
    layout = csv_layout(header)
    assert layout is not None and layout.header
    assert (layout.time_col, layout.message_col) == cols


def test_csv_record_whose_quotes_do_not_close_is_an_error(tmp_path):
    text = ('"2025-09-26T06:03:02.617Z","i-2","' + REVOKE + '"\n'
            '"2025-09-26T06:03:02.616Z","i-2","Consumer polling woken\n'
            'and the export was cut here\n')
    rows, account = _events(tmp_path, text, name="cut.csv")
    bad = [r for r in rows if "__error" in r]
    assert [(b["__line"], b["__error"][:40]) for b in bad] == [
        (2, "not a record of the CSV export: its quot")]
    assert account.skipped == {"csv_continuation": 1} and account.unaccounted == 0


def test_log4j_tail_does_not_leak_into_partitions(tmp_path):
    # Kafka Connect's log4j pattern "[%d] %p %m (%c:%L)%n" (kafka-docker-playground#7090's
    # tail) after the REVOKE list, and the seed's bracketed list with a "(%c)" tail
    # (connect-hdfs#19's logger); a CFK image appends its MDC after the tail (#8690)
    text = ("[2025-09-26 06:03:02,617] INFO " + REVOKE + " (org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker:80)\n"
            "[2025-09-26 06:03:03,617] INFO [Consumer clientId=consumer-2, groupId=fans-push-service] Revoking previously assigned partitions [fans-push-9, fans-push-0] (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)\n"
            "[2025-09-26 06:03:04,617] INFO " + REVOKE[:REVOKE.index(" topic-1")].replace("topic-0,", "topic-0") + " (org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker:80) - app=connect, clusterId=confluent, server=0\n")
    rows, _ = _events(tmp_path, text)
    assert [(r["topic"], r["partition"]) for r in rows] == [
        *[("topic", p) for p in range(6)], ("fans-push", 9), ("fans-push", 0), ("topic", 0)]


def test_stack_trace_lines_are_skipped_not_errors(tmp_path):
    # faust#104's failed commit, then Java frames from real pastes: druid#11651 (a frame with
    # its jar, "Caused by:", "<init>", "... 83 more") and kafka-streams-examples#547 (frames
    # indented with spaces), then faust#104's Python traceback lines
    faust = (FRAMING / "python-traceback-faust104.log").read_text().splitlines()
    text = "\n".join([
        faust[0],
        "\tat org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.run(QueuedThreadPool.java:1036) [jetty-util-9.4.40.v20210413.jar:9.4.40.v20210413]",
        "Caused by: org.apache.kafka.common.config.ConfigException: Invalid url in bootstrap.servers: 127.0.0.1",
        "\tat org.apache.kafka.clients.consumer.KafkaConsumer.<init>(KafkaConsumer.java:728) ~[?:?]",
        "\t... 83 more",
        "        at org.apache.kafka.clients.consumer.internals.ConsumerCoordinator.onJoinComplete(ConsumerCoordinator.java:425) ~[kafka-streams-examples-8.0.0-0-standalone.jar:?]",
        faust[1], faust[2]]) + "\n"
    rows, account = _events(tmp_path, text, options={"group": "risk-faust-v15"})
    assert [(r["event"], r["__line"]) for r in rows] == [("commit_failed", 1)]
    assert account.skipped == {"stack_trace": 7}
    assert account.error_lines == 0 and account.unaccounted == 0


def test_time_only_lines_take_the_day_from_the_window(tmp_path):
    # the seed's time-only Spring lines in docker compose output: the day from the window
    text = "".join("app_1  | " + line + "\n" for line in SPRING.splitlines()[1:3])
    window = AuditWindow.of("2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z")
    rows, account = _events(tmp_path, text, window=window)
    assert {r["ts"] for r in rows} == {1795086904278}  # 2026-11-19T11:15:04.278Z
    assert [r["partition"] for r in rows] == [9, 0, 1] and account.unaccounted == 0
    rows, _ = _events(tmp_path, text)  # no window, no adapters.date: error rows that say so
    assert {r["__error"] for r in rows} == {
        "time-only timestamp and no day: set adapters.date (or audit with a window)"}


def test_framed_lines_keep_line_numbers(tmp_path):
    path = tmp_path / "x.log"
    path.write_text("kafka_1  | " + KAFFE + "\n\n\tat a.b.C.d(C.java:1)\nkafka_1  | " + KAFFE + "\n")
    w = RowWriter(tmp_path / "out.jsonl", "events", "x.log")
    got = list(framed_lines(str(path), w))
    w.close()
    assert [n for n, _ in got] == [1, 2, 4] and got[0][1] == _text(KAFFE)
    assert w.skipped == {"stack_trace": 1}


# ------------------------------------------------------------------------ run = convert


@pytest.mark.audit  # Spark: not in make test-fast
def test_run_ingests_the_rows_convert_writes(spark, tmp_path):
    from pyspark.sql import functions as F

    from delivery_audit.ingest import ingest, resolve

    files = [str(FRAMING / name) for name in (
        "compose-coordinator-kaffe92.log", "csv-newest-first-atleon422-a.csv",
        "viewer-bar-kafka-python1418.log")]
    doc = _summary("--format", "auto", "--source", "events", *files, "--out",
                   str(tmp_path / "out"))
    converted = [r for r in _rows(tmp_path / "out") if "__error" not in r]
    assert doc["total"]["rows"] == len(converted) == 22
    window = AuditWindow.of("2019-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    got = ingest(spark, resolve("events", files, fmt="auto"), window, AuditConfig(),
                 tmp_path / "work")
    assert (got.counts["rows_valid"], got.counts["rows_quarantined"]) == (22, 0)
    names = ["group_id", "member_id", "event", "topic", "partition", "offset", "generation",
             "detail"]
    valid = got.valid.select(*names, F.unix_millis("ts").alias("ts")).collect()

    def key(r: dict) -> tuple:
        return tuple(str(r[k]) for k in [*names, "ts"])

    assert sorted(key(r.asDict()) for r in valid) == sorted(key(r) for r in converted)


def _option_pairs(options: dict, prefix: str = "") -> list[str]:
    """A sample's ``adapters:`` options as ``--option KEY=VALUE`` pairs (nested: dotted)."""
    pairs = []
    for key, value in options.items():
        if isinstance(value, dict):
            pairs += _option_pairs(value, f"{prefix}{key}.")
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            pairs += ["--option", f"{prefix}{key}={text}"]
    return pairs


def test_convert_command_on_every_wild_sample_without_a_jvm(tmp_path):
    """Issue 15: `delivery-audit convert` on every sample of tests/data/wild/, in one fresh
    interpreter: each gives its hand-worked rows and error rows, and pyspark (hence a JVM)
    is never loaded."""
    from tests.wild import samples

    runs = []
    for i, s in enumerate(samples()):
        args = ["convert", "--format", s.meta["format"], "--source", s.meta["source"],
                *_option_pairs(s.meta.get("options") or {}), str(s.path),
                "--out", str(tmp_path / f"out{i}"), "--json"]
        runs.append((s.id, args, len(s.meta.get("rows", [])), len(s.meta.get("errors", []))))
    code = (
        "import io, json, sys, contextlib\n"
        "import delivery_audit.cli as cli\n"
        f"runs = {runs!r}\n"
        "bad = []\n"
        "for sid, args, rows, errors in runs:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        cli.app(args, standalone_mode=False)\n"
        "    total = json.loads(out.getvalue())['total']\n"
        "    got = (total['rows'], total['error_rows'], total['unaccounted'])\n"
        "    if got != (rows, errors, 0):\n"
        "        bad.append((sid, got, (rows, errors, 0)))\n"
        "print(json.dumps({'bad': bad, 'n': len(runs), 'pyspark': 'pyspark' in sys.modules}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["n"] == len(runs) >= 40
    assert result["bad"] == []
    assert result["pyspark"] is False
