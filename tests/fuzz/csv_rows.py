# ruff: noqa: E501  (hostile sample values)
"""CSV examples (RFC 4180): hostile headers, the mutations of a row and the files they make."""

from __future__ import annotations

import random
from pathlib import Path

from delivery_audit.schemas import FIELDS
from delivery_audit_sim.generator.hostile import INVALID_UTF8
from delivery_audit_sim.generator.hostile import csv_cell as _csv_cell
from delivery_audit_sim.generator.hostile import csv_record as _csv_line
from fuzz.rows import DROPPABLE, KIND, Batch, Line, draw_mutations, joined, put_file, valid_row

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
    for i, kind in enumerate(draw_mutations(rnd, CSV_MUTATIONS)):
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
        written[put_file(tmp / f"part-{k}.csv", joined(lines), gz)] = lines
    return written
