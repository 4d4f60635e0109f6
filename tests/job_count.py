"""Counting the Spark jobs an action runs (classic sessions), for tests of a plan's cost."""

from __future__ import annotations

import time
import uuid


def spark_jobs(spark, action):
    """(action(), the number of Spark jobs it ran)."""
    sc = spark.sparkContext
    group = f"counted-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counted")
    try:
        result = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    # the status tracker learns of jobs from the listener bus, asynchronously: wait for the
    # count to settle
    seen, since, deadline = -1, time.monotonic(), time.monotonic() + 10
    while time.monotonic() < deadline:
        n = len(sc.statusTracker().getJobIdsForGroup(group))
        if n != seen:
            seen, since = n, time.monotonic()
        elif time.monotonic() - since > 0.5:
            break
        time.sleep(0.05)
    return result, seen
