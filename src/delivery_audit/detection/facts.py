"""What detection needs to know about the whole input before its one pass: small tables
the driver holds and the plan carries as literals (no broadcast job, no join).

* ``ranges`` — each (topic, partition)'s dump range [log start, end) (rule 7: the broker's
  lowest and highest + 1 offsets, unless the config states it; with an offsets file, rule
  26, the read range [read_from, read_to) where the config does not);
* ``log_starts`` — with an offsets file, each partition's ``log_start`` where the config
  states no range (rule 26: an acked offset below it is expired, one in [log_start,
  read_from) pending); elsewhere the range's start is the log start;
* ``reach`` — per (group, topic, partition) the highest offset the group attempted or
  committed (rule 12: it went past offset o when reach > o; an offsets file's committed
  offsets count like commit events when taken before end + grace, rule 26);
* ``topics_of`` — the topics each judged group consumes (rule 9), and ``group_ids``;
* ``rows_without_seq`` / ``skipped_rows`` — ledger rows of judged groups that need the broker
  record at their offset: rule 10's resolution and rule 12's "recorded outcome skipped on
  that record" (0 spares the lookup's shuffle of the broker);
* ``last_ts`` — each (topic, partition)'s latest record timestamp (epoch ms, any row: rule
  24's "partition's last record timestamp"), and ``txn_partitions`` — the (topic, partition)s
  with a transactional or control row (contract §9; none spares the transactions' shuffle).

Ingestion computes the tables in the action that counts its rows (:func:`fact_tallies`);
:func:`compute_facts` does it for plain frames (one Spark job).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..config import AuditConfig
from ..tally import Tally, collect_tallies, count_where, one


@dataclass(frozen=True)
class StatedOffsets:
    """What an offsets file states for detection (rule 26; ingest/offsets.py reads it):
    per (topic, partition) the read range and the log start; per (group, topic, partition)
    the committed offsets that count for rule 12 (none when taken at or after end + grace)."""

    read_ranges: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    log_starts: dict[tuple[str, int], int] = field(default_factory=dict)
    committed: dict[tuple[str, str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Facts:
    ranges: dict[tuple[str, int], tuple[int, int]]
    reach: dict[tuple[str, str, int], int]
    topics_of: dict[str, tuple[str, ...]]
    group_ids: tuple[str, ...]
    rows_without_seq: int = 0
    skipped_rows: int = 0
    topics: tuple[str, ...] = field(default=())  # every topic of sends and broker
    last_ts: dict[tuple[str, int], int] = field(default_factory=dict)
    txn_partitions: frozenset[tuple[str, int]] = frozenset()
    log_starts: dict[tuple[str, int], int] = field(default_factory=dict)

    def log_start(self, topic: str, partition: int) -> int | None:
        """The partition's log start (rule 11's "below the log start"): the offsets file's,
        else the dump range's start; None for a partition absent from both."""
        start = self.log_starts.get((topic, partition))
        return start if start is not None else self.ranges.get((topic, partition), (None,))[0]

    def read_starts(self) -> dict[tuple[str, int], int]:
        """The partitions whose dump range starts above their log start (an offsets file's
        read from a later offset, rule 26): (topic, partition) → the range's start."""
        return {k: lo for k, (lo, _) in self.ranges.items()
                if self.log_starts.get(k, lo) < lo}

    @property
    def transactional(self) -> bool:
        """Some broker row is transactional or a control row (contract §9)."""
        return bool(self.txn_partitions)

    def groups_of(self, topic: str) -> tuple[str, ...]:
        """The judged groups consuming a topic, in group order (a pair's group index)."""
        return tuple(g for g in self.group_ids if topic in self.topics_of.get(g, ()))

    def consumed_topics(self) -> list[str]:
        return sorted({t for ts in self.topics_of.values() for t in ts})

    def scoped(self, topics: list[str]) -> Facts:
        """The facts of an audit restricted to some topics."""
        if not topics:
            return self
        keep = set(topics)
        return replace(
            self, ranges={k: v for k, v in self.ranges.items() if k[0] in keep},
            reach={k: v for k, v in self.reach.items() if k[1] in keep},
            topics_of={g: tuple(t for t in ts if t in keep) for g, ts in self.topics_of.items()},
            topics=tuple(t for t in self.topics if t in keep),
            last_ts={k: v for k, v in self.last_ts.items() if k[0] in keep},
            log_starts={k: v for k, v in self.log_starts.items() if k[0] in keep},
            txn_partitions=frozenset(k for k in self.txn_partitions if k[0] in keep))


def fact_tallies(frames: dict[str, DataFrame], where: Column | None = None) -> list[Tally]:
    """The small tables behind the facts, over the sources' rows where ``where`` holds (all
    when None): collect them with ``tally.collect_tallies``, alone or with other tables.
    ``facts:topics:<source>``: every source's rows per topic."""
    out: list[Tally] = []

    def only(condition: Column) -> Column:
        return condition if where is None else where & condition

    broker, ledger, events = frames.get("broker"), frames.get("ledger"), frames.get("events")
    if broker is not None:
        txn = F.coalesce(F.col("transactional"), F.lit(False)) | F.col("control").isNotNull()
        out.append(Tally("facts:ranges", broker, where,
                         keys={"topic": F.col("topic")}, int_keys={"partition": F.col("partition")},
                         sums={"txn": count_where(txn)}, mins={"lo": F.col("offset")},
                         maxs={"hi": F.col("offset"),
                               "last_ms": F.unix_millis(F.col("timestamp"))}))
    if ledger is not None:
        out.append(Tally("facts:ledger", ledger, where,
                         keys={"group_id": F.col("group_id"), "topic": F.col("topic")},
                         int_keys={"partition": F.col("partition")},
                         sums={"no_seq": count_where(F.col("seq").isNull()),
                               "skipped": count_where(F.col("outcome") == "skipped")},
                         maxs={"reach": F.col("offset")}))
    if events is not None:
        commit = ((F.col("event") == "commit") & F.col("topic").isNotNull()
                  & F.col("partition").isNotNull() & F.col("offset").isNotNull())
        out.append(Tally("facts:commits", events, only(commit),
                         keys={"group_id": F.col("group_id"), "topic": F.col("topic")},
                         int_keys={"partition": F.col("partition")},
                         maxs={"reach": F.col("offset")}))
        out.append(Tally("facts:event_groups", events, where,
                         keys={"group_id": F.col("group_id")}, sums={"n": one()}))
    for s, df in frames.items():
        if df is not None:
            out.append(Tally(f"facts:topics:{s}", df, where, keys={"topic": F.col("topic")},
                             sums={"n": one()}))
    return out


def facts_from(collected: dict[str, list[dict]], config: AuditConfig,
               topics: list[str] | None = None, stated: StatedOffsets | None = None) -> Facts:
    """The facts from the collected :func:`fact_tallies`, for the judged groups of the config
    (rule 9) and, when given, only these topics; ``stated``: an offsets file's (rule 26)."""
    stated = stated or StatedOffsets()
    if config.groups:
        group_ids = sorted(g.group_id for g in config.groups)
    else:
        group_ids = sorted({r["group_id"] for r in collected.get("facts:ledger", [])}
                           | {r["group_id"] for r in collected.get("facts:event_groups", [])})
    judged = set(group_ids)
    topics_of: dict[str, set[str]] = {g: set() for g in group_ids}
    for g in config.groups:
        topics_of[g.group_id].update(g.topics)
    reach: dict[tuple[str, str, int], int] = {}
    no_seq = skipped = 0
    for r in collected.get("facts:ledger", []):
        g = r["group_id"]
        if g not in judged:
            continue
        topics_of[g].add(r["topic"])
        k = (g, r["topic"], int(r["partition"]))
        reach[k] = max(reach.get(k, -1), int(r["reach"]))
        no_seq += int(r["no_seq"])
        skipped += int(r["skipped"])
    commits = [((r["group_id"], r["topic"], int(r["partition"])), int(r["reach"]))
               for r in collected.get("facts:commits", [])]
    for k, o in [*commits, *stated.committed.items()]:  # a committed offset: a commit
        if k[0] in judged:
            reach[k] = max(reach.get(k, -1), o)
    ranges = {(r["topic"], int(r["partition"])): (int(r["lo"]), int(r["hi"]) + 1)
              for r in collected.get("facts:ranges", [])}
    last_ts = {(r["topic"], int(r["partition"])): int(r["last_ms"])
               for r in collected.get("facts:ranges", []) if r.get("last_ms") is not None}
    txn_partitions = frozenset((r["topic"], int(r["partition"]))
                               for r in collected.get("facts:ranges", []) if r.get("txn"))
    ranges.update(stated.read_ranges)  # the offsets read (rule 26)
    log_starts = dict(stated.log_starts)
    for d in config.dump_ranges:  # a stated range wins (rules 7 and 26), its log start too
        ranges[(d.topic, d.partition)] = (d.log_start_offset, d.end_offset)
        log_starts.pop((d.topic, d.partition), None)
    seen = sorted({r["topic"] for s in ("sends", "broker")
                   for r in collected.get(f"facts:topics:{s}", [])})
    facts = Facts(ranges=ranges, reach=reach,
                  topics_of={g: tuple(sorted(ts)) for g, ts in topics_of.items()},
                  group_ids=tuple(group_ids), rows_without_seq=no_seq, skipped_rows=skipped,
                  topics=tuple(seen), last_ts=last_ts, txn_partitions=txn_partitions,
                  log_starts=log_starts)
    return facts.scoped(topics or [])


def compute_facts(frames: dict[str, DataFrame], config: AuditConfig,
                  stated: StatedOffsets | None = None) -> Facts:
    """The facts of plain frames, in one Spark action."""
    return facts_from(collect_tallies(fact_tallies(frames)), config, stated=stated)
