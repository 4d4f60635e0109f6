"""Pass 1, by key: the send attempts, the broker rows that form an identity and the ledger
rows (rule 10 resolved) of every key, hash partitioned by (topic, key) and sorted by
(identity, partition, offset), as two leaves: sends and broker rows, ledger rows and the
marks of rule 12 (leaves.py). Everything in the pass streams over that order (layout.py),
with no other shuffle or sort:

* **identities** (identity_facts.py) — one sort-based aggregation of the send and broker
  rows: what the write-side rules and the states need (first send, attempts, acks,
  copies, the time that judges it: rule 8), whether this window judges it, and per group
  consuming its topic whether the group went past every copy (rule 12: its attempts and
  commits, from the facts, or a ``skipped`` mark on the copy's record);
* **copies** (routed_rows.py) — each broker row with the previous copy of its key
  (key_partition_split, the first copy for dup_write) and its identity (a merge join);
  among the first copies of each identity in a partition, the key's running maximum seq
  in that partition in offset order (write_reorder: a sort within the task);
* **ledger rows** (routed_rows.py) — each with the broker copy at its record (its
  timestamp, for delivery latency) and its identity's ``judged`` flag (merge joins);
* per key, the identities in seq order: seq_gap's range and each identity's predecessor
  (routed_rows.py);
* **the states' rows** (routed_rows.py): per judged identity one pair per group
  consuming its topic, with the group's successful processings of it counted and the
  first found (identity_facts.successes_by_slot: an aggregation by identity in the
  leaf's order, merge joined), by key as they are: delivery_states.py decides the states
  with no exchange or sort of their own.

Transactions (contract §9, transactions.py): broker rows carry their outcome; an aborted
row judges its identity (rule 25) and may be a zombie write, but it is no copy (rule 22),
and a ledger row at it is an aborted read, otherwise treated like an unresolved row.

The pass ends by emitting routed rows (routes.py; their kinds: layout.py): the write
side's anomaly rows, the ledger rows (to the consumer side) and the key moves
(key_partition_split: the first per key).

This module runs the pass: :func:`keyed_pass`, from the sources' rows to the exchanged
routed rows and the leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...config import AuditConfig
from ...core.window import AuditWindow
from .. import routes, transactions
from ..facts import Facts
from .identity_facts import identities
from .leaves import broker_rows, leaf, ledger_rows, send_rows, success_rows
from .routed_rows import (
    copy_rows,
    identity_rows,
    ledger_joined,
    ledger_out,
    pair_rows,
)


@dataclass(frozen=True)
class KeyedPass:
    exchanged: DataFrame  # the pass's routed rows, exchanged for pass 2
    identities: DataFrame  # a leaf: the judged counts read it
    pairs: DataFrame  # the (group, judged identity) pairs (layout.PAIR), by key
    successes: DataFrame  # the successful processings (layout.SUCCESS), by key
    sends_broker: DataFrame  # the leaves by key: send and broker rows (_side SEND, BROKER)
    ledger: DataFrame  # ledger rows and marks (_side LEDGER, MARK)


def keyed_pass(frames: dict[str, DataFrame], window: AuditWindow, config: AuditConfig,
               facts: Facts, outcomes: DataFrame | None = None) -> KeyedPass:
    """Pass 1 from the sources' valid rows to its routed rows, exchanged for pass 2; the
    identities and the pass's two leaves (the published evidence reads them).
    ``outcomes``: the broker rows with their transaction (transactions.outcomes; computed
    here when not given)."""
    ledger = frames["ledger"].filter(F.col("group_id").isin(*facts.group_ids))\
        if facts.group_ids else frames["ledger"].limit(0)
    if outcomes is None:
        outcomes = transactions.outcomes(frames["broker"], facts)
    sb = leaf(send_rows(frames["sends"], facts).unionByName(broker_rows(outcomes)))
    lm = leaf(ledger_rows(ledger, frames["broker"], facts))
    successes = success_rows(lm, sb, facts)
    ids = identities(sb, lm, window, facts)
    led = ledger_joined(lm, sb, ids)
    out = (identity_rows(ids, config)
           .unionByName(copy_rows(sb, ids))
           .unionByName(ledger_out(led, config, facts)))
    return KeyedPass(routes.exchange(out), ids, pair_rows(ids, successes, facts),
                     successes, sb, lm)
