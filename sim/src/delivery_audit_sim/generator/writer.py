"""Writers for the four canonical sources: JSON Lines (fast, vectorised) or Parquet.

JSONL rows are built column-wise with pyarrow string kernels and written from
the resulting buffer, so no Python object is created per row.  Timestamps are
ISO-8601 with milliseconds and a ``Z``; null fields are omitted from the JSON
object (a missing optional field means null, contract §2).
"""

from __future__ import annotations

import datetime as dt
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

TS = pa.timestamp("ms", tz="UTC")

SCHEMAS: dict[str, pa.Schema] = {
    "sends": pa.schema([
        ("send_ts", TS), ("topic", pa.string()), ("key", pa.string()), ("seq", pa.int64()),
        ("status", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("ack_ts", TS), ("attempt", pa.int32()), ("producer_id", pa.string()),
        ("idempotent", pa.bool_()), ("error", pa.string()),
    ]),
    "broker": pa.schema([
        ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("key", pa.string()), ("seq", pa.int64()), ("timestamp", TS),
        ("producer_id", pa.string()), ("pid", pa.int64()), ("producer_epoch", pa.int32()),
        ("batch_sequence", pa.int32()),
    ]),
    "ledger": pa.schema([
        ("group_id", pa.string()), ("member_id", pa.string()), ("topic", pa.string()),
        ("partition", pa.int32()), ("offset", pa.int64()), ("key", pa.string()),
        ("seq", pa.int64()), ("started_ts", TS), ("finished_ts", TS), ("outcome", pa.string()),
        ("generation", pa.int32()),
    ]),
    "events": pa.schema([
        ("group_id", pa.string()), ("member_id", pa.string()), ("ts", TS),
        ("event", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
        ("offset", pa.int64()), ("generation", pa.int32()), ("detail", pa.string()),
    ]),
}

# contract §9 fields, written only by transactional scenarios (the others' files stay as they were)
TXN_FIELDS: dict[str, list[tuple[str, pa.DataType]]] = {
    "sends": [("transactional_id", pa.string())],
    "broker": [("transactional", pa.bool_()), ("control", pa.string())],
    "ledger": [("isolation", pa.string())],
    "events": [],
}


def schema_of(source: str, txn: bool = False) -> pa.Schema:
    schema = SCHEMAS[source]
    for name, typ in TXN_FIELDS[source] if txn else []:
        schema = schema.append(pa.field(name, typ))
    return schema


_FORBIDDEN = ('"', "\\", "\n", "\r", "\t")


@lru_cache(maxsize=1)
def _time_tables() -> tuple[pa.Array, pa.Array]:
    hms = pa.array([f"T{h:02d}:{m:02d}:{s:02d}." for h in range(24) for m in range(60)
                    for s in range(60)])
    ms = pa.array([f"{i:03d}Z" for i in range(1000)])
    return hms, ms


def iso_strings(ms: np.ndarray) -> pa.Array:
    """Epoch ms → 'YYYY-MM-DDTHH:MM:SS.mmmZ' strings, vectorised."""
    ms = np.asarray(ms, dtype=np.int64)
    hms, mss = _time_tables()
    day = ms // 86_400_000
    rem = ms - day * 86_400_000
    if len(ms) == 0:
        return pa.array([], pa.string())
    d0 = int(day.min())
    dates = pa.array([(dt.date(1970, 1, 1) + dt.timedelta(days=d)).isoformat()
                      for d in range(d0, int(day.max()) + 1)])
    return pc.binary_join_element_wise(dates.take(pa.array(day - d0)),
                                       hms.take(pa.array(rem // 1000)),
                                       mss.take(pa.array(rem % 1000)), "")


def _text(col: pa.Array) -> pa.Array:
    """The JSON text of each value (null where the value is null)."""
    t = col.type
    if pa.types.is_timestamp(t):
        ms = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        txt = pc.binary_join_element_wise('"', iso_strings(ms), '"', "")
    elif pa.types.is_string(t):
        return pc.binary_join_element_wise('"', col, '"', "")
    elif pa.types.is_boolean(t):
        txt = pc.if_else(col.fill_null(False), "true", "false")
    else:
        return pc.cast(col, pa.string())
    if col.null_count:
        txt = pc.if_else(col.is_valid(), txt, pa.scalar(None, pa.string()))
    return txt


def jsonl_bytes(table: pa.Table) -> memoryview:
    """One JSON object per row; null fields are left out."""
    if table.num_rows == 0:
        return memoryview(b"")
    table = table.combine_chunks()
    parts: list = []
    for i, name in enumerate(table.column_names):
        col = table.column(i).chunk(0)
        prefix = ("{" if i == 0 else ",") + json.dumps(name) + ":"
        txt = _text(col)
        if col.null_count == 0:
            parts += [prefix, txt]
        elif i == 0:
            raise ValueError(f"first JSONL column {name} must not be null")
        else:
            parts.append(pc.binary_join_element_wise(prefix, txt, ""))
    opts = pc.JoinOptions(null_handling="replace", null_replacement="")
    line = pc.binary_join_element_wise(*parts, "}\n", "", options=opts)
    line = line.cast(pa.large_string())
    offsets = np.frombuffer(line.buffers()[1], dtype=np.int64)
    lo, hi = int(offsets[line.offset]), int(offsets[line.offset + len(line)])
    return memoryview(line.buffers()[2])[lo:hi]


def check_strings(rows: list[dict[str, Any]]) -> None:
    """Generated free text must not need JSON escaping (the fast writer does none)."""
    for row in rows:
        for v in row.values():
            if isinstance(v, str) and any(c in v for c in _FORBIDDEN):
                raise ValueError(f"string needs escaping: {v!r}")


class Writer:
    def __init__(self, out: Path, fmt: str, txn: bool = False) -> None:
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"fmt must be 'jsonl' or 'parquet', not {fmt!r}")
        self.out = out
        self.fmt = fmt
        self.txn = txn
        self.rows_written: dict[str, int] = {s: 0 for s in SCHEMAS}
        for s in SCHEMAS:
            (out / s).mkdir(parents=True, exist_ok=True)

    def write(self, source: str, part: str, table: pa.Table) -> None:
        schema = schema_of(source, self.txn)
        for f in schema:
            if f.name not in table.column_names:
                table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
        table = table.select(schema.names).cast(schema)
        self.rows_written[source] += table.num_rows
        path = self.out / source / f"part-{part}.{self.fmt}"
        if self.fmt == "parquet":
            pq.write_table(table, path, compression="snappy")
        else:
            with path.open("wb") as fh:
                for lo in range(0, table.num_rows, 250_000):
                    fh.write(jsonl_bytes(table.slice(lo, 250_000)))


def table_from_rows(source: str, rows: list[dict[str, Any]], txn: bool = False) -> pa.Table:
    schema = schema_of(source, txn)
    cols = {}
    for f in schema:
        vals = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            cols[f.name] = pa.array(vals, pa.int64()).cast(f.type)
        else:
            cols[f.name] = pa.array(vals, f.type)
    return pa.table(cols, schema=schema)


def write_config(out: Path, sim, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """config.yaml: grace, dense_seq, the groups' settings and topics, then a scenario's own
    top-level settings (``extra``, e.g. transaction_timeout_ms)."""
    groups = {}
    for g in sim.groups:
        d = dict(g.settings)
        d["topics"] = list(g.topics)
        groups[g.group_id] = d
    cfg = {"grace_minutes": 60, "dense_seq": True, "groups": groups, **(extra or {})}
    (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return cfg
