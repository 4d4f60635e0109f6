"""Transactional producers (contract §9): committed, aborted, re-sent, fenced and open transactions.

A :class:`TxnScript` writes one episode's transactional records and markers on exclusive
slots of a transactional topic (no base traffic there), then scripts every consuming group's
processing as the group's ``isolation.level`` allows, and computes the episode's truth from
the rows it wrote, rule by rule (§9 rules 20–25, with §4/§8 for the rest):

* a data row's outcome is the first marker of the same pid after it in its partition;
  aborted rows are not copies; open rows are copies;
* ``read_committed`` processes a record once the partition's last stable offset has passed
  it (every transaction that began at or before it has its marker), never an aborted record,
  and nothing at or after an open transaction's first record; ``read_uncommitted`` processes
  every data record once appended (its ledger rows say ``isolation: read_uncommitted``);
* a transactional producer logs ``acked`` only once its transaction committed (``ack_ts`` is
  the commit), ``aborted`` for a send inside an aborted transaction.

Open transactions exist only in slots reserved to the end of the generated range, so the
partition's last record and the group's "went past" are the episode's own.

Size: the exactly-once episodes (commits, aborts and re-sends, open and hanging
transactions, zombies, both isolation levels) and the truth they imply share one timeline
of each partition.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .episode import Episode
from .model import MARGIN, MIN, SEC, Sim

ABORTED = ("org.apache.kafka.common.errors.TransactionAbortedException: Failing batch since "
           "transaction was aborted")
FENCED = ("org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer "
          "with the same transactionalId which fences the current one.")
END_TXN_TIMEOUT = ("org.apache.kafka.common.errors.TimeoutException: Timeout expired after "
                   "60000ms while awaiting EndTxn(true)")
READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"
NEVER = 2**62


@dataclass(frozen=True)
class Producer:
    tid: str        # transactional.id
    pid: int        # producer id
    epoch: int
    name: str       # client.id


@dataclass
class _Row:
    local: int               # record number in the episode
    p: int
    ts: int
    prod: Producer
    key: str | None = None
    seq: int | None = None
    control: str | None = None   # commit | abort
    outcome: str = "committed"   # for data rows: committed | aborted | open
    pos: int = -1                # order in the partition slot (offset order)


def new_producer(sim: Sim, tid: str, epoch: int, name: str | None = None) -> Producer:
    sim._keyno["txn-pid"] += 1
    pid = 40_000 + 37 * sim._keyno["txn-pid"] + int(sim.rng.integers(0, 30))
    return Producer(tid, pid, epoch, name or tid)


def isolation_of(sim: Sim, gi: int) -> str | None:
    return sim.groups[gi].settings.get("isolation.level")


class TxnScript:
    """One transactional episode on topic ``ti``: rows, sends, then ``finish()``."""

    def __init__(self, sim: Sim, ti: int, kind: str, to_end: tuple[int, ...] = (),
                 leaky: bool = False) -> None:
        self.sim = sim
        self.ti = ti
        self.leaky = leaky   # read_committed groups read this episode's aborted records too
        self.ep = Episode(sim, kind)
        self.rows: list[_Row] = []
        self.sends: list[dict[str, Any]] = []
        self.to_end = set(to_end)      # partitions reserved to the end of the generated range
        self._seq: dict[str, int] = {}
        self._key_part: dict[str, int] = {}

    # -- writing ----------------------------------------------------------------
    def key(self, p: int, tag: str) -> str:
        k = self.sim.new_key(self.ti, tag)
        self._key_part[k] = p
        self._seq[k] = int(self.sim.rng.integers(0, 100_000))
        return k

    def next_seq(self, key: str) -> int:
        s = self._seq[key]
        self._seq[key] = s + 1
        return s

    def data(self, key: str, seq: int, ts: int, prod: Producer) -> _Row:
        r = _Row(len(self.rows), self._key_part[key], int(ts), prod, key, seq)
        self.rows.append(r)
        return r

    def marker(self, p: int, ts: int, prod: Producer, kind: str) -> _Row:
        r = _Row(len(self.rows), p, int(ts), prod, control=kind)
        self.rows.append(r)
        return r

    def end(self, rows: list[_Row], ts: int, prod: Producer, kind: str) -> int:
        """The coordinator's markers in every partition the rows touched; returns the last ts."""
        t = ts
        for p in sorted({r.p for r in rows}):
            self.marker(p, t, prod, kind)
            t += 1
        return t

    def send(self, key: str, seq: int, send_ts: int, status: str, prod: Producer, *,
             row: _Row | None = None, ack_ts: int | None = None, attempt: int = 1,
             error: str | None = None) -> None:
        self.sends.append(dict(key=key, seq=seq, send_ts=int(send_ts), status=status, prod=prod,
                               row=row, ack_ts=ack_ts, attempt=attempt, error=error))

    # -- finishing ----------------------------------------------------------------
    def _order(self) -> dict[int, list[_Row]]:
        parts: dict[int, list[_Row]] = defaultdict(list)
        for r in self.rows:
            parts[r.p].append(r)
        for rows in parts.values():
            rows.sort(key=lambda r: (r.ts, r.local))
            for i, r in enumerate(rows):
                if i and r.ts == rows[i - 1].ts:   # distinct append times: one offset order
                    raise AssertionError(f"two rows of {self.ep.kind} appended at {r.ts}")
                r.pos = i
        return parts

    @staticmethod
    def _outcomes(rows: list[_Row]) -> list[int]:
        """Rule 21 on one partition; returns the first position of each open transaction."""
        open_first: dict[int, int] = {}
        pending: dict[int, list[_Row]] = defaultdict(list)
        for r in rows:
            pid = r.prod.pid
            if r.control is None:
                if pid not in open_first:
                    open_first[pid] = r.pos
                pending[pid].append(r)
            else:
                for d in pending.pop(pid, []):
                    d.outcome = "committed" if r.control == "commit" else "aborted"
                open_first.pop(pid, None)
        for lst in pending.values():
            for d in lst:
                d.outcome = "open"
        return sorted(open_first.values())

    @staticmethod
    def _visible(rows: list[_Row]) -> list[int]:
        """read_committed: when the last stable offset passed each row (NEVER: not before an
        open transaction ends)."""
        end_of: dict[tuple[int, int], int] = {}   # (pid, first pos) -> its marker's ts
        first: dict[int, int] = {}
        for r in rows:
            pid = r.prod.pid
            if r.control is None:
                first.setdefault(pid, r.pos)
            elif pid in first:
                end_of[(pid, first.pop(pid))] = r.ts
        for pid, pos in first.items():
            end_of[(pid, pos)] = NEVER
        vis, cur = [], 0
        starts = sorted(end_of.items(), key=lambda kv: kv[0][1])
        j = 0
        for r in rows:
            while j < len(starts) and starts[j][0][1] <= r.pos:
                cur = max(cur, starts[j][1])
                j += 1
            vis.append(max(r.ts, cur))
        return vis

    def _consume(self, parts: dict[int, list[_Row]]) -> dict[int, list[tuple[_Row, int, int]]]:
        """Scripted processing per group: (row, started, finished) in offset order."""
        sim, ep, rng = self.sim, self.ep, self.sim.rng
        done: dict[int, list[tuple[_Row, int, int]]] = defaultdict(list)
        for gi in sim.consumers(self.ti):
            g = sim.groups[gi]
            iso = isolation_of(sim, gi)
            for p, rows in sorted(parts.items()):
                m = sim.owner(gi, self.ti, p)
                vis = (self._visible(rows) if iso == READ_COMMITTED
                       else [r.ts for r in rows])
                free = 0
                for r, v in zip(rows, vis, strict=True):
                    if r.control is not None:
                        continue
                    if iso == READ_COMMITTED and r.outcome == "aborted" and not self.leaky:
                        continue
                    if v >= NEVER:
                        break
                    s = max(v + int(rng.integers(g.lag_ms[0], g.lag_ms[1] + 1)), free + 3)
                    f = s + int(rng.integers(g.proc_ms[0], g.proc_ms[1] + 1))
                    if s >= sim.read_until:
                        raise AssertionError("scripted processing beyond the read bound")
                    ep.attempt(gi, m, r.local, s, f, "success",
                               isolation=READ_UNCOMMITTED if iso == READ_UNCOMMITTED else None)
                    done[gi].append((r, s, f))
                    free = f
        return done

    def finish(self) -> Episode:
        sim, ep, ti = self.sim, self.ep, self.ti
        parts = self._order()
        open_txns: list[tuple[int, _Row]] = []
        for p, rows in parts.items():
            for pos in self._outcomes(rows):
                if p not in self.to_end:
                    raise AssertionError("an open transaction outside a slot kept to the end")
                open_txns.append((p, rows[pos]))
        # the broker rows
        everyone = tuple(sim.consumers(ti))
        for r in self.rows:
            local = ep.rec(ti, r.p, r.key, r.seq, r.ts, r.prod.name, pid=r.prod.pid,
                           epoch=r.prod.epoch, custom=everyone, txn=True, control=r.control)
            assert local == r.local
        for s in self.sends:
            row = s["row"]
            ep.send(ti, s["key"], s["seq"], s["send_ts"], s["status"],
                    ref=None if row is None else row.local, ack_ts=s["ack_ts"],
                    attempt=s["attempt"], producer=s["prod"].name, idempotent=True,
                    error=s["error"], transactional_id=s["prod"].tid)
            if s["status"] == "acked" and (row is None or row.outcome != "committed"):
                raise AssertionError("a transactional producer acks only committed records")
        done = self._consume(parts)
        self._truth(parts, done, open_txns)
        # calendar: each partition from its first row to its last processing
        for p, rows in parts.items():
            a = min(r.ts for r in rows)
            b = max([r.ts for r in rows] + [f for gi in done for (x, _s, f) in done[gi]
                                             if x.p == p])
            ep.reserve(ti, p, a - MARGIN, sim.post_end if p in self.to_end else b + MARGIN)
        return ep

    # -- truth ----------------------------------------------------------------------
    def _truth(self, parts: dict[int, list[_Row]], done: dict[int, list[tuple[_Row, int, int]]],
               open_txns: list[tuple[int, _Row]]) -> None:
        sim, ep, ti = self.sim, self.ep, self.ti
        t = ep.truth
        ids: dict[tuple[str, int], dict[str, list]] = defaultdict(
            lambda: {"sends": [], "rows": []})
        for s in self.sends:
            ids[(s["key"], s["seq"])]["sends"].append(s)
        for r in self.rows:
            if r.control is None:
                ids[(r.key, r.seq)]["rows"].append(r)
        judged_at: dict[tuple[str, int], int] = {}
        for ident, d in ids.items():
            tss = [s["send_ts"] for s in d["sends"]] or [r.ts for r in d["rows"]]
            if sim.start <= min(tss) < sim.end:
                judged_at[ident] = min(tss)
        self._check_keys(ids, parts)
        proc: dict[int, dict[tuple[str, int], list[int]]] = {}
        for gi, lst in done.items():
            proc[gi] = defaultdict(list)
            for r, s, _f in lst:
                if r.outcome != "aborted":
                    proc[gi][(r.key, r.seq)].append(s)
                elif (r.key, r.seq) in judged_at:
                    ep.anomaly("aborted_read")
                    t.aborted_read_cause[isolation_of(sim, gi) or "unknown"] += 1
        attempted_max: dict[tuple[int, int], int] = {}   # (group, partition) -> highest position
        for gi, lst in done.items():
            for r, _s, _f in lst:
                attempted_max[(gi, r.p)] = max(attempted_max.get((gi, r.p), -1), r.pos)
        for ident, at in judged_at.items():
            d = ids[ident]
            sends, copies = d["sends"], [r for r in d["rows"] if r.outcome != "aborted"]
            acked = [s for s in sends if s["status"] == "acked"]
            states: dict[int, str] = {}
            if not copies:
                if acked:
                    raise AssertionError("an acked transactional send without a copy")
                ep.anomaly("lost_unacked")
                states = dict.fromkeys(sim.consumers(ti), "lost_unacked")
            else:
                if sends and all(s["status"] in ("failed", "timeout", "aborted") for s in sends):
                    ep.anomaly("written_despite_failure")
                if len(copies) >= 2:
                    n = len(copies) - 1
                    ep.anomaly("dup_write", n)
                    retry = (len(sends) > 1 or any(s["attempt"] > 1 for s in sends)
                             or any(s["status"] != "acked" for s in sends))
                    t.dup_cause["producer_retry" if retry else "idempotence_breach"] += n
                for gi in sim.consumers(ti):
                    starts = sorted(proc.get(gi, {}).get(ident, []))
                    k = len(starts)
                    if k >= 2:
                        states[gi] = "delivered_duplicate"
                        ep.anomaly("dup_effect", k - 1)
                    elif k == 1:
                        states[gi] = "delivered_once"
                    else:
                        past = all(attempted_max.get((gi, r.p), -1) > r.pos for r in copies)
                        if not past and any(r.p not in self.to_end for r in copies):
                            raise AssertionError("unprocessed copy in a slot that ends")
                        states[gi] = "skipped" if past else "pending"
                    sla = sim.groups[gi].settings.get("latency_sla_ms")
                    if k and sla is not None and starts[0] - at > int(sla):
                        ep.anomaly("late_delivery")
                        ep.note(f"late_{sim.groups[gi].group_id}")
            ep.identity(ti, states)
        # zombie_write: a data row below the epoch of an earlier row of its pid (rule 24)
        for rows in parts.values():
            best: dict[int, int] = {}
            for r in rows:
                pid = r.prod.pid
                if (r.control is None and pid in best and r.prod.epoch < best[pid]
                        and (r.key, r.seq) in judged_at):
                    ep.anomaly("zombie_write")
                best[pid] = max(best.get(pid, r.prod.epoch), r.prod.epoch)
        # hanging_transaction: judged by its first record, against the partition's last record
        timeout = int(sim.txn_config.get("transaction_timeout_ms", 60_000))
        for p, first in open_txns:
            last = max(r.ts for r in parts[p] if r.ts < sim.read_until)
            if sim.start <= first.ts < sim.end and last - first.ts > timeout:
                ep.anomaly("hanging_transaction")
        for r in self.rows:
            ep.note("markers" if r.control else f"{r.outcome}_records")

    def _check_keys(self, ids: dict, parts: dict[int, list[_Row]]) -> None:
        """Keep the other key-level anomalies at zero: dense seqs per key (no seq_gap), first
        copies in seq order (no write_reorder), one partition per key (no split)."""
        seqs: dict[str, set[int]] = defaultdict(set)
        for key, seq in ids:
            seqs[key].add(seq)
        for key, ss in seqs.items():
            if max(ss) - min(ss) + 1 != len(ss):
                raise AssertionError(f"seq gap in {key}")
        for rows in parts.values():
            first: dict[tuple[str, int], int] = {}
            for r in rows:
                if r.control is None and r.outcome != "aborted":
                    first.setdefault((r.key, r.seq), r.pos)
            last: dict[str, int] = {}
            for (key, seq), _pos in sorted(first.items(), key=lambda kv: kv[1]):
                if seq < last.get(key, -1):
                    raise AssertionError(f"write reorder in {key}")
                last[key] = seq


# ---------------------------------------------------------------- episodes
def _producer(sim: Sim, name: str, epoch: int | None = None) -> Producer:
    sim._keyno[f"tid-{name}"] += 1
    tid = f"{name}-{sim._keyno[f'tid-{name}']}"
    return new_producer(sim, tid, int(sim.rng.integers(0, 6)) if epoch is None else epoch,
                        f"{tid}-client")


def _parts(sim: Sim, ti: int, n: int) -> list[int]:
    return sorted(int(x) for x in sim.rng.choice(sim.topics[ti].partitions, size=n,
                                                  replace=False))


def _write_txn(sc: TxnScript, prod: Producer, items: list[tuple[str, int]], t0: int,
               gap: int = 3) -> list[_Row]:
    rows = []
    for i, (key, seq) in enumerate(items):
        rows.append(sc.data(key, seq, t0 + gap * i, prod))
    return rows


def _items(sc: TxnScript, parts: list[int], tag: str, per_part: tuple[int, int] = (1, 4)
           ) -> list[tuple[str, int]]:
    rng = sc.sim.rng
    out = []
    for p in parts:
        key = sc.key(p, tag)
        out += [(key, sc.next_seq(key)) for _ in range(int(rng.integers(*per_part)))]
    order = rng.permutation(len(out))
    # one key's records keep their seq order; partitions interleave
    by_key: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for key, seq in out:
        by_key[key].append((key, seq))
    keys = [out[int(i)][0] for i in order]
    return [by_key[k].pop(0) for k in keys]


def committed(sim: Sim, ti: int, lo: int, hi: int, long_: bool = False) -> Episode | None:
    """A committed transaction over 1–3 partitions. A ``long_`` one commits 70–100 s after
    its first record, so its read_committed consumers see its first records late."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "txn_committed")
    prod = _producer(sim, "transfer-service")
    parts = _parts(sim, ti, int(rng.integers(1, 4)))
    items = _items(sc, parts, "tc")
    t0 = sim.rand_time(lo, hi)
    span = int(rng.integers(70_000, 100_000))
    gap = (span - 5_000) // len(items) if long_ else 3
    rows = _write_txn(sc, prod, items, t0, gap)
    t_commit = t0 + span if long_ else rows[-1].ts + 40
    t_end = sc.end(rows, t_commit, prod, "commit")
    for r in rows:
        sc.send(r.key, r.seq, r.ts - 2, "acked", prod, row=r, ack_ts=t_end + 2)
    if long_:
        sc.ep.note("long_transactions")
    return sc.finish()


def interleaved(sim: Sim, ti: int, lo: int, hi: int) -> Episode | None:
    """Two producers' transactions interleave in one partition: one commits, the other aborts
    (markers match by pid) and re-sends its records in a new transaction."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "txn_interleaved")
    a, b = _producer(sim, "transfer-service"), _producer(sim, "fee-service")
    p = _parts(sim, ti, 1)[0]
    ka, kb = sc.key(p, "ia"), sc.key(p, "ib")
    na, nb = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    t0 = sim.rand_time(lo, hi)
    ra = [sc.data(ka, sc.next_seq(ka), t0 + 10 * i, a) for i in range(na)]
    rb = [sc.data(kb, sc.next_seq(kb), t0 + 5 + 10 * i, b) for i in range(nb)]
    t_abort = t0 + 10 * max(na, nb) + 20
    sc.end(rb, t_abort, b, "abort")
    t_commit = sc.end(ra, t_abort + 30, a, "commit")
    for r in ra:
        sc.send(r.key, r.seq, r.ts - 2, "acked", a, row=r, ack_ts=t_commit + 2)
    for r in rb:
        sc.send(r.key, r.seq, r.ts - 2, "aborted", b, ack_ts=t_abort + 1, error=ABORTED)
    t1 = t_commit + int(rng.integers(200, 2_000))
    rb2 = _write_txn(sc, b, [(r.key, r.seq) for r in rb], t1)
    t_end = sc.end(rb2, rb2[-1].ts + 30, b, "commit")
    for r in rb2:
        sc.send(r.key, r.seq, r.ts - 2, "acked", b, row=r, ack_ts=t_end + 2, attempt=2)
    return sc.finish()


def abort_resend(sim: Sim, ti: int, lo: int, hi: int, leaky: bool = False) -> Episode | None:
    """The application aborts a transaction (a processing error) and re-sends the same
    messages 5–90 s later in a new one: the aborted copy then the committed copy. ``leaky``:
    the read_committed groups get the aborted records too (a client or broker fault: e.g.
    a fetch that ignores the isolation level, as librdkafka's mock cluster does)."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "txn_abort_resend_leaky" if leaky else "txn_abort_resend",
                   leaky=leaky)
    prod = _producer(sim, "transfer-service")
    parts = _parts(sim, ti, int(rng.integers(1, 3)))
    items = _items(sc, parts, "ar")
    t0 = sim.rand_time(lo, hi)
    rows = _write_txn(sc, prod, items, t0)
    t_abort = sc.end(rows, rows[-1].ts + 50, prod, "abort")
    for r in rows:
        sc.send(r.key, r.seq, r.ts - 2, "aborted", prod, ack_ts=t_abort + 1, error=ABORTED)
    t1 = t_abort + int(rng.integers(5 * SEC, 90 * SEC))
    rows2 = _write_txn(sc, prod, items, t1)
    t_end = sc.end(rows2, rows2[-1].ts + 40, prod, "commit")
    for r in rows2:
        sc.send(r.key, r.seq, r.ts - 2, "acked", prod, row=r, ack_ts=t_end + 2, attempt=2)
    return sc.finish()


def abort_lost(sim: Sim, ti: int, lo: int, hi: int, logless: bool = False) -> Episode | None:
    """An aborted transaction never re-sent: lost_unacked. A ``logless`` producer keeps no
    send log (the messages are judged by their aborted copies' timestamps, rule 25)."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "txn_abort_lost")
    prod = _producer(sim, "transfer-service")
    parts = _parts(sim, ti, int(rng.integers(1, 3)))
    # without a send log, one record per key: the seqs of a key seen only in aborted copies
    # are then never "between" two others (seq_gap's corner, docs/scenarios.md)
    items = _items(sc, parts, "al", (1, 2) if logless else (1, 4))
    rows = _write_txn(sc, prod, items, sim.rand_time(lo, hi))
    t_abort = sc.end(rows, rows[-1].ts + 50, prod, "abort")
    if logless:
        sc.ep.note("without_send_log", len(rows))
    else:
        for r in rows:
            sc.send(r.key, r.seq, r.ts - 2, "aborted", prod, ack_ts=t_abort + 1, error=ABORTED)
    return sc.finish()


def zombie(sim: Sim, ti: int, lo: int, hi: int) -> Episode | None:
    """Instance A (epoch e) stalls inside a transaction; B starts with the same
    transactional.id (epoch e+1), the coordinator aborts A's transaction, B re-does the work
    and commits; A's retried produce request then lands (epoch e) and B's next transaction's
    COMMIT closes it: zombie_write, and a second committed copy (dup_write)."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "zombie_fencing")
    tid = f"transfer-service-{int(rng.integers(100, 999))}"
    ea = int(rng.integers(1, 8))
    a0 = new_producer(sim, tid, ea, f"{tid}-a")
    b = Producer(tid, a0.pid, ea + 1, f"{tid}-b")
    p = _parts(sim, ti, 1)[0]
    key = sc.key(p, "zb")
    n = int(rng.integers(1, 4))
    x = [(key, sc.next_seq(key)) for _ in range(n)]
    t0 = sim.rand_time(lo, hi)
    ra = _write_txn(sc, a0, x, t0)
    t_fence = ra[-1].ts + int(rng.integers(20 * SEC, 40 * SEC))
    sc.end(ra, t_fence, b, "abort")            # the coordinator bumps the epoch and aborts
    rb = _write_txn(sc, b, x, t_fence + 200)
    t_commit = sc.end(rb, rb[-1].ts + 40, b, "commit")
    for r in rb:
        sc.send(r.key, r.seq, r.ts - 2, "acked", b, row=r, ack_ts=t_commit + 2)
    rz = _write_txn(sc, a0, x, t_commit + int(rng.integers(100, 900)))   # the zombie lands
    for r in ra:
        sc.send(r.key, r.seq, r.ts - 2, "aborted", a0, ack_ts=rz[-1].ts + 5, error=FENCED)
    y = [(key, sc.next_seq(key)) for _ in range(int(rng.integers(1, 3)))]
    ry = _write_txn(sc, b, y, rz[-1].ts + int(rng.integers(300, 3_000)))
    t_end = sc.end(ry, ry[-1].ts + 40, b, "commit")
    for r in ry:
        sc.send(r.key, r.seq, r.ts - 2, "acked", b, row=r, ack_ts=t_end + 2)
    sc.ep.note("zombie_records", n)
    return sc.finish()


def hanging(sim: Sim, ti: int, p: int, lo: int, hi: int) -> Episode | None:
    """A transaction whose markers never came (its commit timed out): open for good. Other
    producers keep committing behind it for 8–15 minutes; read_committed groups are stuck
    at its first offset (the last stable offset) from then on."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "hanging_transaction", to_end=(p,))
    h = _producer(sim, "ledger-writer")
    kh = sc.key(p, "hg")
    t0 = sim.rand_time(lo, hi)
    rh = _write_txn(sc, h, [(kh, sc.next_seq(kh)) for _ in range(int(rng.integers(1, 4)))], t0)
    for r in rh:
        sc.send(r.key, r.seq, r.ts - 2, "timeout", h, ack_ts=r.ts + 60_000,
                error=END_TXN_TIMEOUT)
    t = t0 + 2 * SEC
    stop = t0 + int(rng.integers(8, 16)) * MIN
    other = _producer(sim, "transfer-service")
    ko = sc.key(p, "hb")
    while t < stop:
        rows = _write_txn(sc, other, [(ko, sc.next_seq(ko)) for _ in range(2)], t)
        t_end = sc.end(rows, rows[-1].ts + 30, other, "commit")
        for r in rows:
            sc.send(r.key, r.seq, r.ts - 2, "acked", other, row=r, ack_ts=t_end + 2)
        t += int(rng.integers(40 * SEC, 90 * SEC))
    return sc.finish()


def recent_open(sim: Sim, ti: int, p: int) -> Episode | None:
    """A transaction still open when the dump was taken, begun a minute before the window's
    end; another producer commits behind it 80–100 s after its first record (inside the
    grace period, so not judged).  Not hanging with a 120 s timeout (it would be with the
    60 s default); its producer has logged nothing yet (judged by the broker timestamps)."""
    rng = sim.rng
    sc = TxnScript(sim, ti, "recent_open_transaction", to_end=(p,))
    h = _producer(sim, "ledger-writer")
    kh = sc.key(p, "ro")
    t0 = sim.end - int(rng.integers(50, 70)) * SEC
    _write_txn(sc, h, [(kh, sc.next_seq(kh)) for _ in range(int(rng.integers(2, 5)))], t0,
               gap=int(rng.integers(1_000, 5_000)))
    other = _producer(sim, "transfer-service")
    ko = sc.key(p, "rb")
    t1 = t0 + int(rng.integers(80, 100)) * SEC
    rows = _write_txn(sc, other, [(ko, sc.next_seq(ko))], t1)
    t_end = sc.end(rows, rows[-1].ts + 30, other, "commit")
    for r in rows:
        sc.send(r.key, r.seq, r.ts - 2, "acked", other, row=r, ack_ts=t_end + 2)
    return sc.finish()
