"""Every real sample of tests/data/wild/ (tests/wild.py) gives, through its adapter, the
rows and error rows worked out by hand in its expected file, and every one of its lines is
accounted for (recognised + skipped with a kind + error = lines). No Spark."""

from __future__ import annotations

import json

import pytest

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig
from tests.wild import WILD, Sample, readme_table, samples

SAMPLES = samples()


def _convert(sample: Sample, tmp_path):
    meta = sample.meta
    config = AuditConfig.from_dict({"adapters": meta.get("options") or {}})
    accounts: list = []
    written, _ = convert(meta["format"], meta["source"], [str(sample.path)],
                         [sample.path.name], tmp_path, config, accounts=accounts)
    rows = [json.loads(line) for line in open(written[0], encoding="utf-8")]
    return rows, accounts[0]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_wild_sample(sample: Sample, tmp_path):
    meta = sample.meta
    rows, account = _convert(sample, tmp_path)
    good = [r for r in rows if "__error" not in r]
    bad = [r for r in rows if "__error" in r]
    expected = meta.get("rows", [])
    got = [{k: r.get(k) for k in want} for r, want in zip(good, expected, strict=False)]
    assert got == expected[:len(got)], "rows differ from the hand-worked ones"
    assert len(good) == len(expected), (
        f"{len(good)} rows, expected {len(expected)}: "
        f"{[{k: v for k, v in r.items() if v is not None} for r in good[len(expected):]][:3]}")
    want_errors = meta.get("errors", [])
    assert [r["__line"] for r in bad] == [e["line"] for e in want_errors]
    for r, e in zip(bad, want_errors, strict=True):
        assert e["reason_contains"] in r["__error"], (r["__line"], r["__error"])
    assert account.unaccounted == 0, f"{account.unaccounted} lines never classified"
    assert account.recognised + sum(account.skipped.values()) + account.error_lines \
        == account.lines
    if "skipped" in meta:
        assert account.skipped == meta["skipped"]


def test_wild_readme_lists_every_sample():
    readme = (WILD / "README.md")
    if not SAMPLES:
        pytest.skip("no samples yet")
    assert readme_table() in readme.read_text(encoding="utf-8"), (
        "tests/data/wild/README.md is stale: run python scripts/wild_readme.py")
