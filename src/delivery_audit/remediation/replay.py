"""``remediation/replay``: the messages to re-produce or re-process, one row per message
(and group, for the per-group states).

* ``lost_acked``, ``lost_unacked``: the broker never had the message: **re-produce** it
  (``partition``/``offset``: where a lost ack said it was written; ``ts``: the send);
* ``expired_unconsumed``: retention deleted it before the group processed it: **re-produce**
  it for that group (``offset``: where it was acked, now below the log start);
* ``skipped``: still in the log, but the group went past it: **re-process** it (an offset
  reset of that partition, see ``commands.txt``, or a re-produce).

Transactions (contract §9): a message written only inside aborted transactions and never
resent is ``lost_unacked`` (rule 25: it was never committed), so it is here already, to
re-produce; a hanging transaction's records are aborted by ``commands.txt``'s
``kafka-transactions.sh … abort`` (its section 6), after which a later audit counts them
here the same way.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .rows import ordered_rows

REPLAY: tuple[str, ...] = ("lost_acked", "lost_unacked", "expired_unconsumed", "skipped")
ACTIONS = {"lost_acked": "re-produce", "lost_unacked": "re-produce",
           "expired_unconsumed": "re-produce", "skipped": "re-process"}
COLUMNS = ["anomaly", "severity", "topic", "key", "seq", "group_id", "partition", "offset",
           "ts", "attempts", "detail"]


def _action(rows: pa.Table) -> pa.Array:
    names = list(ACTIONS)
    idx = pc.index_in(rows["anomaly"], pa.array(names, pa.string()))
    return pc.take(pa.array([ACTIONS[n] for n in names], pa.string()), idx)


def replay_table(anomalies: pa.Table) -> pa.Table:
    """The replay rows of an anomaly table (columns of ``anomaly_table.SCHEMA``):
    :data:`COLUMNS` with ``action`` (``re-produce`` / ``re-process``) second."""
    out = ordered_rows(anomalies, REPLAY, COLUMNS, {"action": _action})
    names = ["anomaly", "action", *COLUMNS[1:]]
    return out.select(names)
