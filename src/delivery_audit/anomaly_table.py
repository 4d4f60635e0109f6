"""The anomaly table as the audit wrote it, read with pyarrow: no Spark, no job.

The report's features that need rows rather than counts (the offset strips of report.html,
the remediation files) read the staged or published ``anomalies/`` folder here, after the
audit's one write. Spark writes its timestamps as UTC instants without a zone (INT96);
they come back as ``timestamp[us, tz=UTC]``, whatever the file's encoding (INT96 is read in
microseconds: in nanoseconds, the far instants the contract accepts would overflow).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .fields import ANOMALY_COLUMNS

_TYPES = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(),
          "timestamp": pa.timestamp("us", tz="UTC")}
SCHEMA = pa.schema([pa.field(name, _TYPES[kind], nullable)
                    for name, kind, nullable in ANOMALY_COLUMNS])
COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)
# Parquet as Spark writes it: INT96 timestamps in microseconds (Spark's own unit)
SPARK_PARQUET = ds.ParquetFileFormat(
    read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))


def _normalised(table: pa.Table) -> pa.Table:
    """Every column of the anomaly schema, typed as :data:`SCHEMA` (a missing one null)."""
    out = []
    for f in SCHEMA:
        if f.name not in table.column_names:
            out.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if pa.types.is_timestamp(col.type) and col.type.tz is None:
            col = pc.assume_timezone(col.cast(pa.timestamp("us")), "UTC")
        out.append(col.cast(f.type))
    return pa.Table.from_arrays(out, schema=SCHEMA)


def read_anomalies(path: str | Path, names: Iterable[str] | None = None) -> pa.Table:
    """The rows of ``names`` (every anomaly when None) in the anomaly table at ``path``
    (a local folder of Parquet files); an empty table when there is none."""
    root = Path(path)
    files = sorted(str(p) for p in root.glob("*.parquet")) if root.is_dir() else []
    if not files:
        return SCHEMA.empty_table()
    dataset = ds.dataset(files, format=SPARK_PARQUET)
    flt = None
    if names is not None:
        flt = ds.field("anomaly").isin(sorted(set(names)))
    return _normalised(dataset.to_table(filter=flt))
