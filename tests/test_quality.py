"""Great Expectations suites over small aggregates: the metric rows of good and crafted bad
inputs (real Spark), validated by real GX on pandas; the results suite; no Spark job in GX."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from report_fixtures import make_report

from delivery_audit.config import AuditConfig
from delivery_audit.core.packaging import package_zip
from delivery_audit.core.window import AuditWindow
from delivery_audit.quality import (
    INPUT_SUITES,
    RESULTS_SUITE,
    THRESHOLD_DEFAULTS,
    expectations_dir,
    input_metrics,
    load_suite_dict,
    metric_aggregates,
    metric_names,
    suite_parameters,
    timestamp_bounds,
    validate_inputs,
    validate_results,
    write_results,
)
from delivery_audit.schemas import canonical_schema
from delivery_audit.spark import local_frame

REPO = Path(__file__).resolve().parents[1]
SUITES = (*INPUT_SUITES, RESULTS_SUITE)
WINDOW = AuditWindow.of("2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", 60)
T0 = datetime(2025, 1, 1, 1, 0, tzinfo=UTC)
GOOD_CONFIG = AuditConfig.from_dict({"groups": {"g1": {"topics": ["orders"]}}})
# a second topic named for g1 that no input carries; a strict null-key share
BAD_CONFIG = AuditConfig.from_dict({"groups": {"g1": {"topics": ["orders", "payments"]}},
                                    "quality": {"null_key_share_max": 0.1}})


def ts(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def frame(spark, source: str, rows: list[dict]):
    schema = canonical_schema(source)
    return local_frame(spark, [tuple(r.get(f.name) for f in schema.fields) for r in rows], schema)


def good_rows() -> dict[str, list[dict]]:
    return {
        "sends": [{"send_ts": ts(i), "topic": "orders", "key": f"k{i % 2}", "seq": i,
                   "status": "acked", "partition": 0, "offset": i, "ack_ts": ts(i + 0.01),
                   "attempt": 1} for i in range(4)]
        + [{"send_ts": ts(9), "topic": "orders", "key": "k1", "seq": 9, "status": "failed",
            "error": "timeout <b>"}],
        "broker": [{"topic": "orders", "partition": 0, "offset": i, "key": f"k{i % 2}",
                    "seq": i, "timestamp": ts(i)} for i in range(4)],
        "ledger": [{"group_id": "g1", "member_id": "m1", "topic": "orders", "partition": 0,
                    "offset": i, "started_ts": ts(i + 1), "finished_ts": ts(i + 1.5),
                    "outcome": "success"} for i in range(4)],
        "events": [{"group_id": "g1", "member_id": "m1", "ts": ts(0), "event": "assigned",
                    "topic": "orders", "partition": 0}],
    }


def bad_rows() -> dict[str, list[dict]]:
    """Rows strict parsing accepts (all valid), each breaking one input expectation."""
    rows = good_rows()
    rows["sends"] += [
        {"send_ts": datetime(1970, 1, 21, tzinfo=UTC), "topic": "orders", "key": "k2",
         "seq": 21, "status": "failed"},  # seconds read as milliseconds
        {"send_ts": ts(3), "topic": "orders", "key": "k3", "seq": 23, "status": "acked",
         "partition": 0, "offset": 7, "ack_ts": ts(2)},  # acked before it was sent
        {"send_ts": ts(4), "topic": "orders", "key": None, "seq": 24, "status": "failed",
         "attempt": 0},  # attempts counted from 0; and a null key (1/9 > 0.1)
        {"send_ts": ts(5), "topic": "orders", "key": "k1", "seq": 25, "status": "acked",
         "partition": 0, "offset": 8, "ack_ts": datetime(2300, 1, 1, tzinfo=UTC)},
    ]
    rows["broker"] += [  # 5 of 9 records without seq; one far in the future, one keyless
        {"topic": "orders", "partition": 0, "offset": 9, "key": None,
         "timestamp": datetime(2300, 1, 1, tzinfo=UTC)},
        *[{"topic": "orders", "partition": 0, "offset": o, "key": "k0", "timestamp": ts(o)}
          for o in range(10, 14)],
    ]
    rows["ledger"] += [
        {"group_id": "g1", "member_id": "m1", "topic": "orders", "partition": 0, "offset": 1,
         "started_ts": ts(5), "finished_ts": ts(4), "outcome": "failure"},
        {"group_id": "g1", "member_id": "m2", "topic": "orders", "partition": 0, "offset": 2,
         "started_ts": datetime(1980, 1, 1, tzinfo=UTC), "outcome": "success"},
    ]
    rows["events"] += [
        {"group_id": "g1", "ts": datetime(1980, 1, 1, tzinfo=UTC), "event": "lost"},
    ]
    return rows


def with_ingestion(metrics: dict[str, dict], quarantined: dict[str, tuple[int, int]]):
    """The figures the audit adds from ingestion: {source: (quarantined, of which
    duplicates)}; rows_read = rows_valid + quarantined."""
    out = {}
    for source, m in metrics.items():
        q, dups = quarantined.get(source, (0, 0))
        out[source] = {**m, "rows_read": m["rows_valid"] + q, "rows_quarantined": q,
                       "duplicates_quarantined": dups}
    return out


@pytest.fixture(scope="module")
def good_frames(spark):
    return {s: frame(spark, s, r) for s, r in good_rows().items()}


@pytest.fixture(scope="module")
def metrics(spark, good_frames):
    bad = {s: frame(spark, s, r) for s, r in bad_rows().items()}
    return (with_ingestion(input_metrics(good_frames, WINDOW, GOOD_CONFIG), {}),
            with_ingestion(input_metrics(bad, WINDOW, BAD_CONFIG), {"sends": (3, 2)}))


@pytest.fixture(scope="module")
def input_results(metrics):
    good, bad = metrics
    return (validate_inputs(good, WINDOW, GOOD_CONFIG),
            validate_inputs(bad, WINDOW, BAD_CONFIG))


def failed_by_metric(result: dict) -> dict[str, dict]:
    return {f["metric"]: f for f in result["failed"]}


def suite_size(name: str) -> int:
    return len(json.loads((expectations_dir() / f"{name}.json").read_text())["expectations"])


def test_suite_files_are_valid_gx_suites():
    from great_expectations.core.expectation_suite import ExpectationSuite

    d = expectations_dir()
    for name in (*INPUT_SUITES, "results"):
        data = json.loads((d / f"{name}.json").read_text())
        suite = ExpectationSuite(**data)
        assert suite.expectations, name
        assert all(e["meta"].get("why") for e in data["expectations"]), name


def test_the_suites_ship_with_the_package(tmp_path):
    """The package's own suites (package data delivery_audit/expectations/, read through
    importlib.resources) are the top-level expectations/ files; the config overrides them."""
    top = REPO / "expectations"
    assert sorted(p.name for p in top.glob("*.json")) == sorted(f"{n}.json" for n in SUITES)
    shipped = expectations_dir()
    assert shipped.name == "expectations" and "delivery_audit" in str(shipped)
    for name in SUITES:
        assert (shipped / f"{name}.json").read_bytes() == (top / f"{name}.json").read_bytes()
    (tmp_path / "results.json").write_text('{"name": "mine", "expectations": []}')
    custom = AuditConfig(raw={"quality": {"expectations_dir": str(tmp_path)}})
    assert expectations_dir(custom) == tmp_path
    assert load_suite_dict("results", custom)["name"] == "mine"
    with pytest.raises(FileNotFoundError, match="sends.json is missing"):
        load_suite_dict("sends", custom)


def test_the_suites_are_read_from_the_py_files_zip(tmp_path):
    """The --py-files zip carries the package with its suites: a Python that imports
    delivery_audit from the zip alone (PYTHONPATH = the zip, another folder) reads them."""
    zipped = package_zip(tmp_path / "py-files")
    names = zipfile.ZipFile(zipped).namelist()
    assert {f"delivery_audit/expectations/{n}.json" for n in SUITES} <= set(names)
    assert "delivery_audit/quality/suites.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # the engine only: the simulator is its own package (sim/), never shipped to Spark
    assert all(n.startswith("delivery_audit/") for n in names), names[:5]
    assert not [n for n in names if n.split("/")[1] in ("generator", "lab.py", "recorder.py")]
    code = ("import json, delivery_audit.quality as q\n"
            "print(json.dumps({'module': q.__file__, 'dir': str(q.expectations_dir()),\n"
            "    'sizes': {n: len(q.load_suite_dict(n)['expectations'])\n"
            "              for n in (*q.INPUT_SUITES, q.RESULTS_SUITE)}}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELIVERY_AUDIT_")}
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(zipped)},
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["module"].startswith(f"{zipped}/delivery_audit/"), got
    assert got["dir"] == f"{zipped}/delivery_audit/expectations/", got
    assert got["sizes"] == {n: suite_size(n) for n in SUITES}


def test_metric_rows_of_good_inputs(metrics):
    good, _ = metrics
    for source in INPUT_SUITES:
        assert set(metric_names(source)) <= set(good[source]), source
    s = good["sends"]
    assert (s["rows"], s["rows_valid"], s["by_topic"]) == (5, 5, {"orders": 5})
    assert s["send_ts_outside"] == s["ack_ts_outside"] == s["ack_ts_before_send_ts"] == 0
    assert s["key_nulls"] == 0 and s["attempt_below_one"] == 0
    assert s["send_ts_earliest_ms"] == int(ts(0).timestamp() * 1000)
    assert s["send_ts_latest_ms"] == int(ts(9).timestamp() * 1000)
    assert good["broker"]["seq_nulls"] == 0 and good["events"]["by_topic"] == {"orders": 1}


def test_metric_aggregates_are_named_columns(spark, good_frames):
    row = good_frames["ledger"].agg(*metric_aggregates("ledger", WINDOW)).first().asDict()
    assert tuple(row) == metric_names("ledger")
    assert row["rows"] == 4 and row["finished_ts_before_started_ts"] == 0


def test_good_inputs_pass(input_results):
    good, _ = input_results
    for source in INPUT_SUITES:
        assert good[source]["success"], (source, good[source]["failed"])
        stats = good[source]["statistics"]
        assert stats["evaluated_expectations"] == suite_size(source) >= 3, source
        assert good[source]["seconds"] > 0
        assert good[source]["parameters"]["ts_min"].startswith("2015-01-04")
    print({s: good[s]["seconds"] for s in INPUT_SUITES})


def test_bad_sends_fail(input_results):
    _, bad = input_results
    failed = failed_by_metric(bad["sends"])
    assert not bad["sends"]["success"]
    assert set(failed) == {"send_ts_outside", "ack_ts_outside", "ack_ts_before_send_ts",
                           "attempt_below_one", "key_null_share", "duplicate_share",
                           "quarantined_share", "topic_rows_valid"}
    outside = failed["send_ts_outside"]
    assert outside["expectation"] == "expect_column_values_to_be_between"
    assert outside["observed"] == 1 and outside["allowed"] == {"min": 0, "max": 0}
    assert outside["context"]["send_ts_earliest"] == "1970-01-21T00:00:00Z"
    assert outside["context"]["ts_min"].startswith("2015-01-04")
    assert "milliseconds" in outside["why"]
    assert failed["ack_ts_outside"]["context"]["ack_ts_latest"] == "2300-01-01T00:00:00Z"
    assert failed["ack_ts_before_send_ts"]["observed"] == 1
    assert failed["attempt_below_one"]["observed"] == 1
    key_share = failed["key_null_share"]
    assert key_share["observed"] == pytest.approx(1 / 9)
    assert key_share["allowed"] == {"min": 0, "max": 0.1}  # config quality.null_key_share_max
    assert failed["duplicate_share"]["observed"] == pytest.approx(2 / 12)
    assert failed["duplicate_share"]["context"] == {"duplicates_quarantined": 2,
                                                    "rows_read": 12}
    assert failed["quarantined_share"]["observed"] == pytest.approx(3 / 12)
    volume = failed["topic_rows_valid"]
    assert volume["observed"] == {"payments": 0} and volume["allowed"]["min"] == 1
    assert volume["where"] == [{"topic": "payments", "topic_rows_valid": 0}]
    print({s: bad[s]["seconds"] for s in INPUT_SUITES})


def test_bad_broker_fails(input_results):
    _, bad = input_results
    failed = failed_by_metric(bad["broker"])
    assert set(failed) == {"timestamp_outside", "seq_null_share", "key_null_share",
                           "topic_rows_valid"}
    assert failed["timestamp_outside"]["observed"] == 1
    assert failed["timestamp_outside"]["context"]["timestamp_latest"] == "2300-01-01T00:00:00Z"
    seq = failed["seq_null_share"]
    assert seq["observed"] == pytest.approx(5 / 9) and seq["allowed"]["max"] == 0.5
    assert seq["context"] == {"seq_nulls": 5, "rows": 9}


def test_bad_ledger_fails(input_results):
    _, bad = input_results
    failed = failed_by_metric(bad["ledger"])
    assert set(failed) == {"started_ts_outside", "finished_ts_before_started_ts",
                           "topic_rows_valid"}
    assert failed["started_ts_outside"]["observed"] == 1
    assert failed["started_ts_outside"]["context"]["started_ts_earliest"] \
        == "1980-01-01T00:00:00Z"
    assert failed["finished_ts_before_started_ts"]["observed"] == 1
    assert "same clock" in failed["finished_ts_before_started_ts"]["why"]


def test_bad_events_fail(input_results):
    _, bad = input_results
    failed = failed_by_metric(bad["events"])
    assert set(failed) == {"ts_outside"}  # events carry no per-topic volume check
    assert failed["ts_outside"]["observed"] == 1


def test_thresholds_from_config_and_unknown_figures_unjudged(metrics):
    good, _ = metrics
    assert suite_parameters(WINDOW)["duplicate_share_max"] == \
        THRESHOLD_DEFAULTS["duplicate_share_max"]
    heavy = {"sends": {**good["sends"], "rows_read": 10, "duplicates_quarantined": 5,
                       "rows_quarantined": 5}}
    res = validate_inputs(heavy, WINDOW, GOOD_CONFIG, sources=("sends",))
    assert set(failed_by_metric(res["sends"])) == {"duplicate_share", "quarantined_share"}
    lenient = AuditConfig.from_dict({"groups": {"g1": {"topics": ["orders"]}}, "quality": {
        "duplicate_share_max": 0.5, "quarantined_share_max": 0.5}})
    assert validate_inputs(heavy, WINDOW, lenient, sources=("sends",))["sends"]["success"]
    # no ingestion figures, no by_topic: the shares and volumes are not judged
    bare = {"sends": {k: v for k, v in good["sends"].items()
                      if k not in ("rows_read", "rows_quarantined", "duplicates_quarantined",
                                   "by_topic")}}
    assert validate_inputs(bare, WINDOW, BAD_CONFIG, sources=("sends",))["sends"]["success"]
    with pytest.raises(ValueError, match="quality.topic_rows_min"):
        suite_parameters(WINDOW, AuditConfig(raw={"quality": {"topic_rows_min": "x"}}))


def test_no_configured_topics_no_volume_failure(metrics):
    good, _ = metrics
    out = validate_inputs(good, WINDOW, AuditConfig())
    assert all(out[s]["success"] for s in INPUT_SUITES), out


def test_audited_topics_limit_the_volume_check(metrics):
    _, bad = metrics
    res = validate_inputs(bad, WINDOW, BAD_CONFIG, topics=["orders"])
    assert "topic_rows_valid" not in failed_by_metric(res["ledger"])


def test_metrics_of_plain_frames_and_missing_sources(good_frames):
    out = validate_inputs(input_metrics(good_frames, WINDOW, GOOD_CONFIG), WINDOW, GOOD_CONFIG)
    assert all(out[s]["success"] for s in INPUT_SUITES), out
    events_only = input_metrics({"events": good_frames["events"]}, WINDOW, GOOD_CONFIG)
    partial = validate_inputs(events_only, WINDOW, GOOD_CONFIG)
    assert partial["events"]["success"] and "skipped" not in partial["events"]
    assert partial["sends"]["skipped"] and partial["sends"]["success"]


def test_empty_events_frame_passes(spark):
    empty = input_metrics({"events": frame(spark, "events", [])}, WINDOW, AuditConfig())
    out = validate_inputs(empty, WINDOW, AuditConfig(), sources=("events",))
    assert out["events"]["success"], out["events"]["failed"]


def test_gx_runs_no_spark_job(spark, metrics):
    good, bad = metrics  # computed before: that is a Spark job
    sc = spark.sparkContext
    try:
        sc.setJobGroup("gx-control", "a Spark job, to show the tracker sees one")
        spark.range(3).count()
        sc.setJobGroup("gx-test", "GX on pandas")
        inputs = validate_inputs(bad, WINDOW, BAD_CONFIG)
        results = validate_results(make_report(counts={"lost_acked": 1}), AuditConfig(),
                                   spark)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert sc.statusTracker().getJobIdsForGroup("gx-control")
    assert sc.statusTracker().getJobIdsForGroup("gx-test") == []
    assert not inputs["sends"]["success"] and not results["success"]


def test_timestamp_bounds_from_window_and_config():
    b = timestamp_bounds(WINDOW)
    assert b["ts_min"].startswith("2015-01-04") and b["ts_max"].startswith("2026-01-03")
    cfg = AuditConfig(raw={"quality": {"ts_min": "2024-01-01", "ts_max": "2025-06-01"}})
    b = timestamp_bounds(WINDOW, cfg)
    assert b == {"ts_min": "2024-01-01T00:00:00+00:00", "ts_max": "2025-06-01T00:00:00+00:00"}


def test_results_suite_passes_on_consistent_report_and_fails_on_broken_balance(tmp_path):
    ok = validate_results(make_report(counts={"dup_write": 2}), AuditConfig())
    assert ok["success"], ok["failed"]
    assert ok["statistics"]["evaluated_expectations"] == suite_size("results")

    broken = make_report(counts={"lost_acked": 1})
    broken["groups"]["g1"]["states"]["delivered_once"] = 97  # 97 != 100 judged
    res = validate_results(broken, AuditConfig())
    assert not res["success"]
    by_type = {f["expectation"]: f for f in res["failed"]}
    balance = by_type["expect_column_pair_values_to_be_equal"]
    assert {"check": "balance", "subject": "g1", "states_sum": 97, "judged": 100} \
        in balance["where"]
    critical = by_type["expect_column_values_to_be_between"]
    assert critical["kwargs"]["column"] == "critical_count"
    assert critical["where"] == [{"check": "critical", "subject": "lost_acked",
                                  "critical_count": 1}]
    print("results suite seconds", ok["seconds"], res["seconds"])

    path = write_results({"inputs": {}, "results": res}, tmp_path / "validation" / "gx.json")
    assert json.loads(path.read_text())["results"]["success"] is False


def test_results_suite_thresholds_and_allow_critical():
    r = make_report(counts={"lost_acked": 1, "dup_write": 3}, topics=("a", "b"),
                    by_topic={"dup_write": {"a": 1, "b": 2}})
    cfg = AuditConfig(allow_critical=True, topic_thresholds={"b": {"dup_write": {"fail": 1}}})
    res = validate_results(r, cfg)
    assert not res["success"]
    assert len(res["failed"]) == 1
    assert res["failed"][0]["where"] == [{"check": "threshold", "subject": "dup_write @ b",
                                          "fail_limit": 1, "count": 2}]
