# ruff: noqa: E501  (hostile sample values)
"""A fuzzed day (odd names, far timestamps) still renders the report."""

from __future__ import annotations

import json
import random
from pathlib import Path

from delivery_audit.schemas import FIELDS, SOURCES
from delivery_audit_sim.generator.hostile import csv_record as _csv_line
from delivery_audit_sim.generator.hostile import json_line as _json
from fuzz.csv_rows import CSV_MUTATIONS, csv_header, csv_row
from fuzz.jsonl_rows import JSONL_MUTATIONS, jsonl_line
from fuzz.rows import Batch, Line, joined, valid_row

# ------------------------------------------------------------------------- a whole audit


REPORT_DIR = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"
SMALL = Path(__file__).parents[1] / "data" / "small"
# valid but unusual values that reach detection and the report
ODD_NAMES = ["<script>alert(1)</script>", "a\u202eb", "k\x00ey", "é" * 50, "x" * 10_000,
             "{{ 7*7 }}", "&amp;", "'\"", "\U0001f600"]


def _odd_rows(source: str, rnd: random.Random) -> list[bytes]:
    """Valid rows with far timestamps and names made to break a report."""
    out = []
    for k, name in enumerate(ODD_NAMES):
        row = valid_row(source, 500 + k)
        for f in FIELDS[source]:
            if f.kind in ("string", "key") and f.name != "topic":
                row[f.name] = name
        out.append(_json(row))
    for ts in ("0001-01-01T00:00:00Z", "0001-01-02T00:00:00Z", "1970-01-01T00:00:00Z",
               "9999-12-31T23:59:59.999Z", -62135596800000, 0):
        row = valid_row(source, 600 + len(out))
        for f in FIELDS[source]:
            if f.kind == "timestamp" and (f.required or rnd.random() < 0.5):
                row[f.name] = ts
        out.append(_json(row))
    return out


def test_a_fuzzed_day_still_renders_the_report(spark, tmp_path):
    """One audit over the small fixture plus hostile rows in every source (JSON Lines for
    sends/ledger/events, CSV for the broker): the run ends with a verdict (exit 0 or 3),
    report.json and report.html are written, and the accounting holds for every source."""
    from typer.testing import CliRunner

    from delivery_audit.cli import app

    rnd = random.Random(20261119)
    paths = {}
    for source in ("sends", "ledger", "events"):
        b = Batch()
        for i, kind in enumerate(rnd.choices(JSONL_MUTATIONS, k=80)):
            jsonl_line(kind, rnd, source, 1000 + i, b)
        lines = (SMALL / f"{source}.jsonl").read_bytes().rstrip(b"\n").split(b"\n")
        lines += [ln.data for ln in b.lines] + _odd_rows(source, rnd)
        paths[source] = tmp_path / f"{source}.jsonl"
        paths[source].write_bytes(b"\n".join(lines) + b"\n")
    header, _ = csv_header(rnd, "broker")
    b = Batch()
    for i, kind in enumerate(rnd.choices(CSV_MUTATIONS, k=80)):
        csv_row(kind, rnd, "broker", 1000 + i, header, b)
    paths["broker"] = tmp_path / "broker-extra.csv"
    paths["broker"].write_bytes(joined([Line(_csv_line(header)), *b.lines]))
    (tmp_path / "broker.csv").write_bytes((SMALL / "broker.csv").read_bytes())
    out = tmp_path / "reports"
    result = CliRunner().invoke(app, [
        "run", "--sends", str(paths["sends"]), "--broker", str(tmp_path / "broker*.csv"),
        "--ledger", str(paths["ledger"]), "--events", str(paths["events"]),
        "--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z", "--out", str(out),
        "--no-notify"])
    assert result.exit_code in (0, 3), (result.output, result.exception)
    report_dir = out / REPORT_DIR
    report = json.loads((report_dir / "report.json").read_text())
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html
    assert report["verdict"]["verdict"] in ("pass", "warn", "fail")
    quarantined = 0
    for source in SOURCES:
        i = report["inputs"][source]
        assert i["rows_read"] == i["rows_valid"] + i["rows_quarantined"], (source, i)
        assert i["rows_quarantined"] > 0, source
        quarantined += i["rows_quarantined"]
    rows = spark.read.parquet(str(report_dir / "quarantine")).count()
    assert rows == quarantined
