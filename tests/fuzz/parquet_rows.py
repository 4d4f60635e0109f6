"""Parquet examples: canonical and arbitrary column types, the mutations of a row, the files."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from delivery_audit.schemas import FIELDS
from fuzz.rows import Batch, Line, draw_mutations, field_of, valid_row

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
        # an enum with a value in the valid row (broker has none; events' optional enums may
        # be null there)
        enums = [x for x in f if x.kind == "enum" and row.get(x.name) is not None]
        if not enums:
            return req[0].name, typed_value(req[0], row[req[0].name]), "valid"
        e = enums[0]
        return e.name, (row[e.name].upper() if kind == "enum_case" else "nope"), \
            ("valid" if kind == "enum_case" else "bad")
    raise AssertionError(kind)  # pragma: no cover


def typed_value(f, value):
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
    plan = draw_mutations(rnd, PARQUET_MUTATIONS)
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
            values = {f.name: typed_value(f, row[f.name]) for f in fields}
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
