"""How long Spark spent planning an audit's queries, from the driver's status stores.

A query's SQL execution starts when its action is called (the event is posted before
Catalyst optimises and plans it); its first Spark job is submitted once the physical plan
is built and its code generated. The time between the two, summed over the executions
that ran the audit's jobs, is the audit's planning time: report.json ``run.planning_s``
(issue 30's "analysis and planning time"). What it leaves out: the analysis done while the
plans are built in Python (each DataFrame step is analysed as it is made) and the planning
of lazily checkpointed subtrees, which happens when the checkpoint is declared; both fall
in the stage's seconds instead.

Classic sessions only: a Spark Connect client has no status store (spark_jobs.JobCounter
gives None there).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import SparkSession

# the executions looked at: the latest ones of the session (an audit runs about a dozen)
RECENT_EXECUTIONS = 200


def planning_seconds(spark: SparkSession, job_ids: Iterable[int]) -> float:
    """Seconds from each SQL execution's start to its first job, summed over the
    executions of a classic session that ran any of ``job_ids``."""
    ids = {int(j) for j in job_ids}
    if not ids:
        return 0.0
    sc = spark.sparkContext
    jvm, jobs = sc._jvm, sc._jsc.sc().statusStore()  # noqa: SLF001 - the driver's stores
    executions = spark._jsparkSession.sharedState().statusStore()  # noqa: SLF001
    count = executions.executionsCount()
    recent = executions.executionsList(max(0, count - RECENT_EXECUTIONS), RECENT_EXECUTIONS)
    total_ms = 0
    for i in range(recent.size()):
        execution = recent.apply(i)
        ran = jvm.scala.jdk.javaapi.CollectionConverters.asJava(execution.jobs()).keySet()
        mine = [int(j) for j in ran if int(j) in ids]
        if not mine:
            continue
        first = min(jobs.job(j).submissionTime().get().getTime() for j in mine)
        total_ms += max(0, first - execution.submissionTime())
    return round(total_ms / 1000, 3)
