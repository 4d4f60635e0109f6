"""Counting the Spark jobs an action runs (classic sessions), for tests of a plan's cost."""

from __future__ import annotations

import uuid

from delivery_audit.spark_jobs import JobCounter


def spark_jobs(spark, action):
    """(action(), the number of Spark jobs it ran)."""
    with JobCounter(spark, f"counted-{uuid.uuid4().hex}") as counter:
        result = action()
    return result, counter.count(settle=True)
