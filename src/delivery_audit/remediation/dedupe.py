"""``remediation/dedupe``: the extra copies and processings, for a downstream job that
compensates (reverses or ignores the second effect), one row per counted unit.

* ``dup_write``: an extra broker copy of a message: ``partition``/``offset`` the extra copy,
  ``related_partition``/``related_offset`` the first one, ``cause`` producer_retry /
  idempotence_breach / unknown;
* ``redelivery``: a record processed again by a group: ``offset`` the record, ``member_id``
  and ``ts`` the extra processing, ``related_member_id``/``related_ts`` the earlier one,
  ``cause`` rebalance / other;
* ``dup_effect``: a message a group processed more than once (through either of the
  above): ``offset``/``member_id``/``ts`` the extra processing, ``related_*`` the first;
  compensating on these rows undoes each extra business effect once.
"""

from __future__ import annotations

import pyarrow as pa

from .rows import ordered_rows

DEDUPE: tuple[str, ...] = ("dup_write", "redelivery", "dup_effect")
COLUMNS = ["anomaly", "cause", "group_id", "topic", "key", "seq", "partition", "offset",
           "related_partition", "related_offset", "member_id", "related_member_id", "ts",
           "related_ts", "attempts", "units", "detail"]


def dedupe_table(anomalies: pa.Table) -> pa.Table:
    """The dedupe rows of an anomaly table (columns of ``anomaly_table.SCHEMA``)."""
    return ordered_rows(anomalies, DEDUPE, COLUMNS)
