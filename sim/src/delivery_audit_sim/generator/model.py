"""The simulated Kafka system shared by every scenario.

Times are epoch milliseconds (int) throughout; the writer turns them into
timestamps.  A scenario is a topology (topics, consumer groups) plus a plan of
fault *episodes*.  Base traffic (clean messages: one acked send, one broker
record, one successful processing per consuming group) is generated
vectorised per chunk by :mod:`.base`; every fault is an :class:`Episode` built
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
        self.states: dict[str, Counter[str]] = {g.group_id: Counter() for g in groups}
        self.group_judged: Counter[str] = Counter()
        self.judged = 0
        self.injected: dict[str, Counter[str]] = defaultdict(Counter)

    def merge(self, other: Truth) -> None:
        self.anomalies.update(other.anomalies)
        self.dup_cause.update(other.dup_cause)
        self.redelivery_cause.update(other.redelivery_cause)
        for g, c in other.states.items():
            self.states[g].update(c)
        self.group_judged.update(other.group_judged)
        self.judged += other.judged
        for k, c in other.injected.items():
            self.injected[k].update(c)

    def as_dict(self) -> dict[str, Any]:
        anomalies = {n: int(self.anomalies.get(n, 0)) for n in ANOMALY_NAMES}
        # the per-group message anomalies are exactly the matching delivery states
        for name in ("skipped", "pending", "expired_unconsumed"):
            anomalies[name] = int(sum(c.get(name, 0) for c in self.states.values()))
        return {
            "judged": self.judged,
            "anomalies": anomalies,
            "by_cause": {
                "dup_write": {c: int(self.dup_cause.get(c, 0)) for c in DUP_WRITE_CAUSES},
                "redelivery": {c: int(self.redelivery_cause.get(c, 0))
                               for c in REDELIVERY_CAUSES},
            },
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


class Episode:
    """One fault instance, built with local record numbers and committed atomically.

    ``commit()`` checks the calendar, then allocates rids, registers rows,
    pauses, reservations and the truth contribution.
    """

    def __init__(self, sim: Sim, kind: str, exclusive: bool = True) -> None:
        self.sim = sim
        self.kind = kind
        self.exclusive = exclusive      # reserve the calendar (else only check it)
        self._recs: list[dict[str, Any]] = []
        self._rows: dict[str, list[dict[str, Any]]] = {"sends": [], "ledger": [], "events": []}
        self._reserve: list[tuple[int, int, int, int]] = []
        self._pause: list[tuple[int, int, int, int]] = []
        self._blackout: list[tuple[int, int, int, int]] = []
        self._no_commit: list[tuple[int, int, int, int, int]] = []
        self._bumps: list[tuple[int, int]] = []
        self._rules: dict[tuple[int, int, int], ConsumerRule] = {}
        self._deletes: dict[tuple[int, int], int] = {}
        self.truth = Truth(sim.groups)
        self.truth.injected[kind]["instances"] += 1

    # -- records and rows -------------------------------------------------
    def rec(self, ti: int, p: int, key: str | None, seq: int | None, ts: int, producer: str,
            *, pid: int | None = None, epoch: int | None = None, bseq: int | None = None,
            custom: tuple[int, ...] = (), expect: dict[int, int] | None = None) -> int:
        sim = self.sim
        exp = {gi: 1 for gi in sim.consumers(ti) if gi not in custom}
        if expect:
            exp.update(expect)
        mask = 0
        for gi in custom:
            mask |= 1 << gi
        self._recs.append(dict(ti=ti, p=p, key=key, seq=seq, ts=int(ts), producer=producer,
                               pid=pid, epoch=epoch, bseq=bseq, custom=mask, expect=exp))
        return len(self._recs) - 1

    def send(self, ti: int, key: str | None, seq: int, send_ts: int, status: str, *,
             ref: int | None = None, ack_ts: int | None = None, attempt: int | None = 1,
             producer: str, idempotent: bool | None = False, error: str | None = None) -> None:
        row = dict(send_ts=int(send_ts), topic=self.sim.topics[ti].name, key=key, seq=seq,
                   status=status, ack_ts=None if ack_ts is None else int(ack_ts),
                   attempt=attempt, producer_id=producer, idempotent=idempotent, error=error)
        if ref is not None:
            row["_rid"] = ref
        self._rows["sends"].append(row)

    def attempt(self, gi: int, member: int, ref: int, started: int, finished: int | None,
                outcome: str, gen_at: int | None = None) -> None:
        """A processing attempt; its generation is the one in effect at gen_at (default: start)."""
        g = self.sim.groups[gi]
        self._rows["ledger"].append(dict(
            group_id=g.group_id, member_id=g.members[member], _rid=ref, _gi=gi,
            started_ts=int(started), finished_ts=None if finished is None else int(finished),
            outcome=outcome, _gen_at=int(started if gen_at is None else gen_at)))

    def event(self, gi: int, member: int | None, ts: int, event: str, *, ti: int | None = None,
              p: int | None = None, ref: int | None = None, plus: int = 0,
              gen_at: int | None = None, detail: str | None = None) -> None:
        g = self.sim.groups[gi]
        row = dict(group_id=g.group_id, member_id=None if member is None else g.members[member],
                   ts=int(ts), event=event, _gi=gi,
                   topic=None if ti is None else self.sim.topics[ti].name,
                   partition=p, _gen_at=int(ts if gen_at is None else gen_at), detail=detail)
        if ref is not None:
            row["_rid"] = ref
            row["_plus"] = plus
        self._rows["events"].append(row)

    # -- calendar ---------------------------------------------------------
    def reserve(self, ti: int, p: int, a: int, b: int) -> None:
        self._reserve.append((ti, p, int(a), int(b)))

    def pause(self, ti: int, p: int, a: int, b: int) -> None:
        """Exclusive slot: base production paused, no other fault there."""
        self._pause.append((ti, p, int(a), int(b)))
        self._reserve.append((ti, p, int(a), int(b)))

    def blackout(self, gi: int, member: int, a: int, b: int) -> None:
        self._blackout.append((gi, member, int(a), int(b)))

    def no_commit(self, gi: int, ti: int, p: int, a: int, b: int) -> None:
        self._no_commit.append((gi, ti, p, int(a), int(b)))

    def bump(self, gi: int, ts: int) -> None:
        self._bumps.append((gi, int(ts)))

    def rule(self, gi: int, ti: int, p: int, rule: ConsumerRule) -> None:
        self._rules[(gi, ti, p)] = rule

    def delete_before(self, ti: int, p: int, ts: int) -> None:
        self._deletes[(ti, p)] = int(ts)

    def record_span(self) -> dict[tuple[int, int], tuple[int, int]]:
        span: dict[tuple[int, int], tuple[int, int]] = {}
        for r in self._recs:
            k = (r["ti"], r["p"])
            a, b = span.get(k, (r["ts"], r["ts"]))
            span[k] = (min(a, r["ts"]), max(b, r["ts"]))
        return span

    # -- truth ------------------------------------------------------------
    def identity(self, ti: int, states: dict[int, str] | None = None,
                 default: str = "delivered_once") -> None:
        t = self.truth
        t.judged += 1
        for gi in self.sim.consumers(ti):
            gid = self.sim.groups[gi].group_id
            t.group_judged[gid] += 1
            t.states[gid][(states or {}).get(gi, default)] += 1

    def anomaly(self, name: str, n: int = 1) -> None:
        if n:
            self.truth.anomalies[name] += n

    def note(self, what: str, n: int = 1) -> None:
        self.truth.injected[self.kind][what] += n

    # -- commit -----------------------------------------------------------
    def commit(self) -> bool:
        sim = self.sim
        if any(k in sim.rules for k in self._rules):
            return False   # one consumption rule per (group, topic, partition)
        if self.exclusive:
            for ti, p, a, b in self._reserve:
                if not sim.excl.free(ti, p, a, b):
                    return False
            # reservations of one episode may not overlap each other either
            tmp = Calendar()
            for ti, p, a, b in self._reserve:
                if not tmp.free(ti, p, a, b):
                    raise AssertionError(f"{self.kind}: overlapping reservations")
                tmp.add(ti, p, a, b)
        else:
            for (ti, p), (a, b) in self.record_span().items():
                if not sim.excl.free(ti, p, a - MARGIN, b + MARGIN):
                    return False
        base = len(sim.recs)
        R = sim.recs
        for r in self._recs:
            R.ti.append(r["ti"])
            R.p.append(r["p"])
            R.key.append(r["key"])
            R.seq.append(r["seq"])
            R.ts.append(r["ts"])
            R.producer.append(r["producer"])
            R.pid.append(r["pid"])
            R.epoch.append(r["epoch"])
            R.bseq.append(r["bseq"])
            R.custom.append(r["custom"])
            R.expect.append(r["expect"])
        for src, rows in self._rows.items():
            for row in rows:
                if "_rid" in row:
                    row["_rid"] += base
                sim.rows[src].append(row)
        if self.exclusive:
            for ti, p, a, b in self._reserve:
                sim.excl.add(ti, p, a, b)
        for ti, p, a, b in self._pause:
            sim.pauses[(ti, p)].append((a, b))
        for gi, m, a, b in self._blackout:
            sim.blackouts[(gi, m)].append((a, b))
        for gi, ti, p, a, b in self._no_commit:
            sim.no_commit[(gi, ti, p)].append((a, b))
        for gi, ts in self._bumps:
            sim.gen_bumps[gi].append(ts)
        sim.rules.update(self._rules)
        for k, ts in self._deletes.items():
            sim.delete_before[k] = ts
        sim.truth.merge(self.truth)
        return True


def slot_consumption(ep: Episode, gi: int, refs: list[int], start: int, durations: list[int],
                     gap: int = 3, member: int | None = None) -> int:
    """Sequential successful processing of refs by one member; returns the last finish."""
    sim = ep.sim
    r0 = ep._recs[refs[0]]
    m = sim.owner(gi, r0["ti"], r0["p"]) if member is None else member
    t = start
    for ref, d in zip(refs, durations, strict=True):
        ep.attempt(gi, m, ref, t, t + d, "success")
        t += d + gap
    return t
