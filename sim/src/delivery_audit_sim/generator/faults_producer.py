"""Producer-side faults: duplicates, write reordering, key/partition splits.

Each instance has its own key, so instances never interact with each other
or with base traffic; consumption of their records is the normal one.
"""

from __future__ import annotations

from .episode import Episode
from .model import MIN, Sim

TIMEOUT = ("org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s) for "
           "{tp}: 30000 ms has passed since batch creation")


def _dup_effect(ep: Episode, ti: int, extra: int) -> None:
    for _ in ep.sim.consumers(ti):
        ep.anomaly("dup_effect", extra)


def retry_dup(sim: Sim, tis: list[int], lo: int, hi: int) -> Episode | None:
    """A request times out although its write landed; the application retries → n-1 extra copies."""
    rng = sim.rng
    ti = int(rng.choice(tis))
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "producer_retry", exclusive=False)
    key = sim.new_key(ti, "rt")
    seq0 = int(rng.integers(0, 100_000))
    n = int(rng.integers(1, 4))
    i = int(rng.integers(n))
    landed = 2 if rng.random() < 0.25 else 1
    prod = f"{t.name}-app-producer-1"
    for j in range(n):
        st = t0 + 4 * j
        seq = seq0 + j
        if j != i:
            r = ep.rec(ti, p, key, seq, st + 2, prod)
            ep.send(ti, key, seq, st, "acked", ref=r, ack_ts=st + 7, producer=prod)
            ep.identity(ti)
            continue
        for a in range(landed):
            sa = st + a * 30_010
            ep.rec(ti, p, key, seq, sa + 2, prod)
            ep.send(ti, key, seq, sa, "timeout", ack_ts=sa + 30_000, attempt=a + 1,
                    producer=prod, error=TIMEOUT.format(tp=f"{t.name}-{p}"))
        sa = st + landed * 30_010
        r = ep.rec(ti, p, key, seq, sa + 2, prod)
        ep.send(ti, key, seq, sa, "acked", ref=r, ack_ts=sa + 6, attempt=landed + 1, producer=prod)
        ep.identity(ti, default="delivered_duplicate")
        ep.anomaly("dup_write", landed)
        ep.truth.dup_cause["producer_retry"] += landed
        _dup_effect(ep, ti, landed)
        ep.note("extra_copies", landed)
    return ep


def reorder(sim: Sim, tis: list[int], lo: int, hi: int) -> Episode | None:
    """max.in.flight=5 without idempotence: batch A fails and is retried after batch B landed."""
    rng = sim.rng
    ti = int(rng.choice(tis))
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "write_reorder", exclusive=False)
    key = sim.new_key(ti, "ro")
    seq = int(rng.integers(0, 100_000))
    a, b, c = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 3))
    prod = f"{t.name}-app-producer-2"
    # (send time, append time) per message, in seq order: A, B, C
    plan = [(t0 + j, t0 + 120 + j) for j in range(a)]            # A lands after the retry backoff
    plan += [(t0 + 5 + j, t0 + 8 + j) for j in range(b)]         # B lands first
    plan += [(t0 + 150 + 3 * j, t0 + 152 + 3 * j) for j in range(c)]
    for k, (st, at) in enumerate(plan):
        r = ep.rec(ti, p, key, seq + k, at, prod)
        ep.send(ti, key, seq + k, st, "acked", ref=r, ack_ts=at + 4, producer=prod)
        ep.identity(ti)
    ep.anomaly("write_reorder", a)
    ep.note("late_records", a)
    return ep


def idempotent_dup(sim: Sim, tis: list[int], lo: int, hi: int) -> Episode | None:
    """An idempotent producer's batch written twice under two producer epochs (epoch bump)."""
    rng = sim.rng
    ti = int(rng.choice(tis))
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "idempotence_breach", exclusive=False)
    key = sim.new_key(ti, "ib")
    seq0 = int(rng.integers(0, 100_000))
    pid = int(rng.integers(1000, 90_000))
    bseq0 = int(rng.integers(0, 10_000))
    n = int(rng.integers(1, 4))
    i = int(rng.integers(n))
    prod = f"{t.name}-idempotent-producer-1"
    for j in range(n):
        st = t0 + 4 * j
        r = ep.rec(ti, p, key, seq0 + j, st + 2, prod, pid=pid, epoch=3, bseq=bseq0 + j)
        ep.send(ti, key, seq0 + j, st, "acked", ref=r, ack_ts=st + 8, producer=prod,
                idempotent=True)
        if j == i:
            ep.rec(ti, p, key, seq0 + j, st + 250, prod, pid=pid, epoch=4, bseq=bseq0 + j)
            ep.identity(ti, default="delivered_duplicate")
            _dup_effect(ep, ti, 1)
        else:
            ep.identity(ti)
    ep.anomaly("dup_write", 1)
    ep.truth.dup_cause["idempotence_breach"] += 1
    return ep


def unknown_dup(sim: Sim, tis: list[int], lo: int, hi: int) -> Episode | None:
    """One acked send, two broker copies: an internal retry the application never saw."""
    rng = sim.rng
    ti = int(rng.choice(tis))
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "unknown_dup", exclusive=False)
    key = sim.new_key(ti, "ud")
    seq0 = int(rng.integers(0, 100_000))
    n = int(rng.integers(1, 4))
    i = int(rng.integers(n))
    prod = f"{t.name}-app-producer-3"
    for j in range(n):
        st = t0 + 4 * j
        r = ep.rec(ti, p, key, seq0 + j, st + 2, prod)
        ep.send(ti, key, seq0 + j, st, "acked", ref=r, ack_ts=st + 45, producer=prod)
        if j == i:
            ep.rec(ti, p, key, seq0 + j, st + 40, prod)
            ep.identity(ti, default="delivered_duplicate")
            _dup_effect(ep, ti, 1)
        else:
            ep.identity(ti)
    ep.anomaly("dup_write", 1)
    ep.truth.dup_cause["unknown"] += 1
    return ep


def key_split(sim: Sim, ti: int, t_inc: int) -> Episode | None:
    """The topic's partition count grew at t_inc; this key's partitioner result changed."""
    rng = sim.rng
    t = sim.topics[ti]
    pa_, pb = (int(x) for x in rng.choice(t.partitions, size=2, replace=False))
    ta = sim.rand_time(t_inc - 3 * 60 * MIN, t_inc - 5 * MIN)
    tb = sim.rand_time(t_inc + 5 * MIN, t_inc + 3 * 60 * MIN)
    ep = Episode(sim, "key_partition_split", exclusive=False)
    key = sim.new_key(ti, "ks")
    seq = int(rng.integers(0, 100_000))
    prod = f"{t.name}-producer-1"
    k = 0
    for p, t0, n in ((pa_, ta, int(rng.integers(1, 4))), (pb, tb, int(rng.integers(1, 4)))):
        for j in range(n):
            st = t0 + 5 * j
            r = ep.rec(ti, p, key, seq + k, st + 2, prod)
            ep.send(ti, key, seq + k, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                    idempotent=t.idempotent)
            ep.identity(ti)
            k += 1
    ep.anomaly("key_partition_split", 1)
    return ep


def null_key_stream(sim: Sim, ti: int, lo: int, hi: int) -> Episode | None:
    """A legacy producer without keys: the null key (one key) spread over two partitions."""
    rng = sim.rng
    t = sim.topics[ti]
    pa_, pb = (int(x) for x in rng.choice(t.partitions, size=2, replace=False))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "null_key_stream", exclusive=False)
    seq = int(rng.integers(0, 100_000))
    n = int(rng.integers(6, 12))
    prod = f"{t.name}-legacy-producer-1"
    for j in range(n):
        st = t0 + 40 * j
        p = pa_ if j < n // 2 else pb   # sticky partitioner switches batch partition
        r = ep.rec(ti, p, None, seq + j, st + 2, prod)
        ep.send(ti, None, seq + j, st, "acked", ref=r, ack_ts=st + 6, producer=prod)
        ep.identity(ti)
    ep.anomaly("key_partition_split", 1)
    ep.note("records", n)
    return ep


def healthcheck(sim: Sim, ti: int, p: int, lo: int, hi: int) -> Episode | None:
    """A record without seq (unattributable): in the dump and the ledger, no identity."""
    ep = Episode(sim, "unattributable_records", exclusive=False)
    ep.rec(ti, p, "healthcheck", None, sim.rand_time(lo, hi), "kafka-console-producer")
    ep.note("records", 1)
    return ep
