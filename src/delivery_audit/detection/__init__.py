"""Detection: every anomaly and delivery state of the audit contract.

Where each anomaly is decided (see also anomalies.ANOMALIES[*].decided_in):

====================  ==========================
lost_acked            write_side.lost_acked
lost_unacked          write_side.lost_unacked
written_despite_...   write_side.written_despite_failure
seq_gap               write_side.seq_gap
dup_write             write_side.dup_write
key_partition_split   write_side.key_partition_split
write_reorder         ordering.write_reorder
process_reorder       ordering.process_reorder
redelivery            redelivery.redelivery
dup_effect            delivery_states.dup_effect
skipped / pending /   delivery_states.states (+ state_anomalies)
expired_unconsumed
concurrent_processing concurrency.concurrent_processing
retry_after_failure   retries.retry_after_failure
====================  ==========================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from ..config import AuditConfig
from ..window import AuditWindow
from . import concurrency, delivery_states, ordering, redelivery, retries, write_side
from .prepared import Prepared, prepare


@dataclass
class Detection:
    prepared: Prepared
    rules: list[tuple[str, DataFrame]]  # (rule name, its anomaly rows), schemas.ANOMALY_SCHEMA
    states: DataFrame  # per (group, judged identity)

    @property
    def anomalies(self) -> DataFrame:
        """Every rule's rows as one DataFrame (one row per counting unit)."""
        return reduce(DataFrame.unionByName, [df for _, df in self.rules])

    def write_anomalies(self, path: str) -> None:
        """Write the anomaly table: every rule in one Spark job, so that what the rules
        share (the judged identities, the resolved ledger, their exchanges) is computed
        once for all of them."""
        self.anomalies.write.mode("overwrite").parquet(path)


def detect(spark: SparkSession, frames: dict[str, DataFrame], window: AuditWindow,
           config: AuditConfig, group_ids: list[str] | None = None,
           ledger_rows_without_seq: int | None = None) -> Detection:
    """Every rule's rows and the delivery states, as plans (nothing runs here).
    ``group_ids``: the groups seen in the ledger and events, when ingestion counted them
    (else one small Spark job finds them); ``ledger_rows_without_seq``: how many ledger
    rows need their key and seq from the broker, when ingestion counted them (0 spares
    the lookup's shuffle of the broker)."""
    p = prepare(spark, frames, window, config, group_ids, ledger_rows_without_seq)
    st = delivery_states.states(p).persist(StorageLevel.MEMORY_AND_DISK)
    skipped, pending, expired = delivery_states.state_anomalies(st)
    rules = [
        ("lost_acked", write_side.lost_acked(p)),
        ("lost_unacked", write_side.lost_unacked(p)),
        ("written_despite_failure", write_side.written_despite_failure(p)),
        ("seq_gap", write_side.seq_gap(p)),
        ("dup_write", write_side.dup_write(p)),
        ("key_partition_split", write_side.key_partition_split(p)),
        ("write_reorder", ordering.write_reorder(p)),
        ("process_reorder", ordering.process_reorder(p)),
        ("redelivery", redelivery.redelivery(p)),
        ("dup_effect", delivery_states.dup_effect(p)),
        ("skipped", skipped),
        ("pending", pending),
        ("expired_unconsumed", expired),
        ("concurrent_processing", concurrency.concurrent_processing(p)),
        ("retry_after_failure", retries.retry_after_failure(p)),
    ]
    return Detection(prepared=p, rules=rules, states=st)
