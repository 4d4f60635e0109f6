"""The published quarantine table (report folder ``quarantine/``): every source's quarantined
rows with file, line and reason (contract §2), in one Parquet folder."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from .ingest import Ingested
from .privacy import withhold_raw
from .schemas import QUARANTINE_SCHEMA


def write_quarantine(ingested: dict[str, Ingested], folder: Path, pseudonymised: bool) -> None:
    """Every source's quarantined rows to ``folder`` (their raw text withheld when the run
    pseudonymises); nothing quarantined: the empty table, without a Spark job."""
    if not any(i.counts.get("rows_quarantined") for i in ingested.values()):
        write_empty_parquet(QUARANTINE_SCHEMA, folder)
        return
    quarantine = reduce(DataFrame.unionByName, [i.quarantine for i in ingested.values()])
    if pseudonymised:
        quarantine = withhold_raw(quarantine)
    quarantine.coalesce(1).write.mode("overwrite").parquet(str(folder))


def write_empty_parquet(schema: T.StructType, folder: Path) -> None:
    """An empty table of ``schema`` as Spark would write it (one Parquet file and _SUCCESS),
    written with pyarrow."""
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_arrow_schema(schema).empty_table(), str(folder / "part-00000.parquet"))
    (folder / "_SUCCESS").write_bytes(b"")
