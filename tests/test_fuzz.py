# ruff: noqa: E501  (hostile sample values)
"""Hostile input, property-based (Hypothesis): batches of mutated rows through every
canonical reader (JSON Lines, CSV, Parquet) and every adapter format.

Properties, for every example:

* ingestion never crashes (a row-level problem never stops the run);
* every row lands valid or quarantined, quarantined rows with a non-empty reason, and
  ``rows_read = rows_valid + rows_quarantined`` (contract §2) with ``rows_read`` the
  number of non-blank lines / data rows written;
* quarantined rows name the file and the line (row) they came from: the raw text at
  that line, the row marker of that data row, or the original line for adapters;
* rows left intact stay valid, rows broken beyond repair are quarantined, and a copy of
  an earlier row is "duplicate of line N" of that row.

An example is a batch (40–120 rows, one or a few files). A Spark job per example would take
seconds, so the examples of all three readers are written into one file set and ingested
together (``check_many``: up to 50 per reader per Spark run, each file checked on its own;
a source's files mix formats); the adapters, pure
Python, run 10,000 small examples. Examples are derandomized (the same every run);
``FUZZ_EXAMPLES`` (``make fuzz``) raises their number, ``FUZZ_SHRINK=1`` lets Hypothesis
shrink a failure (slow). tests/test_hostile_bulk.py labels every line of one large corpus.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import release_cached_frames
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig
from delivery_audit.ingest import InputError, ingest, resolve
from delivery_audit.schemas import FIELDS, SOURCES
from delivery_audit.window import AuditWindow
from delivery_audit_sim.generator.hostile import INVALID_UTF8
from delivery_audit_sim.generator.hostile import csv_cell as _csv_cell
from delivery_audit_sim.generator.hostile import csv_record as _csv_line
from delivery_audit_sim.generator.hostile import json_line as _json
from delivery_audit_sim.generator.hostile import with_raw as _set_raw

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
_PHASES = (Phase.explicit, Phase.generate) + (
    (Phase.shrink,) if os.environ.get("FUZZ_SHRINK") == "1" else ())


@pytest.fixture(autouse=True)
def _release_cached_frames():
    """Every example ingests (and persists) anew: release after each test."""
    yield
    release_cached_frames()


def fuzz_settings(examples: int = FUZZ_EXAMPLES) -> settings:
    return settings(max_examples=max(1, examples), deadline=None, derandomize=True,
                    database=None, phases=_PHASES, print_blob=False,
                    suppress_health_check=list(HealthCheck))


WINDOW = AuditWindow.of("2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z")
T0 = int(datetime(2026, 11, 19, tzinfo=UTC).timestamp() * 1000)
KIND = {"long": "int", "nonneg_long": "int", "int": "int", "nonneg_int": "int",
        "timestamp": "timestamp", "string": "string", "key": "string", "enum": "enum",
        "bool": "bool"}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def valid_row(source: str, i: int) -> dict:
    """A valid canonical row, unique by `i` (offset/seq), inside WINDOW."""
    ms = T0 + 1000 * (i % 80_000) + i // 80_000
    if source == "sends":
        return {"send_ts": ms, "topic": "orders", "key": f"k{i % 5}", "seq": i,
                "status": "acked", "partition": i % 3, "offset": i, "ack_ts": iso(ms + 5),
                "attempt": 1, "producer_id": "p-1", "idempotent": True, "error": None}
    if source == "broker":
        return {"topic": "orders", "partition": i % 3, "offset": i, "key": f"k{i % 5}",
                "seq": i, "timestamp": iso(ms), "producer_id": "p-1", "pid": 7,
                "producer_epoch": 0, "batch_sequence": i}
    if source == "ledger":
        return {"group_id": "g", "member_id": "m-1", "topic": "orders", "partition": i % 3,
                "offset": i, "key": f"k{i % 5}", "seq": i, "started_ts": ms,
                "finished_ts": iso(ms + 20), "outcome": "success", "generation": 3}
    return {"group_id": "g", "member_id": "m-1", "ts": ms, "event": "commit",
            "topic": "orders", "partition": i % 3, "offset": i, "generation": 3,
            "detail": f"row {i}"}


# Optional fields whose absence keeps every valid_row valid (and unique).
DROPPABLE = {"sends": ("key", "ack_ts", "attempt", "producer_id", "idempotent", "error"),
             "broker": ("key", "seq", "producer_id", "pid", "producer_epoch",
                        "batch_sequence"),
             "ledger": ("key", "finished_ts", "generation"),
             "events": ("member_id", "generation", "detail")}

# Hostile values as JSON text, per field kind: certainly wrong, and edge values that may
# or may not be valid (the fast-path test checks those against the strict rules).
BAD_JSON = {
    "int": ['[]', '{}', 'true', '"x"', '1.5', '"1.5"', '1e400', '"-1"', '"+1"', '" 1"',
            '"0x10"', '"1_000"', '"١٢٣"'],
    "timestamp": ['true', '[]', '{"t": 1}', '"not a time"', '1.5', '"2026-13-45T00:00:00Z"',
                  '"0000-01-01T00:00:00Z"', '"+10000-01-01T00:00:00Z"', '253402300800000',
                  '-62135596800001', '"1e12"', '"9999-12-31T23:59:59.999999-01:00"'],
    "string": ['[]', '{}', 'true', 'false', '1.5', '1e400', '{"a": [1]}', '-1.0'],
    "enum": ['"nope"', '1', 'true', '"acked "', '[]', '""'],
    "bool": ['"yes"', '1', '[]', '"t"', '0'],
}
EDGE_JSON = {
    "int": ['0', '"0"', '"007"', '-0', '1.0', '"1.0"', '100.000', '2147483647', '2147483648',
            '-2147483648', '9223372036854775807', '9223372036854775808', '-1', '1E2',
            '"999999999999999999"', '"9223372036854775807"', '"00000000000000000000001"',
            'null', '""', '12345678901234567890123'],
    "timestamp": ['0', '"0"', '-1', '1795082400000', '"1795082400000"', '1795082400000.0',
                  '"2026-11-19 10:00:00"', '"2026-11-19"', '"2026-11-19T10:00:00+18:00"',
                  '"2026-11-19T10:00:00+19:00"', '"9999-12-31T23:59:59.999999Z"',
                  '"0001-01-01T00:00:00Z"', '"0001-01-01T00:00:00+01:00"',
                  '"2026-11-19T10:00:00.123456789Z"', '"2026-11-19T10:00:00 America/New_York"',
                  '" 2026-11-19T10:00:00Z"', '"2026-11-19T10"', '253402300799999',
                  '-62135596800000', '99999999999999', '100000000000000', 'null', '""',
                  '"20261119T100000Z"'],
    "string": ['""', '" "', '1', '-1', '0', '"007"', '"true"', '"null"', '"NaN"', '"Infinity"',
               '"-"', '"\\u0000"', '"\\ud800"', '"é"', '"<script>alert(1)</script>"', 'null',
               '12345678901234567890', '9223372036854775807', '"{}"', '"[1]"', '"\\"q\\""'],
    "enum": ['null', '""'],  # + case variants of the allowed values (enum_edges)
    "bool": ['true', 'false', '"TRUE"', '"False"', 'null', '""', '"true "'],
}


def enum_edges(allowed: tuple[str, ...]) -> list[str]:
    out = []
    for a in allowed:
        out += [json.dumps(a.upper()), json.dumps(a.title()), json.dumps(" " + a)]
    return out


def field_of(source: str, name: str):
    return next(f for f in FIELDS[source] if f.name == name)


def bad_values(f) -> list[str]:
    vals = list(BAD_JSON[KIND[f.kind]])
    if f.kind.startswith("nonneg"):
        vals += ['-1', '"-5"']
    if f.kind in ("int", "nonneg_int"):
        vals += ['2147483648', '"99999999999"']
    if f.required:
        vals += ['null', '""'] if f.kind != "enum" else ['null']
    return vals


def edge_values(f) -> list[str]:
    vals = list(EDGE_JSON[KIND[f.kind]])
    if f.kind == "enum":
        vals += enum_edges(f.allowed)
    return vals


# ------------------------------------------------------------------------- line model


@dataclass
class Line:
    """One physical line of a generated file."""

    data: bytes  # without the line break
    end: bytes = b"\n"
    expect: str | None = None  # None: blank (not a row); valid | bad | dup | any
    dup_of: int | None = None  # index of the first copy
    marker: str | None = None  # CSV/Parquet row marker


@dataclass
class Batch:
    lines: list[Line] = field(default_factory=list)
    huge_left: int = 1  # at most this many ~1 MB values per file (time, file size)

    def add(self, *lines: Line) -> None:
        self.lines.extend(lines)

    def last_valid(self) -> int | None:
        for k in range(len(self.lines) - 1, -1, -1):
            ln = self.lines[k]
            if ln.expect == "valid" and len(ln.data) < 10_000:
                return k
        return None

    def payload(self) -> bytes:
        return joined(self.lines)


def joined(lines: list[Line]) -> bytes:
    """The file's bytes. A CR ending followed by an empty line would read as one CRLF
    ending (Spark's and Python's line readers agree): write that ending as CRLF."""
    for k in range(len(lines) - 1):
        if lines[k].end == b"\r" and lines[k + 1].data == b"":
            lines[k].end = b"\r\n"
    return b"".join(ln.data + ln.end for ln in lines)


def _splice(data: bytes, rnd: random.Random, insert: bytes, source: str) -> bytes:
    """Insert bytes inside the value of a string field (not an enum or a timestamp)."""
    names = [f.name for f in FIELDS[source] if f.kind in ("string", "key")]
    spots = [m.end() for n in names
             for m in re.finditer(b'"' + n.encode() + rb'": "(?=[A-Za-z])', data)]
    k = rnd.choice(spots)
    return data[:k] + insert + data[k:]


JSONL_MUTATIONS = [
    "none", "none", "none", "truncate", "bad_value", "edge_value", "huge_string",
    "huge_name", "invalid_utf8", "nul_raw", "nul_escaped", "control_raw", "deep",
    "too_deep", "far_time", "dup_key_bogus_first", "dup_key_bogus_last", "trailing",
    "toplevel", "blank_before", "crlf", "cr", "bom", "leading_ws", "dup_row",
    "reorder_extra", "non_json", "case_keys", "drop_optional", "drop_required",
]


def jsonl_line(kind: str, rnd: random.Random, source: str, i: int, b: Batch) -> None:
    """Append the line(s) of one generated row with mutation `kind` to the batch."""
    row = valid_row(source, i)
    fields = FIELDS[source]
    if kind == "none":
        b.add(Line(_json(row), expect="valid"))
    elif kind == "truncate":
        data = _json(row)
        b.add(Line(data[:rnd.randrange(1, len(data) - 1)], expect="bad"))
    elif kind in ("bad_value", "edge_value"):
        f = rnd.choice(fields)
        vals = bad_values(f) if kind == "bad_value" else edge_values(f)
        b.add(Line(_set_raw(row, f.name, rnd.choice(vals)),
                   expect="bad" if kind == "bad_value" else "any"))
    elif kind == "huge_string":
        strings = [f.name for f in fields if f.kind in ("string", "key")
                   and f.name not in ("topic",)]
        size = 1_000_000 if b.huge_left > 0 else rnd.randrange(1000, 20_000)
        b.huge_left -= 1
        row[rnd.choice(strings)] = "x" * size
        b.add(Line(_json(row), expect="valid"))
    elif kind == "huge_name":
        # Jackson (both of Spark's JSON readers) refuses names over 50,000 characters:
        # such a line is "not valid JSON", quarantined like one
        size = 1_000_000 if b.huge_left > 0 else rnd.choice([5_000, 49_000])
        b.huge_left -= 1
        row["k" * size] = 1
        b.add(Line(_json(row), expect="valid" if size < 50_000 else "bad"))
    elif kind == "invalid_utf8":
        # inside a string value: never decoded lossily, the line is quarantined (rule 4)
        b.add(Line(_splice(_json(row), rnd, rnd.choice(INVALID_UTF8), source), expect="bad"))
    elif kind == "nul_raw":
        b.add(Line(_splice(_json(row), rnd, b"\x00", source), expect="bad"))
    elif kind == "nul_escaped":
        b.add(Line(_splice(_json(row), rnd, b"\\u0000", source), expect="valid"))
    elif kind == "control_raw":
        b.add(Line(_splice(_json(row), rnd, rnd.choice([b"\x01", b"\x1f", b"\x08"]), source),
                   expect="bad"))
    elif kind == "deep":
        d = rnd.choice([10, 100, 500])
        b.add(Line(_set_raw(row, "zz_nested", "[" * d + "1" + "]" * d), expect="valid"))
    elif kind == "too_deep":
        d = rnd.choice([1500, 5000])
        b.add(Line(_set_raw(row, "zz_nested", "[" * d + "]" * d), expect="bad"))
    elif kind == "far_time":
        f = rnd.choice([f for f in fields if f.kind == "timestamp"])
        value, expect = rnd.choice([
            ('"0000-01-01T00:00:00Z"', "bad"), ('"-0001-06-01T00:00:00Z"', "bad"),
            ('"+10000-01-01T00:00:00Z"', "bad"), ('-62135596800001', "bad"),
            ('253402300800000', "bad"), ('"9999-12-31T23:59:59.999Z"', "valid"),
            ('253402300799999', "valid"), ('0', "valid"), ('"0001-01-01T00:00:00Z"', "valid"),
            ('"1970-01-01T00:00:00Z"', "valid"), ('-62135596800000', "valid")])
        b.add(Line(_set_raw(row, f.name, value), expect=expect))
    elif kind in ("dup_key_bogus_first", "dup_key_bogus_last"):
        f = rnd.choice(fields)
        bogus = rnd.choice(bad_values(f))
        body = _json(row)
        if kind == "dup_key_bogus_first":  # the last copy wins: the row stays valid
            data = b'{"' + f.name.encode() + b'": ' + bogus.encode() + b", " + body[1:]
            b.add(Line(data, expect="valid"))
        else:
            data = body[:-1] + b', "' + f.name.encode() + b'": ' + bogus.encode() + b"}"
            b.add(Line(data, expect="bad"))
    elif kind == "trailing":
        body = _json(row)
        tail = rnd.choice([b" x", body, b" " + body, b",", b" // comment", b"}", b"]",
                           b", 5", b"]  [", b"\x00"])
        b.add(Line(body + tail, expect="bad"))
    elif kind == "toplevel":
        body = _json(row)
        b.add(Line(rnd.choice([b"[" + body + b"]", b"5", b'"text"', b"null", b"true",
                               b"[]", b"{}"]), expect="bad"))
    elif kind == "blank_before":
        for _ in range(rnd.randrange(1, 4)):
            b.add(Line(rnd.choice([b"", b" ", b"\t", b"  \t "])))
        b.add(Line(_json(row), expect="valid"))
    elif kind == "crlf":
        b.add(Line(_json(row), end=b"\r\n", expect="valid"))
    elif kind == "cr":
        b.add(Line(_json(row), end=b"\r", expect="valid"))
    elif kind == "bom":  # a BOM opens a file, or a line (where a file began: files joined)
        b.add(Line(b"\xef\xbb\xbf" + _json(row), expect="valid"))
    elif kind == "leading_ws":
        b.add(Line(rnd.choice([b" ", b"\t", b" \t "]) + _json(row) + b" \t",
                   expect="valid"))
    elif kind == "dup_row":
        k = b.last_valid()
        if k is None:
            b.add(Line(_json(row), expect="valid"))
        else:
            first = b.lines[k]
            b.add(Line(first.data, expect="dup", dup_of=k))
    elif kind == "reorder_extra":
        items = list(row.items())
        rnd.shuffle(items)
        extra = {"zz": {"nested": [1, {"a": None}]}, "_file": "x", "_pos": 3,
                 "__file": "forged.jsonl", "__line": 999999, "__error": "forged",
                 "__raw": "forged", "Topic": "OTHER", "_corrupt": "x"}
        keep = rnd.sample(sorted(extra), rnd.randrange(1, len(extra)))
        items += [(k, extra[k]) for k in keep]
        rnd.shuffle(items)
        b.add(Line(_json(dict(items)), expect="valid"))
    elif kind == "non_json":
        b.add(Line(rnd.choice([b"{'topic': 'single quotes'}", b'{"partition": NaN}',
                               b'{"a": 1,}', b"not json at all", b"{", b"}", b'{"a" 1}',
                               b'{"seq": 012}', b'{"seq": 0x10}', b'{"e": "\\x"}']),
                   expect="bad"))
    elif kind == "case_keys":  # field names are case-sensitive: TOPIC is not topic
        f = rnd.choice([f for f in fields if f.required])
        obj = {(k.upper() if k == f.name else k): v for k, v in row.items()}
        b.add(Line(_json(obj), expect="bad"))
    elif kind == "drop_optional":
        for name in rnd.sample(DROPPABLE[source], rnd.randrange(1, 3)):
            row.pop(name)
        b.add(Line(_json(row), expect="valid"))
    elif kind == "drop_required":
        row.pop(rnd.choice([f.name for f in fields if f.required]))
        b.add(Line(_json(row), expect="bad"))
    else:  # pragma: no cover
        raise AssertionError(kind)


# ------------------------------------------------------------------------- checking


def _norm(text: str) -> str:
    """Java and Python replace invalid UTF-8 with different numbers of U+FFFD."""
    return re.sub("\ufffd+", "\ufffd", text)


def _decoded(line: Line, first: bool) -> str:
    data = line.data[3:] if line.data.startswith(b"\xef\xbb\xbf") else line.data
    return data.decode("utf-8", errors="replace")


def _how(path: str) -> str:
    """How a file's rows are located: "line" (text: quarantine raw = the line's text, row =
    its line number) or "parquet" (row = index + 1, raw carries the row's marker)."""
    return "parquet" if path.endswith(".parquet") else "line"


def check_ingested(result, quarantine: list, files: dict[str, list[Line]],
                   valid_count: int) -> None:
    """The accounting and location properties, for rows written as `files` (path → lines)."""
    c = result.counts
    rows = {path: [k for k, ln in enumerate(lines) if ln.expect is not None]
            for path, lines in files.items()}
    written = sum(len(v) for v in rows.values())
    assert c["rows_read"] == written, (c, written)
    assert c["rows_read"] == c["rows_valid"] + c["rows_quarantined"], c
    assert len(quarantine) == c["rows_quarantined"], (len(quarantine), c)
    assert valid_count == c["rows_valid"] - c["rows_after_window"] - c["rows_before_lookback"]
    seen: dict[tuple[str, int], str] = {}
    for q in quarantine:
        assert q["reason"], q
        assert q["source"] == result.source
        assert q["file"] in files, (q["file"], list(files))
        lines, row, how = files[q["file"]], q["row"], _how(q["file"])
        # the physical line of a text row, or the data row / row index
        index = row - 1 if how == "line" else (rows[q["file"]][row - 1]
                                                if 1 <= row <= len(rows[q["file"]]) else None)
        assert index is not None and 0 <= index < len(lines), (q["row"], len(lines))
        line = lines[index]
        assert line.expect is not None, f"row {row} of {q['file']} is a blank line"
        assert (q["file"], row) not in seen, f"two quarantine rows for {q['file']}:{row}"
        seen[(q["file"], row)] = q["reason"]
        if q["reason"].startswith("duplicate of line "):
            first = _dup_target(q["reason"], rows[q["file"]], how)
            if line.dup_of is not None:  # a copy we made: of that line, in the same file
                assert first == line.dup_of, (q["reason"], line.dup_of)
            if first is not None:
                assert first < index and lines[first].expect is not None, q["reason"]
            continue
        if how == "line":
            assert _norm(q["raw"]) == _norm(_decoded(line, index == 0)), (row, q["raw"][:200])
        else:
            assert json.loads(q["raw"]).get("row_id") == line.marker, (row, q["raw"][:200])
    for path, lines in files.items():
        how = _how(path)
        for k in rows[path]:
            ln = lines[k]
            row = k + 1 if how == "line" else rows[path].index(k) + 1
            reason = seen.get((path, row))
            if ln.expect == "valid":
                # an edge value ("any") may have made an earlier row a copy of this one
                first = _dup_target(reason, rows[path], how)
                assert reason is None or (first is not None and lines[first].expect == "any"), \
                    f"{path}:{row} should be valid: {reason}\n{ln.data[:300]!r}"
            elif ln.expect == "bad":
                assert reason is not None and not reason.startswith("duplicate"), \
                    f"{path}:{row} should be quarantined\n{ln.data[:300]!r}: {reason}"
            elif ln.expect == "dup":
                assert reason is not None and reason.startswith("duplicate of line "), \
                    f"{path}:{row} should be a duplicate: {reason}"


def _dup_target(reason: str | None, rows: list[int], how: str) -> int | None:
    """The line index a "duplicate of line N" (same file) reason points at."""
    if not reason or not reason.startswith("duplicate of line ") or " of " in reason[18:]:
        return None
    n = int(reason.split()[3])
    return n - 1 if how == "line" else rows[n - 1]


def run_ingest(spark, source: str, paths: list[str], fmt: str | None = None,
               config: AuditConfig | None = None):
    result = ingest(spark, resolve(source, paths, fmt=fmt), WINDOW, config or AuditConfig())
    quarantine = [r.asDict() for r in result.quarantine.collect()]
    return result, quarantine, result.valid.count()


def _plan(mutations: list[str]):
    return st.lists(st.sampled_from(mutations), min_size=40, max_size=120)


# Many examples, one Spark run: Hypothesis draws lists of examples (each its own files,
# its rows numbered from its own base so no two examples share a row), all written into
# one file set and ingested together, every source in one ingest_all; the checks are per
# file, so each example is checked as if it ran alone. FUZZ_EXAMPLES examples in runs of
# at most PER_RUN.
PER_RUN = 50
ROWS_PER_EXAMPLE = 1000  # above any plan's length


def many(example):
    """The strategy of one run's examples of a reader (FUZZ_EXAMPLES, at most PER_RUN)."""
    n = max(1, min(FUZZ_EXAMPLES, PER_RUN))
    return st.lists(example, min_size=n, max_size=n)


def many_settings() -> settings:
    return fuzz_settings(-(-max(1, FUZZ_EXAMPLES) // PER_RUN))


SOURCE, SEED = st.sampled_from(SOURCES), st.integers(0, 2**31)


def _mutations(rnd: random.Random, mutations: list[str]) -> list[str]:
    """An example's plan, drawn from its seed (a Hypothesis list per example would make a
    run of many examples overrun Hypothesis's data budget)."""
    return [rnd.choice(mutations) for _ in range(rnd.randrange(40, 121))]


def _put(path: Path, data: bytes, gz: bool) -> str:
    """Write a file (gzipped, named .gz, when ``gz``); its path."""
    if gz:
        path = path.with_name(path.name + ".gz")
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def run_examples(spark, tmp: Path, examples: list[tuple]) -> None:
    """Write each example (write, source, *params) into its own folder, its rows numbered
    from its own base, with ``write(folder, base, source, *params)``; ingest and check them
    at once."""
    written = []
    for n, (write, source, *params) in enumerate(examples):
        folder = tmp / f"ex{n}"
        folder.mkdir()
        written.append((source, write(folder, n * ROWS_PER_EXAMPLE, source, *params)))
    check_many(spark, written, tmp / "work")


def check_many(spark, examples: list[tuple[str, dict[str, list[Line]]]], work: Path) -> None:
    """Ingest every example's files at once (a source's files together) and check each
    file as check_ingested does."""
    from delivery_audit.ingest import ingest_all

    by_source: dict[str, dict[str, list[Line]]] = {}
    for source, written in examples:
        by_source.setdefault(source, {}).update(written)
    resolved = {s: resolve(s, sorted(w)) for s, w in by_source.items()}
    got = ingest_all(spark, resolved, WINDOW, AuditConfig(), work)
    for s, written in by_source.items():
        result = got.sources[s]
        quarantine = [r.asDict() for r in result.quarantine.collect()]
        check_ingested(result, quarantine, written, result.valid.count())


# ------------------------------------------------------------------------- JSON Lines


def write_jsonl_example(tmp: Path, base: int, source: str, seed: int, files: int, gz: bool,
                        final_newline: bool) -> dict[str, list[Line]]:
    rnd = random.Random(seed)
    batches = [Batch() for _ in range(files)]
    for i, kind in enumerate(_mutations(rnd, JSONL_MUTATIONS)):
        jsonl_line(kind, rnd, source, base + i, batches[i % files])
    written: dict[str, list[Line]] = {}
    for k, b in enumerate(batches):
        if not final_newline and b.lines:
            b.lines[-1].end = b""
        written[_put(tmp / f"part-{k}.jsonl", b.payload(), gz)] = b.lines
    return written


# ------------------------------------------------------------------------- CSV


BAD_CSV = {"int": ["x", "1.5", "-1", "+1", " 1", "1e3", "0x10", "١٢٣"],
           "timestamp": ["not a time", "2026-13-45T00:00:00Z", "0000-01-01T00:00:00Z",
                         "+10000-01-01T00:00:00Z", "253402300800000", "1.5"],
           "string": [], "enum": ["nope", "acked ", "1"], "bool": ["yes", "1", "t"]}
EDGE_CSV = {"int": ["0", "007", "2147483647", "2147483648", "9223372036854775807",
                    "9223372036854775808", "999999999999999999", "-0", "NaN", ""],
            "timestamp": ["0", "-1", "1795082400000", "2026-11-19 10:00:00", "2026-11-19",
                          "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z",
                          "2026-11-19T10:00:00+19:00", "99999999999999", ""],
            "string": ["", " ", "1", "-1", "true", "null", "NaN", "Infinity", "{}", "[1]",
                       '"q"', "é", "<b>x</b>", "a,b", "x\ty"],
            "enum": ["", "ACKED", "Success", "COMMIT"], "bool": ["TRUE", "False", "", "1"]}

CSV_MUTATIONS = ["none", "none", "none", "truncate", "bad_value", "edge_value", "huge",
                 "invalid_utf8", "nul", "blank_before", "crlf", "cr", "quoted", "extra_cells",
                 "fewer_cells", "header_row", "dup_row", "many_cells"]
HOSTILE_COLUMNS = ["a`b", "a.b", "_metadata", "_file", "_pos", "", " topic", "Ä ö", "x y"]


def csv_header(rnd: random.Random, source: str) -> tuple[list[str], str | None]:
    """row_id first, then the fields shuffled, hostile extra columns, maybe a duplicated
    optional column (Spark renames both copies: the field is then absent)."""
    names = [f.name for f in FIELDS[source]]
    rnd.shuffle(names)
    names += rnd.sample(HOSTILE_COLUMNS, rnd.randrange(0, 4))
    dup = rnd.choice([None, None, *DROPPABLE[source]])
    if dup is not None:
        names.insert(rnd.randrange(len(names) + 1), dup)
    return ["row_id", *names], dup


def csv_row(kind: str, rnd: random.Random, source: str, i: int, header: list[str],
            b: Batch) -> None:
    row = valid_row(source, i)
    marker = f"r{i}"
    fields = {f.name: f for f in FIELDS[source]}

    def cells() -> list[str]:
        return [marker if h == "row_id" else _csv_cell(row.get(h)) if h in fields else "h"
                for h in header]

    if kind == "none":
        b.add(Line(_csv_line(cells()), expect="valid", marker=marker))
    elif kind == "truncate":
        data = _csv_line(cells())
        cut = data.index(b",") + 1 if b"," in data else len(data)
        # not inside a quoted field: an open quote runs on over the next lines (RFC 4180)
        ends = [k for k in range(cut, len(data)) if data[:k].count(b'"') % 2 == 0]
        b.add(Line(data[:rnd.choice(ends or [cut])], expect="any", marker=marker))
    elif kind in ("bad_value", "edge_value"):
        f = rnd.choice(list(fields.values()))
        kind_ = KIND[f.kind]
        pool = BAD_CSV[kind_] if kind == "bad_value" else EDGE_CSV[kind_]
        if f.kind.startswith("nonneg") and kind == "bad_value":
            pool = pool + ["-3"]
        if f.required and kind == "bad_value":
            pool = pool + [""]
        if not pool:
            pool, kind = EDGE_CSV[kind_], "edge_value"
        row[f.name] = rnd.choice(pool)
        # a column named twice in the header is ambiguous: the field is absent
        absent = header.count(f.name) > 1
        b.add(Line(_csv_line(cells()), expect="bad" if kind == "bad_value" and not absent
                   else "any", marker=marker))
    elif kind == "huge":
        names = [n for n in ("producer_id", "error", "detail", "key", "member_id")
                 if n in fields and n in header]
        if names:
            size = 1_000_000 if b.huge_left > 0 else 10_000
            b.huge_left -= 1
            row[rnd.choice(names)] = "y" * size
        b.add(Line(_csv_line(cells()), expect="valid", marker=marker))
    elif kind in ("invalid_utf8", "nul"):
        names = [n for n in ("topic", "group_id", "producer_id", "detail", "member_id")
                 if n in fields and n in header]
        name = rnd.choice(names)
        data = _csv_line(cells())
        value = _csv_cell(row[name]).encode()
        junk = rnd.choice(INVALID_UTF8) if kind == "invalid_utf8" else b"\x00"
        start = len(_csv_line(cells()[:header.index(name)])) + 1
        at = data.index(value, start) + 1
        b.add(Line(data[:at] + junk + data[at:],
                   expect="bad" if kind == "invalid_utf8" else "valid", marker=marker))
    elif kind == "blank_before":
        for _ in range(rnd.randrange(1, 3)):
            b.add(Line(rnd.choice([b"", b" ", b"\t"])))
        b.add(Line(_csv_line(cells()), expect="valid", marker=marker))
    elif kind in ("crlf", "cr"):
        b.add(Line(_csv_line(cells()), end=b"\r\n" if kind == "crlf" else b"\r",
                   expect="valid", marker=marker))
    elif kind == "quoted":  # RFC 4180 quoting, as csv.writer emits it: quotes doubled
        names = [n for n in ("producer_id", "error", "detail", "key", "member_id")
                 if n in fields and n in header]
        if names:
            row[rnd.choice(names)] = rnd.choice(['{"a": 1, "b": 2}', 'say "hi", then go',
                                                 '""', '","', 'a,"b",c'])
        b.add(Line(_csv_line(cells()), expect="valid", marker=marker))
    elif kind == "extra_cells":  # RFC 4180: every record has the header's fields
        b.add(Line(_csv_line(cells() + ["e1", "e2"]), expect="bad", marker=marker))
    elif kind == "fewer_cells":
        c = cells()
        b.add(Line(_csv_line(c[:rnd.randrange(1, len(c))]), expect="bad", marker=marker))
    elif kind == "header_row":  # a repeated header (concatenated files): not a row of data
        b.add(Line(_csv_line(header), expect="bad", marker="row_id"))
    elif kind == "dup_row":
        k = b.last_valid()
        if k is None:
            b.add(Line(_csv_line(cells()), expect="valid", marker=marker))
        else:  # same values, its own marker (an unknown column): still a duplicate
            first = b.lines[k]
            data = first.data.replace(first.marker.encode() + b",", marker.encode() + b",", 1)
            b.add(Line(data, expect="dup", dup_of=k, marker=marker))
    elif kind == "many_cells":
        b.add(Line(_csv_line(cells() + ["z"] * 25_000), expect="bad", marker=marker))
    else:  # pragma: no cover
        raise AssertionError(kind)


def write_csv_example(tmp: Path, base: int, source: str, seed: int, files: int, bom: bool,
                      gz: bool) -> dict[str, list[Line]]:
    rnd = random.Random(seed)
    # headers from a few variants per source: each distinct header is read on its own
    headers = [csv_header(random.Random(rnd.randrange(4)), source) for _ in range(files)]
    batches = [Batch() for _ in range(files)]
    for i, kind in enumerate(_mutations(rnd, CSV_MUTATIONS)):
        k = i % files
        csv_row(kind, rnd, source, base + i, headers[k][0], batches[k])
    written: dict[str, list[Line]] = {}
    for k, b in enumerate(batches):
        head = Line(_csv_line(headers[k][0]))
        if bom and k == 0:
            head.data = b"\xef\xbb\xbf" + head.data
        for ln in b.lines:  # indexes into the file's lines, the header first
            if ln.dup_of is not None:
                ln.dup_of += 1
        lines = [head, *b.lines]
        written[_put(tmp / f"part-{k}.csv", joined(lines), gz)] = lines
    return written


# ------------------------------------------------------------------------- Parquet


def _pa_types():
    import pyarrow as pa

    native = {"string": pa.string(), "key": pa.string(), "enum": pa.string(),
              "long": pa.int64(), "nonneg_long": pa.int64(), "int": pa.int32(),
              "nonneg_int": pa.int32(), "timestamp": pa.timestamp("us", tz="UTC"),
              "bool": pa.bool_()}
    others = {"string": pa.string(), "large_string": pa.large_string(), "int64": pa.int64(),
              "int32": pa.int32(), "double": pa.float64(), "float": pa.float32(),
              "bool": pa.bool_(), "ts": pa.timestamp("us"), "date": pa.date32(),
              "decimal": pa.decimal128(38, 0), "decimal2": pa.decimal128(10, 2),
              "struct": pa.struct([("a", pa.int64())]), "list": pa.list_(pa.int64()),
              "binary": pa.binary(), "uint64": pa.uint64()}
    return native, others


def _other_value(type_name: str, rnd: random.Random, ok_value):
    """A value of an arbitrary Parquet type (`ok_value` is the row's valid value)."""
    from decimal import Decimal

    digits = ok_value if isinstance(ok_value, int) and not isinstance(ok_value, bool) else 7
    pools = {
        "string": [str(ok_value), "", "NaN", "x", "\x00", "1.5", "-1", "9" * 30, "TRUE",
                   "2026-11-19T10:00:00Z", "0000-01-01T00:00:00Z"],
        "large_string": [str(ok_value), "Infinity", "é" * 10],
        "int64": [digits, 0, -1, 2**63 - 1, -(2**63), 2**31],
        "int32": [digits % 2**31, -(2**31), 2**31 - 1],
        "double": [float(digits), float("nan"), float("inf"), float("-inf"), -0.0, 1.5, 1e300],
        "float": [float(digits), float("nan"), 0.5],
        "bool": [True, False],
        "ts": [datetime(2026, 11, 19, 10), datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59)],
        "date": [datetime(2026, 11, 19).date(), datetime(1, 1, 1).date(),
                 datetime(9999, 12, 31).date()],
        "decimal": [Decimal(digits), Decimal(10**37), Decimal(-5)],
        "decimal2": [Decimal(digits), Decimal("1.50"), Decimal("-0.01")],
        "struct": [{"a": 1}, {"a": None}],
        "list": [[1, 2], []],
        "binary": [b"\xff\xfe", b"ok", b"\x00"],
        "uint64": [digits, 2**64 - 1],
    }
    return rnd.choice(pools[type_name] + [None])


PARQUET_MUTATIONS = ["none", "none", "none", "null_required", "negative", "int_max",
                     "huge", "nul", "far_time", "enum_case", "enum_bad", "dup_row"]


def _native_value(kind: str, f, rnd: random.Random, row: dict, b: Batch):
    """(field, value, expect) for a mutation of a native-typed Parquet row."""
    req = [x for x in f if x.required]
    if kind == "null_required":
        return rnd.choice(req).name, None, "bad"
    if kind == "negative":
        nn = [x for x in f if x.kind.startswith("nonneg")]
        return rnd.choice(nn).name, -1, "bad"
    if kind == "int_max":
        longs = [x for x in f if x.kind in ("long", "nonneg_long")]
        return rnd.choice(longs).name, 2**63 - 1, "any"
    if kind == "huge":
        strs = [x for x in f if x.kind in ("string", "key") and not x.required]
        size = 1_000_000 if b.huge_left > 0 else 10_000
        b.huge_left -= 1
        return rnd.choice(strs).name, "h" * size, "valid"
    if kind == "nul":
        strs = [x for x in f if x.kind in ("string", "key")]
        x = rnd.choice(strs)
        return x.name, "a\x00b", "valid"
    if kind == "far_time":
        ts = [x for x in f if x.kind == "timestamp"]
        when, expect = rnd.choice([(datetime(1, 1, 1, tzinfo=UTC), "valid"),
                                   (datetime(9999, 12, 31, 23, 59, tzinfo=UTC), "valid"),
                                   (datetime(1970, 1, 1, tzinfo=UTC), "valid"),
                                   (datetime(1582, 10, 10, tzinfo=UTC), "valid")])
        return rnd.choice(ts).name, when, expect
    if kind in ("enum_case", "enum_bad"):
        enums = [x for x in f if x.kind == "enum"]
        if not enums:  # broker has none
            return req[0].name, _typed(req[0], row[req[0].name]), "valid"
        e = enums[0]
        return e.name, (row[e.name].upper() if kind == "enum_case" else "nope"), \
            ("valid" if kind == "enum_case" else "bad")
    raise AssertionError(kind)  # pragma: no cover


def _typed(f, value):
    """A valid_row value as the native Parquet column takes it."""
    if value is None:
        return None
    if f.kind == "timestamp":
        ms = value if isinstance(value, int) else int(
            datetime.fromisoformat(value).timestamp() * 1000)
        return datetime.fromtimestamp(ms / 1000, UTC)
    return value


def write_parquet_example(tmp: Path, base: int, source: str, seed: int,
                          files: int) -> dict[str, list[Line]]:
    """File 0 has the canonical column types; the others type every field at random
    (NaN doubles, structs, binary, dates, decimals …) from a few variants per source:
    schemas differ between files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    plan = _mutations(rnd, PARQUET_MUTATIONS)
    native, others = _pa_types()
    fields = FIELDS[source]
    written: dict[str, list[Line]] = {}
    per_file: list[list[int]] = [[] for _ in range(files)]
    for i in range(len(plan)):
        per_file[i % files].append(i)
    for k in range(files):
        variant = random.Random(rnd.randrange(4))
        choice = {f.name: "native" if k == 0 else variant.choice([*others, "native", "native"])
                  for f in fields}
        types = {n: native[field_of(source, n).kind] if t == "native" else others[t]
                 for n, t in choice.items()}
        extra = variant.sample(["_file", "_metadata", "a.b", "a`b", "_pos"],
                               variant.randrange(0, 3))
        columns: dict[str, list] = {"row_id": [], **{n: [] for n in types},
                                    **{x: [] for x in extra}}
        lines: list[Line] = []
        b = Batch()
        for i in per_file[k]:
            row = valid_row(source, base + i)
            marker = f"f{k}-r{i}"
            kind = plan[i]
            expect = "valid" if k == 0 else "any"
            values = {f.name: _typed(f, row[f.name]) for f in fields}
            if kind == "dup_row" and k == 0 and (prev := b.last_valid()) is not None:
                values = dict(lines[prev].data_values)  # type: ignore[attr-defined]
                line = Line(b"", expect="dup", dup_of=prev, marker=marker)
            else:
                if kind not in ("none", "dup_row"):
                    name, value, exp = _native_value(kind, fields, rnd, row, b)
                    values[name] = value
                    expect = exp if k == 0 else "any"
                for f in fields:
                    if choice[f.name] != "native":
                        values[f.name] = _other_value(choice[f.name], rnd, row[f.name])
                line = Line(b"", expect=expect, marker=marker)
            line.data_values = values  # type: ignore[attr-defined]
            b.lines.append(line)
            lines.append(line)
            columns["row_id"].append(marker)
            for n in types:
                columns[n].append(values[n])
            for x in extra:
                columns[x].append("hostile")
        schema = pa.schema([("row_id", pa.string()), *types.items(),
                            *[(x, pa.string()) for x in extra]])
        path = tmp / f"part-{k}.parquet"
        pq.write_table(pa.table(columns, schema=schema), path)
        written[str(path)] = lines
    return written


@many_settings()
@given(jsonl=many(st.tuples(SOURCE, SEED, st.integers(1, 2), st.booleans(), st.booleans())),
       csv_=many(st.tuples(SOURCE, SEED, st.integers(1, 3), st.booleans(), st.booleans())),
       parquet=many(st.tuples(SOURCE, SEED, st.integers(1, 3))))
def test_hostile_rows_of_every_reader(spark, tmp_path_factory, jsonl, csv_, parquet):
    """JSON Lines, CSV and Parquet examples in one file set, ingested at once (a source's
    files may mix formats): one Spark run for all three readers. Duplicates across files
    point at the other file: only same-file copies are checked."""
    run_examples(spark, tmp_path_factory.mktemp("fuzz-readers"),
                 [(write_jsonl_example, *e) for e in jsonl]
                 + [(write_csv_example, *e) for e in csv_]
                 + [(write_parquet_example, *e) for e in parquet])


# ------------------------------------------------------------------------- adapters


def _adapter_samples():
    from test_adapters import CONSOLE, CONSUMER, NEW_DUMP, OLD_DUMP, PRODUCER
    from test_log_events import JAVA_POLL, KAFKA_PYTHON, SERVER_LOG, SPRING

    return {
        ("kafka-verifiable-producer", "sends"): PRODUCER,
        ("kafka-verifiable-consumer", "ledger"): CONSUMER,
        ("kafka-verifiable-consumer", "events"): CONSUMER,
        ("kafka-dump-log", "broker"): (NEW_DUMP + OLD_DUMP).splitlines(),
        ("kafka-console-consumer", "broker"): CONSOLE.splitlines(),
        ("kafka-console-consumer", "ledger"): CONSOLE.splitlines(),
        ("client-log", "events"): (SPRING + JAVA_POLL + KAFKA_PYTHON).splitlines(),
        ("coordinator-log", "events"): SERVER_LOG.splitlines(),
    }


ADAPTER_COMBOS = sorted(_adapter_samples())
ADAPTER_CONFIG = AuditConfig.from_dict({"adapters": {"topic": "orders", "date": "2026-11-19",
                                                     "group": "g"}})
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
        text = _decoded(lines[n - 1], n == 1)
        assert text.strip(), f"row from blank line {n}"
        if "__error" in r:
            assert r["__error"], r
            assert _norm(r["__raw"]) == _norm(text[:10_000]), (n, r["__raw"][:100])


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
ADAPTER_EXAMPLES = int(os.environ.get("FUZZ_ADAPTER_EXAMPLES", "10000"))
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


@fuzz_settings(max(3, FUZZ_EXAMPLES // 4))
@given(combo=st.sampled_from(ADAPTER_COMBOS), plan=_plan(ADAPTER_MUTATIONS),
       seed=st.integers(0, 2**31))
def test_adapter_formats_ingest_hostile_lines(spark, tmp_path_factory, combo, plan, seed):
    """Through ingest: accounting and quarantine origins (the original file and line)."""
    fmt, source = combo
    b = adapter_batch(combo, plan, seed)
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
        assert _decoded(line, q["row"] == 1).strip(), q
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
            assert _norm(q["raw"]) == _norm(_decoded(line, q["row"] == 1)[:10_000])


# ------------------------------------------------------------------------- unreadable files


def _parquet_bytes() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"topic": ["o"] * 50, "partition": list(range(50)),
                             "offset": list(range(50))}), buf)
    return buf.getvalue()


def _unreadable_files() -> dict[str, tuple[bytes, str]]:
    """name → (content, a phrase the error must contain)."""
    jsonl = b'{"topic": "o", "partition": 0, "offset": 1}\n' * 2000
    pq_bytes = _parquet_bytes()
    return {
        "notgzip.jsonl.gz": (b"plain text, not gzip\n", "not gzip"),
        "truncated.jsonl.gz": (gzip.compress(jsonl)[:300], "truncated gzip"),
        "corrupt.csv.gz": (gzip.compress(b"topic,partition,offset\n" + b"o,0,1\n" * 500)[:40]
                           + b"\x00" * 64 + gzip.compress(b"x")[40:], "gzip"),
        "truncated.parquet": (pq_bytes[: len(pq_bytes) // 2], "not a Parquet file"),
        "cut-in-the-middle.parquet": (pq_bytes[:8] + pq_bytes[len(pq_bytes) // 2:],
                                      "Parquet"),
        "json.parquet": (b'{"topic": "o"}\n' * 20, "not a Parquet file"),
        "tiny.parquet": (b"PAR1", "not a Parquet file"),
        "garbage.jsonl": (random.Random(1).randbytes(5000), "not UTF-8 text"),
        "garbage.csv": (random.Random(2).randbytes(5000), "not UTF-8 text"),
        "gzip-named-plain.jsonl": (gzip.compress(jsonl), "name it .gz"),
        "parquet-named.jsonl": (pq_bytes, "Parquet"),
        "utf16.jsonl": ('{"topic": "o"}\n'.encode("utf-16"), "UTF-16"),
        "utf16-no-bom.csv": ("topic,partition\no,1\n".encode("utf-16-le"), "not UTF-8 text"),
    }


@pytest.mark.parametrize("name", sorted(_unreadable_files()))
def test_a_file_that_is_not_what_its_name_says_fails_naming_it(tmp_path, name):
    """Caught when the inputs are resolved (no Spark job): an InputError naming the file."""
    content, phrase = _unreadable_files()[name]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        resolve("broker", [str(path)])
    assert name in str(err.value) and phrase in str(err.value), str(err.value)
    assert "\tat " not in str(err.value) and "Py4J" not in str(err.value)


def test_unreadable_adapter_input_fails_naming_it(tmp_path):
    """A truncated gzip'd tool output is read by the adapter, not Spark: same message."""
    path = tmp_path / "dump.log.gz"
    path.write_bytes(gzip.compress(b"| offset: 0 CreateTime: 1 keySize: -1 payload: 1\n"
                                   * 3000)[:200])
    with pytest.raises(InputError) as err:
        convert("kafka-dump-log", "broker", [str(path)], ["s3://b/dump.log.gz"],
                tmp_path / "out", ADAPTER_CONFIG)
    assert "s3://b/dump.log.gz" in str(err.value)


def test_parquet_files_with_conflicting_column_types_are_read_each_by_its_own(
        spark, tmp_path):
    """partition int32 in one file, string in another, a `_metadata` column in a third:
    no schema-merge failure, each value typed by its file's column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"topic": ["o"], "partition": pa.array([1], pa.int32()),
                             "offset": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"topic": ["o"], "partition": ["2"], "offset": [2]}),
                   tmp_path / "b.parquet")
    pq.write_table(pa.table({"topic": ["o", "o"], "partition": [3.0, float("nan")],
                             "offset": [3, 4], "_metadata": ["x", "y"], "_file": ["f", "g"]}),
                   tmp_path / "c.parquet")
    result = ingest(spark, resolve("broker", [str(tmp_path / "*.parquet")]), WINDOW,
                    AuditConfig())
    assert result.counts["rows_read"] == 4 and result.counts["rows_quarantined"] == 1
    assert sorted(r["partition"] for r in result.valid.collect()) == [1, 2, 3]
    (bad,) = result.quarantine.collect()
    assert bad["file"].endswith("c.parquet") and bad["row"] == 2
    assert bad["reason"] == "field 'partition': not an integer 'NaN'"


# ------------------------------------------------------------------------- a whole audit


REPORT_DIR = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"
SMALL = Path(__file__).parent / "data" / "small"
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
