"""Transactions (contract §9): each broker row's transaction outcome (rule 21), the fenced
producers' writes (zombie_write), the reads of aborted records (aborted_read), the open
transactions (hanging_transaction) and the report's ``transactions`` section.

Only when the dump holds a transactional or a control row (``facts.txn_partitions``,
counted in ingestion's action) do the broker rows take one more exchange, by (topic,
partition, pid), before pass 1's exchange by key: per pid in a partition, two sorts of the
same rows (no further exchange) give every row

* ``marker`` / ``txn`` — the first control row of its pid at a higher offset (offsets in
  descending order: the last control row seen) and so its outcome: ``committed``,
  ``aborted`` or ``open`` (rule 21; a non-transactional row is ``committed``, a control
  row ``control``);
* ``higher`` — the highest producer epoch among the pid's rows at lower offsets (offsets in
  ascending order), and the first offset that carries it: a transactional row with a lower
  epoch is a zombie write (rule 24).

That leaf (:func:`outcomes`) feeds pass 1 (keyed/: aborted rows are no copies, rule 22;
the ledger rows at their offsets are aborted reads) and two small aggregates written with
the facts: the transactions of each partition (:func:`summary_rows`) and the open ones that
hang (:func:`hanging_rows`). Without transactions the broker rows are pass 1's as before,
with ``txn`` = ``committed``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..config import AuditConfig
from ..core.window import AuditWindow
from ..sqlexpr import BEFORE, X
from . import routes
from .evidence import KEY, anomaly_struct
from .facts import Facts

# the columns :func:`outcomes` adds to the broker rows
TXN_COLUMNS = {"txn": "string", "marker": "bigint", "higher": "struct<e:int,o:bigint>"}
_PART = ["topic", "partition", "_tk", "_spread"]
_TXN_DATA = "(control IS NULL AND coalesce(transactional, false))"
_IN_TXN = f"({_TXN_DATA} OR control IS NOT NULL)"


def outcomes(broker: DataFrame, facts: Facts) -> DataFrame:
    """The broker rows with :data:`TXN_COLUMNS` (control rows included, ``txn`` =
    ``control``): a leaf when the dump has transactions, else the rows with ``txn``
    committed (no exchange)."""
    if not facts.transactional:
        return S.select(broker, "*", S.lit("committed").alias("txn"),
                        S.lit(None).cast("bigint").alias("marker"),
                        S.lit(None).cast(TXN_COLUMNS["higher"]).alias("higher"))
    # a pid's transactional and control rows share a window partition; the other rows
    # (whose outcome needs no window) are spread over buckets
    tk = S.raw(f"IF({_IN_TXN}, pid, NULL)").alias("_tk")
    spread = S.raw(f"IF({_IN_TXN}, 0, pmod(hash(offset), {routes.BUCKETS}))").alias("_spread")
    rows = S.select(broker, "*", tk, spread, S.raw("-offset").alias("_desc"))
    rows = rows.repartition(*_PART)
    close = S.over("last(IF(control IS NOT NULL, named_struct('offset', offset, 'control', "
                   "control), NULL), true)", _PART, ["_desc"], BEFORE)
    higher = S.over("max(IF(producer_epoch IS NOT NULL, named_struct('e', producer_epoch, "
                    "'o', -offset), NULL))", _PART, ["offset"], BEFORE)
    rows = S.select(rows, "*", close.alias("_close"), higher.alias("_higher"))
    txn = S.raw(f"CASE WHEN control IS NOT NULL THEN 'control' "
                f"WHEN NOT {_TXN_DATA} THEN 'committed' WHEN _close IS NULL THEN 'open' "
                "WHEN _close.control = 'commit' THEN 'committed' ELSE 'aborted' END")
    zombie = S.raw(f"{_TXN_DATA} AND producer_epoch IS NOT NULL "
                   "AND coalesce(_higher.e > producer_epoch, false)")
    out = S.select(rows, *broker.columns, txn.alias("txn"),
                   S.raw(f"IF({_TXN_DATA}, _close.offset, NULL)").alias("marker"),
                   S.when(zombie, S.raw("named_struct('e', _higher.e, 'o', -_higher.o)"))
                   .alias("higher"))
    return routes.checkpoint(out)


# -- anomalies decided on pass 1's rows (keyed/) ------------------------------------------

def zombie_write() -> tuple[X, X]:
    """A judged identity's transactional copy, whatever its outcome, whose producer epoch
    is lower than one its pid already wrote at a lower offset of the partition (rule 24);
    ``higher`` from :func:`outcomes`. On pass 1's broker rows joined with their identity."""
    detail = S.concat(S.lit("pid "), S.col("pid").cast("string"), S.lit(" epoch "),
                      S.col("producer_epoch").cast("string"), S.lit(" (transaction "),
                      S.col("txn"), S.lit(") written after epoch "),
                      S.col("higher.e").cast("string"), S.lit(" at offset "),
                      S.col("higher.o").cast("string"))
    return (S.col("judged") & S.col("higher").isNotNull(),
            anomaly_struct("zombie_write", topic="topic", key=KEY, seq="seq",
                           partition="partition", offset="offset",
                           related_partition="partition", related_offset=S.col("higher.o"),
                           ts="timestamp", detail=detail))


def isolation_cause(config: AuditConfig, group_ids: tuple[str, ...]) -> X:
    """aborted_read's cause (rule 24): the ledger row's ``isolation``, else the group's
    configured ``isolation.level``, else ``unknown``."""
    configured = S.map_literal(
        [(S.lit(g), S.lit(level)) for g in group_ids
         if (level := config.isolation(g)) is not None], "map<string,string>")
    return S.coalesce(S.col("isolation"), S.fn("element_at", configured, S.col("group_id")),
                      S.lit("unknown"))


def aborted_read(cause: X) -> tuple[X, X]:
    """A successful processing, by a judged group, of a judged identity's record whose
    transaction was aborted (rules 22, 25): on pass 1's ledger rows joined with the copy
    at their record (``txn``, ``pid``, ``producer_epoch``, ``marker``)."""
    said = S.when(S.col("isolation").isNotNull(), S.lit("the ledger")).otherwise(
        S.when(cause != "unknown", S.lit("the group's config")))
    detail = S.concat_ws(
        "", S.lit("pid "), S.col("pid").cast("string"), S.lit(" epoch "),
        S.coalesce(S.col("producer_epoch").cast("string"), S.lit("?")),
        S.lit("; aborted by the marker at offset "), S.col("marker").cast("string"),
        S.lit("; isolation "), cause,
        S.when(said.isNotNull(), S.concat(S.lit(" ("), said, S.lit(")"))))
    return (S.col("aborted") & (S.col("outcome") == "success") & S.col("judged"),
            anomaly_struct("aborted_read", cause=cause, group_id="group_id", topic="topic",
                           key=KEY, seq="seq", partition="partition", offset="offset",
                           related_partition="partition", related_offset="marker",
                           member_id="member_id", ts="started_ts", related_ts="copy_ts",
                           detail=detail))


# -- the transactions of each partition (facts) and the hanging ones (anomalies) --------

def transactions(leaf: DataFrame) -> DataFrame:
    """One row per transaction of :func:`outcomes`' rows (a marker and the data rows it
    closes, or a pid's open rows): topic, partition, pid, ``closer`` (the marker's offset;
    null: open), ``outcome`` (committed | aborted | open), ``records``, ``first_offset``,
    ``last_offset``, ``first_ts`` (the first record's timestamp), ``epoch`` (the highest)."""
    rows = leaf.filter(S.raw(_IN_TXN).sql)
    closer = S.raw("IF(control IS NOT NULL, offset, marker)").alias("closer")
    data = "control IS NULL"
    grouped = S.select(rows, "topic", "partition", "pid", closer, "offset", "timestamp",
                       "control", "producer_epoch").groupBy(
        "topic", "partition", "pid", "closer").agg(
        F.expr(f"count(IF({data}, 1, NULL))").alias("records"),
        F.expr(f"min(IF({data}, offset, NULL))").alias("first_offset"),
        F.expr(f"max(IF({data}, offset, NULL))").alias("last_offset"),
        F.expr(f"min(IF({data}, named_struct('o', offset, 't', timestamp), NULL)).t")
        .alias("first_ts"),
        F.expr("max(control)").alias("control"),
        F.expr("max(producer_epoch)").alias("epoch"))
    outcome = S.raw("CASE WHEN closer IS NULL THEN 'open' WHEN control = 'commit' "
                    "THEN 'committed' ELSE 'aborted' END")
    return S.select(grouped, "topic", "partition", "pid", "closer", outcome.alias("outcome"),
                    "records", "first_offset", "last_offset", "first_ts", "epoch")


def per_transaction(leaf: DataFrame, facts: Facts) -> DataFrame:
    """:func:`transactions` with ``last_ms``, the partition's last record timestamp: one
    aggregation that both the hanging transactions and the report's table read (the open
    ones, rule 21: data rows no marker of their pid follows, are ``outcome = 'open'``)."""
    return S.select(transactions(leaf), "*", _last_ms(facts).alias("last_ms"))


def _last_ms(facts: Facts) -> X:
    """The partition's last record timestamp (epoch ms, from the facts: rule 24)."""
    last = S.map_literal([(S.struct(t=t, p=p), S.lit(ms).cast("bigint"))
                          for (t, p), ms in sorted(facts.last_ts.items())],
                         "map<struct<t:string,p:int>,bigint>")
    return S.fn("element_at", last, S.raw("named_struct('t', topic, 'p', partition)"))


def _naive(dt) -> X:
    return S.lit(dt.replace(tzinfo=None).isoformat(sep=" ")).cast("timestamp")


def hanging_transaction(config: AuditConfig, window: AuditWindow, facts: Facts
                        ) -> tuple[X, X]:
    """An open transaction whose first record's timestamp lies more than
    ``transaction_timeout_ms`` before the partition's last record timestamp, judged by that
    first timestamp (rules 24, 25); on :func:`per_transaction`'s open rows."""
    age = S.fn("unix_millis", S.col("first_ts"))
    age = S.col("last_ms") - age
    judged = ((S.col("first_ts") >= _naive(window.start))
              & (S.col("first_ts") < _naive(window.end)))
    timeout = config.transaction_timeout_ms
    detail = S.concat(
        S.lit("pid "), S.col("pid").cast("string"), S.lit(" epoch "),
        S.coalesce(S.col("epoch").cast("string"), S.lit("?")), S.lit(": "),
        S.col("records").cast("string"), S.lit(" records open for "), age.cast("string"),
        S.lit(f" ms at the partition's last record (transaction_timeout_ms {timeout}); "
              "pins the last stable offset at "), S.col("first_offset").cast("string"))
    return (S.coalesce(judged & (age > S.lit(timeout)), S.lit(False)),
            anomaly_struct("hanging_transaction", topic="topic", partition="partition",
                           offset="first_offset", related_partition="partition",
                           related_offset="last_offset", ts="first_ts",
                           related_ts=S.fn("timestamp_millis", S.col("last_ms")),
                           attempts="records", detail=detail))


def hanging_rows(txns: DataFrame, config: AuditConfig, window: AuditWindow,
                 facts: Facts) -> DataFrame:
    """hanging_transaction's anomaly rows, from :func:`per_transaction`'s rows."""
    cond, row = hanging_transaction(config, window, facts)
    opened = txns.filter((S.col("outcome") == "open").sql)
    return S.select(opened.filter(cond.sql), row.alias("_a")).selectExpr("_a.*")


def summary_table(txns: DataFrame) -> DataFrame:
    """Per (topic, partition) with transactions, from :func:`per_transaction`'s rows:
    transactions and records per outcome, and the open transactions (pid, epoch, first and
    last offset, first timestamp, records, age at the partition's last record): the report's
    ``transactions`` section."""
    counted = []
    for outcome in ("committed", "aborted", "open"):
        counted += [
            F.expr(f"count(IF(outcome = '{outcome}', 1, NULL))").alias(f"{outcome}_txns"),
            F.expr(f"coalesce(sum(IF(outcome = '{outcome}', records, 0)), 0)")
            .alias(f"{outcome}_records")]
    open_txn = ("IF(outcome = 'open', named_struct('first_offset', first_offset, 'pid', pid, "
                "'epoch', epoch, 'last_offset', last_offset, 'first_ms', "
                "unix_millis(first_ts), 'records', records, 'age_ms', "
                "last_ms - unix_millis(first_ts)), NULL)")
    return txns.groupBy("topic", "partition").agg(
        *counted, F.expr("max(last_ms)").alias("last_ms"),
        F.expr(f"sort_array(collect_list({open_txn}))").alias("open"))
