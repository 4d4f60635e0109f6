"""A fault episode: the records, sends, processing attempts and events one injected fault
writes, the calendar ranges it reserves, and the truth it adds (committed only if it fits)."""

from __future__ import annotations

from typing import Any

from .model import MARGIN, Calendar, ConsumerRule, Sim, Truth


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
            custom: tuple[int, ...] = (), expect: dict[int, int] | None = None,
            txn: bool | None = None, control: str | None = None) -> int:
        sim = self.sim
        exp = {gi: 1 for gi in sim.consumers(ti) if gi not in custom}
        if expect:
            exp.update(expect)
        mask = 0
        for gi in custom:
            mask |= 1 << gi
        self._recs.append(dict(ti=ti, p=p, key=key, seq=seq, ts=int(ts), producer=producer,
                               pid=pid, epoch=epoch, bseq=bseq, custom=mask, expect=exp,
                               txn=txn, control=control))
        return len(self._recs) - 1

    def send(self, ti: int, key: str | None, seq: int, send_ts: int, status: str, *,
             ref: int | None = None, ack_ts: int | None = None, attempt: int | None = 1,
             producer: str, idempotent: bool | None = False, error: str | None = None,
             transactional_id: str | None = None) -> None:
        row = dict(send_ts=int(send_ts), topic=self.sim.topics[ti].name, key=key, seq=seq,
                   status=status, ack_ts=None if ack_ts is None else int(ack_ts),
                   attempt=attempt, producer_id=producer, idempotent=idempotent, error=error)
        if transactional_id is not None:
            row["transactional_id"] = transactional_id
        if ref is not None:
            row["_rid"] = ref
        self._rows["sends"].append(row)

    def attempt(self, gi: int, member: int, ref: int, started: int, finished: int | None,
                outcome: str, gen_at: int | None = None, isolation: str | None = None) -> None:
        """A processing attempt; its generation is the one in effect at gen_at (default: start)."""
        g = self.sim.groups[gi]
        row = dict(
            group_id=g.group_id, member_id=g.members[member], _rid=ref, _gi=gi,
            started_ts=int(started), finished_ts=None if finished is None else int(finished),
            outcome=outcome, _gen_at=int(started if gen_at is None else gen_at))
        if isolation is not None:
            row["isolation"] = isolation
        self._rows["ledger"].append(row)

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
            R.txn.append(r["txn"])
            R.control.append(r["control"])
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
