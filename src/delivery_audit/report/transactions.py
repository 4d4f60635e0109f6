"""report.html's section of contract §9's evidence (insights' ``transaction_evidence``):
per transaction anomaly, its first rows as named figures, read back from the anomaly rows
by :mod:`delivery_audit.txn_evidence`. No Spark: plain dicts."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..txn_evidence import TXN_ANOMALIES, evidence, txn_rows

__all__ = ["MAX_ROWS_SHOWN", "TXN_ANOMALIES", "evidence", "transaction_evidence", "txn_rows"]

MAX_ROWS_SHOWN = 50  # evidence rows per anomaly on the page


def transaction_evidence(table: pa.Table, limit: int = MAX_ROWS_SHOWN) -> dict[str, Any]:
    """For report.html (insights' ``transaction_evidence``): per §9 anomaly with rows, its
    first ``limit`` rows' evidence and its row count."""
    out: dict[str, Any] = {}
    if not table.num_rows or "anomaly" not in table.column_names:
        return out
    for name in TXN_ANOMALIES:
        total = int(pc.sum(pc.fill_null(pc.equal(table["anomaly"], name), False)
                           .cast(pa.int64())).as_py() or 0)
        if total:
            out[name] = {"rows": txn_rows(table, name, limit), "total": total}
    return out
