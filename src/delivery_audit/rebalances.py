"""Rebalances and advice (contract §5) — filled in by the rebalance-forensics work."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from .config import AuditConfig


def rebalance_report(spark: SparkSession, prepared, config: AuditConfig) -> dict[str, Any]:
    return {}
