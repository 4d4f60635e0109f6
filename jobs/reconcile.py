"""spark-submit entry point: the reconcile job.

    spark-submit [--master spark://HOST:PORT --py-files delivery_audit.zip] jobs/reconcile.py
        --sends GLOB --broker GLOB --ledger GLOB [--events GLOB]
        --start ISO --end ISO [--grace 60m] [--config FILE] [--offsets FILE]
        --out DIR_OR_URI [--stage all]

The arguments are those of `delivery-audit run` (parsed here; the job calls the engine's
entry point, delivery_audit.audit.run_audit, not the CLI); the Spark master comes from
spark-submit. One run validates the inputs (GX), reconciles, validates the results and
publishes the report with its manifest last. Exit status: 0 pass/warn, 1 unreadable
input, 2 bad arguments, 3 verdict fail, 4 publishing failed.

On a cluster, ship the library with ``--py-files`` (a zip of ``delivery_audit`` with its GX
suites, ``delivery_audit.core.packaging.package_zip``) and set PYSPARK_PYTHON to an interpreter
that has the dependencies; ``delivery_audit.core.submit`` builds that command line.

Every Spark job is labelled with the audit stage that runs it (the job description in the
Spark UI and REST API, e.g. ``audit: rule_redelivery``: the engine's stage hook,
delivery_audit.spark_jobs.job_labels). DELIVERY_AUDIT_PROBE_EXECUTORS=1 first runs one tiny task
per executor core and prints, on stderr, which Python and which ``delivery_audit`` each
executor imports.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from pyspark import SparkContext

import delivery_audit
from delivery_audit.audit import AuditFailed, build_request, run_audit
from delivery_audit.redaction import redact_text
from delivery_audit.spark import get_spark
from delivery_audit.spark_jobs import JOB_LABEL

STAGES = ("all",)


def connect_to_spark_submit() -> None:
    """Under spark-submit, connect to its JVM before any session is built. PySpark's
    ``SparkConf()`` sees spark-submit's ``--conf`` values only through a live gateway, and
    ``delivery_audit.spark.get_spark`` keeps exactly the keys it sees there over its defaults
    (spark.ui.enabled, spark.sql.shuffle.partitions, spark.driver.host, …); without this, the
    defaults would silently replace them."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        SparkContext._ensure_initialized()


def probe_executors() -> list[str]:
    """One task per default-parallelism slot: which Python and which delivery_audit runs it."""
    spark = get_spark()
    sc = spark.sparkContext
    n = max(int(sc.defaultParallelism), 1)

    def where(_):
        # imported on the executor, in its own Python: what this probe reports
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


def parser() -> argparse.ArgumentParser:
    """`delivery-audit run`'s options (repeatable ones: once per value), and ``--stage``."""
    p = argparse.ArgumentParser(prog="reconcile", description=__doc__.split("\n\n")[0])
    for source in ("sends", "broker", "ledger"):
        p.add_argument(f"--{source}", action="append", required=True, metavar="GLOB")
    p.add_argument("--events", action="append", default=[], metavar="GLOB")
    p.add_argument("--start", required=True, help="window start, ISO-8601")
    p.add_argument("--end", required=True, help="window end, ISO-8601, exclusive")
    p.add_argument("--out", required=True, help="report root: a directory or s3://bucket/…")
    p.add_argument("--grace", help="late-read grace, e.g. 60m (default: the config's, 60m)")
    p.add_argument("--config", help="audit config, YAML or JSON")
    p.add_argument("--offsets", help="a live read's offsets.json (contract rule 26)")
    p.add_argument("--format", action="append", default=[], dest="formats",
                   metavar="SOURCE=FORMAT")
    p.add_argument("--topic", action="append", default=[], dest="topics")
    p.add_argument("--group", action="append", default=[], dest="groups")
    p.add_argument("--master", help="Spark master (default: spark-submit's)")
    p.add_argument("--spark-remote", help="a Spark Connect endpoint instead (sc://HOST:PORT)")
    p.add_argument("--json", action="store_true", help="print report.json to stdout")
    p.add_argument("--notify", action=argparse.BooleanOptionalAction, default=True,
                   help="alert on warn/fail through the configured notifier")
    p.add_argument("--stage", default="all",
                   help="all (the only one: every stage runs in one Spark application)")
    return p


def main(argv: list[str]) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage error
        return int(exc.code or 0)
    if args.stage not in STAGES:
        print(f"error: --stage {args.stage!r} is not supported (one of {', '.join(STAGES)}); "
              "the job runs every stage in one Spark application", file=sys.stderr)
        return 2
    try:
        req = build_request(sends=args.sends, broker=args.broker, ledger=args.ledger,
                            events=args.events, start=args.start, end=args.end, out=args.out,
                            grace=args.grace, config=args.config, formats=args.formats,
                            topics=args.topics, groups=args.groups, notify=args.notify,
                            master=args.master, remote=args.spark_remote,
                            offsets=args.offsets)
    except ValueError as exc:
        print(f"error: {redact_text(exc)}", file=sys.stderr)
        return 1
    connect_to_spark_submit()
    if os.environ.get("DELIVERY_AUDIT_PROBE_EXECUTORS") == "1":
        probe_executors()
    try:
        result = run_audit(req)
    except AuditFailed as exc:  # its message is redacted
        print(f"{exc.kind} error: {exc}", file=sys.stderr)
        return exc.exit_code
    verdict = result.report["verdict"]
    if args.json:
        sys.stdout.write(json.dumps(result.report, indent=2, default=str) + "\n")
    print(f"verdict {verdict['verdict']}: {'; '.join(verdict['reasons']) or 'no findings'}",
          file=sys.stderr)
    print(f"report: {result.destination}/report.html", file=sys.stderr)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
