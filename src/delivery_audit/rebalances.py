"""Rebalances and advice (contract §5).

Per judged group:

* **timeline** — from the group's events (``group_events.TIMELINE_EVENTS``: assigned /
  revoked / lost / commit_failed / left_group / joined_group), or, when the group has
  none, inferred from member changes on a partition in the ledger. A rebalance opens at
  the first disruptive event (revoke, loss, failed commit, leave, join) and ends at the
  last ``assigned`` of the wave that follows; the next disruptive event after that wave
  opens the next rebalance. A failed commit, revoke or loss by a member that already
  left and has not been given partitions again is the zombie's late discovery of the
  previous rebalance: it is counted there (``zombie_events``), not as a new rebalance.
  An assignment wave with no disruption before it while nobody owned partitions is the
  group's start (kind ``initial``), and a final wave of revokes/leaves with no new
  assignment is the group stopping (kind ``stop``): both listed, neither counted.
* **evictions** — each member that left (``left_group``, ``lost``, or revoked and not
  given partitions again), diagnosed ``poll_interval_exceeded`` (its leave says poll
  timeout, or before leaving: a gap between consecutive processing starts, one attempt,
  or up to ``max.poll.records`` back-to-back attempts took longer than
  ``max.poll.interval.ms``), ``session_timeout`` (the coordinator says it failed /
  heartbeat expired, or it was silent longer than ``session.timeout.ms``), else
  ``left`` (a voluntary or unexplained leave).
* **redeliveries_linked** — successful reprocessings (the ``redelivery`` rows of the
  anomaly table: rule 15, judged identities) whose second processing started at or
  after a rebalance's start, and whose first processing started no earlier than one
  ``max.poll.interval.ms`` before it (the batch the rebalance interrupted); each is
  linked to the latest such rebalance.
* **advice** — p99 per-record processing time (finished_ts − started_ts of successful
  attempts, ``percentile_approx``) × ``max.poll.records`` against
  ``max.poll.interval.ms``; the largest safe ``max.poll.records`` is
  ``floor(max.poll.interval.ms / 2 / p99)``; ``heartbeat.interval.ms ≤
  session.timeout.ms / 3``.

Only compact results reach the driver: events are collapsed per (member, event,
timestamp) and runs of failed commits per member are collapsed to one row.

Two Spark actions in all, each collecting small tables at once (``collect.collect_all``):

1. ``rebalance_tables`` (processing stats, compact events, ledger handovers) →
   ``cluster_groups``: the state machine on the driver;
2. ``rebalance_round2_tables`` (evidence before each leave, redeliveries linked to the
   counted rebalances) → ``build_rebalance_report``.

``rebalance_report`` runs both; a caller that collects other tables too can put round 1
into its own ``collect_all`` and call the steps itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .collect import collect_all
from .config import AuditConfig
from .group_events import TIMELINE_EVENTS, ZOMBIE_EVENTS

KAFKA_DEFAULTS = {
    "max.poll.records": 500,
    "max.poll.interval.ms": 300_000,
    "session.timeout.ms": 45_000,
    "heartbeat.interval.ms": 3_000,
}
IDLE_SPLIT_MS = 1_000  # back-to-back attempts: a pause longer than this ends a busy run
INFER_GAP_MS = 30_000  # ledger handovers further apart than this are separate rebalances
MAX_LISTED = 50  # members/partitions listed per timeline entry


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _num(n: float | int | None) -> str:
    if n is None:
        return "?"
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}"
    return f"{int(n):,}"


def _ms(col: str) -> F.Column:
    return F.unix_millis(F.col(col))


# --------------------------------------------------------------------------- settings


@dataclass
class Settings:
    values: dict[str, int]
    origin: dict[str, str]

    def __getitem__(self, name: str) -> int:
        return self.values[name]

    def as_dict(self) -> dict[str, Any]:
        return {k: {"value": v, "from": self.origin[k]} for k, v in self.values.items()}


def group_settings(config: AuditConfig, group_id: str) -> Settings:
    g = config.group(group_id)
    values, origin = {}, {}
    for name, default in KAFKA_DEFAULTS.items():
        raw = g.get(name) if g else None
        try:
            v = int(raw) if raw is not None else None
        except (TypeError, ValueError):
            v = None
        values[name] = v if v is not None and v > 0 else default
        origin[name] = "config" if v is not None and v > 0 else "Kafka default"
    return Settings(values, origin)


# --------------------------------------------------------------------------- round 1


def _stats_table(ledger: DataFrame) -> DataFrame:
    """Per group: p50/p99/max per-record processing ms of successful attempts."""
    dur = (_ms("finished_ts") - _ms("started_ts")).alias("d")
    return (
        ledger.filter((F.col("outcome") == "success") & F.col("finished_ts").isNotNull()
                      & (F.col("finished_ts") >= F.col("started_ts")))
        .select("group_id", dur)
        .groupBy("group_id")
        .agg(F.percentile_approx("d", [0.5, 0.99], 10_000).alias("q"),
             F.max("d").alias("mx"), F.count(F.lit(1)).alias("n"))
    )


def _compact_events(events: DataFrame) -> DataFrame:
    """Timeline events collapsed per (group, member, event, ts); consecutive failed commits
    of one member collapsed into one run."""
    ev = events.filter(F.col("event").isin(*TIMELINE_EVENTS)).select(
        "group_id", "member_id", "event", _ms("ts").alias("t"), "topic", "partition",
        "generation", "detail")
    w = Window.partitionBy("group_id", "member_id").orderBy("t", "event")
    change = F.when(F.lag("event").over(w).eqNullSafe(F.col("event")), 0).otherwise(1)
    ev = ev.withColumn("_chg", change).withColumn(
        "_run", F.sum("_chg").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    key_t = F.when(F.col("event") == "commit_failed", F.lit(None)).otherwise(F.col("t"))
    tp = F.when(F.col("topic").isNotNull(), F.concat_ws(
        "-", F.col("topic"), F.coalesce(F.col("partition").cast("string"), F.lit("*"))))
    return (
        ev.groupBy("group_id", "member_id", "event", "_run", key_t.alias("_kt"))
        .agg(F.min("t").alias("t"), F.max("t").alias("t_last"), F.count(F.lit(1)).alias("n"),
             F.max("generation").alias("generation"),
             F.first("detail", ignorenulls=True).alias("detail"),
             F.slice(F.sort_array(F.collect_set(tp)), 1, MAX_LISTED).alias("tps"),
             F.max(F.col("topic").isNull()).alias("all_partitions"))
    )


def _handovers(ledger: DataFrame, events: DataFrame) -> DataFrame:
    """Ledger member changes on a partition, for the groups without timeline events (the
    only ones whose rebalances are inferred): aggregated first, then the groups with
    events are dropped from the small result."""
    w = Window.partitionBy("group_id", "topic", "partition").orderBy("t", "offset")
    led = ledger.select(
        "group_id", "topic", "partition", "offset", "member_id", _ms("started_ts").alias("t"),
        F.coalesce(_ms("finished_ts"), _ms("started_ts")).alias("f"))
    with_events = (events.filter(F.col("event").isin(*TIMELINE_EVENTS))
                   .select("group_id").distinct())
    return (
        led.select("*", F.lag("member_id").over(w).alias("prev"),
                   F.lag("f").over(w).alias("prev_f"))
        .filter(F.col("prev").isNotNull() & (F.col("prev") != F.col("member_id")))
        .groupBy("group_id", "prev", "member_id", "t")
        .agg(F.min("prev_f").alias("prev_f"),
             F.slice(F.sort_array(F.collect_set(F.concat_ws(
                 "-", "topic", F.col("partition").cast("string")))), 1, MAX_LISTED).alias("tps"))
        # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
        .join(with_events.hint("merge"), on="group_id", how="left_anti")
    )


def _judged(group_ids: list[str]) -> list[str]:
    """The groups to report on, in report order."""
    return sorted({g for g in group_ids if g})


def rebalance_tables(ledger: DataFrame, events: DataFrame, group_ids: list[str]
                     ) -> dict[str, DataFrame]:
    """Round 1: the small tables the timelines are built from (no Spark action). Collect
    them with ``collect.collect_all`` (alone or with other tables) and pass the result to
    ``cluster_groups``.

    * ``rebalance_stats`` — per group_id: ``q`` [p50, p99] and ``mx`` (max) per-record
      processing ms of successful attempts, ``n`` attempts.
    * ``rebalance_events`` — timeline events per (group_id, member_id, event, ``t``) (epoch
      ms; a member's run of failed commits is one row from ``t`` to ``t_last``): ``n``
      events, max ``generation``, first ``detail``, ``tps`` (topic-partition list).
    * ``rebalance_handovers`` — groups without timeline events only: ledger member changes
      on a partition per (group_id, ``prev`` member, member_id, ``t`` = the first start by
      the new member), ``prev_f`` (the previous member's last finish), ``tps``.
    """
    groups = _judged(group_ids)
    if not groups:
        return {}
    ledger = ledger.filter(F.col("group_id").isin(*groups))
    events = events.filter(F.col("group_id").isin(*groups))
    return {
        "rebalance_stats": _stats_table(ledger),
        "rebalance_events": _compact_events(events),
        "rebalance_handovers": _handovers(ledger, events),
    }


def rebalance_event_tables(events: DataFrame, group_ids: list[str]) -> dict[str, DataFrame]:
    """Round 1's events table alone (``rebalance_events``): the audit takes the processing
    stats and the ledger handovers from detection's output (detection/outputs.py)."""
    groups = _judged(group_ids)
    if not groups:
        return {}
    return {"rebalance_events": _compact_events(events.filter(F.col("group_id").isin(*groups)))}


# --------------------------------------------------------------------------- clustering


@dataclass
class Rebalance:
    group_id: str
    start: int
    end: int | None = None
    kind: str = "rebalance"  # rebalance | initial
    inferred: bool = False
    trigger: str = ""
    generation: int | None = None
    events: int = 0
    zombie_events: int = 0
    out: list[str] = field(default_factory=list)  # members that left / lost all
    left: dict[str, dict] = field(default_factory=dict)  # member -> its leave event
    assigned: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    owners_before: set[str] = field(default_factory=set)
    members_in: list[str] = field(default_factory=list)
    members_out: list[str] = field(default_factory=list)
    partitions: set[str] = field(default_factory=set)
    redeliveries: int = 0

    def entry(self) -> dict[str, Any]:
        dur = None if self.end is None else self.end - self.start
        parts = sorted(self.partitions)
        return {
            "start": _iso(self.start), "end": _iso(self.end), "duration_ms": dur,
            "kind": self.kind, "inferred": self.inferred, "generation": self.generation,
            "trigger": self.trigger, "members_in": self.members_in[:MAX_LISTED],
            "members_out": self.members_out[:MAX_LISTED], "events": self.events,
            "zombie_events": self.zombie_events,
            "partitions": parts[:MAX_LISTED] + (["…"] if len(parts) > MAX_LISTED else []),
            "redeliveries": self.redeliveries,
        }


def _describe(e: dict) -> str:
    who = e.get("member_id") or "coordinator"
    text = f"{e['event']} by {who}"
    if e.get("detail"):
        d = str(e["detail"])
        text += f" ({d[:120]}{'…' if len(d) > 120 else ''})"
    return text


def _close(r: Rebalance, owners: set[str]) -> set[str]:
    """Members in/out of a finished rebalance; returns the owners after it."""
    before = set(r.owners_before)
    gone = set(r.left) | (r.revoked - r.assigned)
    after = (before - gone) | r.assigned
    r.members_in = sorted(after - before)
    r.members_out = sorted((before - after) | set(r.left))
    if r.kind == "initial":
        r.members_out = []
    return after


def cluster_events(group_id: str, rows: list[dict]) -> list[Rebalance]:
    """The state machine of the module docstring over one group's compact events."""
    order = {e: i for i, e in enumerate(("left_group", "lost", "commit_failed", "revoked",
                                         "joined_group", "assigned"))}
    rows = sorted(rows, key=lambda e: (e["t"], order.get(e["event"], 9),
                                       e.get("member_id") or ""))
    out: list[Rebalance] = []
    cur: Rebalance | None = None
    assigning = False
    owners: set[str] = set()
    departed: set[str] = set()  # left and not given partitions since
    for e in rows:
        ev, m, t = e["event"], e.get("member_id"), e["t"]
        if ev in ZOMBIE_EVENTS and m and m in departed and out and (cur is None or assigning):
            target = out[-1] if cur is None or not assigning else cur
            target.zombie_events += int(e.get("n") or 1)
            continue
        if ev == "assigned":
            if cur is None:
                cur = Rebalance(group_id, t, kind="initial" if not owners else "rebalance",
                                trigger=_describe(e), owners_before=set(owners))
            cur.end = t if cur.end is None else max(cur.end, t)
            assigning = True
            if m:
                cur.assigned.add(m)
                departed.discard(m)
        else:
            if cur is not None and assigning:
                owners = _close(cur, owners)
                out.append(cur)
                cur, assigning = None, False
            if cur is None:
                cur = Rebalance(group_id, t, trigger=_describe(e), owners_before=set(owners))
            if m:
                if ev in ("left_group", "lost"):
                    cur.left.setdefault(m, e)
                    departed.add(m)
                elif ev == "revoked":
                    cur.revoked.add(m)
                elif ev == "joined_group":
                    departed.discard(m)
        cur.events += int(e.get("n") or 1)
        if e.get("generation") is not None:
            cur.generation = max(cur.generation or e["generation"], e["generation"])
        cur.partitions.update(x for x in (e.get("tps") or []) if x)
    if cur is not None:
        owners = _close(cur, owners)
        if not assigning and not cur.assigned:
            cur.kind = "stop"  # the data ends with members leaving and no new assignment
        out.append(cur)
    return out


def _leavers(r: Rebalance) -> dict[str, dict]:
    """Members of a rebalance to diagnose, with the event that marks their leave. In a
    final 'stop' (the group shutting down) only explicit leaves/losses count."""
    out = dict(r.left)
    if r.kind != "stop":
        for m in r.members_out:
            out.setdefault(m, {"event": "revoked", "t": r.start, "detail": None})
    return out


def cluster_handovers(group_id: str, rows: list[dict]) -> list[Rebalance]:
    """Ledger-inferred rebalances: handovers closer than INFER_GAP_MS form one."""
    out: list[Rebalance] = []
    cur: Rebalance | None = None
    last_t = None
    for h in sorted(rows, key=lambda h: (h["t"], h["member_id"])):
        start = h["prev_f"] if h.get("prev_f") is not None else h["t"]
        if cur is None or h["t"] - last_t > INFER_GAP_MS:
            cur = Rebalance(group_id, min(start, h["t"]), inferred=True,
                            trigger=f"partition handed from {h['prev']} to {h['member_id']}")
            out.append(cur)
        cur.start = min(cur.start, start)
        cur.end = max(cur.end or h["t"], h["t"])
        cur.events += 1
        cur.revoked.add(h["prev"])
        cur.assigned.add(h["member_id"])
        cur.partitions.update(h.get("tps") or [])
        last_t = h["t"]
    for r in out:
        r.members_out = sorted(r.revoked - r.assigned)
        r.members_in = sorted(r.assigned - r.revoked)
        for m in r.members_out:
            r.left[m] = {"event": "handover", "member_id": m, "t": r.start, "detail": None}
    return out


@dataclass
class Clusters:
    """Round 1 on the driver: every group's rebalances (in ``groups`` order), where its
    timeline comes from, and its processing stats."""

    groups: list[str]
    rebalances: dict[str, list[Rebalance]]
    source: dict[str, str]
    stats: dict[str, dict[str, int]]

    def leaves(self) -> list[tuple[str, str, int]]:
        """(group, member, leave ms) of every member to diagnose."""
        return sorted({(g, m, leave["t"]) for g, rs in self.rebalances.items() for r in rs
                       for m, leave in _leavers(r).items()})

    def counted(self) -> list[tuple[str, int, Rebalance]]:
        """(group, index in its list, rebalance) of the counted rebalances."""
        return [(g, i, r) for g in self.groups for i, r in enumerate(self.rebalances[g])
                if r.kind == "rebalance"]


def cluster_groups(groups: list[str], round1: dict[str, list[dict]]) -> Clusters:
    """The collected round-1 tables (``rebalance_tables``) as each group's rebalances."""
    stats = {r["group_id"]: {"p50": int(r["q"][0]), "p99": int(r["q"][1]),
                             "max": int(r["mx"]), "attempts": int(r["n"])}
             for r in round1.get("rebalance_stats", [])}
    by_group: dict[str, list[dict]] = {}
    for e in round1.get("rebalance_events", []):
        by_group.setdefault(e["group_id"], []).append(e)
    handovers: dict[str, list[dict]] = {}
    for h in round1.get("rebalance_handovers", []):
        if h["group_id"] not in by_group:
            handovers.setdefault(h["group_id"], []).append(h)
    rebalances: dict[str, list[Rebalance]] = {}
    source: dict[str, str] = {}
    for g in groups:
        if g in by_group:
            rebalances[g], source[g] = cluster_events(g, by_group[g]), "events"
        elif g in handovers:
            rebalances[g] = cluster_handovers(g, handovers[g])
            source[g] = "inferred from ledger member changes"
        else:
            rebalances[g], source[g] = [], "none"
    return Clusters(list(groups), rebalances, source, stats)


# --------------------------------------------------------------------------- diagnosis


_EXACT_LEAVES = 256


def _leave_evidence(ledger: DataFrame, leaves: list[tuple[str, str, int]],
                    settings: dict[str, Settings]) -> DataFrame:
    """Per (group, member, leave ms): processing behaviour before the leave."""
    lookback = {g: 2 * s["max.poll.interval.ms"] + s["session.timeout.ms"]
                for g, s in settings.items()}
    # (group, member, leave ms, lookback start ms, max.poll.records): one row per leave
    bounds = [(g, m, t, t - lookback.get(g, 0), settings[g]["max.poll.records"])
              for g, m, t in leaves]
    table = ledger.sparkSession.createDataFrame(
        bounds, "l_group string, l_member string, l_t long, l_from long, l_mpr int")
    # only the leavers' rows in the leaves' lookback (what the join keeps), by a filter of
    # the scan instead of a shuffle of the whole ledger (1M messages, 31 leaves: 103,969
    # rows shuffled instead of 498,569); past _EXACT_LEAVES leaves, a superset (the join
    # decides)
    att = ledger.select("group_id", "member_id", _ms("started_ts").alias("s"),
                        _ms("finished_ts").alias("f"))
    if len(bounds) <= _EXACT_LEAVES:
        wanted = reduce(Column.__or__, [
            (F.col("group_id") == g) & (F.col("member_id") == m) & F.col("s").between(lo, t)
            for g, m, t, lo, _ in bounds])
    else:
        wanted = (F.col("group_id").isin(*{b[0] for b in bounds})
                  & F.col("member_id").isin(*{b[1] for b in bounds}))
    att = att.filter(wanted)
    # shuffle joins, never broadcasts: a broadcast is a Spark job of its own
    j = att.join(table.hint("merge"), on=(F.col("group_id") == F.col("l_group"))
                 & (F.col("member_id") == F.col("l_member")) & (F.col("s") <= F.col("l_t"))
                 & (F.col("s") >= F.col("l_from")), how="inner")
    key = ["l_group", "l_member", "l_t"]
    w = Window.partitionBy(*key).orderBy("s", "f")
    j = j.select("*", F.lag("s").over(w).alias("prev_s"), F.lag("f").over(w).alias("prev_f"),
                 F.row_number().over(w).alias("i"))
    pause = F.col("s") - F.coalesce(F.col("prev_f"), F.col("prev_s"))
    j = j.withColumn("_new", F.when(F.col("prev_s").isNull() | (pause > IDLE_SPLIT_MS), 1)
                     .otherwise(0))
    j = j.withColumn("_run", F.sum("_new").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    end = F.coalesce(F.col("f"), F.col("s"))
    # the span of up to max.poll.records back-to-back attempts ending at this one: from the
    # start of attempt k - mpr + 1 of the same busy run (k is dense within a run)
    run_w = Window.partitionBy(*key, "_run").orderBy("i")
    j = j.select("*", F.row_number().over(run_w).alias("k"))
    starts = j.select(*key, "_run", F.col("k").alias("k0"), F.col("s").alias("s0"))
    j = j.withColumn("k0", F.greatest(F.lit(1), F.col("k") - F.col("l_mpr") + 1)).join(
        starts.hint("merge"), on=[*key, "_run", "k0"], how="left")
    first_of_batch = F.col("s0")
    return (
        j.groupBy(*key)
        .agg(F.max(F.col("s") - F.col("prev_s")).alias("max_gap"),
             F.max(F.coalesce(F.col("f"), F.col("l_t")) - F.col("s")).alias("longest"),
             F.max(end - first_of_batch).alias("batch_span"),
             F.max_by(F.col("k") - F.col("k0") + 1, end - first_of_batch).alias("batch_n"),
             F.max(end).alias("last_activity"), F.count(F.lit(1)).alias("attempts"))
    )


def diagnose(member: str, leave: dict, ev: dict | None, s: Settings) -> dict[str, Any]:
    interval, session = s["max.poll.interval.ms"], s["session.timeout.ms"]
    detail = str(leave.get("detail") or "")
    low = detail.lower()
    t = leave["t"]
    base = {"member_id": member, "left_at": _iso(t), "how": leave.get("event")}
    if "poll" in low or "max.poll.interval" in low:
        return {**base, "diagnosis": "poll_interval_exceeded",
                "evidence": f"its leave says: {detail[:200]}"}
    if ev:
        mpr = s["max.poll.records"]
        if (ev.get("max_gap") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"{_num(ev['max_gap'])} ms between two consecutive processing "
                                f"starts (a proxy for polls) > max.poll.interval.ms "
                                f"{_num(interval)}"}
        if (ev.get("longest") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"one processing attempt took {_num(ev['longest'])} ms > "
                                f"max.poll.interval.ms {_num(interval)}"}
        if (ev.get("batch_span") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"{_num(ev.get('batch_n'))} back-to-back processing attempts "
                                f"(≤ max.poll.records {_num(mpr)}, one poll's batch) took "
                                f"{_num(ev['batch_span'])} ms > max.poll.interval.ms "
                                f"{_num(interval)}"}
    if "session" in low or "heartbeat" in low or "has failed" in low:
        return {**base, "diagnosis": "session_timeout",
                "evidence": f"the coordinator says: {detail[:200]}"}
    last = ev.get("last_activity") if ev else None
    if last is not None and t - last > session:
        return {**base, "diagnosis": "session_timeout",
                "evidence": f"silent for {_num(t - last)} ms before leaving (last processing "
                            f"{_iso(last)}) > session.timeout.ms {_num(session)}"}
    why = detail[:200] or ("no processing seen before it" if not ev else
                           "no poll gap or silence beyond the configured limits")
    return {**base, "diagnosis": "left", "evidence": why}


# --------------------------------------------------------------------------- linking


def _links(anomalies: DataFrame, clusters: Clusters, settings: dict[str, Settings]
           ) -> DataFrame:
    """Per (group, linked rebalance or null): the redeliveries (rule 15's rows of the
    anomaly table, judged identities only) of the group."""
    repeats = anomalies.filter(F.col("anomaly") == "redelivery").select(
        "group_id", "topic", "partition", "offset", _ms("ts").alias("s"),
        _ms("related_ts").alias("ps"))
    counted = clusters.counted()
    if counted:
        table = anomalies.sparkSession.createDataFrame(
            [(g, i, r.start, settings[g]["max.poll.interval.ms"]) for g, i, r in counted],
            "r_group string, r_idx int, r_start long, r_interval long")
        cond = ((F.col("group_id") == F.col("r_group")) & (F.col("r_start") <= F.col("s"))
                & (F.col("r_start") >= F.col("ps") - F.col("r_interval")))
        linked = (
            # a shuffle join, never a broadcast: a broadcast is a Spark job of its own
            repeats.join(table.hint("merge"), on=cond, how="left")
            .groupBy("group_id", "topic", "partition", "offset", "s")
            .agg(F.max_by("r_idx", "r_start").alias("r_idx"))
        )
    else:
        linked = repeats.select("group_id", "topic", "partition", "offset", "s",
                                F.lit(None).cast("int").alias("r_idx"))
    return linked.groupBy("group_id", "r_idx").agg(F.count(F.lit(1)).alias("n"))


def rebalance_round2_tables(ledger: DataFrame, clusters: Clusters,
                            settings: dict[str, Settings], anomalies: DataFrame
                            ) -> dict[str, DataFrame]:
    """Round 2: the small tables that need round 1's rebalances (no Spark action).

    * ``rebalance_leave_evidence`` — per leave to diagnose (``l_group``, ``l_member``,
      ``l_t`` leave ms): ``max_gap`` between consecutive processing starts, ``longest``
      attempt, ``batch_span``/``batch_n`` of the longest run of up to max.poll.records
      back-to-back attempts, ``last_activity`` (ms), ``attempts``; absent when nobody left.
    * ``rebalance_links`` — per (group_id, ``r_idx``): ``n`` redeliveries (the
      ``redelivery`` rows of ``anomalies``) linked to the group's rebalance at index
      ``r_idx`` of ``clusters.rebalances[group_id]``, or unlinked (``r_idx`` null).
    """
    tables: dict[str, DataFrame] = {}
    leaves = clusters.leaves()
    if leaves:
        tables["rebalance_leave_evidence"] = _leave_evidence(ledger, leaves, settings)
    tables["rebalance_links"] = _links(anomalies, clusters, settings)
    return tables


# --------------------------------------------------------------------------- advice


def advice(s: Settings, p99: int | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    mpr, interval = s["max.poll.records"], s["max.poll.interval.ms"]
    session, heartbeat = s["session.timeout.ms"], s["heartbeat.interval.ms"]
    src = s.origin
    if p99 is None:
        out.append({"setting": "max.poll.records", "current": mpr, "advised": None,
                    "ok": None, "reason": "no processing times (finished_ts) in the ledger: "
                                          "cannot size the batch"})
    else:
        per = max(p99, 1)
        batch = mpr * per
        half = interval / 2
        safe = math.floor(interval / 2 / per)
        arithmetic = (f"p99 per-record processing {_num(p99)} ms × max.poll.records {_num(mpr)}"
                      f"{' (Kafka default)' if src['max.poll.records'] != 'config' else ''} = "
                      f"{_num(batch)} ms ({_num(batch / 1000)} s) per batch")
        limit = (f"max.poll.interval.ms {_num(interval)} ({_num(interval / 1000)} s)"
                 f"{' (Kafka default)' if src['max.poll.interval.ms'] != 'config' else ''}")
        if safe < 1:
            need = 2 * per
            out.append({"setting": "max.poll.interval.ms", "current": interval,
                        "advised": need, "ok": False,
                        "reason": f"{arithmetic}; even one record (p99 {_num(p99)} ms) takes "
                                  f"more than half of {limit}: raise max.poll.interval.ms to at "
                                  f"least 2 × {_num(p99)} = {_num(need)} ms and poll one record "
                                  f"at a time (or move the work off the poll thread)"})
            out.append({"setting": "max.poll.records", "current": mpr, "advised": 1,
                        "ok": False, "reason": "with the interval raised as advised"})
        elif batch > half:
            verdict = "far above" if batch > interval else "above half of"
            out.append({"setting": "max.poll.records", "current": mpr, "advised": safe,
                        "ok": False,
                        "reason": f"{arithmetic}, {verdict} {limit}; to keep a batch under half "
                                  f"the interval: floor({_num(interval)} / 2 / {_num(p99)}) = "
                                  f"{_num(safe)} records (≤ {_num(safe * per)} ms per batch)"})
        else:
            out.append({"setting": "max.poll.records", "current": mpr, "advised": mpr,
                        "ok": True,
                        "reason": f"{arithmetic}, under half of {limit} ({_num(half)} ms); the "
                                  f"largest safe value is floor({_num(interval)} / 2 / "
                                  f"{_num(p99)}) = {_num(safe)}"})
    third = session // 3
    ok = heartbeat <= session / 3
    out.append({"setting": "heartbeat.interval.ms", "current": heartbeat,
                "advised": heartbeat if ok else third, "ok": ok,
                "reason": f"heartbeat.interval.ms {_num(heartbeat)} "
                          f"{'≤' if ok else '>'} session.timeout.ms {_num(session)} / 3 = "
                          f"{_num(session / 3)}"
                          + ("" if ok else f": lower it to {_num(third)} ms")})
    return out


# --------------------------------------------------------------------------- report


def rebalance_settings(config: AuditConfig, groups: list[str]) -> dict[str, Settings]:
    return {g: group_settings(config, g) for g in groups}


def build_rebalance_report(clusters: Clusters, settings: dict[str, Settings],
                           round2: dict[str, list[dict]]) -> dict[str, Any]:
    """The report's ``rebalances`` section from round 1 (``clusters``) and the collected
    round-2 tables (``rebalance_round2_tables``); sets each rebalance's redeliveries."""
    evidence = {(r["l_group"], r["l_member"], r["l_t"]): r
                for r in round2.get("rebalance_leave_evidence", [])}
    linked: dict[str, int] = {}
    unlinked: dict[str, int] = {}
    for r in round2.get("rebalance_links", []):
        g, n = r["group_id"], int(r["n"])
        if r["r_idx"] is None:
            unlinked[g] = unlinked.get(g, 0) + n
        else:
            clusters.rebalances[g][r["r_idx"]].redeliveries = n
            linked[g] = linked.get(g, 0) + n

    report: dict[str, Any] = {}
    for g in clusters.groups:
        s = settings[g]
        rs = clusters.rebalances[g]
        evictions = []
        for r in rs:
            for m, leave in sorted(_leavers(r).items()):
                evictions.append(diagnose(m, leave, evidence.get((g, m, leave["t"])), s))
        st = clusters.stats.get(g)
        counted = [r for r in rs if r.kind == "rebalance"]
        durations = [r.end - r.start for r in counted if r.end is not None]
        report[g] = {
            "rebalance_count": len(counted),
            "source": clusters.source[g],
            "total_rebalance_ms": sum(durations),
            "longest_rebalance_ms": max(durations) if durations else None,
            "poll_interval_evictions": sum(e["diagnosis"] == "poll_interval_exceeded"
                                           for e in evictions),
            "session_timeout_evictions": sum(e["diagnosis"] == "session_timeout"
                                             for e in evictions),
            "redeliveries_linked": linked.get(g, 0),
            "redeliveries_unlinked": unlinked.get(g, 0),
            "p99_processing_ms": st["p99"] if st else None,
            "timeline": [r.entry() for r in rs],
            "evictions": evictions,
            "advice": advice(s, st["p99"] if st else None),
            "processing_ms": ({k: st[k] for k in ("p50", "p99", "max")} if st else
                              {"p50": None, "p99": None, "max": None}),
            "settings": s.as_dict(),
        }
    return report


def rebalance_report(ledger: DataFrame, events: DataFrame, group_ids: list[str],
                     config: AuditConfig, anomalies: DataFrame,
                     round1: dict[str, list[dict]] | None = None) -> dict[str, Any]:
    """The ``rebalances`` section (see the module docstring): round 1 collected here, or
    given as ``round1`` by a caller that collected ``rebalance_tables`` with other tables
    of its own; then round 2, one Spark action.

    ``ledger``/``events``: the judged groups' rows (canonical columns); ``group_ids``:
    the judged groups; ``anomalies``: the anomaly table (its ``redelivery`` rows are
    linked to rebalances)."""
    groups = _judged(group_ids)
    if not groups:
        return {}
    if round1 is None:
        round1 = collect_all(rebalance_tables(ledger, events, groups))
    clusters = cluster_groups(groups, round1)
    settings = rebalance_settings(config, groups)
    round2 = collect_all(rebalance_round2_tables(ledger, clusters, settings, anomalies))
    return build_rebalance_report(clusters, settings, round2)
