"""Message identity (contract §1): (topic, key, seq), the null key being one key.

Joins need plain equality, so the key travels as two non-null columns:
``key_null`` (the key is null) and ``key_v`` (its text, "" when null).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ID = ["topic", "key_null", "key_v", "seq"]
KEY = ["topic", "key_null", "key_v"]


def with_key_parts(df: DataFrame) -> DataFrame:
    """Replace ``key`` by ``key_null``/``key_v``."""
    cols = [c for c in df.columns if c != "key"]
    return df.select(
        *cols,
        F.col("key").isNull().alias("key_null"),
        F.coalesce(F.col("key"), F.lit("")).alias("key_v"),
    )
