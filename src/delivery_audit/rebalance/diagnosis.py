"""Why a member left (the package docstring's **evictions**): round 2's Spark table of
each leaver's processing before its leave, and the diagnosis read from it and from the
leave's own words."""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..spark import local_frame
from .settings import Settings
from .units import iso, millis, num

IDLE_SPLIT_MS = 1_000  # back-to-back attempts: a pause longer than this ends a busy run
_EXACT_LEAVES = 256


def leave_evidence(ledger: DataFrame, leaves: list[tuple[str, str, int]],
                   settings: dict[str, Settings]) -> DataFrame:
    """Per (group, member, leave ms): processing behaviour before the leave."""
    lookback = {g: 2 * s["max.poll.interval.ms"] + s["session.timeout.ms"]
                for g, s in settings.items()}
    # (group, member, leave ms, lookback start ms, max.poll.records): one row per leave
    bounds = [(g, m, t, t - lookback.get(g, 0), settings[g]["max.poll.records"])
              for g, m, t in leaves]
    att = ledger.select("group_id", "member_id", millis("started_ts").alias("s"),
                        millis("finished_ts").alias("f"))
    j = _exact(att, bounds) if len(bounds) <= _EXACT_LEAVES else _bucketed(att, bounds)
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
    # start of attempt k0 = max(1, k - mpr + 1) of the same busy run (k is dense within a
    # run): mpr - 1 attempts back in the run (a lag per max.poll.records of the groups),
    # or the run's first (no self join: at 10M messages it scanned the ledger twice)
    run_w = Window.partitionBy(*key, "_run").orderBy("i")
    back: Column | None = None
    for mpr in sorted({b[4] for b in bounds}):
        earlier = F.lag("s", mpr - 1).over(run_w) if mpr > 1 else F.col("s")
        back = (F.when(F.col("l_mpr") == mpr, earlier) if back is None
                else back.when(F.col("l_mpr") == mpr, earlier))
    j = j.select("*", F.row_number().over(run_w).alias("k"),
                 F.coalesce(back, F.first("s").over(run_w)).alias("s0"))
    j = j.withColumn("k0", F.greatest(F.lit(1), F.col("k") - F.col("l_mpr") + 1))
    first_of_batch = F.col("s0")
    return (
        j.groupBy(*key)
        .agg(F.max(F.col("s") - F.col("prev_s")).alias("max_gap"),
             F.max(F.coalesce(F.col("f"), F.col("l_t")) - F.col("s")).alias("longest"),
             F.max(end - first_of_batch).alias("batch_span"),
             F.max_by(F.col("k") - F.col("k0") + 1, end - first_of_batch).alias("batch_n"),
             F.max(end).alias("last_activity"), F.count(F.lit(1)).alias("attempts"))
    )


def _in_lookback() -> Column:
    """A ledger row (group_id, member_id, s) against a leave (l_group, l_member, l_from,
    l_t): the leaver's attempt started in the leave's lookback."""
    return (F.col("group_id") == F.col("l_group")) & (F.col("member_id") == F.col("l_member")) \
        & (F.col("s") <= F.col("l_t")) & (F.col("s") >= F.col("l_from"))


def _exact(att: DataFrame, bounds: list[tuple]) -> DataFrame:
    """Few leaves: only the leavers' rows in the leaves' lookback (a filter of the scan:
    1M messages, 31 leaves: 103,969 rows shuffled instead of 498,569), then a shuffle join
    with the leaves (never a broadcast: a broadcast is a Spark job of its own, which a small
    day does not pay)."""
    table = local_frame(att.sparkSession, bounds,
                        "l_group string, l_member string, l_t long, l_from long, l_mpr int")
    wanted = reduce(Column.__or__, [
        (F.col("group_id") == g) & (F.col("member_id") == m) & F.col("s").between(lo, t)
        for g, m, t, lo, _ in bounds])
    return att.filter(wanted).join(table.hint("merge"), on=_in_lookback(), how="inner")


def _bucketed(att: DataFrame, bounds: list[tuple]) -> DataFrame:
    """Many leaves (a filter of that many terms per row costs more than the join): the
    leaves broadcast (one small Spark job) and hash-joined with the scan by (group,
    member, time bucket), the bucket as wide as the longest lookback, so a leave's
    lookback spans at most two buckets (its row repeated for each): every ledger row is
    compared with its own member's leaves of its bucket only, and no ledger row moves.
    (A superset filter by group and member and a shuffle join grew faster than the rows:
    at 10M messages, 301 leaves of members that rejoin all day shuffled nearly the whole
    ledger: 6 GiB spilled.)"""
    width = max(1, max(t - lo for _, _, t, lo, _ in bounds))
    rows = [(g, m, t, lo, mpr, b) for g, m, t, lo, mpr in bounds
            for b in range(lo // width, t // width + 1)]
    table = local_frame(att.sparkSession, rows, "l_group string, l_member string, l_t long, "
                        "l_from long, l_mpr int, l_bucket long")
    bucket = F.floor(F.col("s") / F.lit(width)).cast("long")
    return (att.join(F.broadcast(table), on=_in_lookback() & (bucket == F.col("l_bucket")),
                     how="inner")
            .drop("l_bucket"))


def diagnose(member: str, leave: dict, ev: dict | None, s: Settings) -> dict[str, Any]:
    interval, session = s["max.poll.interval.ms"], s["session.timeout.ms"]
    detail = str(leave.get("detail") or "")
    low = detail.lower()
    t = leave["t"]
    base = {"member_id": member, "left_at": iso(t), "how": leave.get("event")}
    if "poll" in low or "max.poll.interval" in low:
        return {**base, "diagnosis": "poll_interval_exceeded",
                "evidence": f"its leave says: {detail[:200]}"}
    if ev:
        mpr = s["max.poll.records"]
        if (ev.get("max_gap") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"{num(ev['max_gap'])} ms between two consecutive processing "
                                f"starts (a proxy for polls) > max.poll.interval.ms "
                                f"{num(interval)}"}
        if (ev.get("longest") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"one processing attempt took {num(ev['longest'])} ms > "
                                f"max.poll.interval.ms {num(interval)}"}
        if (ev.get("batch_span") or 0) > interval:
            return {**base, "diagnosis": "poll_interval_exceeded",
                    "evidence": f"{num(ev.get('batch_n'))} back-to-back processing attempts "
                                f"(≤ max.poll.records {num(mpr)}, one poll's batch) took "
                                f"{num(ev['batch_span'])} ms > max.poll.interval.ms "
                                f"{num(interval)}"}
    if "session" in low or "heartbeat" in low or "has failed" in low:
        return {**base, "diagnosis": "session_timeout",
                "evidence": f"the coordinator says: {detail[:200]}"}
    last = ev.get("last_activity") if ev else None
    if last is not None and t - last > session:
        return {**base, "diagnosis": "session_timeout",
                "evidence": f"silent for {num(t - last)} ms before leaving (last processing "
                            f"{iso(last)}) > session.timeout.ms {num(session)}"}
    why = detail[:200] or ("no processing seen before it" if not ev else
                           "no poll gap or silence beyond the configured limits")
    return {**base, "diagnosis": "left", "evidence": why}

