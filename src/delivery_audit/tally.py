"""Many small counting tables, one aggregation: a :class:`Tally` is a table of sums, minima
and maxima per group of rows; :func:`collect_tallies` computes any number of them in ONE
Spark job with ONE exchange (and one more per ``narrow`` table: about a group per row).

Why not a ``groupBy`` per table (``collect.collect_all`` of aggregations): each is an
exchange and a stage of its own, and Catalyst plans each one. Ingestion's accounting, the
input metrics and detection's facts are ~20 such tables over the same four sources: as
aggregations they made a job of 21 stages and 20 exchanges whose planning cost more than
its work on a small day. Here each source's rows are read once; every row emits one narrow
row per table it counts in (the table's name, its group's keys in typed slots, the values
to add up); one hash aggregation groups them all (partial aggregation in each task, so the
exchange carries about one row per group and task).

Semantics are SQL's: a sum or count over no rows of a keyed table is no row; a table
without keys always has exactly one row (counts 0, minima and maxima None); sums and counts
come back as ints, never None.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def one() -> Column:
    """A value for :attr:`Tally.sums` counting every row."""
    return F.lit(1)


def count_where(condition: Column) -> Column:
    """A value for :attr:`Tally.sums` counting the rows where ``condition`` holds (null:
    not)."""
    return F.when(condition, F.lit(1)).otherwise(F.lit(0))


@dataclass(frozen=True, eq=False)
class Tally:
    """Rows of ``frame`` where ``where`` holds, grouped by ``keys`` (strings) and
    ``int_keys`` (integers); per group the sum of each of ``sums`` (a count: :func:`one` or
    :func:`count_where`), the minimum of each of ``mins`` and the maximum of each of
    ``maxs`` (integers: epoch ms for times). ``at_least``: keep only groups whose sum of
    that name is at least n (SQL's HAVING). ``narrow``: a table of about one group per row
    (rule 5's fingerprints) is aggregated on its own, in rows of only its columns, still in
    the same Spark job (its rows in the shared aggregation would each carry every table's
    slots)."""

    name: str
    frame: DataFrame
    where: Column | None = None
    keys: dict[str, Column] = field(default_factory=dict)
    int_keys: dict[str, Column] = field(default_factory=dict)
    sums: dict[str, Column] = field(default_factory=dict)
    mins: dict[str, Column] = field(default_factory=dict)
    maxs: dict[str, Column] = field(default_factory=dict)
    at_least: tuple[str, int] | None = None
    narrow: bool = False

    def row(self, slots: _Slots, shared: dict[str, Column]) -> Column:
        """This table's narrow row of one input row (null when ``where`` does not hold).
        Slot names and typed nulls come from ``shared`` (Column objects reused by every
        table: each Column costs a call into the JVM); a value keeps its own type, which
        the array of rows widens (int to bigint)."""
        def fill(prefix: str, n: int, values: Iterable[Column], kind: str) -> list[Column]:
            vs = list(values)
            out: list[Column] = []
            for i in range(n):
                name = f"{prefix}{i}"
                if name not in shared:
                    shared[name] = F.lit(name)
                if kind not in shared:
                    shared[kind] = F.lit(None).cast(kind)
                out += [shared[name], vs[i] if i < len(vs) else shared[kind]]
            return out
        if "_t" not in shared:
            shared["_t"] = F.lit("_t")
        row = F.named_struct(
            shared["_t"], F.lit(self.name),
            *fill("k", slots.keys, self.keys.values(), "string"),
            *fill("i", slots.int_keys, self.int_keys.values(), "bigint"),
            *fill("s", slots.sums, self.sums.values(), "bigint"),
            *fill("m", slots.mins, self.mins.values(), "bigint"),
            *fill("x", slots.maxs, self.maxs.values(), "bigint"))
        return row if self.where is None else F.when(self.where, row)

    def groups(self, slots: _Slots) -> DataFrame:
        """A ``narrow`` table's groups, aggregated on their own, in the slots' columns."""
        df = self.frame if self.where is None else self.frame.filter(self.where)
        own = {"k": [c.cast("string") for c in self.keys.values()],
               "i": [c.cast("bigint") for c in self.int_keys.values()]}
        grouped = df.groupBy(*[c.alias(f"{p}{i}") for p, cs in own.items()
                               for i, c in enumerate(cs)]).agg(
            *[F.sum(c).cast("bigint").alias(f"s{i}") for i, c in enumerate(self.sums.values())],
            *[F.min(c).cast("bigint").alias(f"m{i}") for i, c in enumerate(self.mins.values())],
            *[F.max(c).cast("bigint").alias(f"x{i}") for i, c in enumerate(self.maxs.values())])
        if self.at_least:
            name, n = self.at_least
            grouped = grouped.filter(F.col(f"s{list(self.sums).index(name)}") >= F.lit(n))
        counts = {"k": len(self.keys), "i": len(self.int_keys), "s": len(self.sums),
                  "m": len(self.mins), "x": len(self.maxs)}
        return grouped.select(F.lit(self.name).alias("_t"), *[
            F.col(f"{p}{i}") if i < counts[p]
            else F.lit(None).cast("string" if p == "k" else "bigint").alias(f"{p}{i}")
            for p, n in zip("kismx", (slots.keys, slots.int_keys, slots.sums, slots.mins,
                                      slots.maxs), strict=True)
            for i in range(n)])

    def as_dict(self, r: Any, slots: _Slots) -> dict[str, Any]:
        out: dict[str, Any] = {n: r[f"k{i}"] for i, n in enumerate(self.keys)}
        out |= {n: r[f"i{i}"] for i, n in enumerate(self.int_keys)}
        out |= {n: r[f"s{i}"] or 0 for i, n in enumerate(self.sums)}
        out |= {n: r[f"m{i}"] for i, n in enumerate(self.mins)}
        out |= {n: r[f"x{i}"] for i, n in enumerate(self.maxs)}
        return out

    def empty_row(self) -> dict[str, Any]:
        return {**dict.fromkeys(self.sums, 0), **dict.fromkeys([*self.mins, *self.maxs])}


@dataclass(frozen=True)
class _Slots:
    keys: int
    int_keys: int
    sums: int
    mins: int
    maxs: int

    @classmethod
    def of(cls, tallies: list[Tally]) -> _Slots:
        return cls(*(max(len(getattr(t, f)) for t in tallies)
                     for f in ("keys", "int_keys", "sums", "mins", "maxs")))

    def groups(self) -> list[str]:
        return ["_t", *[f"k{i}" for i in range(self.keys)],
                *[f"i{i}" for i in range(self.int_keys)]]

    def aggregates(self) -> list[Column]:
        return ([F.sum(f"s{i}").alias(f"s{i}") for i in range(self.sums)]
                + [F.min(f"m{i}").alias(f"m{i}") for i in range(self.mins)]
                + [F.max(f"x{i}").alias(f"x{i}") for i in range(self.maxs)])


def tally_rows(tallies: list[Tally]) -> tuple[DataFrame, _Slots]:
    """Every table's groups as one aggregated frame (nothing runs): a column ``_t`` naming
    the table, its keys and values in slots (:meth:`Tally.as_dict` reads a row back)."""
    slots = _Slots.of(tallies)
    shared_tallies = [t for t in tallies if not t.narrow]
    tables = [t.groups(slots) for t in tallies if t.narrow]
    by_frame: dict[int, tuple[DataFrame, list[Tally]]] = {}
    for t in shared_tallies:
        by_frame.setdefault(id(t.frame), (t.frame, []))[1].append(t)
    shared: dict[str, Column] = {}
    parts = [frame.select(F.inline(F.array_compact(F.array(*[t.row(slots, shared)
                                                               for t in ts]))))
             for frame, ts in by_frame.values()]
    if parts:
        grouped = reduce(DataFrame.unionByName, parts).groupBy(*slots.groups()).agg(
            *slots.aggregates())
        having = [(F.col("_t") != F.lit(t.name))
                  | (F.col(f"s{list(t.sums).index(t.at_least[0])}") >= F.lit(t.at_least[1]))
                  for t in shared_tallies if t.at_least]
        if having:
            grouped = grouped.filter(reduce(lambda a, b: a & b, having))
        tables.insert(0, grouped)
    return reduce(DataFrame.unionByName, tables), slots


def collect_tallies(tallies: list[Tally]) -> dict[str, list[dict[str, Any]]]:
    """Every table in one Spark action: {name: [row as dict, …]} (row order not kept)."""
    out: dict[str, list[dict[str, Any]]] = {t.name: [] for t in tallies}
    if not tallies:
        return out
    if len(out) != len(tallies):
        raise ValueError("two tallies share a name")
    named = {t.name: t for t in tallies}
    grouped, slots = tally_rows(tallies)
    for r in grouped.collect():
        out[r["_t"]].append(named[r["_t"]].as_dict(r, slots))
    for t in tallies:
        if not t.keys and not t.int_keys and not out[t.name]:
            out[t.name].append(t.empty_row())
    return out
