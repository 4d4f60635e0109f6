"""Where in each partition's offset range the lost, skipped and duplicated records sit.

For report.html's offset strips: per (topic, partition) with such anomalies, the units of
each anomaly binned over the partition's offsets, from the staged anomaly table (pyarrow,
after the audit's one write: no Spark job) and the dump ranges ingestion already collected
(``Facts.ranges``). The span drawn covers the dump's range [log start, end) and every marked
offset (``expired_unconsumed`` offsets lie below the log start).

Offsets marked: ``lost_acked`` the acked offset with no record; ``expired_unconsumed`` the
acked offset deleted by retention; ``skipped`` the record the group went past;
``dup_write`` the extra copy; ``redelivery`` the record processed again.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

STRIP_ANOMALIES: tuple[str, ...] = (
    "lost_acked", "expired_unconsumed", "skipped", "dup_write", "redelivery")
BINS = 240
MAX_PARTITIONS = 24
MAX_GROUPS_LISTED = 5


def _sorted_lanes(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: (STRIP_ANOMALIES.index(n) if n in STRIP_ANOMALIES
                                        else len(STRIP_ANOMALIES), n))


def _lane(rows: pa.Table, lo: int, span: int, bins: int) -> list[dict[str, Any]]:
    rel = pc.subtract(rows["offset"], pa.scalar(lo, pa.int64())).cast(pa.float64())
    b = pc.floor(pc.multiply(pc.divide(rel, float(span)), float(bins))).cast(pa.int64())
    b = pc.min_element_wise(pc.max_element_wise(b, 0), bins - 1)
    binned = pa.table({"bin": b, "units": rows["units"], "offset": rows["offset"],
                       "group_id": rows["group_id"]})
    agg = binned.group_by("bin").aggregate([
        ("units", "sum"), ("offset", "min"), ("offset", "max"), ("group_id", "distinct")])
    out = []
    for r in sorted(agg.to_pylist(), key=lambda r: r["bin"]):
        groups = sorted(g for g in r["group_id_distinct"] if g is not None)
        out.append({"bin": int(r["bin"]), "units": int(r["units_sum"]),
                    "from": int(r["offset_min"]), "to": int(r["offset_max"]),
                    "groups": groups[:MAX_GROUPS_LISTED], "group_count": len(groups)})
    return out


def partition_offsets(table: pa.Table, ranges: dict[tuple[str, int], tuple[int, int]]
                      | None = None, max_partitions: int = MAX_PARTITIONS,
                      bins: int = BINS, log_starts: dict[tuple[str, int], int] | None = None
                      ) -> dict[str, Any]:
    """The strips' data (JSON-safe) from anomaly rows (the columns of the anomaly table;
    other anomalies are ignored): ``partitions`` (the ``max_partitions`` with the most units,
    in (topic, partition) order), ``partitions_total``, ``bins``. ``log_starts``: an offsets
    file's (rule 26), where the dump range starts at its ``read_from`` instead: a partition
    whose log start differs from its range's start also gets ``read_from``."""
    ranges, log_starts = ranges or {}, log_starts or {}
    keep = pc.and_(pc.is_in(table["anomaly"], pa.array(STRIP_ANOMALIES)),
                   pc.and_(pc.is_valid(table["offset"]), pc.is_valid(table["partition"])))
    rows = table.filter(keep).select(["anomaly", "topic", "partition", "offset", "units",
                                      "group_id"])
    rows = rows.filter(pc.is_valid(rows["topic"]))
    if rows.num_rows == 0:
        return {"partitions": [], "partitions_total": 0, "bins": bins}
    totals = rows.group_by(["topic", "partition"]).aggregate([
        ("units", "sum"), ("offset", "min"), ("offset", "max")]).to_pylist()
    totals.sort(key=lambda r: (-r["units_sum"], r["topic"], r["partition"]))
    shown = sorted(totals[:max_partitions], key=lambda r: (r["topic"], r["partition"]))
    out = []
    for t in shown:
        topic, part = t["topic"], int(t["partition"])
        dump = ranges.get((topic, part))
        lo = min(t["offset_min"], dump[0]) if dump else t["offset_min"]
        hi = max(t["offset_max"] + 1, dump[1]) if dump else t["offset_max"] + 1
        span = max(hi - lo, 1)
        mine = rows.filter(pc.and_(pc.equal(rows["topic"], topic),
                                   pc.equal(rows["partition"], part)))
        lanes = []
        for name in _sorted_lanes(pc.unique(mine["anomaly"]).to_pylist()):
            lane_rows = mine.filter(pc.equal(mine["anomaly"], name))
            lanes.append({"anomaly": name, "units": int(pc.sum(lane_rows["units"]).as_py()),
                          "bins": _lane(lane_rows, lo, span, bins)})
        start = log_starts.get((topic, part), dump[0]) if dump else None
        out.append({"topic": topic, "partition": part, "lo": lo, "hi": hi,
                    "log_start": start, "end": dump[1] if dump else None,
                    "units": int(t["units_sum"]), "lanes": lanes,
                    **({"read_from": dump[0]} if dump and start != dump[0] else {})})
    return {"partitions": out, "partitions_total": len(totals), "bins": bins}
