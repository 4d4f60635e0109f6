"""Vectorised base traffic, merged chunk by chunk with the injected fault records.

Per chunk (a time slice): draw clean messages (time, topic, key), give them
per-key sequence numbers, merge the injected records appended in the slice,
assign dense offsets per partition, then simulate every group's consumption
with a per-partition max-plus recurrence (start = max(arrival, previous
finish)), periodic offset commits, and count the base messages' delivery
states for the truth.  Nothing here loops per message.

One module (~480 lines) because it is one pipeline over one chunk's arrays: drawing,
merging, offsets, consumption and commits share those arrays and the engine's running
state; split, each part would take and return most of them.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .model import APPEND_DELAY, COMMIT_EVERY, MIN, POST_RATE, Sim
from .writer import Writer, table_from_rows

_NEG = np.int64(-(2**62))


def recurrence(a: np.ndarray, d: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Start times of sequential processing per segment: s_i = max(a_i, s_{i-1} + d_{i-1}).

    ``seg`` must be sorted; rows of a segment are processed in array order.
    """
    n = len(a)
    if n == 0:
        return a.copy()
    first = np.ones(n, dtype=bool)
    first[1:] = seg[1:] != seg[:-1]
    run = np.cumsum(first) - 1
    cs = np.cumsum(d) - d
    P = cs - cs[np.flatnonzero(first)][run]
    v = a - P
    lo = v.min()
    span = np.int64(v.max() - lo + 1)
    w = (v - lo) + run.astype(np.int64) * span
    cm = np.maximum.accumulate(w) - run.astype(np.int64) * span + lo
    return cm + P


def _in_intervals(t: np.ndarray, iv: list[tuple[int, int]]) -> np.ndarray:
    """Mask of t inside any of the (non-overlapping) half-open intervals."""
    if not iv or len(t) == 0:
        return np.zeros(len(t), dtype=bool)
    iv = sorted(iv)
    starts = np.array([a for a, _ in iv], dtype=np.int64)
    ends = np.array([b for _, b in iv], dtype=np.int64)
    i = np.searchsorted(starts, t, side="right") - 1
    ok = i >= 0
    out = np.zeros(len(t), dtype=bool)
    out[ok] = t[ok] < ends[i[ok]]
    return out


def _overlaps(s: np.ndarray, f: np.ndarray,
              iv: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose [s, f) overlaps one of the (disjoint) intervals, and that interval's end."""
    iv = sorted(iv)
    starts = np.array([a for a, _ in iv], dtype=np.int64)
    ends = np.array([b for _, b in iv], dtype=np.int64)
    i = np.searchsorted(starts, f, side="left") - 1   # last interval starting before f
    ok = i >= 0
    e = np.where(ok, ends[np.maximum(i, 0)], 0)
    hit = ok & (e > s)
    return hit, np.where(hit, e, 0)


class BaseEngine:
    def __init__(self, sim: Sim, writer: Writer, n_window: int, chunk_size: int) -> None:
        self.sim = sim
        self.w = writer
        self.rng = np.random.default_rng([sim.seed, 2])
        rng = self.rng
        T = sim.topics
        self.nT = len(T)
        self.n_window = n_window
        day = sim.end - sim.start
        self.n_pre = max(3, int(round(n_window * (sim.start - sim.pre_start) / day)))
        # after the window: inside the grace period, and beyond what the audit reads
        self.n_grace = max(3, int(round(n_window * (sim.read_until - sim.end) / day * POST_RATE)))
        self.n_beyond = max(3, int(round(n_window * (sim.post_end - sim.read_until) / day
                                         * POST_RATE)))
        self.n_post = self.n_grace + self.n_beyond
        weights = np.array([t.weight for t in T], dtype=float)
        self.weights = weights / weights.sum()
        # key space per topic (about 40 messages per key per day)
        self.n_keys = np.array([max(8, int(n_window * w / 40)) for w in self.weights])
        self.key_off = np.concatenate([[0], np.cumsum(self.n_keys)[:-1]])
        nk = int(self.n_keys.sum())
        # key -> partition (pinned), key -> producer, next seq per key
        self.key_part = np.concatenate([rng.permutation(k) % T[i].partitions
                                        for i, k in enumerate(self.n_keys)])
        self.key_prod = np.concatenate([rng.integers(0, T[i].producers, k)
                                        for i, k in enumerate(self.n_keys)])
        self.seq_next = rng.integers(0, 1_000_000, nk).astype(np.int64)
        # global partition index
        self.part_base = np.concatenate([[0], np.cumsum([t.partitions for t in T])[:-1]])
        self.NP = int(sum(t.partitions for t in T))
        self.pidx_ti = np.concatenate([[i] * t.partitions
                                       for i, t in enumerate(T)]).astype(np.int64)
        self.pidx_p = np.concatenate([np.arange(t.partitions) for t in T]).astype(np.int64)
        self.offset_next = rng.integers(10_000, 5_000_000, self.NP).astype(np.int64)
        self.topic_names = pa.array([t.name for t in T])
        self.key_prefix = pa.array([t.key_prefix + "-" for t in T])
        self.prod_names = [[f"{t.name}-producer-{k + 1}" for k in range(t.producers)] for t in T]
        self.prod_flat = pa.array([n for names in self.prod_names for n in names])
        self.prod_base = np.concatenate([[0], np.cumsum([t.producers for t in T])[:-1]])
        self.idem = np.array([t.idempotent for t in T])
        share = float(sim.rates.get("unlogged", 0.0))
        self.unlogged = np.array([share if t.unlogged else 0.0 for t in T])
        # consumption state
        G = sim.groups
        self.cons_free = [np.full(self.NP, _NEG) for _ in G]
        self.member_of = [np.array([sim.owner(gi, int(self.pidx_ti[q]), int(self.pidx_p[q]))
                                    for q in range(self.NP)]) for gi in range(len(G))]
        self.g_topics = [np.array(sorted(sim.ti[t] for t in g.topics)) for g in G]
        self.bumps = [np.array(sorted(sim.gen_bumps[gi]), dtype=np.int64) for gi in range(len(G))]
        self.tick_phase = rng.integers(0, COMMIT_EVERY, (len(G), self.NP))
        self.commit_max = np.full((len(G), self.NP), -1, dtype=np.int64)
        self.commit_carry: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        # injected records
        R = sim.recs
        self.nR = len(R)
        self.rec_ts = np.array(R.ts, dtype=np.int64)
        self.rec_order = np.argsort(self.rec_ts, kind="stable")
        self.rec_ts_sorted = self.rec_ts[self.rec_order]
        self.rec_ti = np.array(R.ti, dtype=np.int64)
        self.rec_p = np.array(R.p, dtype=np.int64)
        self.rec_custom = np.array(R.custom, dtype=np.int64)
        self.rid_offset = np.full(self.nR, -1, dtype=np.int64)
        self.vis = np.zeros((self.nR, len(G)), dtype=np.int32)
        if self.nR and (self.rec_ts.min() < sim.pre_start or self.rec_ts.max() >= sim.post_end):
            raise AssertionError("injected record outside the generated time range")
        # custom ledger rows per (group, partition index): (finished, rid) of processed rows
        self.custom_done: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for row in sim.rows["ledger"]:
            if row["outcome"] in ("success", "skipped") and row["finished_ts"] is not None:
                rid = row["_rid"]
                q = int(self.part_base[R.ti[rid]] + R.p[rid])
                self.custom_done[(row["_gi"], q)].append((row["finished_ts"], rid))
        # chunks
        total = self.n_window + self.n_pre + self.n_post
        self.n_chunks = max(1, -(-total // chunk_size))
        edges = [sim.start + (sim.end - sim.start) * i // self.n_chunks
                 for i in range(self.n_chunks + 1)]
        edges[0], edges[-1] = sim.pre_start, sim.post_end
        self.edges = edges
        w = np.diff([sim.start + (sim.end - sim.start) * i // self.n_chunks
                     for i in range(self.n_chunks + 1)])
        share = np.floor(self.n_window * w / w.sum()).astype(np.int64)
        share[: self.n_window - int(share.sum())] += 1
        self.win_counts = share
        self.log_dup_rate = float(sim.rates.get("log_duplicates", 0.0))
        self.log_dups = {"sends": 0, "ledger": 0, "events": 0}
        self.unlogged_count = 0

    # ------------------------------------------------------------------
    def run(self) -> None:
        for c in range(self.n_chunks):
            self._chunk(c)

    def _draw_times(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sim, rng = self.sim, self.rng
        c0, c1 = self.edges[c], self.edges[c + 1]
        los, his, ns = [], [], []
        if c == 0:
            los.append(sim.pre_start)
            his.append(sim.start)
            ns.append(self.n_pre)
        los.append(max(c0, sim.start))
        his.append(min(c1, sim.end))
        ns.append(int(self.win_counts[c]))
        if c == self.n_chunks - 1:
            los += [sim.end, sim.read_until]
            his += [sim.read_until, sim.post_end]
            ns += [self.n_grace, self.n_beyond]
        lo = np.repeat(np.array(los, dtype=np.int64), ns)
        hi = np.repeat(np.array(his, dtype=np.int64), ns)
        n = len(lo)
        t = lo + (rng.random(n) * (hi - lo)).astype(np.int64)
        ti = rng.choice(self.nT, size=n, p=self.weights)
        key = (rng.random(n) * self.n_keys[ti]).astype(np.int64)
        gk = self.key_off[ti] + key
        part = self.key_part[gk]
        # production pauses (exclusive fault slots): redraw the time
        q = self.part_base[ti] + part
        for _ in range(10_000):
            bad = np.zeros(n, dtype=bool)
            for (pti, pp), iv in sim.pauses.items():
                m = np.flatnonzero(q == self.part_base[pti] + pp)
                if len(m):
                    bad[m] = _in_intervals(t[m], iv)
            nb = int(bad.sum())
            if nb == 0:
                break
            t[bad] = lo[bad] + (rng.random(nb) * (hi[bad] - lo[bad])).astype(np.int64)
        else:
            raise RuntimeError("base traffic cannot avoid the paused slots")
        o = np.argsort(t, kind="stable")
        return t[o], ti[o], gk[o]

    def _chunk(self, c: int) -> None:
        sim, rng = self.sim, self.rng
        c0, c1 = self.edges[c], self.edges[c + 1]
        last = c == self.n_chunks - 1
        t_send, ti_b, gk = self._draw_times(c)
        nb = len(t_send)
        # seq per key, in send order
        o = np.argsort(gk, kind="stable")
        gks = gk[o]
        first = np.ones(nb, dtype=bool)
        first[1:] = gks[1:] != gks[:-1]
        run_start = np.flatnonzero(first)
        run = np.cumsum(first) - 1
        cum = np.arange(nb) - run_start[run] if nb else np.zeros(0, np.int64)
        seq_b = np.empty(nb, dtype=np.int64)
        seq_b[o] = self.seq_next[gks] + cum
        np.add.at(self.seq_next, gk, 1)
        p_b = self.key_part[gk]
        logged_b = ~((rng.random(nb) < self.unlogged[ti_b]) & (t_send >= sim.start + 2 * MIN)
                     & (t_send < sim.end - 2 * MIN))
        # injected records appended in this chunk
        lo_i, hi_i = np.searchsorted(self.rec_ts_sorted, [c0, c1], side="left")
        rids = self.rec_order[lo_i:hi_i]
        nr = len(rids)
        ts_all = np.concatenate([t_send + APPEND_DELAY, self.rec_ts[rids]])
        ti_all = np.concatenate([ti_b, self.rec_ti[rids]])
        p_all = np.concatenate([p_b, self.rec_p[rids]])
        rid_all = np.concatenate([np.full(nb, -1, dtype=np.int64), rids])
        idx = np.arange(nb + nr)
        order = np.lexsort((idx, ts_all, p_all, ti_all))
        ts_all, ti_all, p_all, rid_all = ts_all[order], ti_all[order], p_all[order], rid_all[order]
        n = nb + nr
        q_all = self.part_base[ti_all] + p_all
        counts = np.bincount(q_all, minlength=self.NP)
        firsts = np.cumsum(counts) - counts
        off_all = self.offset_next[q_all] + (np.arange(n) - firsts[q_all])
        self.offset_next += counts
        is_rec = rid_all >= 0
        self.rid_offset[rid_all[is_rec]] = off_all[is_rec]
        deleted = np.zeros(n, dtype=bool)
        for (dti, dp), tdel in sim.delete_before.items():
            deleted |= (q_all == self.part_base[dti] + dp) & (ts_all < tdel)
        # columns in merged order
        R = sim.recs
        key_b = pc.binary_join_element_wise(
            self.key_prefix.take(pa.array(ti_b)),
            pc.utf8_lpad(pc.cast(pa.array(gk - self.key_off[ti_b]), pa.string()), 6, "0"), "")
        key_col = pa.concat_arrays([key_b.cast(pa.string()),
                                    pa.array([R.key[r] for r in rids], pa.string())])
        key_col = key_col.take(pa.array(order))
        rec_seq = [R.seq[r] for r in rids]
        seq_vals = np.concatenate([seq_b, np.array([s if s is not None else 0 for s in rec_seq],
                                                   dtype=np.int64)])[order]
        seq_null = np.concatenate([np.zeros(nb, bool), np.array([s is None for s in rec_seq],
                                                                dtype=bool)])[order]
        seq_col = pa.array(seq_vals, pa.int64(), mask=seq_null)
        prod_b = self.prod_flat.take(pa.array(self.prod_base[ti_b] + self.key_prod[gk]))
        prod_col = pa.concat_arrays([prod_b, pa.array([R.producer[r] for r in rids], pa.string())]
                                    ).take(pa.array(order))

        def rec_opt(vals: list, typ: pa.DataType) -> pa.Array:
            return pa.concat_arrays([pa.nulls(nb, typ), pa.array(vals, typ)]).take(pa.array(order))

        topic_col = self.topic_names.take(pa.array(ti_all))
        keep = np.flatnonzero(~deleted)
        broker = pa.table({
            "topic": topic_col, "partition": pa.array(p_all, pa.int32()),
            "offset": pa.array(off_all), "key": key_col, "seq": seq_col,
            "timestamp": pa.array(ts_all).cast(pa.timestamp("ms", tz="UTC")),
            "producer_id": prod_col,
            "pid": rec_opt([R.pid[r] for r in rids], pa.int64()),
            "producer_epoch": rec_opt([R.epoch[r] for r in rids], pa.int32()),
            "batch_sequence": rec_opt([R.bseq[r] for r in rids], pa.int32()),
            "transactional": rec_opt([R.txn[r] for r in rids], pa.bool_()),
            "control": rec_opt([R.control[r] for r in rids], pa.string()),
        }).take(pa.array(keep))
        part = f"{c:05d}"
        self.w.write("broker", part, broker)
        # base send log
        logged_all = np.concatenate([logged_b, np.zeros(nr, bool)])[order]
        logged_all |= deleted   # a record with neither send row nor broker copy would not exist
        s_idx = np.flatnonzero(logged_all & ~is_rec)
        ns = len(s_idx)
        sends = pa.table({
            "send_ts": pa.array(ts_all[s_idx] - APPEND_DELAY).cast(pa.timestamp("ms", tz="UTC")),
            "topic": topic_col.take(pa.array(s_idx)), "key": key_col.take(pa.array(s_idx)),
            "seq": seq_col.take(pa.array(s_idx)), "status": pa.array(["acked"] * ns),
            "partition": pa.array(p_all[s_idx], pa.int32()), "offset": pa.array(off_all[s_idx]),
            "ack_ts": pa.array(ts_all[s_idx] + rng.integers(1, 15, ns)).cast(
                pa.timestamp("ms", tz="UTC")),
            "attempt": pa.array(np.ones(ns, np.int32)),
            "producer_id": prod_col.take(pa.array(s_idx)),
            "idempotent": pa.array(self.idem[ti_all[s_idx]]),
            "error": pa.nulls(ns, pa.string()),
        })
        self.w.write("sends", part, self._log_dups("sends", sends))
        # truth: judged base rows
        t_send_all = ts_all - APPEND_DELAY
        judged = ~is_rec & (t_send_all >= sim.start) & (t_send_all < sim.end)
        sim.truth.judged += int(judged.sum())
        self.unlogged_count += int((judged & ~logged_all).sum())
        # consumption per group
        ledgers: list[pa.Table] = []
        events: list[dict] = []
        for gi, g in enumerate(sim.groups):
            in_g = np.isin(ti_all, self.g_topics[gi])
            custom = np.zeros(n, dtype=bool)
            if nr:
                custom[is_rec] = ((self.rec_custom[rid_all[is_rec]] >> gi) & 1).astype(bool)
            skip = np.zeros(n, dtype=bool)
            for (rgi, rti, rp), rule in sim.rules.items():
                if rgi == gi and rule.skip_before is not None:
                    skip |= (q_all == self.part_base[rti] + rp) & (ts_all < rule.skip_before)
            sel = np.flatnonzero(in_g & ~custom & ~skip)
            proc_vis = np.zeros(n, dtype=bool)
            stall = np.zeros(n, dtype=bool)
            started = np.zeros(n, dtype=np.int64)
            if len(sel):
                led, vis_sel, stall_sel = self._consume(
                    gi, sel, q_all, ts_all, off_all, rid_all, key_col, seq_col, topic_col, p_all,
                    c0, c1, last, events)
                proc_vis[sel] = vis_sel
                stall[sel] = stall_sel
                started[sel] = led.column("started_ts").cast(pa.int64()).to_numpy()
                ledgers.append(led)
            else:
                self._commits(gi, np.zeros(0, np.int64), np.zeros(0, np.int64),
                              np.zeros(0, np.int64), c0, c1, last, events)
            jg = judged & in_g
            gid = g.group_id
            sim.truth.group_judged[gid] += int(jg.sum())
            ok = proc_vis & (~deleted | g.ledger_keys)
            st = sim.truth.states[gid]
            st["delivered_once"] += int((jg & ok).sum())
            st["expired_unconsumed"] += int((jg & deleted & ~ok).sum())
            pend = jg & ~deleted & ~proc_vis
            if np.any(pend & ~stall):
                raise AssertionError(f"{gid}: base messages unprocessed outside a stall")
            st["pending"] += int(pend.sum())
            sla = g.settings.get("latency_sla_ms")
            if sla is not None:   # §9 late_delivery: judged by the send (or, unlogged, the copy)
                judge_ts = np.where(logged_all, t_send_all, ts_all)
                late = jg & ok & (started - judge_ts > int(sla))
                sim.truth.anomalies["late_delivery"] += int(late.sum())
        if ledgers:
            self.w.write("ledger", part, self._log_dups("ledger", pa.concat_tables(ledgers)))
        if events:
            ev = table_from_rows("events", events)
            self.w.write("events", part, self._log_dups("events", ev))

    # ------------------------------------------------------------------
    def _log_dups(self, source: str, table: pa.Table) -> pa.Table:
        """Exact duplicate log lines (contract rule 5), a logging artefact to be quarantined."""
        if self.log_dup_rate <= 0 or table.num_rows == 0:
            return table
        k = int(self.rng.binomial(table.num_rows, self.log_dup_rate))
        if k == 0:
            return table
        idx = self.rng.choice(table.num_rows, size=k, replace=False)
        self.log_dups[source] += k
        return pa.concat_tables([table, table.take(pa.array(np.sort(idx)))])

    def _consume(self, gi, sel, q_all, ts_all, off_all, rid_all, key_col, seq_col, topic_col,
                 p_all, c0, c1, last, events):
        sim, rng = self.sim, self.rng
        g = sim.groups[gi]
        q = q_all[sel]
        ts = ts_all[sel]
        m = len(sel)
        a = ts + rng.integers(g.lag_ms[0], g.lag_ms[1] + 1, m)
        d = rng.integers(g.proc_ms[0], g.proc_ms[1] + 1, m).astype(np.int64)
        stall = np.zeros(m, dtype=bool)
        for (rgi, rti, rp), rule in sim.rules.items():
            if rgi != gi:
                continue
            mq = q == self.part_base[rti] + rp
            if rule.free_from is not None:
                a = np.where(mq, np.maximum(a, rule.free_from), a)
            if rule.stall_from is not None:
                ms = mq & (ts >= rule.stall_from)
                stall |= ms
                a = np.where(ms, np.maximum(a, rule.resume_at), a)
        # carry from the previous chunk
        firstrow = np.ones(m, dtype=bool)
        firstrow[1:] = q[1:] != q[:-1]
        a = np.where(firstrow, np.maximum(a, self.cons_free[gi][q]), a)
        member = self.member_of[gi][q]
        for _ in range(50):
            s = recurrence(a, d + 1, q)
            f = s + d
            moved = False
            for (bgi, bm), iv in sim.blackouts.items():
                if bgi != gi:
                    continue
                mm = member == bm
                hit, new = _overlaps(s, f, iv)
                hit &= mm
                if hit.any():
                    a = np.where(hit, np.maximum(a, new), a)
                    moved = True
            if not moved:
                break
        else:
            raise RuntimeError("blackout resolution did not converge")
        lastrow = np.ones(m, dtype=bool)
        lastrow[:-1] = q[1:] != q[:-1]
        self.cons_free[gi][q[lastrow]] = f[lastrow]
        vis = s < sim.read_until
        rr = rid_all[sel]
        isr = (rr >= 0) & vis
        np.add.at(self.vis[:, gi], rr[isr], 1)
        gen = 1 + np.searchsorted(self.bumps[gi], s, side="right")
        sel_a = pa.array(sel)
        names = pa.array(list(g.members))
        led = pa.table({
            "group_id": pa.array([g.group_id] * m),
            "member_id": names.take(pa.array(member)),
            "topic": topic_col.take(sel_a), "partition": pa.array(p_all[sel], pa.int32()),
            "offset": pa.array(off_all[sel]),
            "key": key_col.take(sel_a) if g.ledger_keys else pa.nulls(m, pa.string()),
            "seq": seq_col.take(sel_a) if g.ledger_keys else pa.nulls(m, pa.int64()),
            "started_ts": pa.array(s).cast(pa.timestamp("ms", tz="UTC")),
            "finished_ts": pa.array(f).cast(pa.timestamp("ms", tz="UTC")),
            "outcome": pa.array(["success"] * m),
            "generation": pa.array(gen.astype(np.int32)),
        })
        self._commits(gi, q, f, off_all[sel], c0, c1, last, events)
        return led, vis, stall

    def _commits(self, gi, q, f, off, c0, c1, last, events) -> None:
        """Periodic commits: the next offset after the highest one processed so far."""
        sim = self.sim
        g = sim.groups[gi]
        hi = sim.post_end + 10 * MIN if last else c1
        lo = sim.pre_start if c0 == self.edges[0] else c0
        for tiq in self.g_topics[gi]:
            for p in range(sim.topics[tiq].partitions):
                qq = int(self.part_base[tiq] + p)
                lo_i, hi_i = np.searchsorted(q, [qq, qq + 1])
                fs, offs = f[lo_i:hi_i], off[lo_i:hi_i]
                cust = [(fin, r) for fin, r in self.custom_done.get((gi, qq), [])
                        if c0 <= fin < c1 or (last and fin >= c1)]
                if cust:
                    fs = np.concatenate([fs, np.array([x for x, _ in cust], dtype=np.int64)])
                    offs = np.concatenate([offs, self.rid_offset[[r for _, r in cust]]])
                    if (self.rid_offset[[r for _, r in cust]] < 0).any():
                        raise AssertionError("custom ledger row before its record")
                carry = self.commit_carry.pop((gi, qq), None)
                if carry is not None:
                    fs = np.concatenate([carry[0], fs])
                    offs = np.concatenate([carry[1], offs])
                o = np.argsort(fs, kind="stable")
                fs, offs = fs[o], offs[o]
                cut = np.searchsorted(fs, hi, side="left")
                if cut < len(fs):
                    self.commit_carry[(gi, qq)] = (fs[cut:], offs[cut:])
                fs, offs = fs[:cut], offs[:cut]
                phase = int(self.tick_phase[gi, qq])
                k0 = -(-(lo - phase) // COMMIT_EVERY)
                ticks = phase + COMMIT_EVERY * np.arange(k0, (hi - phase - 1) // COMMIT_EVERY + 1)
                ticks = ticks[(ticks >= lo) & (ticks < hi)]
                if len(ticks) == 0:
                    if len(offs):
                        self.commit_max[gi, qq] = max(self.commit_max[gi, qq], int(offs.max()))
                    continue
                skip = _in_intervals(ticks, sim.no_commit.get((gi, int(tiq), p), []))
                mem = int(self.member_of[gi][qq])
                skip |= _in_intervals(ticks, sim.blackouts.get((gi, mem), []))
                ticks = ticks[~skip]
                cm = np.maximum.accumulate(offs) if len(offs) else offs
                k = np.searchsorted(fs, ticks, side="left")
                prev = int(self.commit_max[gi, qq])
                for tk, kk in zip(ticks.tolist(), k.tolist(), strict=True):
                    best = max(prev, int(cm[kk - 1]) if kk > 0 else -1)
                    if best < 0:
                        continue
                    events.append(dict(group_id=g.group_id, member_id=g.members[mem], ts=tk,
                                       event="commit", topic=sim.topics[int(tiq)].name,
                                       partition=p, offset=best + 1,
                                       generation=int(1 + np.searchsorted(self.bumps[gi], tk,
                                                                          side="right")),
                                       detail=None))
                if len(offs):
                    self.commit_max[gi, qq] = max(prev, int(offs.max()))
