"""Helpers for the Airflow tests: an isolated AIRFLOW_HOME inside the checkout and `airflow dags
test` in a subprocess. The S3 server is tests/s3_server.py's moto fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
#: never ~/airflow: a gitignored folder of the checkout
AIRFLOW_HOME = REPO / ".airflow" / "pytest"


def airflow_env(variables: dict[str, str] | None = None, extra: dict[str, str] | None = None,
                home: Path = AIRFLOW_HOME) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW_VAR_", "AIRFLOW__", "AIRFLOW_CONN_"))}
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
    })
    for name, value in (variables or {}).items():
        env[f"AIRFLOW_VAR_DELIVERY_AUDIT_{name.upper()}"] = value
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
    import sqlite3

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


def s3_env(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
