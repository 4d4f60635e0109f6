"""Build this environment's class archive for the driver JVM (src/delivery_audit/
class_archive.py): a small generated day audited once by a JVM
that writes every class it loaded to the archive when it exits. `make class-archive` runs
it (not `make setup`); it does nothing when the archive is already there.

Usage: python scripts/class_archive.py [--force]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

START = datetime(2026, 11, 19, tzinfo=UTC)


def _audit(spark, day: Path, out: Path) -> None:
    from delivery_audit.audit import run_audit
    from delivery_audit.request import build_request

    sources = {s: [str(day / s / "*")] for s in ("sends", "broker", "ledger", "events")}
    run_audit(build_request(**sources, start=START.isoformat(), end="2026-11-20T00:00:00Z",
                            out=str(out), config=str(day / "config.yaml"), notify=False,
                            spark=spark))


def build(target: Path) -> None:
    from pyspark import SparkContext

    from delivery_audit import class_archive
    from delivery_audit.spark import DEFAULT_CONF, get_spark
    from delivery_audit_sim.generator.core import generate_scenario

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    with tempfile.TemporaryDirectory(prefix="delivery-audit-class-archive-") as tmp:
        day = Path(tmp) / "day"
        generate_scenario("mixed", 300, 7, START, day)
        options = (f"{DEFAULT_CONF['spark.driver.extraJavaOptions']} "
                   f"{class_archive.dump_options(partial)}")
        spark = get_spark(conf={"spark.driver.extraJavaOptions": options})
        try:
            try:
                _audit(spark, day, Path(tmp) / "reports")
            finally:
                spark.stop()
                # the JVM writes the archive as it exits: end it (EOF on stdin) and wait
                gateway = SparkContext._gateway
                proc = gateway.proc
                gateway.shutdown()
                proc.stdin.close()
                proc.wait(timeout=600)
        except BaseException:  # the audit failed or the JVM did not end: no archive
            partial.unlink(missing_ok=True)
            raise
    if proc.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
        partial.unlink(missing_ok=True)
        raise SystemExit(f"the JVM wrote no class archive (exit status {proc.returncode})")
    os.replace(partial, target)  # whole, or not at all: a truncated archive stops a JVM
    for old in target.parent.glob("spark-classes-*.jsa"):  # of other jars or javas
        if old != target:  # (another set-up's): 170 MiB each, never mapped again
            old.unlink(missing_ok=True)


def main() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.pop("SPARK_REMOTE", None)  # the archive is of a JVM started here
    from delivery_audit.class_archive import archive_path

    target = archive_path()
    if target.is_file() and "--force" not in sys.argv[1:]:
        print(f"class archive: {target} (already built)")
        return
    t0 = time.perf_counter()
    build(target)
    print(f"class archive: {target} ({target.stat().st_size / 2**20:.0f} MiB, built in "
          f"{time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
