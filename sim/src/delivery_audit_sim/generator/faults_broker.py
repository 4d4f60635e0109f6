"""Broker-side loss: an acks=1 producer across a leader failover.

Timeline on one partition (an exclusive slot, so offsets are contiguous):

* phase A: records acked by the old leader; the last ``n_la`` were not yet
  replicated when it crashed;
* the new leader truncates to the replicated prefix and reuses those offsets;
* phase B (election): sends that failed for good (never written);
* the application drops a few messages while its buffer is full (no send row
  at all): sequence gaps;
* phase W: requests that timed out although the new leader wrote them;
* phase C: normal acked sends; the first of them reuse the lost offsets.
"""

from __future__ import annotations

from .episode import Episode
from .model import MARGIN, SEC, Sim

NOT_LEADER = ("org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests "
              "intended only for the leader, this error indicates that the broker is not the "
              "current leader.")
TIMEOUT = "org.apache.kafka.common.errors.TimeoutException: Request timed out."


def failover(sim: Sim, tis: list[int], lo: int, hi: int) -> Episode | None:
    rng = sim.rng
    ti = int(rng.choice(tis))
    t = sim.topics[ti]
    p = int(rng.integers(t.partitions))
    t0 = sim.rand_time(lo, hi)
    ep = Episode(sim, "leader_failover")
    prod = f"{t.name}-acks1-producer-1"
    keys = [sim.new_key(ti, "lf"), sim.new_key(ti, "lf")]
    next_seq = {k: int(rng.integers(0, 100_000)) for k in keys}
    n_surv, n_la = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    n_lu, n_gap, n_wdf = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    n_c = n_la + int(rng.integers(1, 4))
    counter = [0]

    def take() -> tuple[str, int]:
        k = keys[counter[0] % len(keys)]
        counter[0] += 1
        s = next_seq[k]
        next_seq[k] += 1
        return k, s

    # phase A
    a_msgs = []
    for j in range(n_surv + n_la):
        k, s = take()
        a_msgs.append((k, s, t0 + 20 * j))
    crash = a_msgs[-1][2] + 12
    for k, s, st in a_msgs[:n_surv]:
        r = ep.rec(ti, p, k, s, st + 2, prod)
        ep.send(ti, k, s, st, "acked", ref=r, ack_ts=st + 6, producer=prod)
        ep.identity(ti)
    lost = a_msgs[n_surv:]
    # phase B: failed for good
    for j in range(n_lu):
        k, s = take()
        st = crash + 500 + 300 * j
        ep.send(ti, k, s, st, "failed", ack_ts=st + 1_000, producer=prod, error=NOT_LEADER)
        ep.identity(ti, default="lost_unacked")
    # buffer exhausted: seqs consumed, never sent, never logged
    for _ in range(n_gap):
        take()
    elected = crash + 8 * SEC
    l2: list[int] = []   # records on the new leader, in offset order
    # phase W: timed out, yet written
    for j in range(n_wdf):
        k, s = take()
        st = elected - 200 + 3 * j
        l2.append(ep.rec(ti, p, k, s, elected + 10 + j, prod))
        ep.send(ti, k, s, st, "timeout", ack_ts=st + 30_000, producer=prod, error=TIMEOUT)
        ep.identity(ti)
    # phase C: normal sends on the new leader
    c_refs = []
    for j in range(n_c):
        k, s = take()
        st = elected + 1_000 + 20 * j
        r = ep.rec(ti, p, k, s, st + 2, prod)
        l2.append(r)
        c_refs.append((r, k, s, st))
    for r, k, s, st in c_refs:
        ep.send(ti, k, s, st, "acked", ref=r, ack_ts=st + 6, producer=prod)
        ep.identity(ti)
    # the lost records: acked by the old leader at offsets now holding other records
    for (k, s, st), reuse in zip(lost, l2, strict=False):
        ep.send(ti, k, s, st, "acked", ref=reuse, ack_ts=st + 6, producer=prod)
        ep.identity(ti, default="lost_acked")
    assert len(l2) >= len(lost)
    last = max(r["ts"] for r in ep._recs)
    ep.pause(ti, p, t0 - MARGIN, last + 5 * SEC + MARGIN)
    ep.anomaly("lost_acked", n_la)
    ep.anomaly("lost_unacked", n_lu)
    ep.anomaly("written_despite_failure", n_wdf)
    ep.anomaly("seq_gap", n_gap)
    ep.note("lost_acked", n_la)
    ep.note("lost_unacked", n_lu)
    ep.note("written_despite_failure", n_wdf)
    ep.note("seq_gap", n_gap)
    return ep
