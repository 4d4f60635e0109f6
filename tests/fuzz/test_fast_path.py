# ruff: noqa: E501  (hostile sample values)
"""The ingest fast path (parsing.fast_accepted / fast_parse) agrees with the strict rules.

The strict rules (parse_tokens over exact_tokens: VARIANT kinds for JSON, column types for
Parquet) are the contract's definition. The fast path may send any row to them, but a
row it accepts must be one they accept, with the same typed values. So for hostile rows,
fast ∪ strict-for-the-rest must equal strict-for-all, row by row: typed values, and which
rows are quarantined and why.

Hostile values are those where a text-based reading could go wrong: huge digit strings,
"-0", 1e400, "Infinity"/"NaN", leading zeros, strings that look like numbers or booleans,
booleans as strings, odd ISO timestamps, int fields near 2^31, timestamps near year 9999
(and past it), duplicate JSON keys, content after the object, non-object lines, and for
CSV and Parquet their column types (double NaN, bool, timestamp, date, decimal, struct,
binary).
"""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from conftest import release_cached_frames
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import delivery_audit.ingest.parsing as parsing_module
from delivery_audit.config import AuditConfig
from delivery_audit.ingest import ingest, resolve
from delivery_audit.ingest.parsing import fast_accepted, fast_parse, parse_tokens
from delivery_audit.ingest.tokens import exact_tokens, read_tokens
from delivery_audit.schemas import FIELDS, SOURCES
from delivery_audit_sim.generator.hostile import csv_cell as _csv_cell
from delivery_audit_sim.generator.hostile import with_raw as _set_raw
from fuzz.parquet_rows import typed_value
from fuzz.rows import (
    FUZZ_EXAMPLES,
    KIND,
    WINDOW,
    bad_values,
    edge_values,
    fuzz_settings,
    valid_row,
)

# More values where the fast path's text reading could part from the strict rules.
EXTRA_JSON = {
    "int": ['"000000000000000007"', '"0000000000000000007"', '123456789012345678',
            '1234567890123456789', '"123456789"', '"1234567890"', '999999999', '1000000000',
            '"2147483647"', '"2147483648"', '0.0', '-0.0', '7.000', '1.0e1', '"1e1"',
            '"Infinity"', '"NaN"', '"\\u0031"', '"１"'],
    "timestamp": ['"99999999999999"', '"100000000000000"', '"0000000000000001795082400000"',
                  '"2026-11-19T10:00:00"', '"2026-11-19 10:00:00Z"', '"2026-11-19T10:00:00.1+05:30"',
                  '"2026-11-19T10:00:00-00:00"', '"2026-11-19T10:00Z"', '"2026-11-19T24:00:00Z"',
                  '"2026-11-19T10:00:00+0530"', '"2026-11-19T10:00:00 +05:30"',
                  '"2026-11-19T10:00:00UTC"', '"2026-11-19T10:00:00 GMT+2"',
                  '"9999-12-31T23:59:59.9999999Z"', '"9999-12-31 23:59:59.999999 -01:00"',
                  '"0001-01-01 00:00:00 +00:01"', '"1582-10-10T00:00:00Z"', '"-1"', '"1.5"',
                  '1795082400000.5', '"2026-11-19T10:00:00Z\\u0000"', '"２０２６-11-19T10:00:00Z"',
                  '"2026-1-9T1:0:0Z"', '"2026-11-19T10:00:00,5Z"', '"+2026-11-19T10:00:00Z"'],
    "string": ['"Infinity"', '"-Infinity"', '"1e5"', '" 1"', '"+1"', '"0x1"', '"FALSE"', '"{"',
               '"["', '"\\"x"', '-0', '0', '-5', '123456789012345678', '1234567890123456789',
               '9223372036854775808', '1.0', '-0.0', '"\\t"', '"\\n"', '"tRUE"', '"false "'],
    "enum": ['"\\u0041CKED"', '"acked\\u0000"', '"ack\\u0065d"', '"S\\u212aIPPED"', '"İ"'],
    "bool": ['"TrUe"', '"true "', '" false"', '"1"', '"0"', '"yes"', '"\\u0074rue"', '1.0'],
}


@pytest.fixture(autouse=True)
def _release_cached_frames():
    """Every example ingests (and persists) anew: release after each test."""
    yield
    release_cached_frames()


def pool(f) -> list[str]:
    return bad_values(f) + edge_values(f) + EXTRA_JSON[KIND[f.kind]]


def structural_lines(row: dict, f, v: str) -> list[bytes]:
    """The row with field f = v, plainly and in shapes only the exact reader sees through."""
    line = _set_raw(row, f.name, v)
    body = json.dumps(row).encode()
    valid = json.dumps(row[f.name]).encode()
    name = f.name.encode()
    return [
        line,
        b'{"' + name + b'": ' + v.encode() + b", " + body[1:],  # duplicate key: last wins
        body[:-1] + b', "' + name + b'": ' + v.encode() + b"}",  # the hostile one last
        b'{"' + name + b'": ' + valid + b", " + line[1:],  # valid first, hostile last
    ]


EXTRA_LINES = [  # whole-line shapes, per valid row
    lambda body: body + b" x", lambda body: body + body, lambda body: body + b", 5",
    lambda body: body + b"]  [", lambda body: b"\t" + body, lambda body: b"  " + body + b"\t",
    lambda body: b"[" + body + b"]", lambda body: body[:-1] + b', "zz": {"a": [1, {}]}}',
    lambda body: body[:-1] + b', "note": "a } brace"}', lambda body: body.replace(b'": ', b'":'),
    lambda body: body[:-1] + b', "__file": "x.jsonl", "__line": 7, "__error": "forged"}',
    lambda body: body[:-1] + b', "_corrupt": "x"}', lambda body: body.upper(),
]


# The exhaustive corpora below carry CI; the random combinations get a third of the
# examples (at least one), `make fuzz` raises them with FUZZ_EXAMPLES.
RANDOM_EXAMPLES = max(1, FUZZ_EXAMPLES // 3)

# ------------------------------------------------------------------------- the comparison


def _key(r) -> tuple:
    return (r["_file"], r["_block"], r["_pos"])


def assert_fast_agrees(spark, fmt: str, files: list[str], source: str,
                       min_fast: int = 1) -> int:
    """fast ∪ strict-for-the-rest == strict-for-all, row by row; returns the number of
    rows the fast path took (a test where it takes none proves nothing)."""
    names = [f.name for f in FIELDS[source]]
    # timestamps compared as microseconds: PySpark cannot make a datetime of 0001-01-01
    cols = [F.unix_micros(n).alias(n) if f.kind == "timestamp" else F.col(n)
            for f in FIELDS[source] for n in [f.name]]
    tokens = read_tokens(spark, fmt, files, source).filter(~F.col("_blank"))
    split = fast_accepted(tokens, source)
    fast = fast_parse(split.filter(F.col("_fast")), source).withColumn("_via", F.lit("fast"))
    rest = parse_tokens(exact_tokens(fmt, split.filter(~F.col("_fast")), source), source) \
        .withColumn("_via", F.lit("strict"))
    both = fast.unionByName(rest).select("_file", "_block", "_pos", "_raw", "_via",
                                         "_reason", *cols)
    strict = parse_tokens(exact_tokens(fmt, tokens, source), source) \
        .select("_file", "_block", "_pos", "_reason", *cols)
    got = {_key(r): r for r in both.collect()}
    want = {_key(r): r for r in strict.collect()}
    assert set(got) == set(want), "the two readings see different rows"
    wrong = []
    for k, w in want.items():
        g = got[k]
        differs = [n for n in (*names, "_reason") if g[n] != w[n]]
        if differs:
            wrong.append(f"{g['_via']} path: {g['_raw'][:160]!r}\n    " + "; ".join(
                f"{n}: {g[n]!r} != strict {w[n]!r}" for n in differs))
    assert not wrong, f"{len(wrong)} rows differ from the strict rules:\n" + "\n".join(wrong[:15])
    n_fast = sum(1 for g in got.values() if g["_via"] == "fast")
    assert n_fast >= min_fast, "no row took the fast path: the comparison proves nothing"
    return n_fast


# ------------------------------------------------------------------------- JSON Lines


def jsonl_corpus(source: str) -> list[bytes]:
    """Every hostile value of its kind in every field, in every shape, plus line shapes."""
    lines: list[bytes] = []
    i = 0
    for f in FIELDS[source]:
        for v in pool(f):
            lines += structural_lines(valid_row(source, i), f, v)
            i += 1
    for shape in EXTRA_LINES:
        lines.append(shape(json.dumps(valid_row(source, i)).encode()))
        i += 1
    return lines


def test_jsonl_fast_path_agrees_on_every_hostile_value(spark, tmp_path):
    source = "sends"  # every field kind (the ingest test below runs the ledger's)
    path = tmp_path / f"{source}.jsonl"
    path.write_bytes(b"\n".join(jsonl_corpus(source)) + b"\n")
    assert_fast_agrees(spark, "jsonl", [str(path)], source, min_fast=20)


@fuzz_settings(RANDOM_EXAMPLES)
@given(source=st.sampled_from(SOURCES), seed=st.integers(0, 2**31),
       n=st.integers(60, 200), hostile=st.integers(1, 3))
def test_jsonl_fast_path_agrees_on_random_hostile_rows(spark, tmp_path_factory, source, seed,
                                                      n, hostile):
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        row = valid_row(source, i)
        for f in rnd.sample(FIELDS[source], hostile):
            if rnd.random() < 0.7:
                row[f.name] = "\x00RAW\x00" + rnd.choice(pool(f))
        body = json.dumps(row).encode()
        body = _unmark(body)
        shape = rnd.random()
        if shape < 0.1:
            body = rnd.choice(EXTRA_LINES)(body)
        elif shape < 0.2:
            f = rnd.choice(FIELDS[source])
            body = rnd.choice(structural_lines(valid_row(source, i), f, rnd.choice(pool(f))))
        lines.append(body)
    path = tmp_path_factory.mktemp("fast-jsonl") / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert_fast_agrees(spark, "jsonl", [str(path)], source)


def _unmark(body: bytes) -> bytes:
    """Turn the "\\u0000RAW\\u0000<json>" strings of a dumped row into raw JSON values."""
    text = body.decode()
    out, k = [], 0
    marker = '"\\u0000RAW\\u0000'
    while (at := text.find(marker, k)) >= 0:
        out.append(text[k:at])
        end = at + len(marker)
        # the JSON string literal ends at the first unescaped quote
        j = end
        while text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        out.append(json.loads('"' + text[end:j] + '"'))
        k = j + 1
    out.append(text[k:])
    return "".join(out).encode()


# ------------------------------------------------------------------------- CSV


def csv_text(v: str) -> str:
    """A JSON value as a CSV cell: strings by their text, other values by their JSON."""
    try:
        decoded = json.loads(v)
    except ValueError:
        return v
    if decoded is None:
        return ""
    return decoded if isinstance(decoded, str) else v


def _csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8", errors="surrogatepass")


def test_csv_fast_path_agrees_on_every_hostile_value(spark, tmp_path):
    source = "sends"
    names = [f.name for f in FIELDS[source]]
    rows, i = [names], 0
    for f in FIELDS[source]:
        for v in pool(f) + ["NaN", "Infinity", "-0", "1e400", "true", "{}", " 5", "5 ", "٥"]:
            row = valid_row(source, i)
            rows.append([csv_text(v) if n == f.name else _csv_cell(row[n]) for n in names])
            i += 1
    path = tmp_path / "sends.csv"
    path.write_bytes(_csv(rows).replace(b"\xed\xa0\x80", b"\xef\xbf\xbd"))
    assert_fast_agrees(spark, "csv", [str(path)], source, min_fast=20)


@fuzz_settings(RANDOM_EXAMPLES)
@given(source=st.sampled_from(SOURCES), seed=st.integers(0, 2**31), n=st.integers(60, 200))
def test_csv_fast_path_agrees_on_random_hostile_rows(spark, tmp_path_factory, source, seed, n):
    rnd = random.Random(seed)
    names = [f.name for f in FIELDS[source]]
    rnd.shuffle(names)
    rows = [names]
    for i in range(n):
        row = {k: _csv_cell(v) for k, v in valid_row(source, i).items()}
        for f in rnd.sample(FIELDS[source], rnd.randrange(0, 3)):
            row[f.name] = csv_text(rnd.choice(pool(f)))
        rows.append([row[k] for k in names])
    path = tmp_path_factory.mktemp("fast-csv") / "rows.csv"
    path.write_bytes(_csv(rows).replace(b"\xed\xa0\x80", b"\xef\xbf\xbd"))
    assert_fast_agrees(spark, "csv", [str(path)], source)


# ------------------------------------------------------------------------- Parquet
# Parquet values keep their column type: the fast path may only take the kinds it knows
# (string, int for integer/timestamp/string fields, timestamp, bool), with the same value
# as the strict rules. One file per column type; in each, every field that can hold a
# valid value in that type (or is optional) has that type, and each row puts one hostile
# value in one of them, the others valid.


def _pa():
    import pyarrow as pa

    return pa


def parquet_types():
    pa = _pa()
    return {
        "string": pa.string(), "int64": pa.int64(), "int32": pa.int32(),
        "double": pa.float64(), "float": pa.float32(), "decimal": pa.decimal128(38, 0),
        "decimal2": pa.decimal128(10, 2), "bool": pa.bool_(),
        "ts": pa.timestamp("us", tz="UTC"), "ts_ntz": pa.timestamp("ms"),
        "ts_raw": pa.int64(),  # micros past year 9999 / before year 1: cast when written
        "date": pa.date32(), "struct": pa.struct([("a", pa.int64())]),
        "list": pa.list_(pa.int64()), "binary": pa.binary(),
    }


HOSTILE_TYPED = {
    "int64": [0, 1, -1, 7, 2**31 - 1, 2**31, 2**63 - 1, -(2**63), 99_999_999_999_999,
              100_000_000_000_000, 253402300799999, 253402300800000, -62135596800000,
              -62135596800001],
    "int32": [0, 5, -1, 2**31 - 1, -(2**31)],
    "double": [1.0, 0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf"), 1e20,
               1795082400000.0],
    "float": [1.0, float("nan"), 0.5],
    "decimal": [Decimal(7), Decimal(10**37), Decimal(-3), Decimal(1795082400000)],
    "decimal2": [Decimal("7.00"), Decimal("1.50"), Decimal("-0.00")],
    "bool": [True, False],
    "ts": [datetime(2026, 11, 19, 10, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC),
           datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
           datetime(1582, 10, 10, tzinfo=UTC), "raw:253402300800000000",
           "raw:-62135596800000001"],  # "raw:" micros: past year 9999, before year 1
    "ts_ntz": [datetime(2026, 11, 19, 10), datetime(1970, 1, 1)],
    "ts_raw": [253402300800000000, -62135596800000001, 253402300799999999, 0],
    "date": [date(2026, 11, 19), date(1, 1, 1), date(9999, 12, 31)],
    "struct": [{"a": 1}, {"a": None}],
    "list": [[1], []],
    "binary": [b"7", b"\xff\xfe", b""],
}


def _base_in(type_name: str, f, row: dict):
    """A valid value of field f in the column type where the fast path may take that
    type for f; else None (null) when f is optional, or _NO: f keeps its native type
    (a required field in a type the fast path must refuse would send every row of the
    file to the strict rules, and the file would test nothing)."""

    v = typed_value(f, row[f.name])
    k = f.kind
    ints = ("long", "nonneg_long", "int", "nonneg_int")
    if type_name == "string":
        return None if v is None else ("true" if v is True else "false" if v is False
                                       else v.isoformat() if isinstance(v, datetime) else str(v))
    if type_name in ("int64", "int32") and k in ints:
        return v
    if type_name == "int64" and k == "timestamp":
        return None if v is None else int(v.timestamp() * 1000)
    if type_name == "int32" and k == "timestamp":
        return None if v is None else 1000
    if type_name in ("int64", "int32") and k in ("string", "key"):
        return 5
    if type_name == "bool" and k == "bool":
        return v
    if type_name in ("ts", "ts_ntz", "ts_raw", "date") and k == "timestamp":
        if v is None:
            return None
        return {"ts": v, "ts_ntz": v.replace(tzinfo=None),
                "ts_raw": int(v.timestamp() * 1_000_000), "date": v.date()}[type_name]
    return None if not f.required else _NO


_NO = object()


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: Arrow strings are UTF-8
        return False
    return True


def _string_pool(f) -> list:
    return [v for v in (csv_text(x) for x in pool(f)) if _utf8(v)] + [
        "NaN", "Infinity", "-0", "1e400", "true"]


def write_typed_file(path, source: str, type_name: str, start: int,
                     only: str | None = None) -> int:
    """Write the file of one column type; returns its number of rows. With `only`, just
    that field has the type (every row hostile in it), the others are native."""
    import pyarrow.parquet as pq

    pa = _pa()
    fields = FIELDS[source]
    first = valid_row(source, start)
    typed = [f for f in fields if f.name == only] if only else [
        f for f in fields if _base_in(type_name, f, first) is not _NO]
    rows = []
    i = start
    for f in typed:
        values = _string_pool(f) if type_name == "string" else HOSTILE_TYPED[type_name]
        for v in [*values, None]:
            row = valid_row(source, i)
            if source == "sends":  # a failed send needs no partition/offset (nulls here)
                row["status"] = "failed"
            rows.append((row, f.name, v))
            i += 1
    columns, schema = [], []
    for f in fields:
        if f in typed:
            values = [v if name == f.name else _base_in(type_name, f, row)
                      for row, name, v in rows]
            if type_name == "ts_raw" or any(isinstance(v, str) and v.startswith("raw:")
                                            for v in values) and type_name == "ts":
                micros = [int(v[4:]) if isinstance(v, str) else
                          None if v is None else
                          v if isinstance(v, int) else
                          int(v.timestamp()) * 1_000_000 + v.microsecond for v in values]
                arr = pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
            else:
                arr = pa.array(values, parquet_types()[type_name])
        else:

            arr = pa.array([typed_value(f, row[f.name]) for row, _, _ in rows], _native_type(pa, f))
        columns.append(arr)
        schema.append((f.name, arr.type))
    pq.write_table(pa.Table.from_arrays(columns, schema=pa.schema(schema)), path)
    return len(rows)


def _native_type(pa, f):
    return {"string": pa.string(), "key": pa.string(), "enum": pa.string(),
            "long": pa.int64(), "nonneg_long": pa.int64(), "int": pa.int32(),
            "nonneg_int": pa.int32(), "timestamp": pa.timestamp("us", tz="UTC"),
            "bool": pa.bool_()}[f.kind]


# Every kind the fast path may take (string, int, timestamp, bool) and one type of each
# kind it must leave to the strict rules (number, other); the random test below covers
# the remaining types (a file per type is a scan per type: seconds each).
EXHAUSTIVE_TYPES = ("string", "int64", "ts", "bool", "double", "decimal", "date", "struct")


def test_parquet_fast_path_agrees_on_every_column_type(spark, tmp_path):
    source, files, start = "sends", [], 0  # sends has every field kind
    for type_name in EXHAUSTIVE_TYPES:
        path = tmp_path / f"{type_name}.parquet"
        start += write_typed_file(path, source, type_name, start)
        files.append(str(path))
    assert_fast_agrees(spark, "parquet", files, source, min_fast=50)


@fuzz_settings(RANDOM_EXAMPLES)
@given(source=st.sampled_from(SOURCES), types=st.lists(
    st.sampled_from(sorted(HOSTILE_TYPED) + ["string"]), min_size=1, max_size=3, unique=True),
    required=st.data())
def test_parquet_fast_path_agrees_on_random_typed_columns(spark, tmp_path_factory, source,
                                                         types, required):
    """Files of random column types, and a required field in a type of its own (all its
    rows must go to the strict rules unless the type can hold a valid value)."""
    tmp = tmp_path_factory.mktemp("fast-parquet")
    files, start = [], 0
    for type_name in types:
        path = tmp / f"{type_name}.parquet"
        start += write_typed_file(path, source, type_name, start)
        files.append(str(path))
    field = required.draw(st.sampled_from([f.name for f in FIELDS[source] if f.required]))
    type_name = required.draw(st.sampled_from(sorted(HOSTILE_TYPED)))
    path = tmp / f"required-{field}-{type_name}.parquet"
    start += write_typed_file(path, source, type_name, start, only=field)
    files.append(str(path))
    assert_fast_agrees(spark, "parquet", files, source, min_fast=0)


# ------------------------------------------------------------------------- ingest


def test_ingest_output_is_the_strict_only_output(spark, tmp_path, monkeypatch):
    """End to end: ingest with the fast path gives the very valid rows and quarantine
    (rows, reasons) that ingest with every row through the strict rules gives."""
    source = "ledger"
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"\n".join(jsonl_corpus(source)) + b"\n")

    def run():
        got = ingest(spark, resolve(source, [str(path)]), WINDOW, AuditConfig())
        micros = [F.unix_micros(f.name).alias(f.name) if f.kind == "timestamp"
                  else F.col(f.name) for f in FIELDS[source]]
        valid = sorted((tuple(r) for r in got.valid.select(*micros).collect()), key=repr)
        bad = sorted((r["row"], r["reason"]) for r in got.quarantine.collect())
        return got.counts, valid, bad

    with_fast = run()
    flag = parsing_module.fast_accepted
    monkeypatch.setattr(parsing_module, "fast_accepted",
                        lambda rows, source: flag(rows, source).withColumn("_fast", F.lit(False)))
    strict_only = run()
    assert with_fast[0] == strict_only[0]
    assert with_fast[1] == strict_only[1]
    assert with_fast[2] == strict_only[2]
    assert len(with_fast[1]) > 20 and len(with_fast[2]) > 100



# Parquet columns of their fields' own types skip the token frame (ingest/native.py): files
# whose every column is native, each with hostile values of one type in one field.
NATIVE_TYPES = {"string": ("string", "key", "enum"), "int64": ("long", "nonneg_long", "int",
                                                            "nonneg_int"),
                "int32": ("int", "nonneg_int", "long"), "ts": ("timestamp",), "bool": ("bool",)}


def _native_files(tmp, source: str) -> list[str]:
    files, start = [], 0
    for type_name, kinds in NATIVE_TYPES.items():
        for f in FIELDS[source]:
            if f.kind in kinds:
                path = tmp / f"{source}-{f.name}-{type_name}.parquet"
                start += write_typed_file(path, source, type_name, start, only=f.name)
                files.append(str(path))
    return files


def _handmade_sends(tmp) -> str:
    """Native sends rows the files above do not hold: an upper-case status, an acked send
    without partition (rule 3), an empty required topic, a negative partition, the offset
    past the last a log can hold, an attempt past int range in an int64 column."""
    pa = _pa()
    import pyarrow.parquet as pq

    base = [valid_row("sends", 900_000 + i) for i in range(7)]
    base[0]["status"] = "ACKED"
    base[1]["partition"] = None
    base[2]["topic"] = ""
    base[3]["partition"] = -1
    base[4]["offset"] = 2**63 - 1
    base[5]["attempt"] = 2**31
    columns = {}
    for f in FIELDS["sends"]:
        t = pa.int64() if f.name == "attempt" else _native_type(pa, f)
        columns[f.name] = pa.array([typed_value(f, r[f.name]) if f.name not in (
            "partition", "offset", "attempt", "topic", "status") else r[f.name] for r in base], t)
    path = tmp / "sends-handmade.parquet"
    pq.write_table(pa.table(columns), path)
    return str(path)


def _ingested(spark, source: str, files: list[str]):
    """A source's ingest: its counts, valid rows (timestamps as micros) and quarantine
    (file, row, reason, raw), sorted."""
    got = ingest(spark, resolve(source, files), WINDOW, AuditConfig())
    micros = [F.unix_micros(f.name).alias(f.name) if f.kind == "timestamp"
              else F.col(f.name) for f in FIELDS[source]]
    valid = sorted((tuple(r) for r in got.valid.select(*micros).collect()), key=repr)
    bad = sorted((r["file"], r["row"], r["reason"], r["raw"]) for r in got.quarantine.collect())
    return got.counts, valid, bad


@pytest.mark.parametrize("source", ["sends", "broker"])
def test_native_parquet_ingest_is_the_token_path_output(spark, tmp_path, monkeypatch, source):
    """Ingest of all-native Parquet files (straight from the scan for plain rows) gives the
    very valid rows and quarantine (rows, reasons) of the token path for every row."""
    import delivery_audit.ingest.native as native_module

    files = _native_files(tmp_path, source)
    if source == "sends":
        files.append(_handmade_sends(tmp_path))

    native = _ingested(spark, source, files)
    monkeypatch.setattr(native_module, "is_native", lambda source, types: False)
    tokens = _ingested(spark, source, files)
    assert native[0] == tokens[0]
    assert native[1] == tokens[1]
    assert native[2] == tokens[2]
    assert len(native[1]) > 20 and len(native[2]) > 5


@pytest.mark.parametrize("source", ["sends", "ledger"])
def test_deferred_json_lines_are_the_one_chain_output(spark, tmp_path, monkeypatch, source):
    """JSON Lines whose lines the fast path does not take are kept by the staged write and
    typed after it (deferred.jsonl_rows): the very valid rows, counts and quarantine
    (file, row, reason, raw) as typing every line in the strict rules' one chain, on the
    hostile corpus's JSON Lines files (plain and gzip), with the line positions intact."""
    import delivery_audit.ingest.staging as staging
    from delivery_audit.ingest.deferred import Deferred
    from delivery_audit.ingest.parsing import typed_rows
    from delivery_audit.ingest.tokens import exact_for
    from delivery_audit_sim.generator.hostile import write_corpus

    corpus = write_corpus(tmp_path / "corpus", per_source=60, seed=3)
    files = [f for f in corpus.files[source] if ".jsonl" in f]
    # a file opening with a plain line: the kept lines' positions count from a row that
    # was not kept (the corpus's files open with a hostile line)
    plain_text = next(f for f in files if f.endswith(".jsonl"))
    lines = open(plain_text, "rb").read().split(b"\n")
    opened = tmp_path / f"{source}-opens-plain.jsonl"
    opened.write_bytes(b"\n".join([lines[1], *lines]))
    files.append(str(opened))

    deferred = _ingested(spark, source, files)

    def one_chain(spark_, group, source_, later):
        rows = typed_rows(read_tokens(spark_, "jsonl", group, source_), source_,
                          exact_for("jsonl", source_))
        return rows.withColumn("_later", F.lit(False)), Deferred(lambda: False, list)

    monkeypatch.setattr(staging, "jsonl_rows", one_chain)
    chained = _ingested(spark, source, files)
    assert deferred[0] == chained[0]
    assert deferred[1] == chained[1]
    assert deferred[2] == chained[2]
    assert len(deferred[1]) > 10 and len(deferred[2]) > 10
