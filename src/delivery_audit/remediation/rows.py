"""Anomaly rows as a remediation table: some anomalies' rows, some columns, in a stable
order (the anomalies' order, then every column), so a re-run of the same window writes
byte-identical files."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def ordered_rows(table: pa.Table, names: tuple[str, ...], columns: list[str],
                 extra: dict[str, pa.Array] | None = None) -> pa.Table:
    """The rows of ``names`` in ``table``, ``columns`` only (plus ``extra`` columns computed
    on ``table``'s rows), ordered by anomaly (as in ``names``) and then by every column."""
    keep = pc.is_in(table["anomaly"], pa.array(names, pa.string()))
    rows = table.filter(keep)
    cols = {c: rows[c] for c in columns}
    for name, fn in (extra or {}).items():
        cols[name] = fn(rows)
    out = pa.table(cols)
    rank = pc.index_in(out["anomaly"], pa.array(names, pa.string()))
    out = out.append_column("_rank", rank)
    keys = [("_rank", "ascending")] + [(c, "ascending") for c in out.column_names
                                       if c not in ("_rank", "anomaly")]
    return out.sort_by(keys, null_placement="at_start").drop_columns(["_rank"])
