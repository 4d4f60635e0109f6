"""The rebalance storm of the fan-push incident (seed 000).

Two members, ``max.poll.records=500``, about 1,500 ms per record,
``max.poll.interval.ms=300000``.  A burst of M fan-push records (one batch key,
so one partition) is polled at once by its owner S.  S commits after each
record; after ``max.poll.interval.ms`` without a poll its heartbeat thread
leaves the group ('poll timeout'), the other member O takes every partition
and resumes the burst at S's last successful commit.  S does not know yet and
keeps processing its batch (a zombie): every record from that point on is
processed by both (redelivery, cause rebalance; dup_effect) and their attempts
overlap (concurrent_processing).  S's commits now fail ('Commit cannot be
completed since the group has already rebalanced'); when its batch ends it
revokes, rejoins, and once O has finished the group is rebalanced back.

The burst is sized so that S's batch exceeds the interval but O's remainder
does not (M*d between 1.2 and 1.9 intervals), so the storm ends.
"""

from __future__ import annotations

import bisect
import math

from .episode import Episode
from .model import MIN, Sim

COMMIT_FAILED = (
    "Commit cannot be completed since the group has already rebalanced and assigned the "
    "partitions to another member. This means that the time between subsequent calls to poll() "
    "was longer than the configured max.poll.interval.ms, which typically implies that the poll "
    "loop is spending too much time message processing. You can address this either by "
    "increasing max.poll.interval.ms or by reducing the maximum size of batches returned in "
    "poll() with max.poll.records.")
REVOKING = "Revoking previously assigned partitions"


def per_record_ms(interval_ms: int, burst: int) -> int:
    """1,500 ms per record when the burst is big enough to exceed the interval with it."""
    if burst * 1_500 >= 1.2 * interval_ms and burst * 1_500 <= 1.8 * interval_ms:
        return 1_500
    return math.ceil(1.5 * interval_ms / burst)


def _overlap_count(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Intervals of a (sorted, disjoint) overlapping any interval of b (sorted, disjoint)."""
    starts = [s for s, _ in b]
    n = 0
    for s, f in a:
        i = bisect.bisect_left(starts, f) - 1   # last b starting before f
        if i >= 0 and b[i][1] > s:
            n += 1
    return n


def storm(sim: Sim, gi: int, ti: int, burst: int, stuck: int, lo: int, hi: int) -> Episode | None:
    rng = sim.rng
    g = sim.groups[gi]
    t = sim.topics[ti]
    if len(g.members) != 2 or tuple(g.topics) != (t.name,):
        raise ValueError("the storm needs a two-member group consuming one topic")
    interval = int(g.settings["max.poll.interval.ms"])
    if burst > int(g.settings["max.poll.records"]):
        raise ValueError("the burst must fit in one poll")
    d = per_record_ms(interval, burst)
    S, O = stuck, 1 - stuck  # noqa: E741  (S = stuck member, O = the other)
    s_parts = [q for q in range(t.partitions) if sim.owner(gi, ti, q) == S]
    o_parts = [q for q in range(t.partitions) if sim.owner(gi, ti, q) == O]
    p = int(rng.choice(s_parts))
    T0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "rebalance_storm")
    key = sim.new_key(ti, "fanbatch")
    seq0 = int(rng.integers(0, 100_000))
    prod = f"{t.name}-producer-1"
    refs = []
    for j in range(burst):
        st = T0 + 2 * j
        r = ep.rec(ti, p, key, seq0 + j, st + 2, prod, custom=(gi,))
        ep.send(ti, key, seq0 + j, st, "acked", ref=r, ack_ts=st + 9, producer=prod,
                idempotent=t.idempotent)
        refs.append(r)
    t1 = T0 + 2 * burst + 500            # S polls the whole burst
    dur_s = [d + int(x) for x in rng.integers(-40, 41, burst)]
    dur_o = [d + int(x) for x in rng.integers(-40, 41, burst)]
    s_iv, commits = [], []
    s = t1 + 5
    for j in range(burst):
        s_iv.append((s, s + dur_s[j]))
        commits.append(s + dur_s[j] + 1)
        s += dur_s[j] + 3
    t_left = t1 + interval + 1
    while t_left in commits:
        t_left += 1
    j_e = sum(1 for c in commits if c < t_left)
    if not 0 < j_e < burst:
        raise AssertionError("storm burst does not exceed the poll interval")
    t_assign = t_left + 3_000
    # O resumes at S's last successful commit; avoid touching interval ends
    o_start = t_assign + 200
    while True:
        o_iv = []
        s = o_start
        for j in range(j_e, burst):
            o_iv.append((s, s + dur_o[j]))
            s += dur_o[j] + 3
        ends = {x for iv in s_iv for x in iv}
        if not any(a in ends or b in ends for a, b in o_iv):
            break
        o_start += 1
    if (burst - j_e) * (d + 43) >= interval:
        raise AssertionError("the taking-over member would exceed the interval too")
    # S: the batch, its commits, the zombie part
    for j in range(burst):
        ep.attempt(gi, S, refs[j], s_iv[j][0], s_iv[j][1], "success", gen_at=t1)
        if j < j_e:
            ep.event(gi, S, commits[j], "commit", ti=ti, p=p, ref=refs[j], plus=1, gen_at=t1)
        else:
            ep.event(gi, S, commits[j], "commit_failed", ti=ti, p=p, ref=refs[j], plus=1,
                     gen_at=t1, detail=COMMIT_FAILED)
    ep.event(gi, S, t_left, "left_group", gen_at=t1, detail="poll timeout")
    for q in o_parts:
        ep.event(gi, O, t_left + 20, "revoked", ti=ti, p=q, gen_at=t1, detail=REVOKING)
    for q in range(t.partitions):
        ep.event(gi, O, t_assign, "assigned", ti=ti, p=q)
    ep.bump(gi, t_assign)
    # O: the takeover
    for k, j in enumerate(range(j_e, burst)):
        a, b = o_iv[k]
        ep.attempt(gi, O, refs[j], a, b, "success")
        ep.event(gi, O, b + 1, "commit", ti=ti, p=p, ref=refs[j], plus=1)
    s_end = s_iv[-1][1]
    o_end = o_iv[-1][1] + 1
    for q in s_parts:
        ep.event(gi, S, s_end + 10, "revoked", ti=ti, p=q, gen_at=t1, detail=REVOKING)
    ep.event(gi, S, s_end + 60, "joined_group", gen_at=t1)
    t_rejoin = max(o_end, s_end + 60) + 100
    for q in range(t.partitions):
        ep.event(gi, O, t_rejoin, "revoked", ti=ti, p=q, gen_at=t_assign, detail=REVOKING)
    t_back = t_rejoin + 1_500
    for q in o_parts:
        ep.event(gi, O, t_back, "assigned", ti=ti, p=q)
    for q in s_parts:
        ep.event(gi, S, t_back, "assigned", ti=ti, p=q)
    ep.bump(gi, t_back)
    end = t_back + 1_000
    for q in range(t.partitions):
        ep.pause(ti, q, T0 - 2 * MIN, end + 2 * MIN)
        ep.no_commit(gi, ti, q, T0 - 2 * MIN, end + 2 * MIN)
    # truth
    dup = burst - j_e
    for j in range(burst):
        ep.identity(ti, {gi: "delivered_duplicate" if j >= j_e else "delivered_once"})
    ep.anomaly("redelivery", dup)
    ep.truth.redelivery_cause["rebalance"] += dup
    ep.anomaly("dup_effect", dup)
    ep.anomaly("concurrent_processing", _overlap_count(s_iv, o_iv) + _overlap_count(o_iv, s_iv))
    ep.note("burst_records", burst)
    ep.note("reprocessed_records", dup)
    ep.note(f"per_record_ms={d}")
    return ep
