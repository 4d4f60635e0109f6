"""Great Expectations suites on Spark DataFrames: inputs (good and crafted bad) and results."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from report_fixtures import make_report

from delivery_audit.config import AuditConfig
from delivery_audit.quality import (
    INPUT_SUITES,
    expectations_dir,
    timestamp_bounds,
    validate_inputs,
    validate_results,
    write_results,
)
from delivery_audit.schemas import canonical_schema
from delivery_audit.window import AuditWindow

WINDOW = AuditWindow.of("2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", 60)
T0 = datetime(2025, 1, 1, 1, 0, tzinfo=UTC)


def ts(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def frame(spark, source: str, rows: list[dict]):
    schema = canonical_schema(source)
    return spark.createDataFrame([tuple(r.get(f.name) for f in schema.fields) for r in rows],
                                 schema)


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
    rows = good_rows()
    rows["sends"] += [
        {"send_ts": ts(1), "topic": "orders", "key": "k", "seq": 20, "status": "bogus"},
        {"send_ts": datetime(1970, 1, 21, tzinfo=UTC), "topic": "orders", "seq": 21,
         "status": "failed"},  # seconds read as milliseconds
        {"send_ts": ts(2), "topic": "orders", "seq": 22, "status": "acked", "partition": 0},
        {"send_ts": ts(3), "topic": "orders", "seq": 23, "status": "acked", "partition": 0,
         "offset": 7, "ack_ts": ts(2)},
    ]
    rows["broker"] += [
        {"topic": "orders", "partition": 0, "offset": 1, "seq": 1, "timestamp": ts(1)},
        {"topic": "orders", "partition": 0, "offset": 9, "seq": 9,
         "timestamp": datetime(2300, 1, 1, tzinfo=UTC)},
    ]
    rows["ledger"] += [
        {"group_id": "g1", "member_id": None, "topic": "orders", "partition": 0, "offset": 1,
         "started_ts": ts(5), "finished_ts": ts(4), "outcome": "maybe"},
    ]
    rows["events"] += [
        {"group_id": None, "ts": datetime(1980, 1, 1, tzinfo=UTC), "event": "exploded",
         "partition": -1},
    ]
    return rows


@pytest.fixture(scope="module")
def input_results(spark):
    good = {s: frame(spark, s, r) for s, r in good_rows().items()}
    bad = {s: frame(spark, s, r) for s, r in bad_rows().items()}
    return validate_inputs(good, WINDOW, AuditConfig()), validate_inputs(bad, WINDOW,
                                                                         AuditConfig())


def failed_of(result: dict) -> set[tuple[str, str]]:
    out = set()
    for f in result["failed"]:
        kw = f["kwargs"]
        col = kw.get("column") or ",".join(kw.get("column_list") or []) or \
            f"{kw.get('column_A')}>{kw.get('column_B')}"
        out.add((f["expectation"], col))
    return out


def test_suite_files_are_valid_gx_suites():
    from great_expectations.core.expectation_suite import ExpectationSuite

    d = expectations_dir()
    for name in (*INPUT_SUITES, "results"):
        data = json.loads((d / f"{name}.json").read_text())
        suite = ExpectationSuite(**data)
        assert suite.expectations, name


def test_good_inputs_pass(input_results):
    good, _ = input_results
    for source in INPUT_SUITES:
        assert good[source]["success"], (source, good[source]["failed"])
        assert good[source]["statistics"]["evaluated_expectations"] >= 5
        assert good[source]["seconds"] > 0
    print({s: good[s]["seconds"] for s in INPUT_SUITES})


def test_bad_sends_fail(input_results):
    _, bad = input_results
    failed = failed_of(bad["sends"])
    assert not bad["sends"]["success"]
    assert ("expect_column_values_to_be_in_set", "status") in failed
    assert ("expect_column_values_to_be_between", "send_ts") in failed
    assert ("expect_column_values_to_not_be_null", "offset") in failed  # acked w/o offset
    assert ("expect_column_pair_values_a_to_be_greater_than_b", "ack_ts>send_ts") in failed
    status = next(f for f in bad["sends"]["failed"] if f["kwargs"].get("column") == "status")
    assert status["examples"] == ["bogus"] and status["unexpected_count"] == 1
    print({s: bad[s]["seconds"] for s in INPUT_SUITES})


def test_bad_broker_fails(input_results):
    _, bad = input_results
    failed = failed_of(bad["broker"])
    assert ("expect_compound_columns_to_be_unique", "topic,partition,offset") in failed
    assert ("expect_column_values_to_be_between", "timestamp") in failed


def test_bad_ledger_fails(input_results):
    _, bad = input_results
    failed = failed_of(bad["ledger"])
    assert ("expect_column_values_to_be_in_set", "outcome") in failed
    assert ("expect_column_values_to_not_be_null", "member_id") in failed
    assert ("expect_column_pair_values_a_to_be_greater_than_b", "finished_ts>started_ts") \
        in failed


def test_bad_events_fail(input_results):
    _, bad = input_results
    failed = failed_of(bad["events"])
    assert ("expect_column_values_to_be_in_set", "event") in failed
    assert ("expect_column_values_to_not_be_null", "group_id") in failed
    assert ("expect_column_values_to_be_between", "ts") in failed
    assert ("expect_column_values_to_be_between", "partition") in failed


def test_empty_events_frame_passes(spark):
    out = validate_inputs({"events": frame(spark, "events", [])}, WINDOW, AuditConfig(),
                          sources=("events",))
    assert out["events"]["success"]


def test_timestamp_bounds_from_window_and_config():
    b = timestamp_bounds(WINDOW)
    assert b["ts_min"].startswith("2015-01-04") and b["ts_max"].startswith("2026-01-03")
    cfg = AuditConfig(raw={"quality": {"ts_min": "2024-01-01", "ts_max": "2025-06-01"}})
    b = timestamp_bounds(WINDOW, cfg)
    assert b == {"ts_min": "2024-01-01T00:00:00+00:00", "ts_max": "2025-06-01T00:00:00+00:00"}


def test_results_suite_passes_on_consistent_report_and_fails_on_broken_balance(spark, tmp_path):
    ok = validate_results(make_report(counts={"dup_write": 2}), AuditConfig(), spark)
    assert ok["success"], ok["failed"]

    broken = make_report(counts={"lost_acked": 1})
    broken["groups"]["g1"]["states"]["delivered_once"] = 97  # 97 != 100 judged
    res = validate_results(broken, AuditConfig(), spark)
    assert not res["success"]
    by_type = {f["expectation"]: f for f in res["failed"]}
    balance = by_type["expect_column_pair_values_to_be_equal"]
    assert {"check": "balance", "subject": "g1", "states_sum": 97, "judged": 100} \
        in balance["where"]
    critical = by_type["expect_column_values_to_be_between"]
    assert critical["kwargs"]["column"] == "critical_count"
    print("results suite seconds", ok["seconds"], res["seconds"])

    path = write_results({"inputs": {}, "results": res}, tmp_path / "validation" / "gx.json")
    assert json.loads(path.read_text())["results"]["success"] is False


def test_results_suite_thresholds_and_allow_critical(spark):
    r = make_report(counts={"lost_acked": 1, "dup_write": 3}, topics=("a", "b"),
                    by_topic={"dup_write": {"a": 1, "b": 2}})
    cfg = AuditConfig(allow_critical=True, topic_thresholds={"b": {"dup_write": {"fail": 1}}})
    res = validate_results(r, cfg, spark)
    assert not res["success"]
    assert len(res["failed"]) == 1
    assert res["failed"][0]["where"] == [{"check": "threshold", "subject": "dup_write @ b",
                                          "fail_limit": 1, "count": 2}]
