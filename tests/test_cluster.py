"""The reconcile job on a real Spark standalone cluster (master + 2 one-core workers on
127.0.0.1), submitted like production: ``spark-submit --master spark://… --py-files
delivery_audit.zip jobs/reconcile.py …``, the venv's Python on the executors.

One run (to save CI time) checks two things:

* the report of a generated multi-anomaly day (mixed, 2000 messages, seed 7) equals the
  generator's truth.json — every anomaly count and cause, judged, every group's states — which
  is what the local-mode audit is held to (tests/test_scenarios.py). A second, local audit of
  the same day here would double the test's time for no extra assertion;
* mid-job, once the detection phase runs tasks, one worker JVM is SIGKILLed by PID. Its
  executor exits, the driver loses it (tasks, cached blocks and shuffle output on it), Spark
  re-runs what was lost on the surviving worker and the job still finishes with the same
  report. The test records which audit stage and Spark stages were running at the kill.

Slow: cluster start-up (≈15 s) plus the audit's ≈440 Spark stages on the cluster (≈4.5 min on
a shared 2-core machine at load 6–7; the driver's planning, not the data, is most of it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from spark_cluster import REPO, cluster_lib, cluster_py_files, spark_cluster  # noqa: F401

from delivery_audit.core.submit import audit_submit

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

DAY = "2026-11-19"
JOB_TIMEOUT = 1500  # seconds; the machine is shared, CI stays well under
#: kill once one of these audit stages runs tasks (after ingestion, with cached data and
#: shuffle output on the executors)
KILL_DURING = ("audit: rule_", "audit: detect")
LABEL = "audit: "  # jobs/reconcile.py labels Spark jobs with the audit stage
#: without labels (should not happen): kill after this many completed Spark stages
FALLBACK_AFTER_STAGES = 150


@pytest.fixture(scope="module")
def mixed_day(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cluster-day") / "data"
    proc = subprocess.run([str(Path(sys.executable).parent / "delivery-audit"), "generate",
                           "--scenario", "mixed", "--messages", "2000", "--seed", "7",
                           "--start", f"{DAY}T00:00:00Z", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


class WorkerKiller(threading.Thread):
    """Polls the driver's REST API; once a stage matching KILL_DURING has a task running,
    SIGKILLs the worker whose executor runs it; then keeps recording what Spark does."""

    def __init__(self, cluster, ui_port: int, proc: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.cluster, self.proc = cluster, proc
        self.api = f"http://127.0.0.1:{ui_port}/api/v1"
        self.app: str | None = None
        self.hosts: dict[str, int] = {}  # executor id -> worker index
        self.kill: dict | None = None
        self.stages: list[dict] = []  # last full snapshot
        self.executors: list[dict] = []  # last snapshot (all, removed included)
        self.error: str | None = None
        self.stop_event = threading.Event()
        self._last_full = 0.0

    def run(self) -> None:
        t0 = time.monotonic()
        while self.proc.poll() is None and not self.stop_event.is_set():
            try:
                self._poll(t0)
            except (urllib.error.URLError, OSError, ValueError, KeyError):
                pass  # the UI is not up yet / is going down
            except Exception as exc:  # noqa: BLE001  (reported by the test)
                self.error = repr(exc)
                return
            time.sleep(0.2)

    def _snapshot(self, base: str) -> None:
        """Every stage and executor (what the test reports), every few seconds: the UI goes
        away with the driver."""
        if time.monotonic() - self._last_full < (2 if self.kill else 5):
            return
        self.stages = _get(f"{base}/stages")
        self.executors = _get(f"{base}/allexecutors")
        self._last_full = time.monotonic()

    def _map_executors(self, ids: set[str]) -> None:
        if ids <= set(self.hosts):
            return
        for i, d in enumerate(self.cluster.worker_daemons):
            if not d.stopped:
                for e in self.cluster.worker_state(i).get("executors", []):
                    if e.get("appid") == self.app:
                        self.hosts[str(e.get("id"))] = i

    def _poll(self, t0: float) -> None:
        if self.app is None:
            apps = _get(f"{self.api}/applications")
            if not apps:
                return
            self.app = apps[0]["id"]
        base = f"{self.api}/applications/{self.app}"
        self._snapshot(base)
        if self.kill is not None:
            return
        active = _get(f"{base}/stages?status=active")
        matching = [s for s in active if str(s.get("description", "")).startswith(KILL_DURING)
                    and s.get("numActiveTasks", 0) > 0]
        labelled = any(str(s.get("description", "")).startswith(LABEL) for s in self.stages)
        done = sum(1 for s in self.stages if s["status"] == "COMPLETE")
        if not matching and (labelled or not (done >= FALLBACK_AFTER_STAGES and active)):
            return
        executors = {str(e["id"]): e for e in _get(f"{base}/executors") if e["id"] != "driver"}
        self._map_executors(set(executors))
        busy = [x for x, e in executors.items()
                if e.get("activeTasks", 0) > 0 and x in self.hosts
                and not self.cluster.worker_daemons[self.hosts[x]].stopped]
        if not busy:
            return
        index = self.hosts[busy[0]]
        daemon = self.cluster.worker_daemons[index]
        self.cluster.kill_worker(index, signal.SIGKILL)
        victims = sorted(x for x, i in self.hosts.items() if i == index)
        self.kill = {
            "worker": daemon.name, "pid": daemon.pid, "executors": victims,
            "seconds_after_submit": round(time.monotonic() - t0, 1),
            "completed_stages_before": done,
            "job_still_running": self.proc.poll() is None,
            "running": [{k: s.get(k) for k in ("stageId", "attemptId", "name", "description",
                                                "numTasks", "numActiveTasks",
                                                "numCompleteTasks")}
                        for s in (matching or active)],
            "victim_executor": {k: executors[x].get(k) for x in victims if x in executors
                                for k in ("activeTasks", "completedTasks", "rddBlocks",
                                          "memoryUsed", "diskUsed", "totalShuffleWrite")},
        }
        self._last_full = 0.0


def _report(root: Path) -> dict:
    found = sorted(root.rglob("report.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def _summary(report: dict) -> dict:
    return {
        "judged": report["judged"],
        "anomalies": {k: v["count"] for k, v in report["anomalies"].items()},
        "by_cause": {k: {c: n for c, n in v.get("by_cause", {}).items() if n}
                     for k, v in report["anomalies"].items() if k in ("dup_write", "redelivery")},
        "groups": {g: {"judged": v["judged"], "states": v["states"]}
                   for g, v in report["groups"].items()},
    }


def _truth_summary(truth: dict) -> dict:
    return {
        "judged": truth["judged"],
        "anomalies": truth["anomalies"],
        "by_cause": {k: {c: n for c, n in v.items() if n} for k, v in truth["by_cause"].items()},
        "groups": {g: {"judged": v["judged"], "states": v["states"]}
                   for g, v in truth["groups"].items()},
    }


def test_audit_on_cluster_equals_local_and_survives_a_worker_kill(
        spark_cluster, cluster_py_files, mixed_day, tmp_path, record_property):  # noqa: F811
    cluster = spark_cluster
    assert len([w for w in cluster.status()["workers"] if w["state"] == "ALIVE"]) == 2
    ui_port = cluster_lib.free_port()
    out = tmp_path / "reports"
    args = ["--sends", f"{mixed_day}/sends/*", "--broker", f"{mixed_day}/broker/*",
            "--ledger", f"{mixed_day}/ledger/*", "--events", f"{mixed_day}/events/*",
            "--config", str(mixed_day / "config.yaml"), "--start", f"{DAY}T00:00:00Z",
            "--end", "2026-11-20T00:00:00Z", "--out", str(out), "--no-notify", "--json"]
    submit = audit_submit(
        cluster.master_url, REPO / "jobs" / "reconcile.py", args, py_files=cluster_py_files,
        conf={"spark.ui.enabled": "true", "spark.ui.port": str(ui_port),
              "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        python=sys.executable, local_ip=cluster_lib.HOST)
    cmd = submit.command(cluster_lib.spark_submit())
    env = {**submit.environ(), "DELIVERY_AUDIT_PROBE_EXECUTORS": "1"}  # the suites: in the zip
    log = tmp_path / "spark-submit.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                cwd=tmp_path, start_new_session=True)
    killer = WorkerKiller(cluster, ui_port, proc)
    killer.start()
    t0 = time.monotonic()
    try:
        code = proc.wait(timeout=JOB_TIMEOUT)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:  # the driver and its Python, by their process group
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        killer.stop_event.set()
        killer.join(timeout=10)
    output = log.read_text(errors="replace")
    assert killer.error is None, killer.error

    try:
        # the library went to the executors: they ran the venv's Python and imported
        # delivery_audit from the --py-files zip (and so did the driver)
        probes = [x for x in output.splitlines() if x.startswith("probe: ")]
        executors = [x for x in probes if x.startswith("probe: executor ")]
        assert executors, output[-5000:]
        for line in probes:
            assert f"python={sys.executable}" in line, line
            assert "delivery_audit.zip/delivery_audit/__init__.py" in line, line

        # the kill happened mid-job, during detection
        kill = killer.kill
        assert kill is not None, f"no worker was killed; stages seen: {len(killer.stages)}"
        record_property("worker_kill", json.dumps(kill))
        print(f"\nworker kill: {json.dumps(kill, indent=1)}")
        assert kill["job_still_running"]
        assert kill["running"] and kill["completed_stages_before"] > 0

        # Spark noticed: the killed worker's executor was removed; the job ran on
        lost = [e for e in killer.executors if str(e["id"]) in kill["executors"]]
        assert lost and not any(e["isActive"] for e in lost), killer.executors
        retried = [{k: s.get(k) for k in ("stageId", "attemptId", "name", "description",
                                           "numFailedTasks")}
                   for s in killer.stages if s.get("attemptId", 0) > 0
                   or s.get("numFailedTasks", 0) > 0]
        print(f"removed executors: {[(e['id'], e.get('removeReason')) for e in lost]}")
        print(f"stages with failed tasks or re-attempts: {json.dumps(retried, indent=1)}")
        print(f"Spark stages: {len(killer.stages)} seen; job ran {elapsed:.0f} s")
        record_property("after_kill", json.dumps({"removed": [(e["id"], e.get("removeReason"))
                                                              for e in lost],
                                                  "retried_stages": retried}))

        # the job finished (3: the verdict is fail, as the day has critical anomalies)
        assert code == 3, output[-6000:]
        report = _report(out)
        print("audit stages (s): " + ", ".join(f"{k} {v:.0f}"
                                              for k, v in report["run"]["stages"].items()))
        assert report["verdict"]["verdict"] == "fail"
        truth = json.loads((mixed_day / "truth.json").read_text())
        assert _summary(report) == _truth_summary(truth)
        assert all(g["balance_ok"] for g in report["groups"].values())

        # the killed worker's executor went down with it: nothing left in its process group
        deadline = time.monotonic() + 60
        while cluster.group_pids(kill["pid"]) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not cluster.group_pids(kill["pid"])
    finally:
        # give the session's other users two workers again
        for i, d in enumerate(cluster.worker_daemons):
            if d.stopped:
                cluster.start_worker(i, timeout=0)
        cluster.wait_ready(timeout=180)
