"""A hostile input corpus at volume, every line labelled with the class the contract gives it.

``write_corpus(out, per_source, seed)`` writes, for each source, JSON Lines, gzipped JSON
Lines, CSV, gzipped CSV and Parquet files: valid rows mixed with ``per_source`` hostile lines
of ~40 kinds (truncated JSON, wrong types, out-of-range numbers, NaN, NUL bytes, invalid
UTF-8, 1 MB keys, 5 MB lines, lines over the 8 MiB limit, 5,000-deep nesting, odd time zones,
markup and CSV-formula strings, BOMs, CRLF, blank lines, RFC 4180 quoting …). Each line is
labelled (:class:`Expected`): valid, quarantined (with a pattern its reason must match) or
not a row (blank lines, CSV headers). One audit reads it all (a source's files may mix
formats); :func:`check` then compares every line with the audit's quarantine table and
counts, and returns a table by kind. The multi-megabyte kinds are capped per source (a few
of each), so the corpus grows linearly with ``per_source`` in rows, not in gigabytes.

Used by tests/test_hostile_bulk.py (CI: 1,000 hostile lines per source; ``make fuzz``:
10,000), tests/fuzz/ (its JSON and CSV line helpers) and scripts/bench.py (the
hostile run's peak memory).

Longer than our ~400-line norm on purpose: it is mostly the table of kinds, each kind's
line next to the label the contract gives it, which would be harder to check if split.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from delivery_audit.core.timefmt import iso_z_ms
from delivery_audit.schemas import FIELDS, SOURCES

WINDOW_START = datetime(2026, 11, 19, tzinfo=UTC)
T0 = int(WINDOW_START.timestamp() * 1000)
TIME_FIELD = {"sends": "send_ts", "broker": "timestamp", "ledger": "started_ts", "events": "ts"}
# a required text field of each source (a field whose absence quarantines the row)
REQUIRED_TEXT = {"sends": "topic", "broker": "topic", "ledger": "member_id", "events": "group_id"}
ENUM = {"sends": "status", "ledger": "outcome", "events": "event"}
# the string field each source's free-text kinds write into
TEXT = {"sends": "key", "broker": "key", "ledger": "key", "events": "detail"}
INT_FIELD = {"sends": "seq", "broker": "seq", "ledger": "seq", "events": "generation"}
OFFSET = "offset"  # a nonneg_long field in every source
PARTITION = "partition"  # a nonneg_int field in every source
OPTIONAL_INT = {"sends": "attempt", "broker": "producer_epoch", "ledger": "generation",
                "events": "generation"}

VALID, QUARANTINED, NOT_A_ROW = "valid", "quarantined", "not a row"
MIB = 1024 * 1024
# kinds whose lines are megabytes: at most this many of each
CAPPED = {"huge_key": 1, "huge_line": 1, "oversized_line": 1}  # per source and format


@dataclass(frozen=True)
class Expected:
    source: str
    file: str
    row: int  # the row number the quarantine names: the line (text), the row index + 1
    kind: str
    klass: str  # VALID, QUARANTINED or NOT_A_ROW
    reason: str | None = None  # a regular expression the quarantine reason must match


@dataclass
class Corpus:
    root: Path
    files: dict[str, list[str]] = field(default_factory=dict)  # source -> paths
    expected: list[Expected] = field(default_factory=list)

    def rows(self, source: str) -> list[Expected]:
        return [e for e in self.expected if e.source == source and e.klass != NOT_A_ROW]

    def run_args(self) -> list[str]:
        """The corpus as `delivery-audit run` options: every file of every source."""
        return [x for s, fs in self.files.items() for f in fs for x in (f"--{s}", f)]


def valid_row(source: str, i: int) -> dict:
    """A valid row, unique in its source by ``i`` (no exact duplicate, no repeated
    (topic, partition, offset) in the dump)."""
    ts = T0 + 1_000 * (i % 80_000) + i // 80_000
    iso = iso_z_ms(ts)
    if source == "sends":
        return {"send_ts": ts, "topic": "orders", "key": f"k{i % 97}", "seq": i,
                "status": "acked", "partition": i % 3, "offset": i, "ack_ts": iso,
                "attempt": 1, "producer_id": "p-1", "idempotent": True, "error": None}
    if source == "broker":
        return {"topic": "orders", "partition": i % 3, "offset": i, "key": f"k{i % 97}",
                "seq": i, "timestamp": iso, "producer_id": "p-1"}
    if source == "ledger":
        return {"group_id": "billing", "member_id": "m-1", "topic": "orders",
                "partition": i % 3, "offset": i, "key": f"k{i % 97}", "seq": i,
                "started_ts": ts, "finished_ts": ts + 5, "outcome": "success",
                "generation": 1}
    return {"group_id": "billing", "member_id": "m-1", "ts": ts, "event": "assigned",
            "topic": "orders", "partition": i % 3, "offset": None, "generation": i,
            "detail": f"assignment {i}"}


def json_line(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode("utf-8")


def with_raw(row: dict, name: str, value_json: bytes | str) -> bytes:
    """The row as JSON with one field's value replaced by raw JSON text."""
    obj = dict(row)
    obj[name] = "\x00MARK\x00"
    raw = value_json.encode("utf-8") if isinstance(value_json, str) else value_json
    return json_line(obj).replace(b'"\\u0000MARK\\u0000"', raw)


# Bytes that are not UTF-8 (and hold no line break).
INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28",
                b"\xc0\xaf", b"\x80\x80\x80"]
MARKUP = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>',
           "</td></tr><b onmouseover=alert(2)>"]
_FORMULAS = ['=HYPERLINK("http://evil.example","click")', "+cmd|' /C calc'!A0", "@SUM(1+1)",
             "-2+3"]


def _bad_utf8_line(row: dict, source: str, rnd: random.Random) -> tuple[bytes, int]:
    """A JSON line with invalid bytes inside a string value, and their byte offset."""
    name = TEXT[source]
    row = dict(row, **{name: "ab"})
    data = json_line(row)
    at = data.index(b'"' + name.encode() + b'": "ab"') + len(name) + 5  # after 'a'
    return data[:at] + rnd.choice(INVALID_UTF8) + data[at:], at


# -- JSON Lines kinds: (kind, line bytes, class, reason pattern); a kind may add several lines

def jsonl_kinds(source: str) -> list[str]:
    kinds = ["truncated", "word_for_int", "object_for_int", "int_overflow", "long_overflow",
             "negative_offset", "nan", "fraction", "integral_float", "nul_raw", "nul_escaped",
             "control_raw", "invalid_utf8", "huge_key", "huge_line", "oversized_line",
             "deep_ok", "too_deep", "tz_offset", "tz_name", "no_zone", "epoch_text",
             "markup", "formula", "bom_line", "bom_inside", "crlf", "cr", "blank", "spaces",
             "array", "two_objects", "missing_required", "empty_required", "case_keys",
             "bool_key", "int_key", "year_10000", "duplicate", "extra_fields", "not_json"]
    if source in ENUM:
        kinds.append("bad_enum")
    if source == "sends":
        kinds.append("acked_without_offset")
    return kinds


def jsonl_line(kind: str, source: str, row: dict, rnd: random.Random,
               earlier: list[tuple[int, bytes]]) -> list[tuple[bytes, bytes, str, str | None]]:
    """The line(s) of one kind: (data, line ending, class, reason pattern)."""
    t, i, p = TIME_FIELD[source], INT_FIELD[source], PARTITION
    q = QUARANTINED
    nl = b"\n"
    if kind == "truncated":
        data = json_line(row)
        return [(data[:rnd.randrange(1, len(data) - 1)], nl, q, r"^not valid JSON")]
    if kind == "word_for_int":
        return [(with_raw(row, i, b'"abc"'), nl, q, rf"^field '{i}': not an integer 'abc'$")]
    if kind == "object_for_int":
        return [(with_raw(row, p, b'{"a": 1}'), nl, q, rf"^field '{p}': wrong type \(other\)$")]
    if kind == "int_overflow":
        return [(with_raw(row, p, b"2147483648"), nl, q,
                 rf"^field '{p}': integer out of range")]
    if kind == "long_overflow":
        return [(with_raw(row, OFFSET, b"18446744073709551616"), nl, q,
                 rf"^field '{OFFSET}': integer out of range")]
    if kind == "negative_offset":
        return [(with_raw(row, OFFSET, b"-5"), nl, q, rf"^field '{OFFSET}': negative '-5'$")]
    if kind == "nan":
        return [(with_raw(row, i, b"NaN"), nl, q, r"^not valid JSON$")]
    if kind == "fraction":
        return [(with_raw(row, i, b"1.5"), nl, q, rf"^field '{i}': not an integer '1.5'$")]
    if kind == "integral_float":
        return [(with_raw(row, i, f"{row[i]}.0".encode()), nl, VALID, None)]
    if kind == "nul_raw":
        return [(with_raw(row, TEXT[source], b'"a\x00b"'), nl, q, r"^not valid JSON$")]
    if kind == "nul_escaped":
        return [(with_raw(row, TEXT[source], b'"a\\u0000b"'), nl, VALID, None)]
    if kind == "control_raw":
        return [(with_raw(row, TEXT[source], b'"a\x01b"'), nl, q, r"^not valid JSON$")]
    if kind == "invalid_utf8":
        data, at = _bad_utf8_line(row, source, rnd)
        return [(data, nl, q, rf"^not valid UTF-8 \(byte offset {at} of the line\)$")]
    if kind == "huge_key":
        return [(json_line(dict(row, **{TEXT[source]: "k" * MIB})), nl, VALID, None)]
    if kind == "huge_line":
        return [(json_line(dict(row, zz_payload="x" * (5 * MIB))), nl, VALID, None)]
    if kind == "oversized_line":
        data = json_line(dict(row, zz_payload="x" * (9 * MIB)))
        return [(data, nl, q, rf"^line of {len(data)} bytes, over the 8 MiB limit$")]
    if kind == "deep_ok":
        return [(with_raw(row, "zz_nested", b"[" * 100 + b"1" + b"]" * 100), nl, VALID, None)]
    if kind == "too_deep":
        return [(with_raw(row, "zz_nested", b"[" * 5000 + b"]" * 5000), nl, q,
                 r"^not valid JSON$")]
    if kind == "tz_offset":
        value = rnd.choice(['"2026-11-19T10:00:00+05:45"', '"2026-11-19T03:00:00-09:30"',
                            '"2026-11-19T12:00:00.123456+14:00"'])
        return [(with_raw(row, t, value.encode()), nl, VALID, None)]
    if kind == "tz_name":
        return [(with_raw(row, t, b'"2026-11-19T10:00:00 PST"'), nl, q,
                 rf"^field '{t}': not a timestamp ")]
    if kind == "no_zone":
        return [(with_raw(row, t, b'"2026-11-19T10:00:00"'), nl, VALID, None)]
    if kind == "epoch_text":
        return [(with_raw(row, t, f'"{T0 + 7}"'.encode()), nl, VALID, None)]
    if kind == "markup":  # in a name the report shows (topic, member, group)
        return [(json_line(dict(row, **{REQUIRED_TEXT[source]: rnd.choice(MARKUP)})), nl, VALID,
                 None)]
    if kind == "formula":
        return [(json_line(dict(row, **{TEXT[source]: rnd.choice(_FORMULAS)})), nl, VALID, None)]
    if kind == "bom_line":  # where a file began (files joined with cat): ignored
        return [(b"\xef\xbb\xbf" + json_line(row), nl, VALID, None)]
    if kind == "bom_inside":  # between a name and its value: not JSON
        return [(with_raw(row, TEXT[source], b'\xef\xbb\xbf"x"'), nl, q, r"^not valid JSON")]
    if kind == "crlf":
        return [(json_line(row), b"\r\n", VALID, None)]
    if kind == "cr":
        return [(json_line(row), b"\r", VALID, None)]
    if kind == "blank":
        return [(b"", nl, NOT_A_ROW, None), (json_line(row), nl, VALID, None)]
    if kind == "spaces":
        return [(b" \t ", nl, NOT_A_ROW, None), (json_line(row), nl, VALID, None)]
    if kind == "array":
        return [(b"[" + json_line(row) + b"]", nl, q, r"^not a JSON object$")]
    if kind == "two_objects":
        return [(json_line(row) + b" " + json_line(row), nl, q,
                 r"^not valid JSON: content after the object$")]
    if kind == "missing_required":
        name = REQUIRED_TEXT[source]
        return [(json_line({k: v for k, v in row.items() if k != name}), nl, q,
                 rf"^missing required field '{name}'$")]
    if kind == "empty_required":
        name = REQUIRED_TEXT[source]
        return [(json_line(dict(row, **{name: ""})), nl, q, rf"^missing required field '{name}'$")]
    if kind == "case_keys":
        name = REQUIRED_TEXT[source]
        obj = {(k.upper() if k == name else k): v for k, v in row.items()}
        return [(json_line(obj), nl, q, rf"^missing required field '{name}'$")]
    if kind == "bool_key":
        name = TEXT[source]
        return [(with_raw(row, name, b"true"), nl, q, rf"^field '{name}': wrong type \(bool\)$")]
    if kind == "int_key":  # a JSON integer key is taken as its decimal text
        return [(with_raw(row, TEXT[source], str(10**12 + row[i]).encode()), nl, VALID, None)]
    if kind == "year_10000":
        return [(with_raw(row, t, b'"+10000-01-01T00:00:00Z"'), nl, q,
                 rf"^field '{t}': timestamp out of range")]
    if kind == "duplicate":
        if not earlier:
            return [(json_line(row), nl, VALID, None)]
        line_no, data = rnd.choice(earlier[-50:])
        return [(data, nl, q, rf"^duplicate of line {line_no}$")]
    if kind == "extra_fields":
        return [(json_line(dict(row, zz={"nested": [1, {"a": None}]}, _file="forged", __line=9,
                            Topic="OTHER")), nl, VALID, None)]
    if kind == "not_json":
        junk = rnd.choice([b"{'topic': 'single quotes'}", b"not json at all", b"{",
                           b'{"a" 1}', b'{"seq": 0x10}'])
        return [(junk, nl, q, r"^not (valid JSON|a JSON object)")]
    if kind == "bad_enum":
        name = ENUM[source]
        return [(with_raw(row, name, b'"nope"'), nl, q, rf"^field '{name}': not one of ")]
    if kind == "acked_without_offset":
        return [(json_line({k: v for k, v in row.items() if k not in ("partition", "offset")}), nl,
                 q, r"^acked send without partition/offset$")]
    raise AssertionError(kind)


# -- CSV kinds (RFC 4180 as csv.writer emits it: CRLF, quotes doubled)

def csv_kinds(source: str) -> list[str]:
    kinds = ["quoted_json", "quoted_newline", "quote_in_unquoted", "formula", "markup",
             "invalid_utf8", "extra_cells", "fewer_cells", "word_for_int", "negative_offset",
             "empty_required", "tz_offset", "tz_name", "blank", "spaces", "lf", "cr",
             "duplicate", "huge_key", "oversized_line", "nul", "header_again"]
    if source in ENUM:
        kinds.append("bad_enum")
    return kinds


def csv_cell(v) -> str:
    """A value as a CSV cell's text (None: an empty cell)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def csv_record(cells: list[str]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue().encode("utf-8")


def csv_line(kind: str, source: str, row: dict, header: list[str], rnd: random.Random,
             earlier: list[tuple[int, bytes]]) -> list[tuple[bytes, bytes, str, str | None]]:
    """The record(s) of one kind: (data, ending, class, reason pattern)."""
    q, crlf = QUARANTINED, b"\r\n"
    i, text = INT_FIELD[source], TEXT[source]

    def rec(**changes) -> bytes:
        r = dict(row, **changes)
        return csv_record([csv_cell(r.get(h)) for h in header])

    if kind == "quoted_json":
        return [(rec(**{text: '{"a": 1, "b": "x, ""y"""}'}), crlf, VALID, None)]
    if kind == "quoted_newline":
        return [(rec(**{text: "line one\nline two, with a comma"}), crlf, VALID, None)]
    if kind == "quote_in_unquoted":  # not RFC 4180, but common: the quote is a character
        data = rec(**{text: "QQQ"}).replace(b"QQQ", b'5" screen')
        return [(data, crlf, VALID, None)]
    if kind == "formula":
        return [(rec(**{text: rnd.choice(_FORMULAS)}), crlf, VALID, None)]
    if kind == "markup":
        return [(rec(**{REQUIRED_TEXT[source]: rnd.choice(MARKUP)}), crlf, VALID, None)]
    if kind == "invalid_utf8":
        data = rec(**{text: "QQQ"})
        at = data.index(b"QQQ") + 1
        data = data.replace(b"QQQ", b"Q" + rnd.choice(INVALID_UTF8) + b"Q")
        return [(data, crlf, q, rf"^not valid UTF-8 \(byte offset {at} of the record\)$")]
    if kind == "extra_cells":
        return [(rec() + b",extra", crlf, q,
                 rf"^cells do not match the header's {len(header)} columns$")]
    if kind == "fewer_cells":
        return [(rec().rsplit(b",", 2)[0], crlf, q,
                 rf"^cells do not match the header's {len(header)} columns$")]
    if kind == "word_for_int":
        return [(rec(**{i: "abc"}), crlf, q, rf"^field '{i}': not an integer 'abc'$")]
    if kind == "negative_offset":  # a CSV cell is text: an integer is all digits (rule 2)
        return [(rec(**{OFFSET: -5}), crlf, q, rf"^field '{OFFSET}': not an integer '-5'$")]
    if kind == "empty_required":
        name = REQUIRED_TEXT[source]
        return [(rec(**{name: None}), crlf, q, rf"^missing required field '{name}'$")]
    if kind == "tz_offset":
        return [(rec(**{TIME_FIELD[source]: "2026-11-19T10:00:00+05:45"}), crlf, VALID, None)]
    if kind == "tz_name":
        t = TIME_FIELD[source]
        return [(rec(**{t: "2026-11-19T10:00:00 PST"}), crlf, q,
                 rf"^field '{t}': not a timestamp ")]
    if kind == "blank":
        return [(b"", crlf, NOT_A_ROW, None), (rec(), crlf, VALID, None)]
    if kind == "spaces":
        return [(b"  ", crlf, NOT_A_ROW, None), (rec(), crlf, VALID, None)]
    if kind == "lf":
        return [(rec(), b"\n", VALID, None)]
    if kind == "cr":
        return [(rec(), b"\r", VALID, None)]
    if kind == "duplicate":
        if not earlier:
            return [(rec(), crlf, VALID, None)]
        line_no, data = rnd.choice(earlier[-50:])
        return [(data, crlf, q, rf"^duplicate of line {line_no}$")]
    if kind == "huge_key":
        return [(rec(**{text: "k" * MIB}), crlf, VALID, None)]
    if kind == "oversized_line":
        data = rec(**{text: "k" * (9 * MIB)})
        return [(data, crlf, q, rf"^record of {len(data)} bytes, over the 8 MiB limit$")]
    if kind == "nul":  # U+0000 is valid UTF-8, and CSV gives it no meaning: a character
        return [(rec(**{text: "a\x00b"}), crlf, VALID, None)]
    if kind == "header_again":  # files joined with cat: a header inside is a bad row
        return [(csv_record(header), crlf, q, r"field '")]
    if kind == "bad_enum":
        name = ENUM[source]
        return [(rec(**{name: "nope"}), crlf, q, rf"^field '{name}': not one of ")]
    raise AssertionError(kind)


# -- Parquet kinds: each schema its own file (native types, text, doubles, a struct)

PARQUET_KINDS = {
    "native": ["markup", "formula", "invalid_utf8", "null_required", "negative_offset",
               "int_overflow", "huge_key"],
    "text": ["word_for_int", "tz_offset", "tz_name", "epoch_text", "digits"],
    "double": ["nan", "fraction", "integral_float", "exponent"],
    "struct": ["struct_for_int"],
}


def _pa_type(f, schema: str):
    import pyarrow as pa

    if schema == "text":
        return pa.string()
    native = {"timestamp": pa.timestamp("ms", tz="UTC"), "long": pa.int64(),
              "nonneg_long": pa.int64(), "int": pa.int64(), "nonneg_int": pa.int64(),
              "bool": pa.bool_()}
    return native.get(f.kind, pa.string())


def parquet_row(kind: str, source: str, row: dict) -> tuple[dict, str, str | None]:
    """(changes to the row, class, reason pattern) of one Parquet kind."""
    q, i, text = QUARANTINED, INT_FIELD[source], TEXT[source]
    table = {
        "markup": ({REQUIRED_TEXT[source]: MARKUP[0]}, VALID, None),
        "formula": ({text: _FORMULAS[0]}, VALID, None),
        "invalid_utf8": ({text: b"a\xffb"}, q,
                         rf"^not valid UTF-8 \(byte offset 1 of field '{text}'\)$"),
        "null_required": ({REQUIRED_TEXT[source]: None}, q,
                          rf"^missing required field '{REQUIRED_TEXT[source]}'$"),
        "negative_offset": ({OFFSET: -5}, q, rf"^field '{OFFSET}': negative '-5'$"),
        "int_overflow": ({PARTITION: 2**31}, q, rf"^field '{PARTITION}': integer out of range"),
        "huge_key": ({text: "k" * MIB}, VALID, None),
        "word_for_int": ({i: "abc"}, q, rf"^field '{i}': not an integer 'abc'$"),
        "tz_offset": ({TIME_FIELD[source]: "2026-11-19T10:00:00+05:45"}, VALID, None),
        "tz_name": ({TIME_FIELD[source]: "2026-11-19T10:00:00 PST"}, q,
                    rf"^field '{TIME_FIELD[source]}': not a timestamp "),
        "epoch_text": ({TIME_FIELD[source]: str(T0 + 9)}, VALID, None),
        "digits": ({}, VALID, None),
        "nan": ({i: float("nan")}, q, rf"^field '{i}': not an integer 'NaN'$"),
        "fraction": ({i: 1.5}, q, rf"^field '{i}': not an integer '1.5'$"),
        "integral_float": ({i: float(row[i] or 0)}, VALID, None),
        "exponent": ({i: 1e30}, q, rf"^field '{i}': not an integer "),
        "struct_for_int": ({"_struct": True}, q,  # its optional int field: a struct
                           rf"^field '{OPTIONAL_INT[source]}': wrong type \(other\)$"),
    }
    return table[kind]


def _parquet_value(f, v, schema: str):
    if v is None or isinstance(v, bytes):
        return v
    if schema == "text":
        return csv_cell(v)
    if f.kind == "timestamp":
        if isinstance(v, int):
            return datetime.fromtimestamp(v / 1000, UTC)
        return datetime.fromisoformat(v.replace("Z", "+00:00"))
    return v


def write_parquet(path: Path, source: str, schema: str, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns, types = {}, {}
    for f in FIELDS[source]:
        t = _pa_type(f, schema)
        if schema == "double" and f.name == INT_FIELD[source]:
            t = pa.float64()
        values = [_parquet_value(f, r.get(f.name), schema) for r in rows]
        if schema == "struct" and f.name == OPTIONAL_INT[source]:
            t = pa.struct([("a", pa.int64())])
            values = [{"a": 1} if r.get("_struct") else None for r in rows]
        if any(isinstance(v, bytes) for v in values):  # invalid UTF-8: unvalidated string
            raw = [v if isinstance(v, bytes) or v is None else str(v).encode() for v in values]
            columns[f.name] = pa.array(raw, pa.binary()).view(pa.string())
        else:
            columns[f.name] = pa.array(values, t)
        types[f.name] = columns[f.name].type
    pq.write_table(pa.table(columns), path)


# -- the corpus

def _physical_lines(data: bytes) -> int:
    return len(re.split(rb"\r\n|\r|\n", data))


def write_corpus(out: Path, per_source: int = 1000, seed: int = 7) -> Corpus:
    """Write the corpus below ``out``; ``per_source`` hostile lines per source (about as
    many valid rows besides)."""
    rnd = random.Random(seed)
    corpus = Corpus(out)
    n = 0
    for source in SOURCES:
        folder = out / source
        folder.mkdir(parents=True, exist_ok=True)
        paths: list[str] = []
        text = per_source * 2 // 5  # JSON Lines and CSV 2/5 each, half of it gzipped
        for fmt in ("jsonl", "csv"):
            used: Counter = Counter()  # the capped kinds, over a format's files
            for gz, share in ((False, text // 2), (True, text - text // 2)):
                n = _write_text_file(corpus, folder, source, fmt, gz, share, n, rnd, paths,
                                     used)
        n = _write_parquet_files(corpus, folder, source, per_source - 2 * text, n, paths)
        corpus.files[source] = paths
    return corpus


def _capped(kinds: list[str], count: int, used: Counter, fallback: str):
    """``count`` kinds, cycling through ``kinds``; a kind past its cap (CAPPED, counted in
    ``used``) gives way to ``fallback``."""
    for k in range(count):
        kind = kinds[k % len(kinds)]
        if used[kind] >= CAPPED.get(kind, count):
            kind = fallback
        used[kind] += 1
        yield kind


def _write_text_file(corpus: Corpus, folder: Path, source: str, fmt: str, gz: bool,
                     hostile: int, n: int, rnd: random.Random, paths: list[str],
                     used: Counter) -> int:
    path = folder / f"hostile-{fmt}{'-gz' if gz else ''}.{fmt}{'.gz' if gz else ''}"
    kinds = jsonl_kinds(source) if fmt == "jsonl" else csv_kinds(source)
    header = [f.name for f in FIELDS[source]]
    chunks: list[bytes] = []
    line_no = 0
    earlier: list[tuple[int, bytes]] = []

    def add(data: bytes, end: bytes, klass: str, reason: str | None, kind: str) -> None:
        nonlocal line_no
        first = line_no + 1
        line_no += _physical_lines(data) + (0 if end else -1)
        chunks.append(data + end)
        corpus.expected.append(Expected(source, str(path), first, kind, klass, reason))
        if klass == VALID and len(data) < 10_000 and b"\n" not in data and b"\r" not in data:
            earlier.append((first, data))

    if fmt == "csv":
        bom = b"\xef\xbb\xbf" if gz else b""  # the gzipped CSV opens with a BOM
        add(bom + csv_record(header), b"\r\n", NOT_A_ROW, None, "header")
    for kind in _capped(kinds, hostile, used, "markup"):
        n += 1
        row = valid_row(source, n)
        if fmt == "jsonl":
            lines = jsonl_line(kind, source, row, rnd, earlier)
        else:
            lines = csv_line(kind, source, row, header, rnd, earlier)
        for data, end, klass, reason in lines:
            add(data, end, klass, reason, kind)
        n += 1  # a plain valid row after each hostile one
        plain = valid_row(source, n)
        if fmt == "jsonl":
            add(json_line(plain), b"\n", VALID, None, "plain")
        else:
            add(csv_record([csv_cell(plain.get(h)) for h in header]), b"\r\n", VALID, None,
                "plain")
    data = b"".join(chunks)
    path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    paths.append(str(path))
    return n


def _write_parquet_files(corpus: Corpus, folder: Path, source: str, hostile: int, n: int,
                         paths: list[str]) -> int:
    schema_of = {kind: schema for schema, ks in PARQUET_KINDS.items() for kind in ks}
    rows: dict[str, list[dict]] = defaultdict(list)
    for kind in _capped(list(schema_of), hostile, Counter(), "markup"):
        schema = schema_of[kind]
        path = folder / f"hostile-{schema}.parquet"
        for klass_kind in (kind, "plain"):
            n += 1
            row = valid_row(source, n)
            if klass_kind == "plain":
                changes, klass, reason = {}, VALID, None
            else:
                changes, klass, reason = parquet_row(kind, source, row)
            rows[schema].append(dict(row, **changes))
            corpus.expected.append(Expected(source, str(path), len(rows[schema]),
                                            klass_kind, klass, reason))
    for schema, rs in rows.items():
        path = folder / f"hostile-{schema}.parquet"
        write_parquet(path, source, schema, rs)
        paths.append(str(path))
    return n


# -- checking one audit of the corpus

@dataclass
class Checked:
    table: dict[str, Counter]  # kind -> counts: lines, valid, quarantined, misclassified
    problems: list[str]


def check(corpus: Corpus, report: dict, quarantine: list[dict]) -> Checked:
    """Every line of the corpus against the audit: its class, its reason (naming file and
    row), and each source's accounting. ``quarantine``: the rows of the audit's quarantine
    table (source, file, row, reason)."""
    problems: list[str] = []
    got = {(q["source"], q["file"], int(q["row"])): q["reason"] for q in quarantine}
    if len(got) != len(quarantine):
        problems.append(f"{len(quarantine) - len(got)} quarantine rows name the same line")
    table: dict[str, Counter] = defaultdict(Counter)
    seen = set()
    for e in corpus.expected:
        if e.klass == NOT_A_ROW:
            continue
        key = (e.source, e.file, e.row)
        seen.add(key)
        reason = got.get(key)
        c = table[e.kind]
        c["lines"] += 1
        # a row may have several problems ("; "-joined): the expected one is among them
        ok = (reason is None if e.klass == VALID else reason is not None and any(
            re.search(e.reason or "", part) for part in reason.split("; ")))
        c[e.klass] += 1
        if not ok:
            c["misclassified"] += 1
            if len(problems) < 50:
                problems.append(f"{e.source} {Path(e.file).name}:{e.row} ({e.kind}) expected "
                                f"{e.klass} {e.reason or ''}, got {reason or 'valid'}")
    for key in sorted(set(got) - seen)[:20]:
        problems.append(f"quarantined but not a row of the corpus: {key} {got[key]}")
    for source in SOURCES:
        rows = corpus.rows(source)
        i = report["inputs"][source]
        want = {"rows_read": len(rows),
                "rows_quarantined": sum(1 for e in rows if e.klass == QUARANTINED)}
        want["rows_valid"] = want["rows_read"] - want["rows_quarantined"]
        for k, v in want.items():
            if i[k] != v:
                problems.append(f"{source}: {k} {i[k]}, expected {v}")
    return Checked(dict(table), problems)


def check_published(corpus: Corpus, report_dir: Path) -> Checked:
    """:func:`check` against a published audit: its report.json and quarantine table."""
    import pyarrow.parquet as pq

    report = json.loads((report_dir / "report.json").read_text())
    return check(corpus, report, pq.read_table(report_dir / "quarantine").to_pylist())


def table_text(checked: Checked) -> str:
    lines = [f"{'kind':24s} {'lines':>7s} {'valid':>7s} {'quarant.':>8s} {'wrong':>6s}"]
    total: Counter = Counter()
    for kind in sorted(checked.table):
        c = checked.table[kind]
        total.update(c)
        lines.append(f"{kind:24s} {c['lines']:7d} {c[VALID]:7d} {c[QUARANTINED]:8d} "
                     f"{c['misclassified']:6d}")
    lines.append(f"{'all':24s} {total['lines']:7d} {total[VALID]:7d} "
                 f"{total[QUARANTINED]:8d} {total['misclassified']:6d}")
    return "\n".join(lines)
