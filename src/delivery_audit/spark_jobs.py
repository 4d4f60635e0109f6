"""The audit's Spark jobs: counted (:class:`JobCounter`, with Spark's planning time),
labelled with the stage that runs them (:func:`job_labels`), and carried to another
thread with the run's group and labels (:func:`in_thread`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from pyspark.sql import SparkSession

from .planning_time import planning_seconds
from .spark import is_connect


class JobCounter:
    """Counts the Spark jobs run while it is active (the audit's cost in jobs, logged at
    debug level and stated in report.json). Classic sessions only: a Spark Connect client
    has no status tracker, so ``jobs`` stays None there; instead every operation it sends
    meanwhile carries the tag ``group`` (``SparkSession.addTag``), which the server's jobs
    list among their ``jobTags`` (its UI's REST API: ``ConnectServer.jobs_tagged`` in
    scripts/spark_daemons.py)."""

    def __init__(self, spark: SparkSession, group: str) -> None:
        self.spark, self.group = spark, group
        self.jobs: int | None = None
        self._sc = None

    def __enter__(self) -> JobCounter:
        self._sc = None if is_connect(self.spark) else self.spark.sparkContext
        if self._sc is None:
            self.spark.addTag(self.group)
        else:
            self._sc.setJobGroup(self.group, "delivery audit", interruptOnCancel=False)
        return self

    def count(self, settle: bool = False) -> int | None:
        """Jobs run so far in this counter's group (None under Spark Connect). The status
        tracker learns of jobs from the listener bus, asynchronously: with ``settle``, wait
        (up to 10 s) until the count has not changed for half a second, as a count taken
        right after an action needs."""
        if self._sc is None:
            return None
        tracker = self._sc.statusTracker()
        n = len(tracker.getJobIdsForGroup(self.group))
        if not settle:
            return n
        since, deadline = time.monotonic(), time.monotonic() + 10
        while time.monotonic() < deadline and time.monotonic() - since <= 0.5:
            time.sleep(0.05)
            now = len(tracker.getJobIdsForGroup(self.group))
            if now != n:
                n, since = now, time.monotonic()
        return n

    def planning_seconds(self) -> float | None:
        """Spark's planning time for the jobs run so far in this counter's group
        (planning_time.py; None under Spark Connect)."""
        if self._sc is None:
            return None
        return planning_seconds(self.spark,
                                self._sc.statusTracker().getJobIdsForGroup(self.group))

    def __exit__(self, *exc) -> None:
        if self._sc is None:
            self.spark.removeTag(self.group)
            return
        self.jobs = self.count()
        self._sc.setLocalProperty("spark.jobGroup.id", None)
        self._sc.setLocalProperty("spark.job.description", None)


# the local properties a job of another thread takes from the thread that started it
_THREAD_PROPERTIES = ("spark.jobGroup.id", "spark.job.description",
                      "spark.job.interruptOnCancel", "spark.scheduler.pool")


def in_thread(spark: SparkSession, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` for another Python thread, its Spark jobs in this thread's job group and
    description (a classic session's local properties) or with its tags (Spark Connect),
    as taken now (Spark keeps both per thread)."""
    if is_connect(spark):
        tags = spark.getTags()

        def tagged() -> Any:
            for tag in tags:
                spark.addTag(tag)
            return fn()
        return tagged
    sc = spark.sparkContext
    properties = {k: sc.getLocalProperty(k) for k in _THREAD_PROPERTIES}

    def labelled() -> Any:
        for k, v in properties.items():
            sc.setLocalProperty(k, v)  # type: ignore[arg-type]
        return fn()
    return labelled


JOB_LABEL = "audit: "  # Spark job descriptions: "audit: detect", "audit: ingest", …


def job_labels(spark: SparkSession, prefix: str = JOB_LABEL
               ) -> Callable[[str], AbstractContextManager[None]]:
    """A stage hook (audit.Stages): while a stage runs, its Spark jobs carry the description
    ``prefix`` + the stage's name (the Spark UI and REST API show it), the outer description
    restored after. Nothing under Spark Connect, whose jobs carry the run's tag instead."""
    sc = None if is_connect(spark) else spark.sparkContext

    @contextmanager
    def label(name: str) -> Iterator[None]:
        if sc is None:
            yield
            return
        previous = sc.getLocalProperty("spark.job.description")
        sc.setJobDescription(f"{prefix}{name}")
        try:
            yield
        finally:
            sc.setJobDescription(previous)  # type: ignore[arg-type]

    return label
