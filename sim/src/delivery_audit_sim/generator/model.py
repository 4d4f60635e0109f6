"""The simulated Kafka system shared by every scenario.

Times are epoch milliseconds (int) throughout; the writer turns them into
timestamps.  A scenario is a topology (topics, consumer groups) plus a plan of
fault *episodes*.  Base traffic (clean messages: one acked send, one broker
record, one successful processing per consuming group) is generated
vectorised per chunk by :mod:`.base`; every fault is an :class:`.episode.Episode` built
record by record in Python (faults are a small share of the traffic).

Independence of faults is enforced by a calendar: an episode reserves the
(topic, partition) time ranges its truth depends on, and base production is
paused on the partitions where an episode needs contiguous offsets.
Offsets of injected records are only known once they are merged with base
traffic, so episode rows refer to records by *rid* and are resolved at the end.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from delivery_audit.anomalies import ANOMALY_NAMES, DUP_WRITE_CAUSES, REDELIVERY_CAUSES, STATES

# contract §9: the anomalies of transactions and latency, and the causes of aborted_read.  A
# transactional scenario's truth states them even where the engine's catalogue does not yet.
TXN_ANOMALIES = ("aborted_read", "hanging_transaction", "zombie_write", "late_delivery")
ABORTED_READ_CAUSES = ("read_uncommitted", "read_committed", "unknown")

SEC = 1_000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR

# base timing (ms)
APPEND_DELAY = 2          # send() -> append on the leader
PRE_WINDOW = 10 * MIN     # base traffic starts this long before the window
POST_WINDOW = 70 * MIN    # ... and runs this long after its end (past end + grace)
POST_RATE = 0.25          # relative traffic rate after the window
COMMIT_EVERY = 10 * MIN   # periodic offset commits per (group, partition)
MARGIN = 5 * SEC          # quiet time around an exclusive slot


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    weight: float            # share of base traffic
    key_prefix: str
    producers: int = 2
    idempotent: bool = False  # base producers' enable.idempotence
    unlogged: bool = False   # part of its base traffic (rate 'unlogged') keeps no send log


@dataclass(frozen=True)
class GroupSpec:
    group_id: str
    members: tuple[str, ...]
    topics: tuple[str, ...]
    settings: dict[str, Any]
    ledger_keys: bool = True      # the ledger carries key and seq (else resolved via the dump)
    proc_ms: tuple[int, int] = (2, 30)
    lag_ms: tuple[int, int] = (5, 250)


@dataclass(frozen=True)
class ConsumerRule:
    """A per (group, topic, partition) deviation of base consumption."""
    skip_before: int | None = None   # records appended before this are never processed
    free_from: int | None = None     # no processing starts before this
    stall_from: int | None = None    # records appended at/after this wait until resume_at
    resume_at: int | None = None


class Calendar:
    """Non-overlapping reserved intervals per (topic index, partition)."""

    def __init__(self) -> None:
        self._iv: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)

    def free(self, ti: int, p: int, a: int, b: int) -> bool:
        iv = self._iv.get((ti, p))
        if not iv:
            return True
        i = bisect.bisect_left(iv, (a, a))
        if i < len(iv) and iv[i][0] < b:
            return False
        return not (i > 0 and iv[i - 1][1] > a)

    def add(self, ti: int, p: int, a: int, b: int) -> None:
        bisect.insort(self._iv[(ti, p)], (a, b))


class Truth:
    """Expected audit result, accumulated by construction."""

    def __init__(self, groups: list[GroupSpec]) -> None:
        self.anomalies: Counter[str] = Counter()
        self.dup_cause: Counter[str] = Counter()
        self.redelivery_cause: Counter[str] = Counter()
        self.aborted_read_cause: Counter[str] = Counter()
        self.states: dict[str, Counter[str]] = {g.group_id: Counter() for g in groups}
        self.group_judged: Counter[str] = Counter()
        self.judged = 0
        self.injected: dict[str, Counter[str]] = defaultdict(Counter)

    def merge(self, other: Truth) -> None:
        self.anomalies.update(other.anomalies)
        self.dup_cause.update(other.dup_cause)
        self.redelivery_cause.update(other.redelivery_cause)
        self.aborted_read_cause.update(other.aborted_read_cause)
        for g, c in other.states.items():
            self.states[g].update(c)
        self.group_judged.update(other.group_judged)
        self.judged += other.judged
        for k, c in other.injected.items():
            self.injected[k].update(c)

    def as_dict(self, transactional: bool = False) -> dict[str, Any]:
        """The truth.json figures; a transactional scenario's also name the §9 anomalies (and
        aborted_read's causes), which the others leave to the engine's catalogue."""
        names = ANOMALY_NAMES
        if transactional:
            names += tuple(n for n in TXN_ANOMALIES if n not in ANOMALY_NAMES)
        anomalies = {n: int(self.anomalies.get(n, 0)) for n in names}
        # the per-group message anomalies are exactly the matching delivery states
        for name in ("skipped", "pending", "expired_unconsumed"):
            anomalies[name] = int(sum(c.get(name, 0) for c in self.states.values()))
        by_cause = {
            "dup_write": {c: int(self.dup_cause.get(c, 0)) for c in DUP_WRITE_CAUSES},
            "redelivery": {c: int(self.redelivery_cause.get(c, 0)) for c in REDELIVERY_CAUSES},
        }
        if transactional:
            by_cause["aborted_read"] = {c: int(self.aborted_read_cause.get(c, 0))
                                        for c in ABORTED_READ_CAUSES}
        return {
            "judged": self.judged,
            "anomalies": anomalies,
            "by_cause": by_cause,
            "groups": {
                g: {"judged": int(self.group_judged.get(g, 0)),
                    "states": {s: int(c.get(s, 0)) for s in STATES}}
                for g, c in self.states.items()
            },
        }


@dataclass
class InjectedRecords:
    """Column store of every injected broker record (indexed by rid)."""
    ti: list[int] = field(default_factory=list)
    p: list[int] = field(default_factory=list)
    key: list[str | None] = field(default_factory=list)
    seq: list[int | None] = field(default_factory=list)
    ts: list[int] = field(default_factory=list)
    producer: list[str] = field(default_factory=list)
    pid: list[int | None] = field(default_factory=list)
    epoch: list[int | None] = field(default_factory=list)
    bseq: list[int | None] = field(default_factory=list)
    txn: list[bool | None] = field(default_factory=list)      # in a transactional batch
    control: list[str | None] = field(default_factory=list)   # commit | abort: a marker
    custom: list[int] = field(default_factory=list)  # bitmask: groups with scripted consumption
    expect: list[dict[int, int]] = field(default_factory=list)  # gi -> visible normal processings

    def __len__(self) -> int:
        return len(self.ts)


class Sim:
    """The simulation context: window, topology, rng, calendar, injected rows and truth."""

    def __init__(self, topics: list[TopicSpec], groups: list[GroupSpec], start_ms: int,
                 seed: int, messages: int, rates: dict[str, float],
                 explicit: frozenset[str] = frozenset()) -> None:
        self.topics = topics
        self.groups = groups
        self.ti = {t.name: i for i, t in enumerate(topics)}
        self.gi = {g.group_id: i for i, g in enumerate(groups)}
        for g in groups:
            for t in g.topics:
                if t not in self.ti:
                    raise ValueError(f"group {g.group_id} consumes unknown topic {t}")
        self.seed = seed
        self.messages = messages
        self.rates = rates
        self.explicit = explicit
        self.rng = np.random.default_rng([seed, 1])
        self.start = start_ms
        self.end = start_ms + DAY
        self.grace = 60 * MIN
        self.read_until = self.end + self.grace
        self.pre_start = self.start - PRE_WINDOW
        self.post_end = self.end + POST_WINDOW
        self.recs = InjectedRecords()
        self.rows: dict[str, list[dict[str, Any]]] = {"sends": [], "ledger": [], "events": []}
        self.excl = Calendar()
        self.pauses: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        self.blackouts: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        self.no_commit: dict[tuple[int, int, int], list[tuple[int, int]]] = defaultdict(list)
        self.gen_bumps: dict[int, list[int]] = defaultdict(list)
        self.rules: dict[tuple[int, int, int], ConsumerRule] = {}
        self.delete_before: dict[tuple[int, int], int] = {}
        self.truth = Truth(groups)
        self._keyno: Counter[str] = Counter()
        self.txn_config: dict[str, Any] = {}   # the scenario's top-level config (§9)

    # -- topology helpers -------------------------------------------------
    def consumers(self, ti: int) -> list[int]:
        name = self.topics[ti].name
        return [i for i, g in enumerate(self.groups) if name in g.topics]

    def owner(self, gi: int, ti: int, p: int) -> int:
        """Member index owning a partition in the static assignment."""
        return (p + ti) % len(self.groups[gi].members)

    def member_partitions(self, gi: int, m: int) -> list[tuple[int, int]]:
        out = []
        for tname in self.groups[gi].topics:
            ti = self.ti[tname]
            out += [(ti, p) for p in range(self.topics[ti].partitions)
                    if self.owner(gi, ti, p) == m]
        return out

    def new_key(self, ti: int, tag: str) -> str:
        t = self.topics[ti]
        self._keyno[tag] += 1
        return f"{t.key_prefix}-{tag}-{self._keyno[tag]:05d}"

    def count(self, name: str, minimum: int = 0) -> int:
        """Instances of a fault: rate x messages, at least the scenario's minimum; a rate the
        caller set explicitly overrides the minimum (0 turns the fault off)."""
        rate = float(self.rates.get(name, 0.0))
        n = int(round(rate * self.messages))
        if name in self.explicit:
            return max(n, 1) if rate > 0 else 0
        return max(minimum, n)

    def rand_time(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, max(lo + 1, hi)))

    def place(self, build, tries: int = 400):
        """Call build() (which draws its own placement) until commit succeeds."""
        for _ in range(tries):
            ep = build()
            if ep is not None and ep.commit():
                return ep
        raise RuntimeError("could not place a fault episode: the calendar is too full "
                           "(lower the rates or raise messages)")
