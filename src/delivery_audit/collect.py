"""Many small aggregates, one Spark action.

Every figure the report needs is a small table (counts per anomaly, states per group,
events per minute …). Collecting each one is a Spark job of its own, and each job pays
its scheduling, its stages and, for an uncached input, its scans again. ``collect_all``
unions the tables as (name, JSON text) rows and collects them once: one job whose
stages compute every aggregate, and plain Python values on the driver.

Types come back as JSON gives them: numbers (longs and DECIMAL(38,0) as Python ints),
strings, booleans, lists and dicts. Timestamps should travel as epoch numbers
(``F.unix_millis``/``F.unix_micros``): as JSON text they would need parsing again.
Works the same over Spark Connect (no RDD, no JVM access).
"""

from __future__ import annotations

import json
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def as_json_rows(name: str, df: DataFrame) -> DataFrame:
    """``df`` as rows of (``_table``, ``_row``): the table's name and the row as JSON."""
    return df.select(F.lit(name).alias("_table"),
                     F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns]),
                               {"ignoreNullFields": "false"}).alias("_row"))


def collect_all(tables: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Collect every (small) table in one Spark action: {name: [row as dict, …]}.
    Row order within a table is not kept: sort on the driver where it matters."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in tables}
    if not tables:
        return out
    union = reduce(DataFrame.unionByName,
                   [as_json_rows(name, df) for name, df in tables.items()])
    for r in union.collect():
        out[r["_table"]].append(json.loads(r["_row"]))
    return out
