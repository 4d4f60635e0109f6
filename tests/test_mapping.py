"""Format ``mapping``: an application's own log lines through declared rules
(``adapters.mapping``, docs/adapters.md "Your own application logs").

* the real shapes in tests/data/applogs/ (each copied verbatim from the public source its
  README names) convert to their hand-worked rows, with every line accounted for;
* a malformed mapping fails before any line is read, naming the rule;
* ``--format auto`` refuses an application log and says to declare a mapping;
* the Done-when check: labelled days' sends and ledgers (a generated day with producer
  failures, and a lab run's recordings) rendered as application log lines in three shapes
  (plain text, JSON, logfmt) convert to exactly the canonical rows and audit to the same
  figures.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from delivery_audit.adapters import convert
from delivery_audit.adapters.convert_command import (
    UsageError,
    build_config,
    parse_options,
    run_convert,
)
from delivery_audit.adapters.mapping_rules import MappingError
from delivery_audit.adapters.sniff import ApplicationLog, sniff
from delivery_audit.config import AuditConfig
from delivery_audit.fields import FIELDS

APPLOGS = Path(__file__).parent / "data" / "applogs"
SAMPLES = sorted(p.name[: -len(".expected.json")] for p in APPLOGS.glob("*.expected.json"))


def _config(adapters: dict) -> AuditConfig:
    return AuditConfig.from_dict({"adapters": adapters})


def _convert(tmp: Path, source: str, files: list[Path], adapters: dict):
    accounts: list = []
    written, counts = convert("mapping", source, [str(f) for f in files],
                              [f.name for f in files], tmp / "out", _config(adapters),
                              accounts=accounts)
    rows = [json.loads(x) for w in written for x in Path(w).read_text("utf-8").splitlines()]
    return rows, accounts, counts


# ------------------------------------------------------------------ real shapes, hand-worked

@pytest.mark.parametrize("sample", SAMPLES)
def test_real_shape_converts_to_its_hand_worked_rows(tmp_path, sample):
    spec = yaml.safe_load((APPLOGS / f"{sample}.mapping.yaml").read_text("utf-8"))
    expected = json.loads((APPLOGS / f"{sample}.expected.json").read_text("utf-8"))
    rows, accounts, _ = _convert(tmp_path, spec["source"], [APPLOGS / f"{sample}.log"],
                                 spec["adapters"])
    got = [{k: v for k, v in r.items() if k != "__file" and v is not None} for r in rows]
    assert got == expected["rows"]
    account = accounts[0]
    assert account.unaccounted == 0
    assert account.skipped == expected["skipped"]
    assert account.error_rows == expected.get("error_rows", 0)


def test_every_sample_is_listed_with_its_source_in_the_readme():
    readme = (APPLOGS / "README.md").read_text("utf-8")
    assert len(SAMPLES) >= 6
    for sample in SAMPLES:
        assert f"{sample}.log" in readme, sample


# ------------------------------------------------------------------ malformed mappings

SPRING = r"Sent message=\[(?P<value>[^\]]*)\] with offset=\[(?P<offset>\d+)\]"


@pytest.mark.parametrize(("mapping", "says"), [
    ({"sends": [{"regex": SPRING}, {"regex": "offset=[(?P<offset>"}]},
     "adapters.mapping.sends[1]: bad regex"),
    ({"sends": [{"regex": r"offset=(?P<ofset>\d+)"}]},
     "adapters.mapping.sends[0]: named group 'ofset' is no sends field"),
    ({"ledger": [{"json": {"started": "@timestamp"}}]},
     "adapters.mapping.ledger[0]: json field 'started' is no ledger field"),
    ({"sends": [{"set": {"status": "acked"}}]},
     "adapters.mapping.sends[0]: a rule needs regex:"),
    ({"sends": [{"json": {"status": "outcome"}, "map": {"status": ["OK", "acked"]}}]},
     "adapters.mapping.sends[0]: map of 'status' must be a non-empty mapping"),
    ({"sends": [{"regex": SPRING, "map": {"status": {"OK": "acked"}}}]},
     "adapters.mapping.sends[0]: map of 'status': the rule does not read 'status'"),
    ({"sends": [{"regex": SPRING, "set": {"offset": 1}}]},
     "adapters.mapping.sends[0]: field 'offset' given twice"),
    ({"sends": [{"regex": SPRING, "time_format": "%Y-%m-%d %Q"}]},
     "adapters.mapping.sends[0]: bad time_format"),
    ({"sends": [{"regex": SPRING, "when": {"level": "INFO"}}]},
     "adapters.mapping.sends[0]: when: narrows json rules"),
    ({"sends": [{"regex": SPRING, "sets": {"status": "acked"}}]},
     "adapters.mapping.sends[0]: unknown key(s) 'sets'"),
    ({"orders": [{"regex": SPRING}]}, "adapters.mapping.orders: no such source"),
    ({"ledger": [{"regex": SPRING}]}, "format mapping needs rules for sends"),
])
def test_a_malformed_mapping_fails_before_any_line_naming_the_rule(tmp_path, mapping, says):
    log = tmp_path / "app.log"
    log.write_text("Sent message=[1] with offset=[0]\n", encoding="utf-8")
    with pytest.raises(MappingError) as info:
        _convert(tmp_path, "sends", [log], {"mapping": mapping})
    assert says in str(info.value)
    assert not list((tmp_path / "out").glob("*.jsonl")) or all(
        not p.read_text() for p in (tmp_path / "out").glob("*.jsonl"))  # no line read


# ------------------------------------------------------------------ matching and accounting

def test_first_matching_rule_wins_unmatched_lines_are_skipped_and_errors_name_rule_and_field(
        tmp_path):
    log = tmp_path / "app.log"
    log.write_text(
        "2024-01-16 23:00:00.123  INFO 1 --- [ad | producer-1] c.e.Sender : Sent message=[5] "
        "with offset=[12]\n"
        "2024-01-16 23:00:01.000  INFO 1 --- [main] c.e.App : Started App in 2.3 seconds\n"
        "\n"
        'app-1  | {"@timestamp":"2024-01-16T23:00:02.5+01:00","kafka":{"key":"k1"},"seq":"7",'
        '"outcome":"BOOM"}\n'
        '{"@timestamp":1705446003,"kafka":{"key":"k2"},"outcome":"OK"}\n',
        encoding="utf-8")
    adapters = {"topic": "orders", "mapping": {"sends": [
        {"regex": r"^(?P<send_ts>\S+ \S+) .*" + SPRING, "set": {"status": "acked"},
         "copy": {"ack_ts": "send_ts"}},
        {"json": {"send_ts": "@timestamp", "key": "kafka.key", "seq": "seq",
                  "status": "outcome"},
         "map": {"status": {"OK": "acked", "*": "failed"}}},
    ]}}
    rows, accounts, _ = _convert(tmp_path, "sends", [log], adapters)
    a = accounts[0]
    assert (a.lines, a.recognised, a.skipped, a.error_lines, a.unaccounted) == \
        (5, 2, {"unmatched": 1, "blank": 1}, 1, 0)
    first, second, error = rows
    assert (first["send_ts"], first["ack_ts"], first["seq"], first["offset"],
            first["status"], first["topic"], first["__line"]) == \
        (1705446000123, 1705446000123, 5, 12, "acked", "orders", 1)
    assert (second["send_ts"], second["key"], second["seq"], second["status"]) == \
        (1705446002500 - 3_600_000, "k1", 7, "failed")
    assert error["__line"] == 5 and error["__error"] == (
        "adapters.mapping.sends[1] matched but gave no seq (required in sends): json path "
        "'seq' is absent or null")
    from delivery_audit.adapters.mapping import lines_taken

    assert lines_taken(a.path) == {"sends[0]": 1, "sends[1]": 2}


def test_convert_option_configures_the_mapping_and_shows_lines_per_rule(tmp_path):
    log = tmp_path / "app.log"
    log.write_text("Sent message=[3] with offset=[0]\nSent message=[4] with offset=[1]\n"
                   "unrelated\n", encoding="utf-8")
    rule = json.dumps([{"regex": SPRING, "set": {"status": "acked",
                                                 "send_ts": 1705446000000}}])
    cfg = build_config(None, parse_options([f"mapping.sends={rule}", "topic=orders"]))
    result = run_convert("mapping", "sends", [str(log)], tmp_path / "out", cfg)
    doc = result.to_json()
    assert doc["files"][0]["rules"] == {"sends[0]": 2}
    assert doc["total"]["rules"] == {"sends[0]": 2}
    assert doc["total"]["skipped"] == {"unmatched": 1} and doc["total"]["rows"] == 2


def test_auto_refuses_an_application_log_and_says_to_declare_a_mapping(tmp_path):
    log = tmp_path / "app.log"
    log.write_text(
        "2024-11-08 18:57:30.918  INFO 53770 --- [ad | producer-1] jylee.kafka.KafkaProducer"
        "                : Sent message=[medium -> jylee message] with offset=[0]\n"
        '{"level":"info","ts":1572383524.72,"msg":"delivered","offset":3}\n'
        'ts=2024-01-15T10:00:12.501Z level=info msg="message handled" offset=4\n',
        encoding="utf-8")
    with pytest.raises(ApplicationLog, match="adapters.mapping.<source>.*--format mapping"):
        sniff(str(log))
    with pytest.raises(UsageError, match="auto never guesses"):
        run_convert("auto", "sends", [str(log)], tmp_path / "out", AuditConfig.from_dict({}))


# ------------------------------------------------------------------ the Done-when check

SHANGHAI = ZoneInfo("Asia/Shanghai")
TIMES = {"sends": ("send_ts", "ack_ts"), "ledger": ("started_ts", "finished_ts")}
LOGGER = {"sends": "c.e.orders.OrderSender", "ledger": "c.e.billing.OrderListener"}
TEXT_FMT = "%Y-%m-%d %H:%M:%S.%f"


def _ms(value) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return int(round(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000))


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")\
        .replace("+00:00", "Z")


def _text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, SHANGHAI).strftime(TEXT_FMT)[:-3]


def _others(source: str) -> list[str]:
    first = TIMES[source][0]
    return [f.name for f in FIELDS[source] if f.name != first]


def _value(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def render(source: str, shape: str, row: dict) -> str:
    """One canonical row as an application's log line of a shape."""
    first, second = TIMES[source]
    row = {**row, first: _ms(row[first]), second: _ms(row.get(second))}
    if shape == "text":  # Spring Boot's console layout, local time (Asia/Shanghai)
        parts = [f"{k}=[{_value(row[k])}]" for k in _others(source)
                 if row.get(k) is not None and k != "error"]
        tail = f" due to : {row['error']}" if row.get("error") is not None else ""
        return (f"{_text(row[first])}  INFO 4242 --- [ad | producer-1] {LOGGER[source]:<40}"
                f" : Handled message {' '.join(parts)}{tail}")
    if shape == "json":  # logstash-logback-encoder with structured arguments
        obj = {"@timestamp": _iso(row[first]), "@version": "1", "message": "handled",
               "logger_name": LOGGER[source], "level": "INFO",
               "kafka": {k: row.get(k) for k in ("topic", "partition", "offset", "key")}}
        obj.update({k: row.get(k) for k in _others(source)
                    if k not in obj["kafka"] and row.get(k) is not None})
        return json.dumps(obj, separators=(",", ":"))
    parts = [f"ts={_iso(row[first])}", "level=info", 'msg="message handled"']
    for k in _others(source):
        if row.get(k) is not None:
            parts.append(f'{k}="{row[k]}"' if k == "error" else f"{k}={_value(row[k])}")
    return " ".join(parts)


def mapping_for(source: str) -> list[dict]:
    first = TIMES[source][0]
    others = _others(source)
    text = (rf"^(?P<{first}>\S+ \S+) +INFO .* : Handled message"
            + "".join(rf"(?: {k}=\[(?P<{k}>[^\]]*)\])?" for k in others if k != "error")
            + (r"(?: due to : (?P<error>.*))?" if "error" in others else "") + "$")
    logfmt = (rf"^ts=(?P<{first}>\S+) level=info msg=\"message handled\""
              + "".join(rf'(?: {k}="(?P<{k}>[^"]*)")?' if k == "error" else
                        rf"(?: {k}=(?P<{k}>\S+))?" for k in others) + "$")
    kafka = ("topic", "partition", "offset", "key")
    paths = {first: "@timestamp", **{k: f"kafka.{k}" for k in kafka},
             **{k: k for k in others if k not in kafka}}
    return [{"regex": text, "time_format": {first: TEXT_FMT}},
            {"json": paths, "when": {"logger_name": LOGGER[source]}},
            {"regex": logfmt}]


NOISE = {
    "text": "2026-11-19 08:00:00.000  INFO 4242 --- [           main] c.e.App"
            "                                  : Started App in 2.3 seconds",
    "json": '{"@timestamp":"2026-11-19T00:00:00.000Z","message":"Started App",'
            '"logger_name":"c.e.App","level":"INFO"}',
    "logfmt": 'ts=2026-11-19T00:00:00.000Z level=info msg="listening" addr=:8080',
}


def rendered_day(src: Path, dst: Path) -> dict[str, list[dict]]:
    """The canonical sends and ledgers under ``src`` as application logs under ``dst``
    (rows dealt over three files, one per shape, each opening with an unrelated line);
    returns the canonical rows, in the order the files hold them."""
    canonical: dict[str, list[dict]] = {}
    for source in ("sends", "ledger"):
        rows = [json.loads(x) for f in sorted(src.glob("**/*.jsonl"))
                if source in str(f.relative_to(src))
                for x in f.read_text("utf-8").splitlines()]
        (dst / source).mkdir(parents=True)
        ordered: list[dict] = []
        for i, shape in enumerate(("text", "json", "logfmt")):
            mine = rows[i::3]
            lines = [NOISE[shape], *(render(source, shape, r) for r in mine)]
            (dst / source / f"app-{shape}.log").write_text("\n".join(lines) + "\n", "utf-8")
            ordered += mine
        canonical[source] = ordered
    return canonical


def _canonical_row(source: str, row: dict) -> dict:
    out = {f.name: row.get(f.name) for f in FIELDS[source]}
    for k in TIMES[source]:
        out[k] = _ms(out[k])
    return out


def check_rows(tmp: Path, src: Path, dst: Path, adapters: dict) -> None:
    canonical = rendered_day(src, dst)
    for source, expected in canonical.items():
        files = [dst / source / f"app-{s}.log" for s in ("text", "json", "logfmt")]
        rows, accounts, _ = _convert(tmp / source, source, files,
                                     {**adapters, "mapping": {source: mapping_for(source)}})
        assert all(a.unaccounted == 0 and a.error_rows == 0 for a in accounts)
        assert [a.skipped for a in accounts] == [{"unmatched": 1}] * 3
        got = [{k: v for k, v in r.items() if not k.startswith("__")} for r in rows]
        assert got == [_canonical_row(source, r) for r in expected], source


def audit_figures(spark, tmp: Path, inputs: dict, window, config: dict, formats: dict):
    from delivery_audit.audit import AuditRequest, Stages, extract, finish_report, reconcile
    from delivery_audit.report.assemble import assemble

    req = AuditRequest(inputs=inputs, window=window, out=str(tmp / "reports"),
                       config=AuditConfig.from_dict(config), formats=formats)
    stages = Stages()
    ingested = extract(spark, req, stages, tmp / "work")
    frames = {s: i.valid for s, i in ingested.sources.items()}
    rec = reconcile(spark, req, stages, tmp / "staging", ingested, frames, "test",
                    window.start)
    report = assemble(finish_report(req, rec.parts, rec, stages, tmp / "staging"))
    spark.catalog.clearCache()
    return report


def _figures(report: dict) -> dict:
    from delivery_audit.anomalies import STATES

    return {"anomalies": {a: v["count"] for a, v in report["anomalies"].items()},
            "judged": report["judged"],
            "groups": {g: {"judged": v["judged"],
                           "states": {s: v["states"][s] for s in STATES}}
                       for g, v in report["groups"].items()}}


@pytest.fixture(scope="module")
def generated_day(tmp_path_factory):
    from delivery_audit_sim.generator import generate_scenario

    tmp = tmp_path_factory.mktemp("mapping-day")
    # 600 messages, seed 11: broker-loss as tests/test_scenarios.py audits it (the same two
    # leader failovers as at 2,000: 6 lost_acked, 3 lost_unacked, 3 written_despite_failure,
    # 4 seq gaps), with every mapping shape and both mapped sources
    truth = generate_scenario("broker-loss", 600, 11, datetime(2026, 11, 19, tzinfo=UTC),
                              tmp / "canonical")
    return tmp, truth


def test_a_rendered_day_converts_to_exactly_its_canonical_rows(generated_day, tmp_path):
    tmp, _ = generated_day
    check_rows(tmp_path, tmp / "canonical", tmp_path / "applogs",
               {"timezone": "Asia/Shanghai"})


def test_a_rendered_lab_run_converts_to_exactly_its_recorded_rows(tmp_path):
    check_rows(tmp_path, APPLOGS / "lab-rebalance", tmp_path / "applogs",
               {"timezone": "Asia/Shanghai"})


@pytest.mark.audit
def test_a_rendered_day_audits_to_the_canonical_figures(spark, generated_day):
    """broker-loss: failed and timed-out sends, acks=1 losses, seq gaps. The figures of the
    canonical files are the generator's truth (tests/test_scenarios.py holds the audit
    to it); audited through mapping, the application logs give the same."""
    from delivery_audit.anomalies import STATES
    from delivery_audit.core.window import AuditWindow

    tmp, truth = generated_day
    rendered_day(tmp / "canonical", tmp / "applogs")
    cfg = yaml.safe_load((tmp / "canonical" / "config.yaml").read_text())
    window = AuditWindow.of(truth["window"]["start"], truth["window"]["end"],
                            truth["window"]["grace_minutes"])
    inputs = {"sends": [str(tmp / "applogs" / "sends" / "*.log")],
              "ledger": [str(tmp / "applogs" / "ledger" / "*.log")],
              "broker": [str(tmp / "canonical" / "broker" / "*.jsonl")],
              "events": [str(tmp / "canonical" / "events" / "*.jsonl")]}
    config = {**cfg, "adapters": {"timezone": "Asia/Shanghai", "mapping": {
        "sends": mapping_for("sends"), "ledger": mapping_for("ledger")}}}
    report = audit_figures(spark, tmp / "audit", inputs, window, config,
                           {"sends": "mapping", "ledger": "mapping"})
    got = _figures(report)
    assert {a: got["anomalies"][a] for a in truth["anomalies"]} == truth["anomalies"]
    assert truth["anomalies"]["lost_acked"] and truth["anomalies"]["written_despite_failure"]
    assert got["judged"] == truth["judged"]
    for group, expected in truth["groups"].items():
        assert got["groups"][group]["judged"] == expected["judged"]
        assert {s: got["groups"][group]["states"][s] for s in STATES} == expected["states"]
    for source in ("sends", "ledger"):
        counts = report["inputs"][source]
        assert counts["rows_quarantined"] == 0 and counts["skipped_lines"] == 3, counts


@pytest.mark.audit
def test_a_rendered_lab_run_audits_to_the_figures_of_its_canonical_recordings(spark, tmp_path):
    """The lab's recordings (RecordingProducer/RecordingConsumer against the mock cluster)
    audited twice, canonical and rendered as application logs through mapping."""
    from delivery_audit.core.window import AuditWindow

    lab = APPLOGS / "lab-rebalance"
    spec = yaml.safe_load((lab / "lab.yaml").read_text("utf-8"))
    w = spec["window"]
    window = AuditWindow.of(w["start"], w["end"], w["grace_minutes"])
    rendered_day(lab, tmp_path / "applogs")
    common = {"broker": [str(lab / "broker.dump.jsonl")],
              "events": [str(lab / "*.events.jsonl")]}
    canonical = audit_figures(spark, tmp_path / "canonical", {
        **common, "sends": [str(lab / "producer.sends.jsonl")],
        "ledger": [str(lab / "*.ledger.jsonl")]}, window, spec["config"], {})
    config = {**spec["config"], "adapters": {"timezone": "Asia/Shanghai", "mapping": {
        "sends": mapping_for("sends"), "ledger": mapping_for("ledger")}}}
    mapped = audit_figures(spark, tmp_path / "mapped", {
        **common, "sends": [str(tmp_path / "applogs" / "sends" / "*.log")],
        "ledger": [str(tmp_path / "applogs" / "ledger" / "*.log")]}, window, config,
        {"sends": "mapping", "ledger": "mapping"})
    assert _figures(mapped) == _figures(canonical)
    got = _figures(mapped)
    assert got["judged"] == 40 and got["anomalies"]["redelivery"] == 1
    assert got["groups"]["lab-group"]["states"]["delivered_duplicate"] == 1


def test_run_reports_a_malformed_mapping_as_an_input_error_naming_the_rule(spark, tmp_path):
    """Under `run` the error is ingestion's InputError (the CLI prints it, exit status 1)."""
    from delivery_audit.audit import AuditRequest, Stages, extract
    from delivery_audit.core.window import AuditWindow
    from delivery_audit.ingest import InputError

    lab = APPLOGS / "lab-rebalance"
    spec = yaml.safe_load((lab / "lab.yaml").read_text("utf-8"))
    w = spec["window"]
    config = {**spec["config"], "adapters": {"mapping": {"sends": [{"regex": SPRING},
                                                                   {"json": {"sent": "ts"}}]}}}
    req = AuditRequest(inputs={"sends": [str(APPLOGS / "spring-kafka-tutorial.log")],
                               "broker": [str(lab / "broker.dump.jsonl")],
                               "ledger": [str(lab / "*.ledger.jsonl")], "events": []},
                       window=AuditWindow.of(w["start"], w["end"], w["grace_minutes"]),
                       out=str(tmp_path / "reports"), config=AuditConfig.from_dict(config),
                       formats={"sends": "mapping"})
    with pytest.raises(InputError, match=r"adapters\.mapping\.sends\[1\]: json field 'sent'"):
        extract(spark, req, Stages(), tmp_path / "work")
