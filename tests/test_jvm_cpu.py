"""The benchmark's CPU split by kind of work (scripts/jvm_cpu.py), on this test run's own
JVM: Spark's tasks show as ``tasks``, this Python process as ``python``."""

from __future__ import annotations

import os

import psutil
from scripts_loader import load_script

jvm_cpu = load_script("jvm_cpu")


def _tree() -> list[int]:
    me = psutil.Process(os.getpid())
    return [me.pid, *(p.pid for p in me.children(recursive=True))]


def test_a_spark_job_counts_as_tasks_and_this_process_as_python(spark):
    sampler = jvm_cpu.CpuSampler()
    sampler.sample(_tree())
    before = sampler.seconds()
    spark.range(0, 3_000_000, numPartitions=2).selectExpr("sum(id * id % 7)").collect()
    sampler.sample(_tree())
    after = sampler.seconds()
    assert set(after) == set(jvm_cpu.KINDS)
    assert after["tasks"] > before["tasks"]  # the job's tasks ran on executor threads
    assert after["python"] > 0  # this pytest process
    assert after["jvm_other"] > 0  # the driver's planning and scheduling


def test_a_thread_that_ended_keeps_its_last_sample():
    sampler = jvm_cpu.CpuSampler()
    sampler._keep((1, 2), "jit", 3.0)
    sampler._keep((1, 2), "jit", 2.0)  # a later read can only be a reused id: ignored
    assert sampler.seconds()["jit"] == 3.0
