"""How rows travel between detection's passes: one row format, one exchange per pass.

A pass ends by turning each of its rows into zero or more *routed rows* (:func:`emit`):
three routing columns ``_r1`` (string), ``_r2`` (string), ``_r3`` (int) and its kind's
payload, a struct column named after the kind (the other kinds' payloads null). The
routed rows are hash partitioned once by the routing columns (:func:`exchange`), and
every rule family of the next pass reads its kind from them (:func:`of_kind`).

Why: a subtree shared by several branches of a plan is planned, optimised and computed
once per branch. The exchanged rows are therefore a lazy local checkpoint (on local
disk, computed once, inside the job that first reads them): each branch starts from that
leaf, which keeps its hash partitioning, so a rule family whose windows partition by its
routing columns plus more (the consumer side routes by a routing int per (group, topic,
partition), :func:`placement`, and windows by it, the partition and the offset) needs no
exchange of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..sqlexpr import X


@dataclass(frozen=True)
class Kind:
    name: str  # the payload column
    fields: str  # the payload's struct fields, as DDL

    @property
    def type(self) -> str:
        return f"struct<{self.fields}>"


def emit(kinds: tuple[Kind, ...], kind: Kind, r1: X, r2: X, r3: X, payload: X) -> X:
    """One routed row of ``kind`` (a struct of the pass's row format)."""
    parts: list[X] = [S.lit("_r1"), r1.cast("string"), S.lit("_r2"), r2.cast("string"),
                      S.lit("_r3"), r3.cast("int")]
    for k in kinds:
        value = payload if k is kind else S.lit(None)
        parts += [S.lit(k.name), value.cast(k.type)]
    return S.fn("named_struct", *parts)


def emit_when(kinds: tuple[Kind, ...], condition: X, kind: Kind, r1: X, r2: X, r3: X,
              payload: X) -> X:
    """A routed row when ``condition`` holds, else null (dropped by :func:`routed`)."""
    return S.when(condition, emit(kinds, kind, r1, r2, r3, payload))


def routed(df: DataFrame, rows: list[X], more: list[X] | None = None) -> DataFrame:
    """Every row of ``df`` as the routed rows it emits: ``rows`` (null ones dropped) and
    ``more`` (arrays of routed rows), one Generate over the pass's output."""
    arrays = [S.fn("array", *rows)] if rows else []
    arrays += more or []
    all_rows = arrays[0] if len(arrays) == 1 else S.fn("concat", *arrays)
    return S.select(df, S.fn("inline", S.fn("array_compact", all_rows)))


def checkpoint(df: DataFrame) -> DataFrame:
    """``df`` as a leaf of the plans that read it: computed once, on local disk, inside the
    job that first reads it (a lazy local checkpoint); its partitioning and order kept."""
    return df.localCheckpoint(eager=False, storageLevel=StorageLevel.DISK_ONLY)


def exchange(df: DataFrame) -> DataFrame:
    """The pass's one shuffle: routed rows hash partitioned by their routing columns, as a
    leaf every branch of the next pass shares."""
    return checkpoint(df.repartition(F.col("_r1"), F.col("_r2"), F.col("_r3")))


def of_kind(exchanged: DataFrame, kind: Kind) -> DataFrame:
    """The rows of one kind after the exchange: the routing columns and its payload's
    fields."""
    return (exchanged.filter(F.col(kind.name).isNotNull())
            .selectExpr("_r1", "_r2", "_r3", f"{kind.name}.*"))


# routing buckets of a spread-out value: enough to spread a pass over many tasks, few
# enough that a window over a bucket (not over each value) holds many rows
BUCKETS = 1024


def route_hash(*cols: str) -> X:
    """A routing value spreading rows by these columns (a bucket, 0 to BUCKETS − 1): rows
    with the same values share a bucket."""
    return S.raw(f"pmod(hash({', '.join(cols)}), {BUCKETS})")


# --- placement: each routing key on a task of its own -----------------------------------
# The consumer side's rows go to pass 2 by (group, topic, partition): a few dozen keys of up
# to millions of rows each. Hashed into the shuffle's partitions, several land in one task
# (26 keys in 44 tasks at 10M: tasks of 2–3 Kafka partitions, 2.6 GiB of sorts, spilled).
# Spark's hash partitioning sends a row to pmod(hash(routing columns), n); with the two
# string routing columns null, that is pmod(hash(_r3), n) (a null leaves the hash's seed
# as it is): a routing int chosen for its hash puts each key on the task chosen for it.

_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash`` of one int column (Murmur3_x86_32.hashInt with Spark's seed 42), as
    a signed 32-bit int."""
    k1 = _rotl((value & _M32) * 0xCC9E2D51 & _M32, 15) * 0x1B873593 & _M32
    h1 = _rotl(seed & _M32 ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def placement(weights: dict[tuple, int], tasks: int) -> dict[tuple, int]:
    """A routing int per key: the heaviest keys first, each on the least loaded of
    ``tasks`` tasks (distinct tasks while there are as many tasks as keys); the ints are
    distinct, each one whose hash partition is its key's task."""
    ints: dict[int, list[int]] = {t: [] for t in range(tasks)}  # per task, its ints found
    need = {t: 0 for t in range(tasks)}
    load = [(0, t) for t in range(tasks)]
    chosen: dict[tuple, int] = {}
    for key in sorted(weights, key=lambda k: (-weights[k], k)):
        w, task = min(load)
        load[task] = (w + max(1, weights[key]), task)
        need[task] += 1
        chosen[key] = task
    value = 0
    while any(len(ints[t]) < need[t] for t in range(tasks)):
        task = spark_hash_int(value) % tasks
        if len(ints[task]) < need[task]:
            ints[task].append(value)
        value += 1
    return {key: ints[task].pop() for key, task in chosen.items()}


def placed(placements: dict[tuple[str, str, int], int], group: X, topic: X,
           partition: X) -> X:
    """The routing int of a (group, topic, partition) (:func:`placement`); a key not placed
    gets a hash of its own (any task)."""
    fallback = S.fn("hash", group, topic, partition)
    if not placements:
        return fallback
    table = S.map_literal(
        [(S.struct(g=g, t=t, p=S.lit(p)), v) for (g, t, p), v in sorted(placements.items())],
        "map<struct<g:string,t:string,p:int>,int>")
    return S.coalesce(S.fn("try_element_at", table, S.struct(g=group, t=topic, p=partition)),
                      fallback)
