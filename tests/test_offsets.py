"""Contract rule 26: a live read's offsets file (`run --offsets FILE`, contract §9.1).

The reader's checks (no Spark); each clause of the rule through ONE detection on a tiny day
(each case in its own topic, as in test_rules.py): the dump range is the read range, the
config's dump_ranges still win, retention is judged by ``log_start`` (an acked offset in
[log_start, read_from) is pending), committed offsets count as commits when taken before
end + grace, marker offsets are never gaps; and `run --offsets` once through the CLI, with
a file taken after end + grace (its committed offsets shown only).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from frames import END, START, Log, ts
from rule_results import states, units
from typer.testing import CliRunner

from delivery_audit.cli import app
from delivery_audit.config import AuditConfig, DumpRange
from delivery_audit.core.window import AuditWindow
from delivery_audit.detection import detect
from delivery_audit.detection.facts import compute_facts
from delivery_audit.errors import InputError
from delivery_audit.ingest.offsets import parse_offsets, read_offsets
from delivery_audit.request import build_request

REPO = Path(__file__).resolve().parents[1]
for folder in ("plugins", "jobs"):
    if str(REPO / folder) not in sys.path:
        sys.path.append(str(REPO / folder))

from delivery_audit_airflow.connect import request_fields  # noqa: E402
from delivery_audit_airflow.plan import job_args  # noqa: E402
from reconcile import parser  # noqa: E402  (jobs/reconcile.py)

WINDOW = AuditWindow.of(START, END)  # read until 2026-11-20T01:00Z


def _partition(topic, log_start, read_from, read_to, end=None, partition=0):
    end = read_to if end is None else end
    return {"topic": topic, "partition": partition, "log_start": log_start, "end": end,
            "last_stable": end, "read_from": read_from, "read_to": read_to}


def _write(tmp_path, doc, name="offsets.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return str(path)


GOOD = {"taken_at": "2026-11-20T00:30:00+01:00",
        "partitions": [_partition("t", 0, 0, 120, end=120)],
        "groups": [{"group": "g", "topic": "t", "partition": 0, "committed": 97},
                   {"group": "g2", "topic": "t", "partition": 0, "committed": None}]}


# -- the reader ------------------------------------------------------------------------

def test_read_offsets_reads_the_contract_shape(tmp_path):
    got = read_offsets(_write(tmp_path, GOOD))
    assert got.taken_at == datetime(2026, 11, 19, 23, 30, tzinfo=UTC)
    assert [(p.topic, p.partition, p.log_start, p.read_from, p.read_to, p.end)
            for p in got.partitions] == [("t", 0, 0, 0, 120, 120)]
    assert [(g.group, g.committed) for g in got.groups] == [("g", 97), ("g2", None)]
    assert got.as_dict()["taken_at"] == "2026-11-19T23:30:00Z"
    # a null committed offset states nothing for rule 12; a late file states none at all
    assert got.stated(WINDOW.read_until).committed == {("g", "t", 0): 97}
    assert got.stated(datetime(2026, 11, 19, 23, 30, tzinfo=UTC)).committed == {}
    assert got.stated(WINDOW.read_until).read_ranges == {("t", 0): (0, 120)}


@pytest.mark.parametrize(("doc", "message"), [
    ("{not json", r"offsets\.json: not valid JSON: .* \(line 1 column 2\)"),
    ("[]", r"offsets\.json: the file must hold a JSON object, not a list"),
    ({**GOOD, "taken_at": None}, r"offsets\.json: taken_at: missing"),
    ({**GOOD, "taken_at": "yesterday"}, r"taken_at: not an ISO-8601 instant: 'yesterday'"),
    ({**GOOD, "taken_at": 1763596800000}, r"taken_at: must be an ISO-8601 text, not int"),
    ({k: v for k, v in GOOD.items() if k != "partitions"}, r"partitions: missing \(a list\)"),
    ({**GOOD, "partitions": [_partition("t", 0, 130, 120, end=140)]},
     r"offsets\.json: partitions\[0\]\.read_from: read_from \(130\) > read_to \(120\)"),
    ({**GOOD, "partitions": [_partition("t", 5, 2, 9, end=10)]},
     r"partitions\[0\]\.log_start: log_start \(5\) > read_from \(2\)"),
    ({**GOOD, "partitions": [{**_partition("t", 0, 0, 9), "read_to": "nine"}]},
     r"partitions\[0\]\.read_to: must be an integer, not a text"),
    ({**GOOD, "partitions": [{**_partition("t", 0, 0, 9), "partition": True}]},
     r"partitions\[0\]\.partition: must be an integer, not a boolean"),
    ({**GOOD, "partitions": [{**_partition("t", 0, 0, 9), "end": None}]},
     r"partitions\[0\]\.end: missing"),
    ({**GOOD, "partitions": [_partition("", 0, 0, 9)]}, r"partitions\[0\]\.topic: missing"),
    ({**GOOD, "partitions": [_partition("t", 0, 0, 9), _partition("t", 0, 0, 9)]},
     r"partitions\[1\]: t, 0 is named twice \(first at partitions\[0\]\)"),
    ({**GOOD, "groups": [{"group": "g", "topic": "t", "partition": 0, "committed": -1}]},
     r"groups\[0\]\.committed: must not be negative \(-1\)"),
])
def test_read_offsets_names_the_file_and_the_field(tmp_path, doc, message):
    with pytest.raises(InputError, match=message):
        read_offsets(_write(tmp_path, doc))


def test_read_offsets_missing_file(tmp_path):
    with pytest.raises(InputError, match="no files match .*nowhere.json"):
        read_offsets(str(tmp_path / "nowhere.json"))


def test_the_option_reaches_the_request_and_the_airflow_job(tmp_path):
    """`run --offsets`, jobs/reconcile.py --offsets and the Airflow side (the Connect
    task's request, the spark-submit arguments) all carry the file to AuditRequest."""
    out = str(tmp_path / "r")
    req = build_request(sends=["s"], broker=["b"], ledger=["l"], start=START, end=END,
                        out=out, offsets=tmp_path / "offsets.json")
    assert req.offsets == str(tmp_path / "offsets.json")
    assert build_request(sends=["s"], broker=["b"], ledger=["l"], start=START, end=END,
                         out=out).offsets is None
    plan = {"sources": {"sends": "s/*", "broker": "b/*", "ledger": "l/*", "events": None},
            "window": {"start": START, "end": END, "grace_minutes": 60}, "out": out,
            "offsets": "s3://bucket/in/snapshot/offsets.json"}
    args = parser().parse_args(job_args(plan, None))
    assert args.offsets == "s3://bucket/in/snapshot/offsets.json"
    assert build_request(**request_fields(plan)).offsets == args.offsets
    assert "--offsets" not in job_args({**plan, "offsets": None}, None)


# -- the rule, clause by clause, on one detection ---------------------------------------

def build_cases() -> tuple[Log, dict]:
    log = Log()
    parts = []
    # (1) the dump range is the read range [3, 10): acked at 4 and 8 with no record are
    # lost (rule 7 alone would make the range [5, 8): 4 expired, 8 pending)
    for s in (5, 6, 7):
        log.message(s, topic="o-range")
    log.send(4, topic="o-range").send(8, topic="o-range")
    parts.append(_partition("o-range", 0, 3, 10))
    # (1) the config's dump_ranges win: [0, 6) for o-config, whatever the file says
    for s in (2, 3):
        log.message(s, topic="o-config")
    log.send(1, topic="o-config").send(7, topic="o-config")
    parts.append(_partition("o-config", 2, 2, 10))
    # (2) retention by log_start 2 with the read from 5: acked at 1 expired, at 3 pending
    for s in (5, 6, 7):
        log.message(s, topic="o-retention")
    log.send(1, topic="o-retention").send(3, topic="o-retention")
    parts.append(_partition("o-retention", 2, 5, 8))
    # (3) committed 3 by g (taken before end + grace): 1 and 2 skipped, 3 pending
    log.message(0, topic="o-commit")
    for s in (1, 2, 3):
        log.send(s, topic="o-commit").write(s, topic="o-commit")
    parts.append(_partition("o-commit", 0, 0, 4))
    # (4) markers: a committed transaction (pid 7: 0, 1, COMMIT at 2), an aborted one
    # (pid 8: seq 3 at 4, ABORT at 5), plain records at 3 and 6; all read, committed 7
    txn = {"transactional": True, "producer_epoch": 0}
    for s, o, pid in ((0, 0, 7), (1, 1, 7), (3, 4, 8)):
        log.send(s, topic="o-marker", offset=o, status="acked" if pid == 7 else "aborted")
        log.write(s, offset=o, topic="o-marker", pid=pid, **txn)
    log.marker(2, "commit", 7, topic="o-marker").marker(5, "abort", 8, topic="o-marker")
    for s, o in ((2, 3), (4, 6)):
        log.send(s, topic="o-marker", offset=o).write(s, offset=o, topic="o-marker")
    for o in (0, 1, 3, 6):
        log.process(o, topic="o-marker")
    parts.append(_partition("o-marker", 0, 0, 7))
    doc = {"taken_at": "2026-11-20T00:30:00Z", "partitions": parts,
           "groups": [{"group": "g", "topic": "o-commit", "partition": 0, "committed": 3},
                      {"group": "g", "topic": "o-marker", "partition": 0, "committed": 7},
                      {"group": "g", "topic": "o-range", "partition": 0, "committed": None},
                      # a group judged nowhere: its offsets are no fact of the audit
                      {"group": "nobody", "topic": "o-range", "partition": 0,
                       "committed": 100}]}
    return log, doc


CONFIG = AuditConfig(dump_ranges=(DumpRange("o-config", 0, 0, 6),))


@pytest.fixture(scope="module")
def result(spark, tmp_path_factory):
    log, doc = build_cases()
    offsets = parse_offsets(doc, "offsets.json")
    frames = log.frames(spark)
    facts = compute_facts(frames, CONFIG, offsets.stated(WINDOW.read_until))
    detection = detect(spark, frames, WINDOW, CONFIG, facts)
    path = str(tmp_path_factory.mktemp("offsets") / "anomalies")
    detection.write_anomalies(path)
    rows = [r.asDict() for r in spark.read.parquet(path).collect()]
    got = [r.asDict() for r in detection.states.select(
        "group_id", "topic", "seq", "state", "successes").collect()]
    return {"rows": rows, "states": got, "facts": facts}


def test_the_dump_range_is_the_read_range(result):
    assert result["facts"].ranges[("o-range", 0)] == (3, 10)
    assert states(result, "o-range") == {4: "lost_acked", 5: "delivered_once",
                                         6: "delivered_once", 7: "delivered_once",
                                         8: "lost_acked"}
    assert units(result, "o-range")["expired_unconsumed"] == 0


def test_the_configs_dump_range_wins(result):
    assert result["facts"].ranges[("o-config", 0)] == (0, 6)
    assert result["facts"].log_start("o-config", 0) == 0  # the config's log start too
    assert states(result, "o-config") == {1: "lost_acked", 2: "delivered_once",
                                          3: "delivered_once", 7: "pending"}


def test_retention_is_judged_by_the_log_start_not_the_read(result):
    assert states(result, "o-retention") == {1: "expired_unconsumed", 3: "pending",
                                             5: "delivered_once", 6: "delivered_once",
                                             7: "delivered_once"}
    expired = [r for r in result["rows"] if r["topic"] == "o-retention"
               and r["anomaly"] == "expired_unconsumed"]
    assert [(r["offset"], r["group_id"]) for r in expired] == [(1, "g")]
    assert units(result, "o-retention")["lost_acked"] == 0


def test_committed_offsets_taken_in_time_count_as_commits(result):
    assert result["facts"].reach[("g", "o-commit", 0)] == 3
    assert ("nobody", "o-range", 0) not in result["facts"].reach
    assert states(result, "o-commit") == {0: "delivered_once", 1: "skipped", 2: "skipped",
                                          3: "pending"}
    skipped = sorted(r["offset"] for r in result["rows"]
                     if r["topic"] == "o-commit" and r["anomaly"] == "skipped")
    assert skipped == [1, 2]


def test_marker_offsets_are_no_gaps(result):
    u = units(result, "o-marker")
    assert (u["skipped"], u["lost_acked"], u["pending"], u["expired_unconsumed"]) == (0,) * 4
    # the aborted record is no copy: never committed, so lost_unacked (rule 25)
    assert states(result, "o-marker") == {0: "delivered_once", 1: "delivered_once",
                                          2: "delivered_once", 3: "lost_unacked",
                                          4: "delivered_once"}
    assert Counter(r["anomaly"] for r in result["rows"] if r["topic"] == "o-marker") == \
        Counter({"lost_unacked": 1})


# -- `run --offsets` through the CLI ------------------------------------------------------

def _iso(text: str) -> str:
    return ts(text).isoformat() + "Z"


@pytest.mark.audit
def test_run_with_offsets_through_the_cli(spark, tmp_path):
    """A tiny day: records 3..6 read ([3, 7)), log start 2; seq 1 acked at 1 (expired),
    seq 2 acked at 2 (pending: before the read); g processed 3 only and committed 6, but
    the file was taken after end + grace: 4, 5 and 6 are pending, the commit only shown."""
    log = Log()
    log.send(1, offset=1).send(2, offset=2)
    log.message(3)
    for s in (4, 5, 6):
        log.send(s).write(s)
    for source in ("sends", "broker", "ledger"):
        rows = [{k: _iso(v) if k.endswith("_ts") or k == "timestamp" else v
                 for k, v in r.items()} for r in getattr(log, source)]
        (tmp_path / f"{source}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    offsets = _write(tmp_path, {
        "taken_at": "2026-11-20T02:00:00Z", "partitions": [_partition("t", 2, 3, 7, end=9)],
        "groups": [{"group": "g", "topic": "t", "partition": 0, "committed": 6}]})
    out = tmp_path / "reports"
    base = ["run", *[a for s in ("sends", "broker", "ledger")
                     for a in (f"--{s}", str(tmp_path / f"{s}.jsonl"))],
            "--start", START, "--end", END, "--out", str(out), "--no-notify"]
    bad = _write(tmp_path, {**json.loads(Path(offsets).read_text()), "taken_at": None},
                 "bad.json")
    failed = CliRunner().invoke(app, [*base, "--offsets", bad])
    assert failed.exit_code == 1
    assert "bad.json: taken_at: missing" in " ".join(failed.output.split())
    result = CliRunner().invoke(app, [*base, "--offsets", offsets, "--json"])
    assert result.exit_code in (0, 3), result.output
    report = json.loads(result.stdout[result.stdout.index("{"):result.stdout.rindex("}") + 1])
    states_g = report["groups"]["g"]["states"]
    assert (states_g["expired_unconsumed"], states_g["pending"], states_g["skipped"],
            states_g["delivered_once"], states_g["lost_acked"]) == (1, 4, 0, 1, 0)
    shown = report["offsets_file"]
    assert shown["file"] == offsets and shown["committed_counted"] is False
    assert shown["groups"] == [{"group": "g", "topic": "t", "partition": 0, "committed": 6}]
    assert shown["partitions"][0]["read_from"] == 3
    html = next(out.rglob("report.html")).read_text(encoding="utf-8")
    assert 'id="offsets-file"' in html and "are shown only" in html
