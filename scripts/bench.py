"""`make bench`: the full audit against a bare Spark baseline over the same files.

Generates BENCH_MESSAGES messages (default 1M; `mixed` scenario, JSON Lines unless
BENCH_FORMAT=parquet), then runs, each in its own Spark driver process so peak memory is
its own: (a) the full audit (ingest with quarantine, GX, detection, report, publish) and
(b) a bare baseline: a full outer join of sends and broker on (topic, key, seq), a left
join of the ledger on (topic, partition, offset), and one count aggregation.

Prints wall time, messages/s, the audit/baseline ratio, peak RSS of the driver process
tree, shuffle and spill bytes (Spark's REST API on 127.0.0.1), and the audit's stage table.
A script, not a test: figures, not assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

START = datetime(2026, 11, 19, tzinfo=UTC)
END = "2026-11-20T00:00:00Z"
SOURCES = ("sends", "broker", "ledger", "events")


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run a command; (seconds, peak RSS of its process tree, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    sampler.join()
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        sys.stderr.write(err[-4000:])
        raise SystemExit(f"{cmd[2:4]} failed with exit status {proc.returncode}")
    return seconds, peak[0], out


def spark_metrics(spark) -> dict[str, int]:
    """Shuffle and spill totals of this application, from the UI's REST API (loopback)."""
    url = spark.sparkContext.uiWebUrl
    if not url:
        return {}
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages", timeout=30) as r:
        stages = json.load(r)
    keys = ("shuffleWriteBytes", "shuffleReadBytes", "memoryBytesSpilled", "diskBytesSpilled",
            "inputBytes")
    return {k: sum(int(s.get(k, 0)) for s in stages) for k in keys}


def _session():
    from delivery_audit.spark import get_spark

    return get_spark("delivery-audit-bench", conf={
        "spark.ui.enabled": "true", "spark.ui.port": "0",
        "spark.sql.shuffle.partitions": os.environ.get("BENCH_SHUFFLE_PARTITIONS", "16")})


def inner_baseline(data: Path) -> dict:
    from pyspark.sql import functions as F

    from delivery_audit.schemas import canonical_schema

    spark = _session()
    fmt = os.environ.get("BENCH_FORMAT", "jsonl")

    def read(source: str):
        path = str(data / source / "*")
        if fmt == "parquet":
            return spark.read.parquet(path)
        return spark.read.schema(canonical_schema(source)).json(path)

    t0 = time.perf_counter()
    sends, broker, ledger = read("sends"), read("broker"), read("ledger")
    joined = (
        sends.alias("s").join(broker.alias("b"), on=["topic", "key", "seq"], how="full_outer")
        .select("topic", "key", "seq", F.col("b.partition").alias("partition"),
                F.col("b.offset").alias("offset"), F.col("s.status").alias("status"))
        .join(ledger.select("topic", "partition", "offset", "outcome"),
              on=["topic", "partition", "offset"], how="left")
    )
    counts = joined.groupBy("status", "outcome").agg(F.count(F.lit(1)).alias("n")).collect()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "groups": len(counts), **spark_metrics(spark)}


def inner_audit(data: Path, out: Path) -> dict:
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import load_config
    from delivery_audit.window import AuditWindow

    spark = _session()
    req = AuditRequest(inputs={s: [str(data / s / "*")] for s in SOURCES},
                       window=AuditWindow.of(START, END, 60), out=str(out),
                       config=load_config(data / "config.yaml"), notify=False)
    t0 = time.perf_counter()
    result = run_audit(spark, req)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "stages": result.report["run"]["stages"],
            "counts": {k: v["count"] for k, v in result.report["anomalies"].items()},
            **spark_metrics(spark)}


def _gb(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        kind, data, out = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
        result = inner_baseline(data) if kind == "baseline" else inner_audit(data, out)
        print("RESULT " + json.dumps(result))
        return
    from delivery_audit.generator import generate_scenario

    messages = int(os.environ.get("BENCH_MESSAGES", "1000000"))
    fmt = os.environ.get("BENCH_FORMAT", "jsonl")
    work = Path(os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="delivery-audit-bench-"))
    data = work / f"mixed-{messages}-{fmt}"
    t0 = time.perf_counter()
    if not (data / "truth.json").exists():
        generate_scenario("mixed", messages, 7, START, data, fmt)
    gen_s = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "DELIVERY_AUDIT_DRIVER_MEMORY": os.environ.get("BENCH_DRIVER_MEMORY", "12g")}
    results = {}
    for kind in ("baseline", "audit"):
        wall, rss, out = run_measured(
            [sys.executable, __file__, "--inner", kind, str(data), str(work / "reports")], env)
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        results[kind] = {**json.loads(line[7:]), "wall": wall, "rss": rss}
    truth = json.loads((data / "truth.json").read_text())["anomalies"]
    b, a = results["baseline"], results["audit"]
    print(f"\nmessages {messages:,} ({fmt}, {size / 2**20:,.0f} MiB on disk; generated in "
          f"{gen_s:,.1f} s)   machine: {os.cpu_count()} cores")
    print(f"{'':10s} {'job s':>8s} {'process s':>10s} {'msgs/s':>10s} {'peak RSS':>10s} "
          f"{'shuffle w':>10s} {'spilled':>10s}")
    for name, r in (("baseline", b), ("audit", a)):
        print(f"{name:10s} {r['seconds']:8.1f} {r['wall']:10.1f} {messages / r['seconds']:10,.0f} "
              f"{_gb(r['rss']):>10s} {_gb(r.get('shuffleWriteBytes', 0)):>10s} "
              f"{_gb(r.get('diskBytesSpilled', 0) + r.get('memoryBytesSpilled', 0)):>10s}")
    print(f"audit / baseline: {a['seconds'] / b['seconds']:.2f}x (job time)")
    print(f"audit counts match truth: {a['counts'] == truth}")
    print("\naudit stages (s):")
    for stage, secs in sorted(a["stages"].items(), key=lambda kv: -kv[1]):
        print(f"  {stage:32s} {secs:8.2f}")


if __name__ == "__main__":
    main()
