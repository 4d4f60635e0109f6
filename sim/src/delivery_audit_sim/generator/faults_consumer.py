"""Consumer-side faults.

Slot faults own a quiet stretch of one partition (base production paused)
and script one group's processing there; every other group consumes the
records normally.  Region faults (pending lag, retention expiry, late
catch-up) change how base traffic is consumed on one partition by one group.
"""

from __future__ import annotations

from .episode import Episode, slot_consumption
from .model import MARGIN, MIN, SEC, ConsumerRule, Sim

DETAIL_RESET = "offset reset to log start after OffsetOutOfRange"


def _slot(sim: Sim, gi: int, kind: str, lo: int, hi: int, n: int, tag: str):
    """An episode with n records of one new key on a random partition of the group's topics."""
    rng = sim.rng
    g = sim.groups[gi]
    ti = sim.ti[str(rng.choice(list(g.topics)))]
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, kind)
    key = sim.new_key(ti, tag)
    seq = int(rng.integers(0, 100_000))
    prod = f"{t.name}-producer-1"
    refs = []
    for j in range(n):
        st = t0 + 5 * j
        r = ep.rec(ti, p, key, seq + j, st + 2, prod, custom=(gi,))
        ep.send(ti, key, seq + j, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                idempotent=t.idempotent)
        refs.append(r)
    return ep, ti, p, t0, refs


def _durs(sim: Sim, gi: int, n: int) -> list[int]:
    lo, hi = sim.groups[gi].proc_ms
    return [int(x) for x in sim.rng.integers(lo, hi + 1, n)]


def _close_slot(ep: Episode, gi: int, ti: int, p: int, t0: int, t_end: int) -> None:
    ep.pause(ti, p, t0 - MARGIN, t_end + MARGIN)
    ep.no_commit(gi, ti, p, t0 - MARGIN, t_end + MARGIN)


def skip_crash(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """Commit before processing, then a crash: the polled batch is never processed."""
    rng = sim.rng
    n_skip, n_after = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    ep, ti, p, t0, refs = _slot(sim, gi, "commit_before_process", lo, hi, n_skip, "sc")
    g = sim.groups[gi]
    m = sim.owner(gi, ti, p)
    last_append = ep._recs[refs[-1]]["ts"]
    tp = last_append + 300
    ep.event(gi, m, tp + 5, "commit", ti=ti, p=p, ref=refs[-1], plus=1,
             detail="committed before processing (enable.auto.commit)")
    crash = tp + 20
    # records that arrive while the member is down
    key, seq0 = ep._recs[refs[0]]["key"], ep._recs[refs[0]]["seq"]
    prod = ep._recs[refs[0]]["producer"]
    after = []
    for j in range(n_after):
        st = crash + 1_000 + 5 * j
        s = seq0 + n_skip + j
        r = ep.rec(ti, p, key, s, st + 2, prod, custom=(gi,))
        ep.send(ti, key, s, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                idempotent=sim.topics[ti].idempotent)
        after.append(r)
    restart = crash + 8 * SEC
    ep.event(gi, m, restart, "joined_group", detail="static member restarted")
    mine = sim.member_partitions(gi, m)
    for (qti, qp) in mine:
        ep.event(gi, m, restart + 500, "assigned", ti=qti, p=qp)
    ep.blackout(gi, m, crash, restart + 600)
    end = slot_consumption(ep, gi, after, restart + 700, _durs(sim, gi, n_after))
    for (qti, qp) in mine:
        if (qti, qp) != (ti, p):
            ep.reserve(qti, qp, crash - MARGIN, restart + 600 + MARGIN)
    _close_slot(ep, gi, ti, p, t0, end)
    for _ in refs:
        ep.identity(ti, {gi: "skipped"})
    for _ in after:
        ep.identity(ti)
    ep.note("skipped_records", n_skip)
    del g
    return ep


def poison(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """A record that fails repeatedly and is finally skipped (dead-lettered)."""
    rng = sim.rng
    n_after = int(rng.integers(1, 3))
    n_f = int(rng.integers(1, 3))
    ep, ti, p, t0, refs = _slot(sim, gi, "poison_record", lo, hi, 1 + n_after, "pp")
    m = sim.owner(gi, ti, p)
    t = ep._recs[refs[-1]]["ts"] + 100
    for _ in range(n_f):
        ep.attempt(gi, m, refs[0], t, t + 20, "failure")
        t += 20 + 500
    ep.attempt(gi, m, refs[0], t, t + 4, "skipped")
    end = slot_consumption(ep, gi, refs[1:], t + 10, _durs(sim, gi, n_after))
    _close_slot(ep, gi, ti, p, t0, end)
    ep.identity(ti, {gi: "skipped"})
    for _ in refs[1:]:
        ep.identity(ti)
    ep.anomaly("retry_after_failure", n_f)
    return ep


def retry_success(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """Processing fails, is retried after a back-off, and succeeds."""
    rng = sim.rng
    n = int(rng.integers(1, 4))
    ep, ti, p, t0, refs = _slot(sim, gi, "retry_to_success", lo, hi, n, "rs")
    m = sim.owner(gi, ti, p)
    t = ep._recs[refs[-1]]["ts"] + 100
    total = 0
    for j, r in enumerate(refs):
        n_f = int(rng.integers(1, 3)) if j == 0 or rng.random() < 0.5 else 0
        for _ in range(n_f):
            ep.attempt(gi, m, r, t, t + 15, "failure")
            t += 15 + 1_000
        ep.attempt(gi, m, r, t, t + 12, "success")
        t += 15
        total += n_f
        ep.identity(ti)
    _close_slot(ep, gi, ti, p, t0, t)
    ep.anomaly("retry_after_failure", total)
    return ep


def batch_retry(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """A batch listener fails on its last record; the whole batch is redelivered to the same
    member."""
    rng = sim.rng
    b = int(rng.integers(3, 6))
    ep, ti, p, t0, refs = _slot(sim, gi, "batch_redelivery", lo, hi, b, "br")
    m = sim.owner(gi, ti, p)
    t = ep._recs[refs[-1]]["ts"] + 100
    for r in refs[:-1]:
        ep.attempt(gi, m, r, t, t + 10, "success")
        t += 12
    ep.attempt(gi, m, refs[-1], t, t + 10, "failure")
    t += 12 + 200
    for r in refs:
        ep.attempt(gi, m, r, t, t + 10, "success")
        t += 12
    _close_slot(ep, gi, ti, p, t0, t)
    for _ in refs[:-1]:
        ep.identity(ti, {gi: "delivered_duplicate"})
    ep.identity(ti)
    ep.anomaly("redelivery", b - 1)
    ep.truth.redelivery_cause["other"] += b - 1
    ep.anomaly("dup_effect", b - 1)
    ep.anomaly("retry_after_failure", 1)
    return ep


def mt_reorder(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """A multithreaded consumer hands one key's records to different threads."""
    rng = sim.rng
    n = int(rng.integers(3, 6))
    ep, ti, p, t0, refs = _slot(sim, gi, "multithreaded_reorder", lo, hi, n, "mt")
    m = sim.owner(gi, ti, p)
    while True:
        perm = [int(x) for x in rng.permutation(n)]
        if perm != sorted(perm):
            break
    t = ep._recs[refs[-1]]["ts"] + 100
    count, best = 0, -1
    for k in perm:
        ep.attempt(gi, m, refs[k], t, t + 10, "success")
        t += 13
        if k < best:
            count += 1
        best = max(best, k)
    _close_slot(ep, gi, ti, p, t0, t)
    for _ in refs:
        ep.identity(ti)
    ep.anomaly("process_reorder", count)
    return ep


def gc_pause(sim: Sim, gi: int, lo: int, hi: int) -> Episode | None:
    """A single-member group: a GC pause beyond session.timeout.ms; the member is removed,
    rejoins, gets its partitions back and reprocesses its uncommitted records."""
    rng = sim.rng
    g = sim.groups[gi]
    if len(g.members) != 1:
        raise ValueError("gc_pause needs a single-member group")
    b = int(rng.integers(2, 5))
    ep, ti, p, t0, refs = _slot(sim, gi, "session_timeout_redelivery", lo, hi, b, "gc")
    m = 0
    t = slot_consumption(ep, gi, refs, ep._recs[refs[-1]]["ts"] + 100, _durs(sim, gi, b))
    pause_ms = int(g.settings.get("session.timeout.ms", 10_000)) + 5 * SEC
    gc_start = t + 5
    back = gc_start + pause_ms
    mine = sim.member_partitions(gi, m)
    for qti, qp in mine:
        ep.event(gi, m, back + 5, "lost", ti=qti, p=qp, gen_at=gc_start,
                 detail="heartbeat failed: member removed after session timeout")
    ep.event(gi, m, back + 50, "joined_group", gen_at=gc_start)
    assigned = back + 3 * SEC
    for qti, qp in mine:
        ep.event(gi, m, assigned, "assigned", ti=qti, p=qp)
    ep.bump(gi, assigned)
    ep.blackout(gi, m, gc_start, assigned + 100)
    end = t
    tt = assigned + 200
    for r, d in zip(refs, _durs(sim, gi, b), strict=True):
        ep.attempt(gi, m, r, tt, tt + d, "success")
        tt += d + 3
        end = tt
    for qti, qp in mine:
        if (qti, qp) != (ti, p):
            ep.reserve(qti, qp, gc_start - MARGIN, assigned + 100 + MARGIN)
    _close_slot(ep, gi, ti, p, t0, end)
    for _ in refs:
        ep.identity(ti, {gi: "delivered_duplicate"})
    ep.anomaly("redelivery", b)
    ep.truth.redelivery_cause["rebalance"] += b
    ep.anomaly("dup_effect", b)
    return ep


def stall_pending(sim: Sim, gi: int, ti: int | None = None) -> Episode | None:
    """Lag at the window end: the group stops consuming one partition (paused and never
    resumed in time); a burst arrives after the stall."""
    rng = sim.rng
    g = sim.groups[gi]
    if ti is None:
        ti = sim.ti[str(rng.choice(list(g.topics)))]
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    ts_ = sim.end - int(rng.integers(15, 41)) * MIN
    ep = Episode(sim, "consumer_lag_at_end")
    key = sim.new_key(ti, "pd")
    seq = int(rng.integers(0, 100_000))
    n = int(rng.integers(3, 9))
    prod = f"{t.name}-producer-1"
    for j in range(n):
        st = ts_ + 2 * MIN + 5 * j
        r = ep.rec(ti, p, key, seq + j, st + 2, prod, expect={gi: 0})
        ep.send(ti, key, seq + j, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                idempotent=t.idempotent)
        ep.identity(ti, {gi: "pending"})
    ep.rule(gi, ti, p, ConsumerRule(stall_from=ts_, resume_at=sim.read_until + 5 * MIN))
    ep.reserve(ti, p, ts_ - MARGIN, sim.post_end)
    ep.note("burst_records", n)
    return ep


def late_catchup(sim: Sim, gi: int, ti: int | None = None) -> Episode | None:
    """A partition consumed late, during the grace period: seen, so delivered."""
    rng = sim.rng
    g = sim.groups[gi]
    if ti is None:
        ti = sim.ti[str(rng.choice(list(g.topics)))]
    p = int(rng.integers(sim.topics[ti].partitions))
    ts_ = sim.end - int(rng.integers(5, 11)) * MIN
    ep = Episode(sim, "late_catchup")
    resume = sim.end + int(rng.integers(15, 26)) * MIN
    ep.rule(gi, ti, p, ConsumerRule(stall_from=ts_, resume_at=resume))
    ep.reserve(ti, p, ts_ - MARGIN, sim.post_end)
    return ep


def expired(sim: Sim, gi: int, ti: int | None = None) -> Episode | None:
    """Retention deletes the head of a partition a group had not consumed (it was stuck from
    before the window); on restart the group resets to the log start."""
    rng = sim.rng
    g = sim.groups[gi]
    if ti is None:
        ti = sim.ti[str(rng.choice(list(g.topics)))]
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t_del = sim.start + 40 * MIN
    t_r = sim.start + 55 * MIN
    ep = Episode(sim, "retention_expiry")
    key = sim.new_key(ti, "ex")
    seq = int(rng.integers(0, 100_000))
    prod = f"{t.name}-producer-1"
    n = int(rng.integers(3, 9))
    t0 = sim.start + int(rng.integers(5, 30)) * MIN
    states = {}
    for hi in sim.consumers(ti):
        if hi != gi and not sim.groups[hi].ledger_keys:
            states[hi] = "expired_unconsumed"   # processed, but the ledger cannot name it
    states[gi] = "expired_unconsumed"
    for j in range(n):
        st = t0 + 5 * j
        r = ep.rec(ti, p, key, seq + j, st + 2, prod, expect={gi: 0})
        ep.send(ti, key, seq + j, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                idempotent=t.idempotent)
        ep.identity(ti, states)
    # records after the retention point keep the partition in the dump
    for j in range(2):
        st = t_r + MIN + 5 * j
        r = ep.rec(ti, p, key, seq + n + j, st + 2, prod)
        ep.send(ti, key, seq + n + j, st, "acked", ref=r, ack_ts=st + 6, producer=prod,
                idempotent=t.idempotent)
        ep.identity(ti)
    m = sim.owner(gi, ti, p)
    ep.event(gi, m, t_r, "assigned", ti=ti, p=p, detail=DETAIL_RESET)
    ep.rule(gi, ti, p, ConsumerRule(skip_before=t_del, free_from=t_r))
    ep.delete_before(ti, p, t_del)
    ep.reserve(ti, p, sim.pre_start - MIN, t_r + 2 * MIN + 10 * SEC)
    ep.note("burst_records", n)
    del g
    return ep
