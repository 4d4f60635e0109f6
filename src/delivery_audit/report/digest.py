"""The published anomaly table read back for the narrative, with pyarrow (no Spark).

report.json holds counts; the narrative also needs *when* (the first and last row of a
cause), *where* (partitions and offset ranges), *who* (members) and a few splits that only
the rows show (a skipped record that had failed attempts was given up by its handler; one
without any was committed past). :class:`Digest` holds the table's columns the narrative
reads (instants as epoch milliseconds) and answers those questions with vectorised
filters, so it stays cheap for an anomaly table of millions of rows.

``Digest.from_parquet`` reads the table as the audit staged or published it;
``Digest.from_rows`` builds one from plain dicts (tests; rows with ``ts`` as ISO text,
datetimes or epoch ms).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..anomaly_table import read_anomalies
from ..core.timefmt import epoch_ms

ANY: Any = ...  # a filter value meaning "whatever it is" (None means "null")

SCHEMA = pa.schema([
    ("anomaly", pa.string()), ("cause", pa.string()), ("group_id", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("member_id", pa.string()), ("related_member_id", pa.string()), ("units", pa.int64()),
    ("t", pa.int64()),  # the row's ts as epoch milliseconds
    # contract §9's evidence (txn_evidence.py reads it)
    ("related_offset", pa.int64()), ("rt", pa.int64()),  # related_ts as epoch ms
    ("attempts", pa.int64()), ("detail", pa.string()),
])
_RECORD = ["group_id", "topic", "partition", "offset"]


def _ms(value: Any) -> int | None:
    """Epoch ms as given, or an instant (datetime or ISO text) as epoch ms."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    return epoch_ms(value)


def _epoch_ms(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A timestamp column as epoch ms; Spark's naive timestamps are UTC instants."""
    if pa.types.is_timestamp(col.type):
        return col.cast(pa.timestamp("ms", col.type.tz), safe=False).cast(pa.int64())
    return col.cast(pa.int64())


class Digest:
    """Anomaly rows (the columns of :data:`SCHEMA`) and the questions the narrative asks."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    # ------------------------------------------------------------------ building

    @classmethod
    def empty(cls) -> Digest:
        return cls(SCHEMA.empty_table())

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> Digest:
        data = []
        for r in rows:
            row = {f.name: r.get(f.name) for f in SCHEMA}
            row["t"] = _ms(r.get("ts", r.get("t")))
            row["rt"] = _ms(r.get("related_ts", r.get("rt")))
            row["units"] = int(r.get("units", 1))
            data.append(row)
        return cls(pa.Table.from_pylist(data, schema=SCHEMA))

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> Digest:
        """Rows made from report.json's counts alone, for a report whose table cannot be
        read: no instants or offsets; a cause, topic or group only where the counts name a
        single one (``by_cause`` is not broken down by topic)."""
        rows: list[dict[str, Any]] = []
        for name, a in (report.get("anomalies") or {}).items():
            if not isinstance(a, dict) or not int(a.get("count") or 0):
                continue
            topics = [t for t, v in (a.get("by_topic") or {}).items() if v]
            groups = [g for g, v in (a.get("by_group") or {}).items() if v]
            one_topic = topics[0] if len(topics) == 1 else None
            one_group = groups[0] if len(groups) == 1 else None
            if a.get("by_cause"):
                rows += [{"anomaly": name, "cause": c, "topic": one_topic, "group_id": one_group,
                          "units": int(v)} for c, v in a["by_cause"].items() if v]
            elif groups:
                rows += [{"anomaly": name, "group_id": g, "topic": one_topic, "units": int(v)}
                         for g, v in a["by_group"].items() if v]
            elif topics:
                rows += [{"anomaly": name, "topic": t, "units": int(v)}
                         for t, v in a["by_topic"].items() if v]
            else:
                rows.append({"anomaly": name, "units": int(a["count"])})
        return cls.from_rows(rows)

    @classmethod
    def from_table(cls, table: pa.Table) -> Digest:
        """The anomaly table as ``anomaly_table.read_anomalies`` returns it."""
        cols = {}
        for f in SCHEMA:
            if f.name in ("t", "rt"):
                src = "ts" if f.name == "t" else "related_ts"
                cols[f.name] = (_epoch_ms(table[src]) if src in table.column_names
                                else pa.nulls(table.num_rows, pa.int64()))
            elif f.name in table.column_names:
                cols[f.name] = table[f.name].cast(f.type)
            else:
                cols[f.name] = pa.nulls(table.num_rows, f.type)
        return cls(pa.table(cols, schema=SCHEMA))

    @classmethod
    def from_parquet(cls, path: str | Path) -> Digest:
        """The anomaly table at ``path`` (a folder of Parquet files); an absent or
        unreadable table is an empty digest (the narrative then says less, never fails)."""
        try:
            return cls.from_table(read_anomalies(path))
        except (OSError, ValueError, pa.ArrowException):
            return cls.empty()

    # ------------------------------------------------------------------ filters

    def where(self, anomaly: str | Iterable[str] = ANY, *, cause: Any = ANY, group: Any = ANY,
              topic: Any = ANY, since: int | None = None, until: int | None = None
              ) -> Digest:
        """The rows matching every given filter (``None`` matches a null value; ``since`` /
        ``until``: epoch ms, inclusive, on the row's ts; a row without ts never matches)."""
        t = self.table
        mask = None

        def both(m):
            return m if mask is None else pc.and_(mask, m)

        for col, value in (("anomaly", anomaly), ("cause", cause), ("group_id", group),
                           ("topic", topic)):
            if value is ANY:
                continue
            if value is None:
                mask = both(pc.is_null(t[col]))
            elif isinstance(value, str):
                mask = both(pc.fill_null(pc.equal(t[col], value), False))
            else:
                mask = both(pc.fill_null(pc.is_in(t[col], pa.array(list(value), pa.string())),
                                         False))
        if since is not None:
            mask = both(pc.fill_null(pc.greater_equal(t["t"], since), False))
        if until is not None:
            mask = both(pc.fill_null(pc.less_equal(t["t"], until), False))
        return self if mask is None else Digest(t.filter(mask))

    def retried(self, retries: Digest, retried: bool = True) -> Digest:
        """The rows whose record (group, topic, partition, offset) has a row in
        ``retries`` (the ``retry_after_failure`` rows: processing failed on it before;
        ``retried=True``), or has none (``False``)."""
        keys = retries.table.select(_RECORD).group_by(_RECORD).aggregate([])
        how = "left semi" if retried else "left anti"
        return Digest(self.table.join(keys, keys=_RECORD, join_type=how)
                      .select(SCHEMA.names))

    # ------------------------------------------------------------------ answers

    def __len__(self) -> int:
        return self.table.num_rows

    def units(self) -> int:
        s = pc.sum(self.table["units"]).as_py()
        return int(s or 0)

    def span(self) -> tuple[int | None, int | None]:
        """The first and last ts (epoch ms) of the rows; (None, None) when none has one."""
        mm = pc.min_max(self.table["t"]).as_py()
        return mm["min"], mm["max"]

    def by(self, column: str) -> dict[Any, int]:
        """Units per value of ``column`` (nulls under None), largest first."""
        if not len(self):
            return {}
        agg = self.table.group_by([column]).aggregate([("units", "sum")]).to_pylist()
        rows = sorted(agg, key=lambda r: (-int(r["units_sum"] or 0), str(r[column])))
        return {r[column]: int(r["units_sum"] or 0) for r in rows}

    def by_scope(self) -> list[dict[str, Any]]:
        """Units per (group, topic), in that order."""
        if not len(self):
            return []
        agg = self.table.group_by(["group_id", "topic"]).aggregate([("units", "sum")])
        return [{"group": r["group_id"], "topic": r["topic"], "units": int(r["units_sum"])}
                for r in sorted(agg.to_pylist(),
                                key=lambda r: (str(r["group_id"]), str(r["topic"])))]

    def values(self, column: str) -> list[Any]:
        """The distinct non-null values of ``column``, sorted."""
        return sorted(v for v in pc.unique(self.table[column]).to_pylist() if v is not None)

    def ranges(self, limit: int = 4) -> list[dict[str, Any]]:
        """Per (topic, partition) with rows at an offset: the offset range and units, the
        partitions with the most units first (at most ``limit``)."""
        t = self.table.filter(pc.is_valid(self.table["offset"]))
        if not t.num_rows:
            return []
        agg = t.group_by(["topic", "partition"]).aggregate(
            [("offset", "min"), ("offset", "max"), ("units", "sum")]).to_pylist()
        agg.sort(key=lambda r: (-int(r["units_sum"]), str(r["topic"]), r["partition"] or 0))
        return [{"topic": r["topic"], "partition": r["partition"], "from": r["offset_min"],
                 "to": r["offset_max"], "units": int(r["units_sum"])} for r in agg[:limit]]
