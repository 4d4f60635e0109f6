# ruff: noqa: E501  (hostile sample values)
"""Every adapter format on hostile lines: conversion alone (many examples), then through ingest."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delivery_audit.adapters import convert
from delivery_audit.ingest import ingest, resolve
from delivery_audit_sim.generator.hostile import INVALID_UTF8
from fuzz.rows import (
    ADAPTER_CONFIG,
    FUZZ_EXAMPLES,
    WINDOW,
    Batch,
    Line,
    decoded_text,
    fuzz_settings,
    norm_replacements,
)

# ------------------------------------------------------------------------- adapters


def _adapter_samples():
    from samples import (
        CONSOLE,
        CONSUMER,
        JAVA_POLL,
        KAFKA_PYTHON,
        NEW_DUMP,
        OLD_DUMP,
        PRODUCER,
        SERVER_LOG,
        SPRING,
    )

    return {
        ("kafka-verifiable-producer", "sends"): PRODUCER,
        ("kafka-verifiable-consumer", "ledger"): CONSUMER,
        ("kafka-verifiable-consumer", "events"): CONSUMER,
        ("kafka-dump-log", "broker"): (NEW_DUMP + OLD_DUMP).splitlines(),
        ("kafka-console-consumer", "broker"): CONSOLE.splitlines(),
        ("kafka-console-consumer", "ledger"): CONSOLE.splitlines(),
        ("client-log", "events"): (SPRING + JAVA_POLL + KAFKA_PYTHON).splitlines(),
        ("coordinator-log", "events"): SERVER_LOG.splitlines(),
        ("librdkafka-log", "events"): [  # librdkafka 2.16's own lines, both layouts
            line for name in ("mock-2.16-stderr.log", "mock-2.16-python-logger.log")
            for line in (Path(__file__).parents[1] / "data" / "librdkafka" / name)
            .read_text(encoding="utf-8").splitlines() if "ASSIGN" in line or "MAXPOLL" in line
            or "LOST" in line or "LEAVE" in line],
    }


ADAPTER_COMBOS = sorted(_adapter_samples())
ADAPTER_MUTATIONS = ["none", "none", "none", "truncate", "invalid_utf8", "nul", "huge_digits",
                     "unicode_digits", "huge_line", "blank", "crlf", "cr", "garbage",
                     "json_types", "json_nan", "json_deep", "json_array", "bad_date",
                     "bad_offset", "far_date", "surrogate", "long_digits"]


def adapter_line(kind: str, rnd: random.Random, samples: list[str], b: Batch) -> None:
    """One line of tool output/log, mutated. Adapters skip or convert lines as they see
    fit ("any"): the properties are about crashes, accounting and origins."""
    text = rnd.choice(samples)
    data = text.encode("utf-8")
    if kind == "truncate" and len(data) > 2:
        data = data[:rnd.randrange(1, len(data))]
    elif kind == "invalid_utf8":
        k = rnd.randrange(0, len(data) + 1)
        data = data[:k] + rnd.choice(INVALID_UTF8) + data[k:]
    elif kind == "nul":
        k = rnd.randrange(0, len(data) + 1)
        data = data[:k] + b"\x00" + data[k:]
    elif kind in ("huge_digits", "long_digits", "unicode_digits"):
        runs = list(re.finditer(rb"\d+", data))
        if runs:
            m = rnd.choice(runs)
            digits = {"huge_digits": b"9" * 5000, "long_digits": b"1" * 25,
                      "unicode_digits": rnd.choice(["²", "١٢", "１"]).encode()}[kind]
            data = data[:m.start()] + digits + data[m.end():]
    elif kind == "huge_line":
        size = 1_000_000 if b.huge_left > 0 else 20_000
        b.huge_left -= 1
        data = data + b" " + b"p" * size
    elif kind == "blank":
        data = rnd.choice([b"", b"   ", b"\t"])
    elif kind in ("crlf", "cr"):
        b.add(Line(data, end=b"\r\n" if kind == "crlf" else b"\r", expect="any"))
        return
    elif kind == "garbage":
        data = bytes(rnd.randrange(32, 127) for _ in range(rnd.randrange(1, 200)))
    elif kind in ("json_types", "json_nan", "json_deep", "json_array", "surrogate") \
            and text.startswith("{"):
        obj = json.loads(text)
        key = rnd.choice(sorted(obj))
        if kind == "json_types":
            obj[key] = rnd.choice([[1], {"a": 1}, "x", 1.5, True, None, -1, 10**30, ""])
            data = json.dumps(obj).encode()
        elif kind == "json_nan":
            data = json.dumps(obj)[:-1].encode() + b', "' + key.encode() + b'": NaN}'
        elif kind == "json_deep":
            d = rnd.choice([50, 5000, 100_000] if b.huge_left > 0 else [50, 5000])
            data = json.dumps(obj)[:-1].encode() + b', "deep": ' + b"[" * d + b"]" * d + b"}"
        elif kind == "json_array":
            data = b"[" + text.encode() + b"]"
        else:
            obj[key] = "\ud800x" if isinstance(obj[key], str) else obj[key]
            data = json.dumps(obj).encode()  # ensure_ascii: "\\ud800" as an escape
    elif kind == "bad_date" and re.search(rb"\d{4}-\d{2}-\d{2}", data):
        data = re.sub(rb"\d{4}-\d{2}-\d{2}", rnd.choice([b"2026-13-45", b"0000-01-01",
                                                          b"2026-02-30"]), data, count=1)
    elif kind == "bad_date" and re.search(rb"\d{2}:\d{2}:\d{2}", data):
        data = re.sub(rb"(\d{2}:\d{2}:\d{2})", rb"\1+99:00", data, count=1)
    elif kind == "far_date" and re.search(rb"\d{4}-\d{2}-\d{2}", data):
        data = re.sub(rb"\d{4}-\d{2}-\d{2}", b"9999-12-31", data, count=1)
    elif kind == "bad_offset":
        value = rnd.choice([b"-1", b"x", b"99999999999999999999"])
        data = re.sub(rb"(offset|Offset|Partition|partition)(\W+)\d+",
                      lambda m: m.group(1) + m.group(2) + value, data, count=1)
    b.add(Line(data, expect="any"))


def check_adapter_output(out_files: list[str], counts: dict, origin: str,
                         lines: list[Line]) -> None:
    """Pure-Python properties of a conversion: every written row points at an existing,
    non-blank line of the origin; error rows carry that line's text."""
    rows = [json.loads(x) for p in out_files
            for x in Path(p).read_text(encoding="utf-8").splitlines()]
    assert counts.get("adapter_rows", 0) == len(rows)
    assert counts.get("adapter_errors", 0) == sum(1 for r in rows if "__error" in r)
    for r in rows:
        assert r["__file"] == origin
        n = r["__line"]
        assert 1 <= n <= len(lines), (n, len(lines))
        text = decoded_text(lines[n - 1], n == 1)
        assert text.strip(), f"row from blank line {n}"
        if "__error" in r:
            assert r["__error"], r
            assert norm_replacements(r["__raw"]) == norm_replacements(text[:10_000]), (n, r["__raw"][:100])


def adapter_batch(combo: tuple[str, str], plan: list[str], seed: int,
                  huge: bool = True) -> Batch:
    """The lines of one adapter example: the plan's mutations of the format's samples
    (``huge``: one line of a megabyte and 100,000-deep JSON may occur)."""
    rnd = random.Random(seed)
    samples = _adapter_samples()[combo]
    b = Batch(huge_left=1 if huge else 0)
    for kind in plan:
        adapter_line(kind, rnd, samples, b)
    return b


# The adapters are pure Python: ADAPTER_EXAMPLES examples (default 10,000) in runs of 100,
# each run one Hypothesis example whose seed draws its 100 small examples (5-20 lines; the
# megabyte lines in one example of each run, they dominate the cost).
ADAPTER_EXAMPLES = int(os.environ.get("FUZZ_ADAPTER_EXAMPLES", "3000"))  # make fuzz: 10,000
ADAPTER_RUN = 100


@fuzz_settings(-(-ADAPTER_EXAMPLES // ADAPTER_RUN))
@given(seed=st.integers(0, 2**31), bom=st.booleans(), gz=st.booleans())
def test_adapters_convert_hostile_lines(tmp_path_factory, seed, bom, gz):
    """Conversion alone (no Spark, so many examples): never raises, every row is located."""
    rnd = random.Random(seed)
    tmp = tmp_path_factory.mktemp("fuzz-adapter")
    for n in range(ADAPTER_RUN):
        combo = rnd.choice(ADAPTER_COMBOS)
        fmt, source = combo
        plan = [rnd.choice(ADAPTER_MUTATIONS) for _ in range(rnd.randrange(5, 21))]
        b = adapter_batch(combo, plan, rnd.randrange(2**31), huge=n == 0)
        if (bom or n % 7 == 0) and b.lines:
            b.lines[0].data = b"\xef\xbb\xbf" + b.lines[0].data
        folder = tmp / f"ex{n}"
        folder.mkdir()
        zipped = gz and n % 2 == 0
        path = folder / ("input.log.gz" if zipped else "input.log")
        data = b.payload()
        path.write_bytes(gzip.compress(data, compresslevel=1) if zipped else data)
        out, counts = convert(fmt, source, [str(path)], ["origin/input.log"], folder / "out",
                              ADAPTER_CONFIG)
        check_adapter_output(out, counts, "origin/input.log", b.lines)


# Through ingest, a Spark run per example: every adapter and source it feeds (ADAPTER_COMBOS,
# 9) once in CI, each on a plan of 40-120 lines drawn from its seed (Hypothesis's first,
# derandomized example: seed 0), which draws every kind of ADAPTER_MUTATIONS over the run
# (checked below); `make fuzz` gives each FUZZ_EXAMPLES // 4.
_INGESTED_KINDS: set[str] = set()
_INGESTED_COMBOS: set[tuple[str, str]] = set()


@pytest.mark.parametrize("combo", ADAPTER_COMBOS, ids="{0[0]}:{0[1]}".format)
@fuzz_settings(max(1, FUZZ_EXAMPLES // 4))
@given(seed=st.integers(0, 2**31))
def test_adapter_formats_ingest_hostile_lines(spark, tmp_path_factory, combo, seed):
    """Through ingest: accounting and quarantine origins (the original file and line)."""
    fmt, source = combo
    rnd = random.Random(f"{fmt}/{source}/{seed}")
    plan = [rnd.choice(ADAPTER_MUTATIONS) for _ in range(rnd.randrange(40, 121))]
    _INGESTED_KINDS.update(plan)
    _INGESTED_COMBOS.add(combo)
    b = adapter_batch(combo, plan, rnd.randrange(2**31))
    tmp = tmp_path_factory.mktemp("fuzz-adapter-ingest")
    path = tmp / "tool-output.log"
    path.write_bytes(b.payload())
    result = ingest(spark, resolve(source, [str(path)], fmt=fmt), WINDOW, ADAPTER_CONFIG)
    c = result.counts
    assert c["rows_read"] == c["rows_valid"] + c["rows_quarantined"] == c["adapter_rows"], c
    quarantine = result.quarantine.collect()
    assert len(quarantine) == c["rows_quarantined"]
    assert c["adapter_errors"] <= c["rows_quarantined"]
    for q in quarantine:
        assert q["reason"] and q["file"] == str(path), q
        assert 1 <= q["row"] <= len(b.lines)
        line = b.lines[q["row"] - 1]
        assert decoded_text(line, q["row"] == 1).strip(), q
        if q["reason"].startswith("duplicate of line "):  # raw: the parsed values
            assert int(q["reason"].split()[3]) <= q["row"], q["reason"]
            continue
        try:
            converted = json.loads(q["raw"])
        except (ValueError, RecursionError):
            converted = None
        if isinstance(converted, dict) and "__line" in converted:  # the canonical parser's
            assert converted["__line"] == q["row"] and converted["__file"] == str(path)
        else:  # an adapter error row: the original line
            assert norm_replacements(q["raw"]) == norm_replacements(decoded_text(line, q["row"] == 1)[:10_000])


def test_the_ingested_adapter_examples_drew_every_kind():
    """The examples above (run before this test, in file order) drew every mutation kind."""
    if _INGESTED_COMBOS != set(ADAPTER_COMBOS):
        pytest.skip("not every ingest example ran before this test (deselected)")
    assert _INGESTED_KINDS == set(ADAPTER_MUTATIONS), sorted(
        set(ADAPTER_MUTATIONS) - _INGESTED_KINDS)
