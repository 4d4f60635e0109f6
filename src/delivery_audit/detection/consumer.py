"""Pass 2, the consumer side: every ledger row of a judged group, routed by (group, topic,
partition) and carrying its identity's ``judged`` flag and its record's broker timestamp
from pass 1. Each (group, topic, partition) arrives on a task of its own
(routes.placement). Two sorts of the same rows, no exchange, no window over a partition:

* per record (group, topic, partition, offset) by start (windows of one record's
  attempts): redelivery (rule 15) and retry_after_failure (rule 18) compare each attempt
  with the one before it; the record's first successful finish gives delivery latency;
* per (group, topic, partition) by start, streamed through Arrow batches
  (start_order.py): process_reorder's running maximum per key over first successful
  processings (rule 16), the attempts that overlap any other attempt
  (concurrent_processing's candidates, rule 17) and the handovers between members (the
  rebalances inferred when a group has no events, contract §5).

What needs more than these rows goes on to pass 3 as routed rows: redeliveries by the same
member (a rebalance event between the two?), overlap candidates (by another member?),
handovers and latencies (small aggregates)."""

from __future__ import annotations

from pyspark import cloudpickle
from pyspark.sql import DataFrame

from .. import sqlexpr as S
from ..core.window import AuditWindow
from ..sqlexpr import BEFORE, UPTO, X
from . import ordering, redelivery, retries, routes, start_order
from .evidence import ANOMALY_TYPE

# the sweep runs in Python workers, shipped by value: they import numpy and pyarrow only
cloudpickle.register_pickle_by_value(start_order)

# the rows arrive hash partitioned by the routing columns (_r3 a routing int: pass 1 puts
# each (group, topic, partition) on a task of its own, routes.placement); the windows'
# partitions include them (no exchange) and the (group, topic, partition)
PART = ["_r1", "_r2", "_r3", "group_id", "topic", "partition"]
RECORD = [*PART, "offset"]
# a deterministic order of a record's attempts: start, finish, then member and outcome
ATTEMPTS = ["started_ts", "finished_ts", "member_id", "outcome"]

A = routes.Kind("a", ANOMALY_TYPE[len("struct<"):-1])
ATTEMPT = ("group_id:string,topic:string,partition:int,offset:bigint,member_id:string,"
           "started_ts:timestamp,finished_ts:timestamp,outcome:string,key_null:boolean,"
           "key_v:string,seq:bigint,resolved:boolean,judged:boolean")
C = routes.Kind("c", ATTEMPT)
R = routes.Kind("r", f"anomaly:{ANOMALY_TYPE},group_id:string,topic:string,partition:int,"
                "prev_started_ts:timestamp,started_ts:timestamp")
ST = routes.Kind("st", "group_id:string,topic:string,state:string")
H = routes.Kind("h", "group_id:string,prev:string,member_id:string,t:bigint,prev_f:bigint,"
                "tp:string")
X_ = routes.Kind("x", "group_id:string,dur_ms:bigint,e2e_ms:double")
KINDS = (A, C, R, ST, H, X_)


def _by_record(rows: DataFrame) -> DataFrame:
    """Each attempt with the attempts before it on its record: windows per record (group,
    topic, partition, offset), so that a window holds one record's attempts, not a Kafka
    partition (the rows arrive partitioned by (group, topic, partition): no exchange)."""
    succ = "(outcome = 'success' AND resolved)"
    before = [
        S.over(f"last(IF({succ}, named_struct('member_id', member_id, "
               "'started_ts', started_ts), NULL), true)", RECORD, ATTEMPTS, BEFORE).alias("_ps"),
        S.over("last(IF(resolved, named_struct('outcome', outcome, 'started_ts', started_ts, "
               "'member_id', member_id), NULL), true)", RECORD, ATTEMPTS, BEFORE).alias("_pr"),
        S.over("count(IF(resolved, 1, NULL))", RECORD, ATTEMPTS, UPTO).alias("res_no"),
        S.over("row_number()", RECORD, ATTEMPTS).alias("_rn"),
        S.over("min(IF(outcome = 'success', finished_ts, NULL))", RECORD).alias("first_done"),
    ]
    rows = S.select(rows, "*", *before)
    repeat = S.col("_ps").isNotNull()
    after = S.col("_pr").isNotNull()
    return S.select(
        rows, *[c for c in rows.columns if not c.startswith("_") or c in PART],
        (S.col("_rn") == 1).alias("rec_start"),
        repeat.alias("repeat"),
        S.when(repeat, S.col("_ps.member_id")).alias("prev_succ_member"),
        S.when(repeat, S.col("_ps.started_ts")).alias("prev_succ_started"),
        S.when(after, S.col("_pr.outcome")).alias("prev_outcome"),
        S.when(after, S.col("_pr.started_ts")).alias("prev_started"),
        S.when(after, S.col("_pr.member_id")).alias("prev_member"),
        (S.raw(succ) & ~repeat).alias("first_success"))


def _by_partition(rows: DataFrame) -> DataFrame:
    """Each attempt with its neighbours in start order on its partition (start_order.py:
    a streamed sweep of the task's rows, sorted, not a window over the partition)."""
    ddl = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in rows.schema.fields)
    return (rows.sortWithinPartitions(*start_order.PART, *start_order.ORDER)
            .mapInArrow(start_order.sweep, f"{ddl}, {start_order.ADDED}"))


def _candidate() -> X:
    """An attempt that overlaps some other attempt on its partition, of any member (rule
    17's exact test, by another member, runs on these alone: concurrency.py)."""
    s, e = S.col("started_ts"), S.coalesce(S.col("finished_ts"), S.col("started_ts"))
    return ((S.col("before_end") > s) | (S.col("after_start") < e)
            | ((S.col("peers") > 1) & (S.col("peers_end") > s)))


def _emitted(window: AuditWindow) -> list[X]:
    emit = routes.emit_when
    part = (S.col("group_id"), S.col("topic"), S.col("partition"))
    attempt = S.struct(**{c: S.col(c) for c in ATTEMPT_FIELDS})
    spread = routes.route_hash("offset", "started_ts")
    rows = [emit(KINDS, cond, A, *part, a) for cond, a in (
        redelivery.moved(), retries.retry_after_failure(), ordering.process_reorder())]
    cond, anomaly = redelivery.same_member()
    rows.append(emit(KINDS, cond, R, *part, S.struct(
        anomaly=anomaly, group_id=S.col("group_id"), topic=S.col("topic"),
        partition=S.col("partition"), prev_started_ts=S.col("prev_succ_started"),
        started_ts=S.col("started_ts"))))
    rows.append(emit(KINDS, _candidate(), C, *part, attempt))
    handover = S.col("prev_any_member").isNotNull() & (S.col("prev_any_member") != S.col(
        "member_id"))
    rows.append(emit(KINDS, handover, H, S.col("group_id"), S.lit(None), spread, S.struct(
        group_id=S.col("group_id"), prev=S.col("prev_any_member"), member_id=S.col("member_id"),
        t=S.fn("unix_millis", S.col("started_ts")), prev_f=S.col("prev_any_f"),
        tp=S.raw("concat_ws('-', topic, CAST(partition AS STRING))"))))
    dur = S.when((S.col("outcome") == "success") & (S.col("finished_ts") >= S.col("started_ts")),
                 S.fn("unix_millis", S.col("finished_ts")) - S.fn("unix_millis",
                                                                   S.col("started_ts")))
    written = S.col("copy_ts")
    in_window = ((written >= S.lit(_naive(window.start)).cast("timestamp"))
                 & (written < S.lit(_naive(window.end)).cast("timestamp")))
    e2e = S.when(S.col("rec_start") & S.col("first_done").isNotNull() & in_window,
                 S.raw("CAST(unix_micros(first_done) - unix_micros(copy_ts) AS DOUBLE) / 1000.0"))
    rows.append(emit(KINDS, dur.isNotNull() | e2e.isNotNull(), X_, S.col("group_id"),
                     S.lit(None), spread,
                     S.struct(group_id=S.col("group_id"), dur_ms=dur, e2e_ms=e2e)))
    return rows


ATTEMPT_FIELDS = [f.split(":")[0] for f in ATTEMPT.split(",")]


def _naive(dt) -> str:
    return dt.replace(tzinfo=None).isoformat(sep=" ")


def consumer_rows(ledger: DataFrame, window: AuditWindow) -> DataFrame:
    """The consumer side's routed rows for pass 3 (``ledger``: pass 1's ledger rows, as
    routed by (group, topic, partition))."""
    rows = _by_partition(_by_record(ledger))
    return routes.routed(rows, _emitted(window))
