"""Idempotence: the same window audited twice gives the same report, and overlapping
publications of one window leave one consistent report (local folder and S3).

Two full audits of tests/data/small into the same destination: the second replaces the first.
The first is the audit tests/test_cli.py checks (tests/small_audit.py), so this module adds
one Spark audit.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from s3_publishing import (
    FAST,
    LOCK,
    REL,
    WID,
    assert_s3_published,
    client_via,
    run_of,
    s3_objects,
    stage,
    watch,
)
from s3_server import s3_endpoint  # noqa: F401 - the fixture
from typer.testing import CliRunner

from delivery_audit.cli import app
from delivery_audit.storage import MANIFEST, PublishError, PublishSettings, publish, read_manifest

# publications on a moto server and in subprocesses
pytestmark = pytest.mark.audit  # not in make test-fast

WINDOW = ["--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z"]
REPORT_DIR = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"

# report.json keys that describe the run, not the window's judgement (docs/report-schema.md:
# "Run metadata: differs between two runs of the same window"). Everything else must be equal,
# run.tool_version, run.spark_version and run.spark_master included.
RUN_METADATA = (("run", "run_id"), ("run", "started_at"), ("run", "finished_at"),
                ("run", "duration_s"), ("run", "stages"), ("run", "planning_s"))


# --------------------------------------------------------------------------- two audits


@pytest.fixture(scope="module")
def two_runs(small_audit, tmp_path_factory):
    """The same window audited twice into the same destination: the first run is the shared
    audit of tests/data/small (tests/small_audit.py, also checked by test_cli.py; its
    published folder kept aside), the second replaces it."""
    out = small_audit["out"]
    result = CliRunner().invoke(app, small_audit["args"])
    assert result.exit_code == 3, result.output  # tests/data/small fails (lost_acked)
    assert small_audit["result"].exit_code == 3, small_audit["result"].output
    kept = tmp_path_factory.mktemp("idem") / "run2"
    shutil.copytree(out / REPORT_DIR, kept)
    return {"run1": small_audit["dir"], "run2": kept, "live": out / REPORT_DIR}


def without_run_metadata(report: dict) -> dict:
    report = copy.deepcopy(report)
    for path in RUN_METADATA:
        node = report
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    return report


def table(spark, path: Path) -> list[str]:
    """A Parquet table's rows, each as canonical JSON, sorted (row order is not a contract)."""
    rows = spark.read.parquet(str(path)).collect()
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in rows)


def test_report_json_identical_apart_from_run_metadata(two_runs):
    r1 = json.loads((two_runs["run1"] / "report.json").read_text())
    r2 = json.loads((two_runs["run2"] / "report.json").read_text())
    assert r1["run"]["run_id"] != r2["run"]["run_id"], "two distinct runs"
    assert r1["anomalies"]["lost_acked"]["count"] == 1  # a real report, not an empty one
    assert without_run_metadata(r1) == without_run_metadata(r2)


def test_anomaly_tables_identical(spark, two_runs):
    t1 = table(spark, two_runs["run1"] / "anomalies")
    t2 = table(spark, two_runs["run2"] / "anomalies")
    assert len(t1) >= 8
    assert t1 == t2


def test_evidence_tables_identical(two_runs):
    """The published evidence (explain's source) is one sorted file: the same bytes."""
    e1, e2 = (two_runs[r] / "evidence" / "evidence.parquet" for r in ("run1", "run2"))
    assert len(e1.read_bytes()) > 1000  # rows, not an empty table
    assert e1.read_bytes() == e2.read_bytes()


def test_quarantine_tables_identical(spark, two_runs):
    t1 = table(spark, two_runs["run1"] / "quarantine")
    assert len(t1) == 14
    assert t1 == table(spark, two_runs["run2"] / "quarantine")


def without_key(data, key: str):
    if isinstance(data, dict):
        return {k: without_key(v, key) for k, v in data.items() if k != key}
    if isinstance(data, list):
        return [without_key(v, key) for v in data]
    return data


def test_validation_results_and_html_identical_apart_from_run_metadata(two_runs):
    """validation/*.json: every "seconds" (the suite's run time) excluded; report.html: the
    "Run <id> · started <instant>" line excluded."""
    for name in ("validation/inputs.json", "validation/results.json"):
        v1, v2 = (json.loads((two_runs[r] / name).read_text()) for r in ("run1", "run2"))
        assert without_key(v1, "seconds") == without_key(v2, "seconds"), name
    h1, h2 = ((two_runs[r] / "report.html").read_text().splitlines() for r in ("run1", "run2"))
    run_line = [i for i, line in enumerate(h1) if 'Run <span class="mono">' in line]
    assert len(run_line) == 1 and len(h1) == len(h2)
    assert [x for i, x in enumerate(h1) if i not in run_line] == \
        [x for i, x in enumerate(h2) if i not in run_line]


def test_second_run_replaced_the_first_whole(two_runs):
    live = two_runs["live"]
    manifest = json.loads((live / MANIFEST).read_text())
    report = json.loads((live / "report.json").read_text())
    assert manifest["run_id"] == report["run"]["run_id"]
    present = sorted(p.relative_to(live).as_posix() for p in live.rglob("*") if p.is_file())
    assert present == sorted([MANIFEST] + [f["path"] for f in manifest["files"]])
    for f in manifest["files"]:
        assert hashlib.sha256((live / f["path"]).read_bytes()).hexdigest() == f["sha256"]
    first = {p.relative_to(two_runs["run1"]).as_posix() for p in two_runs["run1"].rglob("*")
             if p.is_file()}
    # Spark names part files per run: none of the first run's may be left behind
    assert any(p.endswith(".parquet") for p in first - set(present))
    assert sorted(p.name for p in live.parent.iterdir()) == sorted([live.name, LOCK])


# --------------------------------------------------------------------------- overlapping runs

NAMES_A = ("report.json", "report.html", "anomalies/part-a0.parquet", "anomalies/part-a1.parquet",
           "quarantine/part-a.parquet", "validation/results.json")
NAMES_B = ("report.json", "report.html", "anomalies/part-b0.parquet", "quarantine/part-b.parquet",
           "validation/inputs.json")


def race(publish_a, publish_b) -> dict[str, object]:
    """Start both publications at the same instant; their manifests (or errors) by name."""
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def go(name, fn):
        barrier.wait()
        try:
            results[name] = fn()
        except Exception as exc:  # noqa: BLE001 - reported by the assertions
            results[name] = exc

    threads = [threading.Thread(target=go, args=("A", publish_a)),
               threading.Thread(target=go, args=("B", publish_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def local_observation(dest: Path) -> str | None:
    """A reader: None when the manifest changed while reading (inconclusive), "none" without a
    manifest, "ok", or what was wrong with a manifest that stayed in place while it was read."""
    try:
        m1 = (dest / REL / MANIFEST).read_bytes()
    except FileNotFoundError:
        return "none"
    problems = []
    for f in json.loads(m1)["files"]:
        try:
            data = (dest / REL / f["path"]).read_bytes()
        except FileNotFoundError:
            problems.append(f"{f['path']} missing")
            continue
        if hashlib.sha256(data).hexdigest() != f["sha256"]:
            problems.append(f"{f['path']} differs")
    try:
        m2 = (dest / REL / MANIFEST).read_bytes()
    except FileNotFoundError:
        return None
    if m2 != m1:
        return None  # every publication's manifest is distinct (run id, written_at)
    return "; ".join(problems) or "ok"


def test_overlapping_local_publications_leave_one_consistent_report(tmp_path):
    dest = tmp_path / "reports"
    stop = threading.Event()
    seen: list[str | None] = []

    def reader():
        while not stop.is_set():
            seen.append(local_observation(dest))

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        for i in range(6):
            a, b = stage(tmp_path, f"A{i}", NAMES_A), stage(tmp_path, f"B{i}", NAMES_B)
            results = race(lambda a=a: publish(a, str(dest), REL, settings=FAST),
                           lambda b=b: publish(b, str(dest), REL, settings=FAST))
            assert all(isinstance(r, dict) for r in results.values()), results
            manifest = read_manifest(str(dest), REL)
            winner = manifest["run_id"]
            assert winner in (f"A{i}", f"B{i}")
            present = {p.relative_to(dest / REL).as_posix(): p for p in (dest / REL).rglob("*")
                       if p.is_file()}
            assert set(present) == {MANIFEST} | {f["path"] for f in manifest["files"]}
            for f in manifest["files"]:
                data = present[f["path"]].read_bytes()
                assert hashlib.sha256(data).hexdigest() == f["sha256"]
                assert run_of(f["path"], data) == winner
            leftovers = [p.name for p in (dest / REL).parent.iterdir() if p.name not in (WID, LOCK)]
            assert leftovers == []
            # the root's index is updated under the window's lock: its row is the winner's
            index = json.loads((dest / "index.json").read_text())
            assert [(w["window_id"], w["run_id"]) for w in index["windows"]] == [(WID, winner)]
    finally:
        stop.set()
        watcher.join()
    conclusive = [s for s in seen if s is not None]
    assert [s for s in conclusive if s not in ("ok", "none")] == []
    assert "ok" in conclusive


def test_overlapping_s3_publications_leave_one_consistent_report(tmp_path, bucket,  # noqa: F811
                                                                  proxy):  # noqa: F811
    """Through the watching proxy (every state checked; requests of the two publishers
    interleave one at a time, as S3 applies them), with a little latency per request."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    proxy.set_rules(watch=watch(name), latency_s=0.003)
    for i in range(3):
        a, b = stage(tmp_path, f"A{i}", NAMES_A), stage(tmp_path, f"B{i}", NAMES_B)
        ca, cb = client_via(proxy), client_via(proxy)
        results = race(lambda a=a, c=ca: publish(a, dest, REL, s3_client=c, settings=FAST),
                       lambda b=b, c=cb: publish(b, dest, REL, s3_client=c, settings=FAST))
        assert all(isinstance(r, dict) for r in results.values()), results
        winner = read_manifest(dest, REL, s3_client=direct)["run_id"]
        assert winner in (f"A{i}", f"B{i}")
        assert_s3_published(direct, name, "r", winner)
        objects = s3_objects(direct, name)
        assert f"r/dt=2026-11-19/{LOCK}" not in objects, "lock released"
        index = json.loads(objects["r/index.json"])  # updated under the window's lock
        assert [(w["window_id"], w["run_id"]) for w in index["windows"]] == [(WID, winner)]
    stats = proxy.stats()
    assert stats["violations"] == []
    lock_puts = [e for e in stats["log"] if e["key"].endswith(LOCK) and e["method"] == "PUT"]
    assert any(e["outcome"] == "412" for e in lock_puts), "the runs overlapped: one waited"


# --------------------------------------------------------------------------- the lock itself


def other_hosts_lock(lease_s: float) -> bytes:
    return json.dumps({"token": "t0", "lease_s": lease_s, "run_id": "elsewhere",
                       "host": "other-host|boot|pid:[1]", "pid": 1,
                       "since": "2026-11-20T00:00:00Z"}).encode()


def test_s3_lock_of_a_live_publisher_is_waited_for_then_fails_clearly(tmp_path,
                                                                    bucket):  # noqa: F811
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "A"), dest, REL, s3_client=direct, settings=FAST)
    direct.put_object(Bucket=name, Key=f"r/dt=2026-11-19/{LOCK}", Body=other_hosts_lock(600))
    quick = PublishSettings(retry_delay_s=0.01, lock_wait_s=0.3, lock_poll_s=0.05)
    started = time.monotonic()
    with pytest.raises(PublishError, match=r"another publication of this window holds .*"
                                           r"run elsewhere, pid 1 on other-host"):
        publish(stage(tmp_path, "B"), dest, REL, s3_client=direct, settings=quick)
    assert time.monotonic() - started >= 0.3
    assert_s3_published(direct, name, "r", "A")  # untouched


def test_s3_lock_not_refreshed_within_its_lease_is_taken_over(tmp_path, bucket,  # noqa: F811
                                                              caplog):
    direct, name = bucket
    dest = f"s3://{name}/r"
    direct.put_object(Bucket=name, Key=f"r/dt=2026-11-19/{LOCK}", Body=other_hosts_lock(1))
    publish(stage(tmp_path, "B"), dest, REL, s3_client=direct, settings=FAST)
    assert_s3_published(direct, name, "r", "B")
    assert "took over the stale publication lock" in caplog.text
    assert f"r/dt=2026-11-19/{LOCK}" not in s3_objects(direct, name)


def test_local_lock_held_is_waited_for_then_fails_clearly(tmp_path):
    dest = tmp_path / "reports"
    publish(stage(tmp_path, "A"), str(dest), REL)
    fd = os.open(dest / "dt=2026-11-19" / LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another publisher, mid-way
        os.ftruncate(fd, 0)
        os.pwrite(fd, b'{"run_id": "other-run", "pid": 1}', 0)
        quick = PublishSettings(lock_wait_s=0.3, lock_poll_s=0.05)
        with pytest.raises(PublishError, match="another publication of this window holds .*"
                                               "other-run"):
            publish(stage(tmp_path, "B"), str(dest), REL, settings=quick)
        assert read_manifest(str(dest), REL)["run_id"] == "A"  # untouched
    finally:
        os.close(fd)
    assert publish(stage(tmp_path, "C"), str(dest), REL, settings=quick)["run_id"] == "C"
