"""The CLI audit of tests/data/small, shared by tests/test_cli.py (its checks) and
tests/test_idempotence.py (its first run): one Spark audit for both. Registered in
conftest.py.

The ledger is gzipped (gzip input), the broker is CSV, the rest JSON Lines. The sends glob
also matches a file in a date partition after the window's read bound: pruned, so its
garbage is never read."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delivery_audit.cli import app

DATA = Path(__file__).parent / "data" / "small"
WINDOW = ["--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z"]
REPORT_DIR = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"


@pytest.fixture(scope="session")
def small_audit(spark, tmp_path_factory) -> dict:
    """``args`` (the CLI arguments), ``out`` (the report root), ``result`` (the CliRunner
    result), ``report`` (report.json) and ``dir``: a copy of the published folder, which a
    later run into ``out`` (test_idempotence) leaves as it is."""
    tmp = tmp_path_factory.mktemp("cli")
    for name in ("sends.jsonl", "broker.csv", "events.jsonl"):
        shutil.copy(DATA / name, tmp / name)
    late = tmp / "late" / "dt=2026-11-25"
    late.mkdir(parents=True)
    (late / "sends-late.jsonl").write_text("not JSON at all\n")
    with gzip.open(tmp / "ledger.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write((DATA / "ledger.jsonl").read_text(encoding="utf-8"))
    out = tmp / "reports"
    args = ["run", "--sends", str(tmp / "**" / "send*.jsonl"),
            "--broker", str(tmp / "broker.csv"), "--ledger", str(tmp / "ledger.jsonl.gz"),
            "--events", str(tmp / "events.jsonl"), *WINDOW, "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert (out / REPORT_DIR / "report.json").is_file(), result.output
    kept = tmp / "run1"
    shutil.copytree(out / REPORT_DIR, kept)
    report = json.loads((kept / "report.json").read_text())
    return {"args": args, "out": out, "result": result, "report": report, "dir": kept}
