"""What the design prototypes share: run one design in this process and print its
``RESULT {json}``, or run each design in its own measured process and print a table whose
counts are held against the day's truth.json."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

Design = Callable[[SparkSession, Path, str], dict[str, int]]


def inner(designs: dict[str, Design], data: Path, design: str) -> None:
    """One design in this process (BENCH_FORMAT, default parquet): ``RESULT {json}``."""
    import bench
    from pyspark import cloudpickle

    # the tasks' functions call whole_groups: shipped by value (scripts/ is not on the
    # Python workers' path)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark = bench._session()
    fmt = os.environ.get("BENCH_FORMAT", "parquet")
    t0 = time.perf_counter()
    counts = designs[design](spark, data, fmt)
    seconds = time.perf_counter() - t0
    print("RESULT " + json.dumps({"design": design, "seconds": seconds, "counts": counts,
                                  **bench.spark_metrics(spark)}))


def main(script: str, designs: dict[str, Design], default: str, rules: tuple[str, ...],
         shown: tuple[str, ...] = (), exact: Callable[[dict], bool] = lambda c: True) -> None:
    """``script DATA DESIGN``: :func:`inner`; ``script DATA``: every design of DESIGNS
    (default ``default``) in its own process, its counts of ``rules`` (and ``shown``)
    against truth.json; a design whose counts differ is marked DIFF."""
    data = Path(sys.argv[1])
    if len(sys.argv) > 2:
        inner(designs, data, sys.argv[2])
        return
    import bench

    truth = json.loads((data / "truth.json").read_text())["anomalies"]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    print(f"{'design':10s} {'job s':>7s} {'process s':>9s} {'jobs':>5s} {'tasks':>6s} "
          f"{'exch':>5s} {'shuffle w':>10s} {'spilled':>10s} {'PSS':>10s} counts")
    for design in os.environ.get("DESIGNS", default).split(","):
        wall, pss, out = bench.run_measured([sys.executable, script, str(data), design], env)
        r = json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])
        c = r["counts"]
        ok = all(c[k] == truth[k] for k in rules) and exact(c)
        print(f"{design:10s} {r['seconds']:7.1f} {wall:9.1f} {r['jobs']:5d} {r['tasks']:6d} "
              f"{r['exchanges']:5d} {bench._gb(r['shuffleWriteBytes']):>10s} "
              f"{bench._gb(r['memoryBytesSpilled'] + r['diskBytesSpilled']):>10s} "
              f"{bench._gb(pss):>10s} {'= truth' if ok else 'DIFF'} "
              + ", ".join([*(f"{k} {c[k]} (truth {truth[k]})" for k in rules),
                           *(f"{k} {c[k]}" for k in shown)]), flush=True)
    print(f"load average (1/5/15 min): {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


def whole_groups(batches: Iterator[pa.RecordBatch], columns: list[str]) -> Iterator[pa.Table]:
    """A task's record batches, sorted by ``columns``, as tables of whole groups: each
    batch's last group is held back and prepended to the next one (a task holds one batch
    and one group at a time)."""
    carry: pa.Table | None = None
    for batch in batches:
        t = pa.Table.from_batches([batch])
        if carry is not None:
            t = pa.concat_tables([carry, t])
        if len(t) == 0:
            continue
        tail = None
        for c in columns:
            eq = pc.equal(t[c], t[c][len(t) - 1])
            tail = eq if tail is None else pc.and_(tail, eq)
        carry, t = t.filter(tail), t.filter(pc.invert(tail))
        if len(t):
            yield t
    if carry is not None and len(carry):
        yield carry
