"""The audit through Spark Connect: the same engine as a thin client of a warm Spark.

One Connect server for the session (tests/connect_server.py: what ``make connect-up`` runs,
on 127.0.0.1, stopped by PID). Every generated scenario (all of them in one input, each
scenario's topics and groups prefixed with its name: tests/shared_audits.py, the session's
audit of the day that test_scenarios.py checks against the truths) and the CLI's
small day (CSV broker, gzipped ledger, a pruned partition: tests/small_audit.py's run) give
the same report.json through Connect as through the classic session, apart from the run
metadata; and the Connect runs really ran on the server (its UI lists their jobs).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from connect_server import connect_server  # noqa: F401  (fixture: a Connect server, 127.0.0.1)
from shared_audits import AUDIT_ENV, SOURCES

from delivery_audit.audit import build_request
from delivery_audit.redaction import redact_text
from delivery_audit.spark import check_reachable, get_spark, range_splits, spark_remote

REPO = Path(__file__).resolve().parents[1]
for folder in ("plugins", "jobs"):
    if str(REPO / folder) not in sys.path:
        sys.path.append(str(REPO / folder))

from delivery_audit_airflow.connect import request_fields  # noqa: E402
from delivery_audit_airflow.plan import job_args  # noqa: E402
from reconcile import parser  # noqa: E402  (jobs/reconcile.py)

RUN_METADATA = "run"  # run id, instants, stages, session kind, job count: differ per run


def _connect_cli(args: list[str], url: str, env: dict[str, str] | None = None,
                 ) -> tuple[subprocess.CompletedProcess, float]:
    """``delivery-audit run ARGS --spark-remote URL`` as a whole client process, timed."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "delivery_audit.cli", *args, "--spark-remote",
                           url, "--no-notify"], env=env, capture_output=True, text=True,
                          timeout=600)
    return proc, time.perf_counter() - t0


def _report(out: Path) -> dict:
    return json.loads(next(out.rglob("report.json")).read_text())


def _differences(a: dict, b: dict, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    return [] if a == b else [f"{path}: {str(a)[:200]} != {str(b)[:200]}"]


def _figures(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != RUN_METADATA}


#: the Connect client's environment for the scenario day: interpreted, where the classic
#: audit compiles (AUDIT_ENV)
CONNECT_ENV = {**AUDIT_ENV, "DELIVERY_AUDIT_CODEGEN": "false"}


@pytest.fixture(scope="module")
def scenarios(request, scenario_day, connect_server) -> dict:  # noqa: F811
    """Every generated scenario in one input (tests/shared_audits.py), audited by a Connect
    client process and by the classic session: the session's audit of the day, shared with
    test_scenarios.py (run_audit in this process; when this module runs first it runs while
    the client does, the server's work overlapping this process's). The classic audit with
    generated code on (shared_audits.AUDIT_ENV), the Connect one with expressions
    interpreted (CONNECT_ENV): equal reports also say both evaluation modes agree on every
    rule, and the server compiles nothing (about 15 s less)."""
    root, w = scenario_day["root"], scenario_day["window"]
    args = ["run", *[x for s in SOURCES for x in (f"--{s}", scenario_day["inputs"][s][0])],
            "--config", str(scenario_day["config"]), "--start", w["start"], "--end", w["end"],
            "--grace", f"{w['grace_minutes']:g}m", "--out", str(root / "connect")]
    with ThreadPoolExecutor(1) as pool:
        connect = pool.submit(_connect_cli, args, connect_server.url, CONNECT_ENV)
        classic = request.getfixturevalue("scenario_audit")
        proc, seconds = connect.result()
    assert proc.returncode in (0, 3), (proc.stdout + proc.stderr)[-4000:]
    return {"classic": classic["report"], "scenarios": scenario_day["scenarios"],
            "connect": {"report": _report(root / "connect"), "seconds": seconds}}


@pytest.fixture(scope="module")
def connect_scenarios(scenarios) -> dict:
    return scenarios["connect"]


@pytest.mark.audit
def test_every_generated_scenario_gives_the_same_report_through_connect(
        scenarios, connect_scenarios, record_property):
    classic, connect = scenarios["classic"], connect_scenarios["report"]
    record_property("connect_client_process_s", round(connect_scenarios["seconds"], 1))
    assert not _differences(_figures(classic), _figures(connect))
    # each scenario's own figures are in both (its topics and groups carry its name)
    for scenario in scenarios["scenarios"]:
        topics = [t for t in connect["judged_by_topic"] if t.startswith(f"{scenario}.")]
        assert topics, scenario
        assert all(connect["judged_by_topic"][t] == classic["judged_by_topic"][t]
                   for t in topics)
        assert any(g.startswith(f"{scenario}.") for g in connect["groups"]), scenario
    assert sum(a["count"] for a in connect["anomalies"].values()) > 0


@pytest.mark.audit
def test_the_engine_ran_on_the_connect_server(scenarios, connect_scenarios,
                                              connect_server):  # noqa: F811
    """Not a grep: the report says so, and the server's UI lists the audit's jobs (its
    operations carry the run's tag), as many as the classic session ran for the same input."""
    run = connect_scenarios["report"]["run"]
    assert run["spark_session"] == "connect" and run["spark_master"] == "local[2]"
    assert run["spark_jobs"] is None  # no status tracker in a Connect client
    assert run["planning_s"] is None  # nor status stores
    assert scenarios["classic"]["run"]["spark_session"] == "classic"
    jobs = connect_server.jobs_tagged(f"delivery-audit-{run['run_id']}")
    assert jobs and all(j["status"] == "SUCCEEDED" for j in jobs)
    assert len(jobs) == scenarios["classic"]["run"]["spark_jobs"]


@pytest.mark.audit
def test_the_cli_small_day_gives_the_same_report_through_connect(small_audit, tmp_path,
                                                                 connect_server):  # noqa: F811
    """tests/data/small as tests/small_audit.py ran it (classic, in this process): CSV,
    gzipped JSON Lines, a pruned date partition, quarantined rows."""
    args = list(small_audit["args"])
    args[args.index("--out") + 1] = str(tmp_path / "reports")
    proc, _ = _connect_cli(args, connect_server.url)
    assert proc.returncode in (0, 3), (proc.stdout + proc.stderr)[-4000:]
    report = _report(tmp_path / "reports")
    assert report["run"]["spark_session"] == "connect"
    assert not _differences(_figures(small_audit["report"]), _figures(report))
    assert report["inputs"]["broker"]["rows_quarantined"] == \
        small_audit["report"]["inputs"]["broker"]["rows_quarantined"]


# --------------------------------------------------------------------------- no server


def test_a_connect_url_token_never_reaches_a_message():
    text = "cannot reach sc://dbc-1.cloud.databricks.com:443/;token=dapi0123456789abcdef;" \
           "use_ssl=true;x-databricks-cluster-id=0123"
    shown = redact_text(text)
    assert "dapi0123456789abcdef" not in shown
    assert ";token=***;use_ssl=true;x-databricks-cluster-id=0123" in shown


def test_master_and_spark_remote_are_exclusive(monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    assert spark_remote() == "sc://127.0.0.1:1"
    assert spark_remote("sc://elsewhere:2") == "sc://elsewhere:2"
    with pytest.raises(ValueError, match="not both"):
        get_spark(master="local[1]", remote="sc://127.0.0.1:1")


def test_the_airflow_connect_mode_asks_the_engine_what_the_job_asks_it(tmp_path):
    """The Connect task calls the engine's entry point with the request the spark-submitted
    job (jobs/reconcile.py) builds from job_args: the same inputs, window, grace, report
    root, topics, groups and config; neither alerts (the DAG's alert task does)."""
    config = tmp_path / "audit.yaml"
    config.write_text("grace_minutes: 30\n")
    plan = {"sources": {"sends": "s/*", "broker": "b/*", "ledger": "l/*", "events": "e/*"},
            "window": {"start": "2026-11-19T00:00:00Z", "end": "2026-11-20T00:00:00Z",
                       "grace_minutes": 90}, "out": "/r", "topics": ["t"], "groups": ["g"],
            "config_file": str(config)}
    connect = build_request(**request_fields(plan), remote="sc://127.0.0.1:15002")
    a = parser().parse_args(job_args(plan, plan["config_file"]))
    job = build_request(sends=a.sends, broker=a.broker, ledger=a.ledger, events=a.events,
                        start=a.start, end=a.end, out=a.out, grace=a.grace, config=a.config,
                        topics=a.topics, groups=a.groups, notify=a.notify)
    assert connect.window == job.window and connect.window.grace_minutes == 90
    for name in ("inputs", "out", "topics", "groups", "config", "formats", "notify"):
        assert getattr(connect, name) == getattr(job, name), name
    assert connect.notify is False and connect.remote == "sc://127.0.0.1:15002"
    assert connect.inputs == {"sends": ["s/*"], "broker": ["b/*"], "ledger": ["l/*"],
                              "events": ["e/*"]}


def test_an_endpoint_nobody_answers_fails_fast_without_its_token():
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}") as err:
        check_reachable(f"sc://127.0.0.1:{port}/;token=supersecret-token-1;use_ssl=true")
    assert time.perf_counter() - t0 < 5 and "supersecret" not in str(err.value)
    with pytest.raises(ValueError):
        check_reachable("http://127.0.0.1:15002")


def test_a_connect_session_reads_the_parallelism_classic_spark_plans_a_range_with(spark):
    """Under Connect the parallelism is the split count of a range's plan; the classic
    session plans the same range with its SparkContext's default parallelism."""
    plan = spark.range(1)._jdf.queryExecution().toString()
    assert range_splits(plan) == spark.sparkContext.defaultParallelism
