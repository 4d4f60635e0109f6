# ruff: noqa: E501  (hostile sample values)
"""The fuzz's shared pieces: Hypothesis settings, valid rows and the values that break them,
the line model of a written file, and how examples are ingested (many per Spark run) and
checked (accounting, origins, duplicates)."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.ingest import ingest, resolve
from delivery_audit.schemas import FIELDS, SOURCES

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))  # make fuzz: 100
_PHASES = (Phase.explicit, Phase.generate) + (
    (Phase.shrink,) if os.environ.get("FUZZ_SHRINK") == "1" else ())




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
                "attempt": 1, "producer_id": "p-1", "idempotent": True, "error": None,
                "transactional_id": "tx-1"}
    if source == "broker":
        return {"topic": "orders", "partition": i % 3, "offset": i, "key": f"k{i % 5}",
                "seq": i, "timestamp": iso(ms), "producer_id": "p-1", "pid": 7,
                "producer_epoch": 0, "batch_sequence": i, "transactional": False,
                "control": None}
    if source == "ledger":
        return {"group_id": "g", "member_id": "m-1", "topic": "orders", "partition": i % 3,
                "offset": i, "key": f"k{i % 5}", "seq": i, "started_ts": ms,
                "finished_ts": iso(ms + 20), "outcome": "success", "generation": 3,
                "isolation": "read_committed"}
    return {"group_id": "g", "member_id": "m-1", "ts": ms, "event": "commit",
            "topic": "orders", "partition": i % 3, "offset": i, "generation": 3,
            "detail": f"row {i}"}


# Optional fields whose absence keeps every valid_row valid (and unique).
DROPPABLE = {"sends": ("key", "ack_ts", "attempt", "producer_id", "idempotent", "error",
                       "transactional_id"),
             "broker": ("key", "seq", "producer_id", "pid", "producer_epoch",
                        "batch_sequence", "transactional", "control"),
             "ledger": ("key", "finished_ts", "generation", "isolation"),
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




# ------------------------------------------------------------------------- checking


def norm_replacements(text: str) -> str:
    """Java and Python replace invalid UTF-8 with different numbers of U+FFFD."""
    return re.sub("\ufffd+", "\ufffd", text)


def decoded_text(line: Line, first: bool) -> str:
    data = line.data[3:] if line.data.startswith(b"\xef\xbb\xbf") else line.data
    return data.decode("utf-8", errors="replace")


def located_by(path: str) -> str:
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
    # the input suites' metric row counts the valid leaf (rule 5's later copies left out)
    assert result.metrics["rows"] == valid_count, (result.metrics["rows"], valid_count)
    seen: dict[tuple[str, int], str] = {}
    for q in quarantine:
        assert q["reason"], q
        assert q["source"] == result.source
        assert q["file"] in files, (q["file"], list(files))
        lines, row, how = files[q["file"]], q["row"], located_by(q["file"])
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
            assert norm_replacements(q["raw"]) == norm_replacements(decoded_text(line, index == 0)), (row, q["raw"][:200])
        else:
            assert json.loads(q["raw"]).get("row_id") == line.marker, (row, q["raw"][:200])
    for path, lines in files.items():
        how = located_by(path)
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


# Many examples, one Spark run: Hypothesis draws lists of examples (each its own files,
# its rows numbered from its own base so no two examples share a row), all written into
# one file set and ingested together, every source in one ingest_all; the checks are per
# file, so each example is checked as if it ran alone. FUZZ_EXAMPLES examples in runs of
# at most PER_RUN.
PER_RUN = 50
ROWS_PER_EXAMPLE = 1000  # above any plan's length


def many(files: int, flags: int = 0, salt: int = 0):
    """The strategy of one run's examples of a reader: FUZZ_EXAMPLES (at most PER_RUN)
    tuples ``(source, seed, files, *flags)``, expanded from one drawn seed (``salt`` tells
    the readers apart). The sources take turns, so a run of four examples or more draws
    every source; each example's seed draws its plan of mutation kinds (``draw_mutations``).
    One drawn integer, not a Hypothesis list: the first example Hypothesis tries is its
    simplest (every draw zero), which for a list of tuples is the same example n times."""
    n = max(1, min(FUZZ_EXAMPLES, PER_RUN))

    def expand(seed: int) -> list[tuple]:
        rnd = random.Random(seed * 1_000_003 + salt)
        first = rnd.randrange(len(SOURCES))
        return [(SOURCES[(first + i) % len(SOURCES)], rnd.randrange(2**31),
                 rnd.randint(1, files), *[rnd.random() < 0.5 for _ in range(flags)])
                for i in range(n)]

    return st.integers(0, 2**31).map(expand)


def many_settings() -> settings:
    return fuzz_settings(-(-max(1, FUZZ_EXAMPLES) // PER_RUN))


# the mutation kinds drawn so far, per list of kinds (tests/fuzz/test_readers.py checks that
# a run drew every kind of every reader)
DRAWN: dict[tuple[str, ...], set[str]] = {}


def draw_mutations(rnd: random.Random, mutations: list[str]) -> list[str]:
    """An example's plan, drawn from its seed (a Hypothesis list per example would make a
    run of many examples overrun Hypothesis's data budget)."""
    plan = [rnd.choice(mutations) for _ in range(rnd.randrange(40, 121))]
    DRAWN.setdefault(tuple(mutations), set()).update(plan)
    return plan


def put_file(path: Path, data: bytes, gz: bool) -> str:
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


# the adapters' options for every adapter example
ADAPTER_CONFIG = AuditConfig.from_dict({"adapters": {"topic": "orders", "date": "2026-11-19",
                                                     "group": "g"}})
