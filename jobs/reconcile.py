"""spark-submit entry point: the reconcile job.

    spark-submit [--master spark://HOST:PORT --py-files delivery_audit.zip] jobs/reconcile.py
        --sends GLOB --broker GLOB --ledger GLOB [--events GLOB]
        --start ISO --end ISO [--grace 60m] [--config FILE] --out DIR_OR_URI [--stage all]

The arguments are those of `delivery-audit run`; the Spark master comes from
spark-submit. One run validates the inputs (GX), reconciles, validates the results and
publishes the report with its manifest last. Exit status: 0 pass/warn, 1 unreadable
input, 3 verdict fail.

On a cluster, ship the library with ``--py-files`` (a zip of ``delivery_audit`` with its GX
suites, ``delivery_audit.core.packaging.package_zip``) and set PYSPARK_PYTHON to an interpreter
that has the dependencies; ``delivery_audit.core.submit`` builds that command line.

Every Spark job is labelled with the audit stage that runs it (the job description in the
Spark UI and REST API, e.g. ``audit: rule_redelivery``). DELIVERY_AUDIT_PROBE_EXECUTORS=1
first runs one tiny task per executor core and prints, on stderr, which Python and which
``delivery_audit`` each executor imports.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

STAGES = ("all",)
JOB_LABEL = "audit: "


def connect_to_spark_submit() -> None:
    """Under spark-submit, connect to its JVM before any session is built. PySpark's
    ``SparkConf()`` sees spark-submit's ``--conf`` values only through a live gateway, and
    ``delivery_audit.spark.get_spark`` keeps exactly the keys it sees there over its defaults
    (spark.ui.enabled, spark.sql.shuffle.partitions, spark.driver.host, …); without this, the
    defaults would silently replace them."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkContext

        SparkContext._ensure_initialized()


def label_spark_jobs() -> None:
    """Set the Spark job description to the running audit stage (nested stages restore the
    outer one), by wrapping ``delivery_audit.audit.Stages.stage``."""
    try:
        from delivery_audit.audit import Stages
    except ImportError:  # pragma: no cover - nothing to label
        return
    original = getattr(Stages, "stage", None)
    if original is None or getattr(original, "_labels_spark_jobs", False):
        return

    @contextmanager
    def stage(self, name: str):
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        previous = sc.getLocalProperty("spark.job.description") if sc else None
        if sc:
            sc.setJobDescription(f"{JOB_LABEL}{name}")
        try:
            with original(self, name):
                yield
        finally:
            if sc:
                sc.setJobDescription(previous)  # type: ignore[arg-type]

    stage._labels_spark_jobs = True  # type: ignore[attr-defined]
    Stages.stage = stage  # type: ignore[method-assign]


def probe_executors() -> list[str]:
    """One task per default-parallelism slot: which Python and which delivery_audit runs it."""
    import delivery_audit
    from delivery_audit.spark import get_spark

    spark = get_spark()
    sc = spark.sparkContext
    n = max(int(sc.defaultParallelism), 1)

    def where(_):
        import os as _os
        import socket
        import sys as _sys

        import delivery_audit as _da

        yield (f"executor pid={_os.getpid()} host={socket.gethostname()} "
               f"python={_sys.executable} delivery_audit={_da.__file__}")

    sc.setJobDescription(f"{JOB_LABEL}probe_executors")
    lines = sorted(set(sc.parallelize(range(n), n).mapPartitions(where).collect()))
    sc.setJobDescription(None)  # type: ignore[arg-type]
    lines.insert(0, f"driver pid={os.getpid()} python={sys.executable} "
                    f"delivery_audit={delivery_audit.__file__}")
    for line in lines:
        print(f"probe: {line}", file=sys.stderr)
    return lines


def main(argv: list[str]) -> int:
    args = list(argv)
    if "--stage" in args:
        i = args.index("--stage")
        stage = args[i + 1] if i + 1 < len(args) else ""
        if stage not in STAGES:
            print(f"error: --stage {stage!r} is not supported (one of {', '.join(STAGES)}); "
                  "the job runs every stage in one Spark application", file=sys.stderr)
            return 2
        del args[i:i + 2]
    from delivery_audit.cli import app

    connect_to_spark_submit()
    label_spark_jobs()
    if os.environ.get("DELIVERY_AUDIT_PROBE_EXECUTORS") == "1":
        probe_executors()
    try:
        # click returns the command's exit code instead of exiting
        code = app(["run", *args], prog_name="reconcile", standalone_mode=False)
    except Exception as exc:  # click usage errors carry their exit code
        if getattr(exc, "exit_code", None) is None:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
