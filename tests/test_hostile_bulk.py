"""Hostile input at volume (issue 21): one audit over thousands of labelled hostile lines.

The corpus (delivery_audit_sim.generator.hostile) holds, per source, JSON Lines, gzipped JSON
Lines, CSV (one gzipped, opening with a BOM) and Parquet files: HOSTILE_PER_SOURCE hostile
lines of ~40 kinds (default 1,000; ``make fuzz``: 10,000) between valid rows. ONE audit (the
CLI, in this test process's Spark session) reads it all; then every line is checked: its
class (valid or quarantined), its quarantine reason (by the row it names in its file), each
source's accounting, and the HTML's escaping of the markup it carries.

A CSV written by Python's csv module (quotes, commas, line breaks in keys) must give the same
valid rows as its JSON Lines twin.
"""

from __future__ import annotations

import csv
import html
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import release_cached_frames
from typer.testing import CliRunner

from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.ingest import ingest, resolve
from delivery_audit.schemas import FIELDS
from delivery_audit_sim.generator.hostile import (
    MARKUP,
    NOT_A_ROW,
    QUARANTINED,
    VALID,
    check,
    table_text,
    write_corpus,
)

pytestmark = pytest.mark.audit  # one audit of a labelled hostile corpus: not in make test-fast

PER_SOURCE = int(os.environ.get("HOSTILE_PER_SOURCE", "1000"))
WINDOW = ["--start", "2026-11-19T00:00:00Z", "--end", "2026-11-20T00:00:00Z"]


@pytest.fixture(scope="module")
def hostile_audit(spark, tmp_path_factory):
    from delivery_audit.cli import app

    root = tmp_path_factory.mktemp("hostile-bulk")
    corpus = write_corpus(root / "data", PER_SOURCE, seed=21)
    # every format of a source in one audit; interpreted: the corpus's ~105 MB are a few
    # megabyte-long lines, not rows, and the engine's size rule (spark.CODEGEN_FROM_BYTES)
    # would compile for them (47 s against 35 s; the scenario audit runs compiled)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DELIVERY_AUDIT_CODEGEN", "false")
        result = CliRunner().invoke(app, ["run", *corpus.run_args(), *WINDOW,
                                          "--out", str(root / "reports")])
    release_cached_frames()
    assert result.exit_code in (0, 3), result.output
    out = next((root / "reports").rglob("report.json")).parent
    report = json.loads((out / "report.json").read_text())
    quarantine = pq.read_table(out / "quarantine").to_pylist()
    return {"corpus": corpus, "report": report, "quarantine": quarantine, "dir": out}


def test_every_hostile_line_is_classified_as_the_contract_says(hostile_audit):
    corpus = hostile_audit["corpus"]
    checked = check(corpus, hostile_audit["report"], hostile_audit["quarantine"])
    print("\n" + table_text(checked))  # the table by kind (pytest -s, make fuzz)
    assert checked.problems == []
    kinds = {e.kind for e in corpus.expected if e.klass != NOT_A_ROW} - {"plain"}
    assert len(kinds) >= 30
    # every source holds both classes, in every format it was written in
    for source, files in corpus.files.items():
        assert len({Path(f).suffixes[-1] for f in files}) >= 3, files
        classes = {e.klass for e in corpus.rows(source)}
        assert classes == {VALID, QUARANTINED}, source


def test_invalid_utf8_is_quarantined_in_every_source_and_format(hostile_audit):
    corpus, quarantine = hostile_audit["corpus"], hostile_audit["quarantine"]
    reasons = {(q["file"], q["row"]): q["reason"] for q in quarantine}
    cases = [e for e in corpus.expected if e.kind == "invalid_utf8"]
    files = {e.file for e in cases}
    assert len(files) == sum(1 for fs in corpus.files.values() for f in fs
                             if "native" in f or "hostile-jsonl" in f or "hostile-csv" in f)
    for e in cases:
        assert reasons[(e.file, e.row)].startswith("not valid UTF-8 (byte offset "), e


def test_quarantine_rows_show_the_line_and_the_report_accounts_for_every_row(hostile_audit):
    report, quarantine = hostile_audit["report"], hostile_audit["quarantine"]
    for source, i in report["inputs"].items():
        assert i["rows_read"] == i["rows_valid"] + i["rows_quarantined"], source
        assert i["rows_quarantined"] == sum(1 for q in quarantine if q["source"] == source)
    for q in quarantine:
        assert q["raw"], q  # the line as read (invalid bytes replaced, for display only)
        assert len(q["raw"]) <= 9 * 1024 * 1024  # an oversized line is cut, not kept whole
    oversized = [q for q in quarantine if "over the 8 MiB limit" in q["reason"]]
    assert oversized and all(len(q["raw"]) <= 1001 for q in oversized)


def test_markup_in_hostile_input_is_escaped_in_the_html(hostile_audit):
    page = (hostile_audit["dir"] / "report.html").read_text(encoding="utf-8")
    shown = 0
    for payload in MARKUP:
        assert payload not in page
        shown += html.escape(payload, quote=True) in page or html.escape(payload, False) in page
    assert shown >= 1  # the payloads reach the page (escaped): the check above can fail


def _python_csv_rows() -> list[dict]:
    keys = ['plain', 'with, comma', 'say "hi"', 'two\nlines', '"quoted", and\nbroken',
            '{"a": 1, "b": 2}', '=SUM(A1:A2)', 'trailing space ', ' leading', 'é ü 中文 🙂']
    return [{"send_ts": 1795046400000 + k, "topic": "orders", "key": key, "seq": k,
             "status": "acked", "partition": 0, "offset": k, "error": None}
            for k, key in enumerate(keys)]


def test_a_csv_written_by_python_reads_as_its_json_lines_twin(spark, tmp_path):
    rows = _python_csv_rows()
    names = [f.name for f in FIELDS["sends"] if f.name in rows[0]]
    with open(tmp_path / "sends.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)  # RFC 4180: CRLF, quotes doubled
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    (tmp_path / "sends.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    window = AuditWindow.of("2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z")

    def valid(name: str) -> list[dict]:
        got = ingest(spark, resolve("sends", [str(tmp_path / name)]), window, AuditConfig())
        assert got.counts["rows_quarantined"] == 0, got.quarantine.collect()
        return sorted((r.asDict() for r in got.valid.collect()), key=lambda r: r["seq"])

    from_csv, from_jsonl = valid("sends.csv"), valid("sends.jsonl")
    assert len(from_csv) == len(rows)
    assert from_csv == from_jsonl
    assert [r["key"] for r in from_csv] == [r["key"] for r in rows]


@pytest.mark.parametrize("combo", [("kafka-console-consumer", "broker"),
                                   ("kafka-verifiable-producer", "sends")])
def test_an_adapter_quarantines_a_line_that_is_not_utf8(tmp_path, combo):
    """A real sample line (tests/test_adapters.py: Kafka's own tool output) with an invalid
    byte is an error row naming the byte offset, never decoded lossily."""
    from samples import CONSOLE, PRODUCER

    from delivery_audit.adapters import convert

    fmt, source = combo
    lines = CONSOLE.splitlines() if fmt == "kafka-console-consumer" else list(PRODUCER)
    good = lines[0].encode("utf-8")
    at = len(good) // 2
    path = tmp_path / "tool.log"
    path.write_bytes(good + b"\n" + good[:at] + b"\xff" + good[at:] + b"\n")
    config = AuditConfig.from_dict({"adapters": {"topic": "orders", "date": "2026-11-19"}})
    out, counts = convert(fmt, source, [str(path)], ["tool.log"], tmp_path / "out", config)
    rows = [json.loads(x) for p in out for x in Path(p).read_text().splitlines()]
    errors = [r for r in rows if r.get("__error")]
    assert [r["__line"] for r in errors] == [2]
    assert errors[0]["__error"] == f"not valid UTF-8 (byte offset {at} of the line)"
    assert "\ufffd" in errors[0]["__raw"]
