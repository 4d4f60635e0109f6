"""What detection writes besides the anomaly table: the small tables the report counts, as
rows of the anomaly table's schema in ``_table=facts`` (one write, one Spark job), and the
metrics observed on the way (``DataFrame.observe``: no job of their own).

Fact rows (``anomaly`` names a fact, never an anomaly):

* ``__judged`` — judged identities per topic (``topic``, ``units``);
* ``__state`` — (group, identity) pairs per state other than delivered_once (``group_id``,
  ``topic``, ``cause`` = the state, ``units``);
* ``__handover`` — ledger member changes on a partition per (group, previous member,
  member, first start): ``related_member_id`` the previous member, ``seq`` the start (epoch
  ms), ``seq_to`` the previous member's last finish (epoch ms), ``detail`` the partitions
  (JSON list); the rebalances inferred when a group has no events;
* ``__processing`` — per group, processing time of successful attempts (``detail``: JSON
  ``q`` [p50, p99], ``mx``, ``n``, in ms);
* ``__e2e`` — per group (and ``group_id`` null: every group), the end-to-end latency from
  the broker's timestamp to the first successful finish of each record written in the
  window (``detail``: JSON ``count``, ``pcts`` [p50, p95, p99], ``max``, ``min``, in ms);
* ``__txn`` — per (topic, partition) with transactions (contract §9; only when the dump has
  any): ``detail`` JSON of transactions.summary_table's row (transactions and records per
  outcome, the open transactions, the partition's last record timestamp).

Observed: ``produce`` — ack_ts − send_ts of acked sends sent in the window (ms).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from .. import anomaly_table
from .. import sqlexpr as S
from ..collect import as_json_rows
from ..core.window import AuditWindow
from ..schemas import ANOMALY_SCHEMA

PERCENTILES = (0.5, 0.95, 0.99)
MAX_LISTED = 50  # partitions listed per handover


def _fact(df: DataFrame, name: str, **columns: str) -> DataFrame:
    """``df``'s rows as fact rows (columns given as SQL text)."""
    out = []
    for f in ANOMALY_SCHEMA.fields:
        if f.name == "anomaly":
            text = S.lit(name).sql
        elif f.name == "severity":
            text = "'info'"
        else:
            text = columns.get(f.name, "NULL")
        out.append(f"CAST({text} AS {f.dataType.simpleString()}) AS {f.name}")
    return df.selectExpr(*out)


def table_rows(name: str, table: DataFrame) -> DataFrame:
    """A caller's small table as fact rows: one per row, the row as JSON in ``detail``
    (``__table``, ``cause`` the table's name; :attr:`Written.tables` gives them back)."""
    return _fact(as_json_rows(name, table), "__table", cause="_table", detail="_row",
                 units="1")


def judged(identities: DataFrame) -> DataFrame:
    counted = identities.filter(F.col("judged")).groupBy("topic").agg(
        F.count(F.lit(1)).alias("n"))
    return _fact(counted, "__judged", topic="topic", units="n")


def state_counts(rows: DataFrame) -> DataFrame:
    counted = rows.groupBy("_r1", "_r2", "_r3", "group_id", "topic", "state").agg(
        F.count(F.lit(1)).alias("n"))
    return _fact(counted, "__state", group_id="group_id", topic="topic", cause="state",
                 units="n")


def handover_table(rows: DataFrame) -> DataFrame:
    """Member changes on a partition (``group_id``, ``prev``, ``member_id``, ``t``,
    ``prev_f``, ``tp``: one row each) per (group, previous member, member, first start):
    the previous member's last finish and the partitions. Also rebalance/sources.py's,
    when the rebalance section is computed without detection."""
    return rows.groupBy("group_id", "prev", "member_id", "t").agg(
        F.min("prev_f").alias("prev_f"),
        F.slice(F.sort_array(F.collect_set("tp")), 1, MAX_LISTED).alias("tps"))


def handovers(rows: DataFrame) -> DataFrame:
    return _fact(handover_table(rows), "__handover", group_id="group_id", member_id="member_id",
                 related_member_id="prev", seq="t", seq_to="prev_f", detail="to_json(tps)",
                 units="1")


def processing_table(rows: DataFrame) -> DataFrame:
    """Per group: ``q`` [p50, p99], ``mx`` and ``n`` of the processing times ``dur_ms``
    (null: not a successful attempt). Also rebalance/sources.py's, when the rebalance
    section is computed without detection."""
    return rows.filter(F.col("dur_ms").isNotNull()).groupBy("group_id").agg(
        F.percentile_approx("dur_ms", [0.5, 0.99], 10_000).alias("q"),
        F.max("dur_ms").alias("mx"), F.count(F.lit(1)).alias("n"))


def latencies(rows: DataFrame) -> list[DataFrame]:
    processing = processing_table(rows)
    e2e = rows.filter(F.col("e2e_ms").isNotNull()).rollup("group_id").agg(
        *_latency_aggregates("e2e_ms"), F.grouping("group_id").alias("_total"))
    return [
        _fact(processing, "__processing", group_id="group_id",
              detail="to_json(named_struct('q', q, 'mx', mx, 'n', n))", units="n"),
        _fact(e2e, "__e2e", group_id="IF(_total = 1, NULL, group_id)",
              detail="to_json(named_struct('count', count, 'pcts', pcts, 'max', max, "
                     "'min', min, 'total', _total = 1))", units="count"),
    ]


def transaction_facts(table: DataFrame) -> DataFrame:
    """transactions.summary_table's rows as ``__txn`` fact rows."""
    fields = ", ".join(f"'{c}', {c}" for c in table.columns if c not in ("topic", "partition"))
    return _fact(table, "__txn", topic="topic", partition="partition",
                 detail=f"to_json(named_struct({fields}))", units="1")


def _latency_aggregates(col: str) -> list:
    return [F.count(F.col(col)).alias("count"),
            F.percentile_approx(F.col(col), list(PERCENTILES), 10_000).alias("pcts"),
            F.max(F.col(col)).alias("max"), F.min(F.col(col)).alias("min")]


def observations() -> dict[str, Observation]:
    return {"produce": Observation("delivery_audit_produce_latency")}


def observe_sends(sends: DataFrame, window: AuditWindow,
                  observed: dict[str, Observation]) -> DataFrame:
    """The sends, observing the produce latency of acked sends sent in the window."""
    start = window.start.replace(tzinfo=None).isoformat(sep=" ")
    end = window.end.replace(tzinfo=None).isoformat(sep=" ")
    ms = F.expr(
        "IF(status = 'acked' AND ack_ts IS NOT NULL AND send_ts IS NOT NULL "
        f"AND send_ts >= TIMESTAMP '{start}' AND send_ts < TIMESTAMP '{end}', "
        "CAST(unix_micros(ack_ts) - unix_micros(send_ts) AS DOUBLE) / 1000.0, NULL)")
    return (sends.withColumn("_ms", ms)
            .observe(observed["produce"], *_latency_aggregates("_ms")).drop("_ms"))


@dataclass
class Written:
    """Detection's output: where the anomaly table is, and the report's small tables."""

    root: str
    judged_by_topic: dict[str, int] = field(default_factory=dict)
    states: list[dict[str, Any]] = field(default_factory=list)  # group_id, topic, state, n
    handovers: list[dict[str, Any]] = field(default_factory=list)
    processing: list[dict[str, Any]] = field(default_factory=list)  # group_id, q, mx, n
    e2e: list[dict[str, Any]] = field(default_factory=list)  # as insights' latency rows
    produce: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # the caller's
    # per (topic, partition) with transactions: topic, partition and summary_table's figures
    transactions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def anomalies_path(self) -> str:
        return str(Path(self.root) / "_table=anomalies")


def _rows(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.parquet")) if path.is_dir() else []
    out: list[dict[str, Any]] = []
    for f in files:
        out += pq.read_table(f, coerce_int96_timestamp_unit="us").to_pylist()
    return out


def read_written(root: str, observed: dict[str, Observation]) -> Written:
    """The facts of a written detection (a local folder: read with pyarrow, no Spark job)."""
    w = Written(root)
    for r in _rows(Path(root) / "_table=facts"):
        kind = r["anomaly"]
        if kind == "__judged":
            w.judged_by_topic[r["topic"]] = w.judged_by_topic.get(r["topic"], 0) + r["units"]
        elif kind == "__state":
            w.states.append({"group_id": r["group_id"], "topic": r["topic"],
                             "state": r["cause"], "n": r["units"]})
        elif kind == "__handover":
            w.handovers.append({"group_id": r["group_id"], "prev": r["related_member_id"],
                                "member_id": r["member_id"], "t": r["seq"],
                                "prev_f": r["seq_to"], "tps": json.loads(r["detail"])})
        elif kind == "__processing":
            w.processing.append({"group_id": r["group_id"], **json.loads(r["detail"])})
        elif kind == "__txn":
            w.transactions.append({"topic": r["topic"], "partition": r["partition"],
                                   **json.loads(r["detail"])})
        elif kind == "__table":
            w.tables.setdefault(r["cause"], []).append(json.loads(r["detail"]))
        elif kind == "__e2e":
            d = json.loads(r["detail"])
            w.e2e.append({"group_id": r["group_id"], "_total": 1 if d.pop("total") else 0,
                          **d})
    produce = observed.get("produce")
    if produce is not None:
        w.produce = dict(produce.get)
    return w


def move_anomalies(written: Written, dest: str) -> None:
    """Move the anomaly table's folder to ``dest`` (a local path); with no anomaly at all,
    ``dest`` gets one empty Parquet file of the anomaly schema (readers need its schema)."""
    shutil.rmtree(dest, ignore_errors=True)
    source = Path(written.anomalies_path)
    if source.is_dir():
        shutil.move(str(source), dest)
        return
    Path(dest).mkdir(parents=True)
    pq.write_table(anomaly_table.SCHEMA.empty_table(),
                   str(Path(dest) / "part-00000-empty.parquet"))

