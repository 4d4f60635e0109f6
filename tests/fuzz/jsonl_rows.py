# ruff: noqa: E501  (hostile sample values)
"""JSON Lines examples: the mutations of a canonical row and the files they make."""

from __future__ import annotations

import random
import re
from pathlib import Path

from delivery_audit.schemas import FIELDS
from delivery_audit_sim.generator.hostile import INVALID_UTF8
from delivery_audit_sim.generator.hostile import json_line as _json
from delivery_audit_sim.generator.hostile import with_raw as _set_raw
from fuzz.rows import (
    DROPPABLE,
    Batch,
    Line,
    bad_values,
    draw_mutations,
    edge_values,
    put_file,
    valid_row,
)


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




# ------------------------------------------------------------------------- JSON Lines


def write_jsonl_example(tmp: Path, base: int, source: str, seed: int, files: int, gz: bool,
                        final_newline: bool) -> dict[str, list[Line]]:
    rnd = random.Random(seed)
    batches = [Batch() for _ in range(files)]
    for i, kind in enumerate(draw_mutations(rnd, JSONL_MUTATIONS)):
        jsonl_line(kind, rnd, source, base + i, batches[i % files])
    written: dict[str, list[Line]] = {}
    for k, b in enumerate(batches):
        if not final_newline and b.lines:
            b.lines[-1].end = b""
        written[put_file(tmp / f"part-{k}.jsonl", b.payload(), gz)] = b.lines
    return written
