"""Helpers for the Airflow tests: an isolated AIRFLOW_HOME inside the checkout and `airflow dags
test` in a subprocess. The S3 server is tests/s3_server.py's moto fixture, reached through an
AWS Connection (:func:`aws_connection`), never through AWS_* variables."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
#: never ~/airflow: a gitignored folder of the checkout, one per pytest-xdist worker (each has
#: its own SQLite metadata DB; conftest imports this module before any test module)
AIRFLOW_HOME = REPO / ".airflow" / "-".join(filter(None, ["pytest",
                                                          os.environ.get("PYTEST_XDIST_WORKER")]))

# In-process Airflow for every test (the DAG, task and settings tests): Airflow writes
# airflow.cfg into AIRFLOW_HOME on import, so these come before any airflow import.
os.environ["AIRFLOW_HOME"] = str(AIRFLOW_HOME)
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(REPO / "dags"))
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(REPO / "plugins"))
if str(REPO / "plugins") not in sys.path:
    sys.path.append(str(REPO / "plugins"))


def airflow_env(settings: dict[str, Any] | None = None, extra: dict[str, str] | None = None,
                home: Path = AIRFLOW_HOME) -> dict[str, str]:
    """The environment of an Airflow subprocess: ``settings`` become the JSON Variable
    delivery_audit_settings. No AWS_* variable of this process (the moto fixture's fake keys)
    is passed on, no AWS config file is read and no instance metadata asked: S3 works only
    through the AWS Connection a test gives in ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW_VAR_", "AIRFLOW__", "AIRFLOW_CONN_", "AWS_"))}
    env.update({
        "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "DELIVERY_AUDIT_RETRY_DELAY_SECONDS": "1",
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    })
    if settings is not None:
        env["AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS"] = json.dumps(settings)
    env.update(extra or {})
    return env


_migrated: set[Path] = set()


def migrate(home: Path = AIRFLOW_HOME) -> None:
    if home in _migrated:
        return
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(VENV_BIN / "airflow"), "db", "migrate"], env=airflow_env(home=home),
                   check=True, capture_output=True, text=True, timeout=600)
    _migrated.add(home)


def dags_test(dag_id: str, logical_date: str | None = None, conf: dict | None = None,
              env: dict[str, str] | None = None,
              timeout: float = 900) -> subprocess.CompletedProcess:
    migrate()
    cmd = [str(VENV_BIN / "airflow"), "dags", "test", dag_id]
    if logical_date:
        cmd.append(logical_date)
    if conf is not None:
        cmd += ["-c", json.dumps(conf)]
    return subprocess.run(cmd, env=env or airflow_env(), capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def task_states(dag_id: str, home: Path = AIRFLOW_HOME) -> dict[str, str]:
    """task_id → state of the latest run of dag_id (read from the SQLite metadata DB)."""
    con = sqlite3.connect(home / "airflow.db")
    try:
        row = con.execute("SELECT run_id FROM dag_run WHERE dag_id=? ORDER BY id DESC LIMIT 1",
                          (dag_id,)).fetchone()
        return dict(con.execute("SELECT task_id, state FROM task_instance "
                                "WHERE dag_id=? AND run_id=?", (dag_id, row[0])).fetchall())
    finally:
        con.close()


def task_logs(dag_id: str, home: Path = AIRFLOW_HOME) -> str:
    """All task log files of a DAG (any run), concatenated."""
    root = home / "logs"
    return "\n".join(p.read_text(errors="replace")
                     for p in sorted(root.rglob("*")) if p.is_file() and dag_id in str(p))


def layout_inputs(generated: Path, data_root: Path, day: str) -> None:
    """Move `delivery-audit generate` output into <data_root>/<source>/dt=<day>/ (DAG layout)."""
    for src in ("sends", "broker", "ledger", "events"):
        if (generated / src).is_dir():
            dest = data_root / src / f"dt={day}"
            dest.mkdir(parents=True, exist_ok=True)
            for f in (generated / src).iterdir():
                f.rename(dest / f.name)


#: the password of :func:`aws_connection` (moto accepts any); never in a log or an XCom
AWS_SECRET = "moto-secret-e2e"


def aws_connection(endpoint: str) -> str:
    """``AIRFLOW_CONN_AWS_DEFAULT`` for the moto server: the JSON form, its endpoint in
    ``extra.endpoint_url``, as a deployment gives its MinIO or S3."""
    return json.dumps({"conn_type": "aws", "login": "moto-e2e", "password": AWS_SECRET,
                       "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}})


def truth_differences(report: dict, truth: dict) -> list[str]:
    """Where a published report's figures differ from the generator's truth.json (the
    same comparison as tests/test_scenarios.py): every anomaly count, the dup_write and
    redelivery causes, the judged messages and each group's judged and states. Empty when
    the audit found exactly the injected faults."""
    found = report["anomalies"]
    diffs = [f"{a}: {found.get(a, {}).get('count')} != truth {n}"
             for a, n in truth["anomalies"].items() if found.get(a, {}).get("count") != n]
    for a, causes in truth["by_cause"].items():
        got = {c: found[a]["by_cause"].get(c) for c in causes}
        if got != causes:
            diffs.append(f"{a} by cause: {got} != truth {causes}")
    if report["judged"] != truth["judged"]:
        diffs.append(f"judged: {report['judged']} != truth {truth['judged']}")
    for g, expected in truth["groups"].items():
        got = report["groups"].get(g) or {}
        states = {s: (got.get("states") or {}).get(s) for s in expected["states"]}
        if got.get("judged") != expected["judged"] or states != expected["states"]:
            diffs.append(f"group {g}: judged {got.get('judged')}, states {states} != truth "
                         f"{expected['judged']}, {expected['states']}")
    return diffs


def differing_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """The dotted paths where two JSON documents differ: dicts are compared key by key (a key
    missing on one side differs), anything else (lists too) as a whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str)
                for p in (differing_paths(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
                          if k in a and k in b else [f"{path}.{k}" if path else str(k)])]
    return [] if a == b else [path]


class SlackStandIn(BaseHTTPRequestHandler):
    """Slack's incoming-webhook endpoint on 127.0.0.1: records each POST, answers "ok"."""

    received: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append({"path": self.path, "body": json.loads(body)})
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@contextmanager
def slack_stand_in():
    """A SlackStandIn serving on a free port of 127.0.0.1: yields its base URL and the
    handler class (``.received``); stopped on exit."""
    SlackStandIn.received = []
    server = HTTPServer(("127.0.0.1", 0), SlackStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", SlackStandIn
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def published_window(root: Path, settings: Any, *, verdict: str, wid: str,
                     anomalies: dict[str, int], reasons: list[str]) -> tuple[dict, Path]:
    """A day's plan and its report folder as the publisher leaves it (manifest last): a small
    report.json with the verdict, these anomaly counts and one critical finding."""
    from delivery_audit_airflow.plan import build_plan

    from delivery_audit.storage import publish

    start = datetime(2026, 11, 19, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(days=1), settings=settings)
    folder = Path(plan["report_dir"])
    staging = root / "staging"
    staging.mkdir(parents=True)
    severity = {"lost_acked": "critical"}
    (staging / "report.json").write_text(json.dumps({
        "window": {"id": wid}, "verdict": {"verdict": verdict, "reasons": reasons},
        "anomalies": {a: {"count": n, "severity": severity.get(a, "high")}
                      for a, n in anomalies.items()},
        "narrative": [{"id": "f1", "severity": "critical", "at": "2026-11-19T01:36:40.704Z",
                       "cause": "acks_loss", "title": "3 acknowledged messages lost",
                       "text": "3 acknowledged messages in payments are missing.",
                       "fix": "acks=all"}]}))
    (staging / "report.html").write_text("<html/>")
    publish(staging, str(folder.parent), folder.name)
    return plan, folder
