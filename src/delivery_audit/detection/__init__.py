"""Detection: every anomaly and delivery state of the audit contract, as one Spark plan.

Three passes, each ending in one exchange of routed rows (routes.py):

1. **by key** (keyed/): sends, broker copies and ledger rows of every (topic, key) in
   one sort; identity figures, judging, the write-side rules (write_side.py),
   write_reorder (ordering.py) and, per (group, identity) in the same partitioning, the
   delivery states and dup_effect (delivery_states.py);
2. **by (group, topic, partition)**, each on a task of its own (routes.placement): the
   consumer side (consumer.py: redelivery.py, retries.py, ordering.process_reorder,
   overlap candidates; the start-order sweep streamed in Arrow batches, start_order.py);
3. the few rows that need more: concurrent_processing among overlap candidates
   (concurrency.py), the cause of a redelivery by the same member (redelivery.py), and
   the small tables the report counts (outputs.py); the published evidence, the source
   rows of the identities the anomalies name, read from pass 1's leaves (evidence_table.py).

Before pass 1, only when the dump holds transactions (contract §9): one exchange of the
broker rows by (topic, partition, pid) gives each its transaction's outcome
(transactions.py); aborted rows are no copies in pass 1, and the open transactions are
counted from the same leaf.

Where each anomaly is decided: ``anomalies.ANOMALIES[*].decided_by`` (the catalogue, from
which docs/anomalies.md is generated).

Nothing runs until :meth:`Detection.write`: one Spark job writes the anomaly table, the
report's small tables and the evidence together (``_table`` = anomalies | facts |
evidence).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ..anomalies import ANOMALY_NAMES
from ..config import AuditConfig
from ..core.window import AuditWindow
from ..schemas import ANOMALY_SCHEMA
from . import (
    concurrency,
    consumer,
    delivery_states,
    evidence_table,
    keyed,
    outputs,
    redelivery,
    routes,
    transactions,
    write_side,
)
from .facts import Facts, compute_facts
from .keyed import layout as keyed_layout

__all__ = ["Detection", "Facts", "detect"]


@dataclass
class Detection:
    anomalies: DataFrame  # one row per counting unit (a leaf: computed once, read by all)
    facts_rows: DataFrame  # the report's small tables as fact rows (outputs.py)
    facts: Facts
    pairs: DataFrame  # the (group, judged identity) pairs (for :attr:`states`)
    evidence_rows: DataFrame | None = None  # the published evidence (evidence_table.py)
    observations: dict[str, Observation] = field(default_factory=dict)
    rules: list[str] = field(default_factory=lambda: list(ANOMALY_NAMES))

    @property
    def states(self) -> DataFrame:
        """One row per (group, judged identity on a topic it consumes), as a plan of its own
        (the audit counts states in :meth:`write`; this is for looking at them)."""
        return delivery_states.state_rows(self.pairs)

    def plan(self, tables: dict[str, DataFrame] | None = None) -> DataFrame:
        """Every output row: the anomaly table's rows, the fact rows, the rows of
        ``tables`` (small tables of the caller's, e.g. aggregates of :attr:`anomalies`)
        and the evidence rows, with ``_table`` = anomalies | facts | evidence."""
        names = [f.name for f in ANOMALY_SCHEMA.fields]
        parts = [self.anomalies.select(*names, F.lit("anomalies").alias("_table")),
                 self.facts_rows.select(*names, F.lit("facts").alias("_table"))]
        if self.evidence_rows is not None:
            parts.append(self.evidence_rows.select(*names, F.lit("evidence").alias("_table")))
        parts += [outputs.table_rows(name, df).select(*names, F.lit("facts").alias("_table"))
                  for name, df in (tables or {}).items()]
        return reduce(DataFrame.unionByName, parts)

    def write(self, path: str | Path,
              tables: dict[str, DataFrame] | None = None) -> outputs.Written:
        """Run detection: one Spark job writes ``path/_table=anomalies`` (the anomaly
        table), ``path/_table=facts`` (state counts, judged identities, handovers,
        latencies, and ``tables``) and ``path/_table=evidence`` (evidence_table.publish
        makes the published table of it); returns the facts and the metrics observed on
        the way."""
        rows = self.plan(tables)
        if rows.sparkSession.conf.get("spark.sql.shuffle.partitions") == "1":
            rows = rows.coalesce(1)  # a small day (tune_for_staged): one write task, not one
            # per branch of the union (16 on a 20k day)
        rows.write.mode("overwrite").partitionBy("_table").parquet(str(path))
        return outputs.read_written(str(path), self.observations)

    def write_anomalies(self, path: str | Path, tables: dict[str, DataFrame] | None = None,
                        evidence: str | Path | None = None) -> outputs.Written:
        """:meth:`write`, for callers that read the anomaly table at ``path`` itself; with
        ``evidence``, the published evidence table is written there (pyarrow, no job). The
        facts, read at once, leave with the scratch folder: it is not published."""
        scratch = Path(str(path) + ".detection")
        written = self.write(scratch, tables)
        outputs.move_anomalies(written, str(path))
        if evidence is not None:
            evidence_table.publish(written.root, evidence)
        shutil.rmtree(scratch, ignore_errors=True)
        return written


def detect(spark: SparkSession, frames: dict[str, DataFrame], window: AuditWindow,
           config: AuditConfig, facts: Facts | None = None) -> Detection:
    """Every rule's rows and the delivery states, as one plan (nothing runs here).
    ``facts``: what ingestion learnt of the input (else one small Spark job finds it)."""
    facts = facts or compute_facts(frames, config)
    events = frames["events"].filter(F.col("group_id").isin(*facts.group_ids)) \
        if facts.group_ids else frames["events"].limit(0)
    observations = outputs.observations()
    sends = outputs.observe_sends(frames["sends"], window, observations)
    # the broker rows with their transaction (a leaf of its own when the dump has any)
    outcomes = transactions.outcomes(frames["broker"], facts)
    by_key = keyed.keyed_pass({**frames, "sends": sends}, window, config, facts, outcomes)
    pass2, identities, pairs = by_key.exchanged, by_key.identities, by_key.pairs
    sla = {g: ms for g in facts.group_ids if (ms := config.sla_ms(g)) is not None}
    pass3 = routes.exchange(
        consumer.consumer_rows(routes.of_kind(pass2, keyed_layout.L), window)
        .unionByName(delivery_states.states_pass(
            pairs, delivery_states.extra_successes(by_key.successes, identities, facts), sla,
            facts.read_starts())))
    names = [f.name for f in ANOMALY_SCHEMA.fields]
    # one aggregation per transaction, read by the hanging ones and the report's table
    txns = transactions.per_transaction(outcomes, facts) if facts.transactional else None
    txn_anomalies = [] if txns is None else [
        transactions.hanging_rows(txns, config, window, facts)]
    # one leaf of the branches' rows in as many partitions as a shuffle has (not one per
    # branch and partition): each of the report's tables of it is a stage of that many tasks
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    anomalies = routes.checkpoint(reduce(DataFrame.unionByName, [df.select(*names) for df in (
        routes.of_kind(pass2, keyed_layout.A),
        write_side.first_move(routes.of_kind(pass2, keyed_layout.K)),
        routes.of_kind(pass3, consumer.A),
        concurrency.concurrent_processing(routes.of_kind(pass3, consumer.C)),
        redelivery.with_event_cause(routes.of_kind(pass3, consumer.R), events),
        *txn_anomalies,
    )]).coalesce(tasks))
    txn_facts = [] if txns is None else [
        outputs.transaction_facts(transactions.summary_table(txns))]
    facts_rows = reduce(DataFrame.unionByName, [
        outputs.judged(identities),
        outputs.state_counts(routes.of_kind(pass3, consumer.ST)),
        outputs.handovers(routes.of_kind(pass3, consumer.H)),
        *outputs.latencies(routes.of_kind(pass3, consumer.X_)),
        *txn_facts,
    ])
    return Detection(anomalies=anomalies, facts_rows=facts_rows, facts=facts, pairs=pairs,
                     evidence_rows=evidence_table.evidence_rows(
                         by_key, anomalies, events, send_errors=not config.pseudonymise),
                     observations=observations)
