"""The consumer pass's sweep of a (group, topic, partition) in start order, streamed.

Each attempt gets what the attempts around it in start order say (consumer.py reads them:
concurrent_processing's candidates, handovers):

* ``before_end``: the latest end (finish, or start without one) of the attempts before it;
* ``after_start``: the next attempt's start;
* ``peers`` / ``peers_end``: how many attempts start at the same instant, their latest end;
* ``prev_any_member`` / ``prev_any_f``: the attempt just before it (its member, its end in
  epoch milliseconds);
* ``max_seen``: the highest offset of a first successful processing of its key before it
  (process_reorder, rule 16: ordering.py).

As windows over the partition, Spark buffers a whole Kafka partition in each task
(``WindowExec``): a 1M-row partition needed ~1.1 GiB and spilled. Here the task's rows,
sorted by (group, topic, partition, start, offset, member, finish), stream through
``mapInArrow`` in Arrow batches: a batch's figures are vectorised (numpy), and only the
batch's trailing run of attempts starting at one instant is held for the next batch (its
``peers`` and the next start are not known yet), with the partition's running figures and
its keys' highest first successes. Memory: a batch, that run and a map of the partition's
keys, however many rows the partition holds.

The functions here import only numpy and pyarrow: they run in Spark's Python workers,
shipped by value (:func:`sweep`), so a worker imports neither pyspark.sql nor the engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PART = ("group_id", "topic", "partition")  # a Kafka partition of a group
ORDER = ("started_ts", "offset", "member_id", "finished_ts")
# the columns the sweep adds, as Spark DDL (in this order)
ADDED = ("before_end timestamp, after_start timestamp, peers bigint, peers_end timestamp, "
         "prev_any_member string, prev_any_f bigint, max_seen bigint")
_NONE = np.iinfo(np.int64).min  # "no end seen yet" in the running maximum


def _us(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A timestamp column as epoch microseconds (int64; nulls as _NONE)."""
    return pc.fill_null(arr.cast(pa.timestamp("us", arr.type.tz)).cast(pa.int64()),
                        _NONE).to_numpy(zero_copy_only=False)


def _new_part(tbl: pa.Table) -> np.ndarray:
    """True where a row starts another (group, topic, partition) than the row before it
    (the first row: True)."""
    n = tbl.num_rows
    change = np.zeros(n, dtype=bool)
    change[:1] = True
    for name in PART:
        col = tbl.column(name)
        if n > 1:
            diff = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True)
            change[1:] |= diff.to_numpy(zero_copy_only=False)
    return change


class _Carry:
    """What the rows already emitted leave the next ones: the partition they were in, its
    latest end, the last attempt's member and end, and its keys' highest first successes."""

    def __init__(self) -> None:
        self.part: tuple | None = None
        self.max_end = _NONE
        self.member: str | None = None
        self.end = _NONE
        # per key of the partition (its text; None: the null key): the highest offset of its first
        # successful processings so far (process_reorder's running maximum)
        self.seen: dict[str | None, int] = {}


def _segmented_max_before(groups: np.ndarray, values: np.ndarray) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """For rows sorted by group (``groups`` ascending), the highest value of the rows before
    each in its group (_NONE for the first), and up to and including it: a running maximum
    over all rows of the values' ranks shifted by group, so that it restarts per group."""
    uniq, rank = np.unique(values, return_inverse=True)
    width = len(uniq) + 1
    upto = uniq[np.maximum.accumulate(groups * width + rank) - groups * width]
    before = np.empty(len(values), dtype=np.int64)
    before[:1] = _NONE
    before[1:] = upto[:-1]
    before[np.append(True, groups[1:] != groups[:-1])] = _NONE
    return before, upto


def _max_seen(tbl: pa.Table, keep: int, seg: np.ndarray, continues: bool,
              carry: _Carry) -> np.ndarray:
    """Per kept row, the highest offset of a first successful processing of its key before
    it in its partition (process_reorder, rule 16); ``carry.seen`` then holds the last
    partition's keys. Per batch, only C loops touch its keys (the dictionary's, a map of
    ``dict.get``, ``dict.update``): no Python statement per key."""
    key_v = pc.dictionary_encode(tbl.column("key_v").slice(0, keep)).combine_chunks()
    text = key_v.dictionary.to_numpy(zero_copy_only=False)  # Python strings, made in C
    width = max(len(text), 1)
    code = key_v.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    null = pc.fill_null(tbl.column("key_null").slice(0, keep), False).to_numpy(
        zero_copy_only=False).astype(np.int64)
    first = pc.fill_null(tbl.column("first_success").slice(0, keep), False).to_numpy(
        zero_copy_only=False)
    offset = pc.fill_null(tbl.column("offset").slice(0, keep), _NONE).to_numpy(
        zero_copy_only=False)
    # (partition, key) ids: the key's text and whether it is the null key
    keys, group = np.unique((seg[:keep] * width + code) * 2 + null, return_inverse=True)
    order = np.argsort(group, kind="stable")
    before, upto = _segmented_max_before(group[order], np.where(first, offset, _NONE)[order])
    segment = (keys >> 1) // width  # ascending, as keys are

    def texts(lo: int, hi: int) -> np.ndarray:  # the keys' texts; None: the null key
        part = keys[lo:hi]
        out = text[(part >> 1) % width]
        out[(part & 1).astype(bool)] = None
        return out

    if continues and carry.seen:  # the first partition goes on from the carried keys
        n0 = int(np.searchsorted(segment, 1))
        carried = np.full(len(keys), _NONE, dtype=np.int64)
        carried[:n0] = np.fromiter(map(carry.seen.get, texts(0, n0), repeat(_NONE)),
                                   dtype=np.int64, count=n0)
        before = np.maximum(before, carried[group[order]])
        upto = np.maximum(upto, carried[group[order]])
    out = np.empty(keep, dtype=np.int64)
    out[order] = before
    # the last partition's keys: their highest so far (the last row of each in key order)
    last = int(seg[keep - 1])
    if not (continues and last == 0):
        carry.seen = {}
    ends = np.append(group[order][1:] != group[order][:-1], True)
    lo = int(np.searchsorted(segment, last))
    highest = upto[ends][lo:]
    found = highest != _NONE
    carry.seen.update(zip(compress(texts(lo, len(keys)), found.tolist()),
                          highest[found].tolist(), strict=True))
    return out


def _figures(tbl: pa.Table, carry: _Carry, final: bool) -> tuple[pa.Table, pa.Table]:
    """The rows of ``tbl`` whose figures are known, with them; and the rows held back (the
    trailing run of one start instant, unless ``final``)."""
    n = tbl.num_rows
    start = _us(tbl.column("started_ts"))
    fin = _us(tbl.column("finished_ts"))
    end = np.where(fin == _NONE, start, fin)
    seg_start = _new_part(tbl)
    first = tuple(tbl.column(c)[0].as_py() for c in PART)
    continues = carry.part is not None and first == carry.part
    seg_start[0] = not continues
    seg = np.cumsum(seg_start) - int(seg_start[0])  # the row's partition in the table: 0, 1, …
    run_start = seg_start.copy()
    run_start[0] = True  # the rows before are another run: a held run starts the table
    run_start[1:] |= start[1:] != start[:-1]
    # hold back the last run (one partition, one start): its peers and next start are unknown
    keep = n if final else int(np.flatnonzero(run_start)[-1])
    if keep == 0:
        return tbl.slice(0, 0), tbl
    # peers: the run's size and latest end, over the kept rows' runs (all complete)
    run_id = np.cumsum(run_start[:keep]) - 1
    bounds = np.flatnonzero(run_start[:keep])
    peers = np.diff(np.append(bounds, keep))[run_id]
    peers_end = np.maximum.reduceat(end[:keep], bounds)[run_id]
    # the latest end before each row and up to it, in its partition (the first one goes
    # on from the carried latest end)
    before, upto = _segmented_max_before(seg, end)
    if continues:
        first_seg = seg == 0
        before[first_seg] = np.maximum(before[first_seg], carry.max_end)
        upto[first_seg] = np.maximum(upto[first_seg], carry.max_end)
    # the attempt before (lag) and after (lead) in the same partition
    prev_end = np.empty(n, dtype=np.int64)
    prev_end[0] = carry.end
    prev_end[1:] = end[:-1]
    prev_end[seg_start] = _NONE  # a partition's first row (row 0 too, unless it goes on)
    # the member before: index 0 of ``members`` is the carried member, row i's is i
    members = pa.concat_arrays([pa.array([carry.member], pa.string()),
                                *tbl.column("member_id").chunks])
    next_start = np.empty(n, dtype=np.int64)
    next_start[:-1] = start[1:]
    next_start[np.append(seg_start[1:], True)] = _NONE  # a partition's last row
    max_seen = _max_seen(tbl, keep, seg, continues, carry)
    # state after the kept rows
    carry.part = tuple(tbl.column(c)[keep - 1].as_py() for c in PART)
    carry.max_end = int(upto[keep - 1])
    carry.member = members[keep].as_py()
    carry.end = int(end[keep - 1])

    ts_type = tbl.column("started_ts").type
    k = slice(0, keep)

    def ts(values: np.ndarray) -> pa.Array:
        return pa.array(values[k], type=pa.int64(), mask=values[k] == _NONE).cast(ts_type)

    members_out = members.take(pa.array(np.arange(keep), mask=seg_start[k]))
    prev_f = prev_end[k]
    out = tbl.slice(0, keep)
    for name, arr in (
            ("before_end", ts(before)), ("after_start", ts(next_start)),
            ("peers", pa.array(peers, type=pa.int64())), ("peers_end", ts(peers_end)),
            ("prev_any_member", members_out),
            ("prev_any_f", pa.array(np.floor_divide(prev_f, 1000), type=pa.int64(),
                                    mask=prev_f == _NONE)),
            ("max_seen", pa.array(max_seen, type=pa.int64(), mask=max_seen == _NONE))):
        out = out.append_column(name, arr)
    return out, tbl.slice(keep)


def sweep(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every row of the task's batches with the figures of its place in start order (rows
    arrive sorted by :data:`PART` + :data:`ORDER`)."""
    carry = _Carry()
    held: pa.Table | None = None
    for batch in batches:
        tbl = pa.Table.from_batches([batch])
        if held is not None and held.num_rows:
            tbl = pa.concat_tables([held, tbl])
        if not tbl.num_rows:
            continue
        out, held = _figures(tbl, carry, final=False)
        yield from out.to_batches()
    if held is not None and held.num_rows:
        out, _ = _figures(held, carry, final=True)
        yield from out.to_batches()
