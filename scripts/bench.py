"""`make bench`: the full audit against a bare Spark baseline over the same files.

Generates BENCH_MESSAGES messages (default 1M; `mixed` scenario, JSON Lines unless
BENCH_FORMAT=parquet), then runs, each in its own Spark driver process so peak memory is
its own: (a) the full audit (ingest with quarantine, GX, detection, report, publish) and
(b) a bare baseline: a full outer join of sends and broker on (topic, key, seq), a left
join of the ledger on (topic, partition, offset), and one count aggregation.

Between them (BENCH_SKELETON=0 skips it), the skeleton (scripts/skeleton.py): plain PySpark
doing the shuffles an exact audit needs for lost_acked, lost_unacked, dup_write,
process_reorder, skipped and dup_effect, and one anomaly write; its counts are printed next to
the generator's truth. BENCH_DUMP=1 writes each run's Spark jobs, stages and SQL executions
(REST API JSON) beside the data (floor.json, skeleton.json, audit.json).

Prints wall time, messages/s, the audit/baseline and audit/skeleton ratios, jobs, tasks,
peak memory (PSS) of the driver process tree, shuffle and spill bytes (Spark's REST API on
127.0.0.1), each run's CPU by kind of work (Spark's tasks, the JIT compiling, GC, the rest of
the JVM, Python: scripts/jvm_cpu.py; local runs, where the process tree holds the JVM), and
the audit's stage table.
A script, not a test: figures, not assertions.

On a cluster: BENCH_MASTER=spark://HOST:PORT runs both measurements there, each through
``spark-submit --master … --py-files delivery_audit.zip`` (driver memory
BENCH_DRIVER_MEMORY, default 2g there; executors BENCH_EXECUTOR_MEMORY, default 1g; executors
run this venv's Python). BENCH_MASTER=cluster starts a local standalone cluster for the run
(scripts/spark_cluster.py: a master and BENCH_WORKERS=2 workers, 1 core and
BENCH_WORKER_MEMORY=2g each, on 127.0.0.1) and stops it afterwards. The peak memory is then the
driver's alone (the executors run in the workers' process trees).

Before them, as a user runs it (`delivery-audit run`, a cold process, peak PSS of its whole
process tree, the JVM included): a small day (BENCH_SMALL_DAY messages, default 20,000; 0
skips it) and the hostile corpus (BENCH_HOSTILE hostile lines per source, default 1,000; 0
skips it), every line of which is checked. BENCH_ONLY_SMALL=1 stops after these two.

Through Spark Connect (BENCH_CONNECT=1, the default; 0 skips it): a Spark Connect server on
127.0.0.1 (scripts/spark_daemons.py ``ConnectServer``, as ``make connect-up``: local[2],
driver heap BENCH_CONNECT_MEMORY, default 4g) is started once; the small day is audited through
it by `delivery-audit run --spark-remote` as a whole client process, first on the fresh server
(its JIT cold), then BENCH_CONNECT_RUNS=2 more times warm; with BENCH_CONNECT_LARGE=1 also the
BENCH_MESSAGES day (JSON Lines), after the classic measurements, twice (the second warm). Each
run's Spark jobs are counted on the server's REST API (the run's operations carry its tag). The
server is stopped by PID at the end; a table puts the figures next to the cold classic ones.

Scaling: BENCH_SCALE=1000000,3000000,10000000 runs the measurement at each size (data is
generated once per size under BENCH_DIR and reused) and ends with one table: messages,
audit wall s, msgs/s, baseline s, audit/baseline, shuffle bytes per message, peak driver
memory (PSS).
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

from jvm_cpu import CpuSampler

START = datetime(2026, 11, 19, tzinfo=UTC)
END = "2026-11-20T00:00:00Z"
SOURCES = ("sends", "broker", "ledger", "events")


def _tree(pid: int) -> list:
    import psutil

    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _tree_rss(procs: list) -> int:
    import psutil

    total = 0
    for p in procs:
        # PSS, not RSS: PySpark's Python workers are forked from one daemon and share most
        # of their pages; summing their RSS counted the shared pages once per worker
        try:
            try:
                total += p.memory_full_info().pss
            except (psutil.AccessDenied, AttributeError):
                total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_measured(cmd: list[str], env: dict[str, str],
                 cpu: CpuSampler | None = None) -> tuple[float, int, str]:
    """Run a command; (seconds, peak memory (PSS) of its process tree, stdout); ``cpu``
    samples the tree's CPU by kind of work (jvm_cpu.py) on the way."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            procs = _tree(proc.pid)
            peak[0] = max(peak[0], _tree_rss(procs))
            if cpu is not None:
                cpu.sample([p.pid for p in procs])
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    sampler.join()
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 3):
        sys.stderr.write(err[-4000:])
        raise SystemExit(f"{cmd[-4:-2]} failed with exit status {proc.returncode}")
    return seconds, peak[0], out


def spark_metrics(spark, dump: str | None = None) -> dict[str, int]:
    """Shuffle and spill totals, jobs, tasks and exchanges of this application, from the UI's
    REST API (loopback); with ``dump``, its jobs, stages and SQL executions as JSON there."""
    url = spark.sparkContext.uiWebUrl
    if not url:
        return {}
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages", timeout=30) as r:
        stages = json.load(r)
    keys = ("shuffleWriteBytes", "shuffleReadBytes", "memoryBytesSpilled", "diskBytesSpilled",
            "inputBytes")
    out = {k: sum(int(s.get(k, 0)) for s in stages) for k in keys}
    # a stage that writes shuffle output is the map side of one exchange
    out["exchanges"] = sum(1 for s in stages if int(s.get("shuffleWriteRecords", 0)) > 0
                           and s.get("status") == "COMPLETE")
    out["tasks"] = sum(int(s.get("numCompleteTasks", 0)) for s in stages)
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/jobs", timeout=30) as r:
        jobs = json.load(r)
    out["jobs"] = len(jobs)
    if dump:  # every job, stage and SQL execution with its metrics, for docs/scaling.md
        with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/sql?details=true"
                                    f"&planDescription=true&length=1000", timeout=60) as r:
            sql = json.load(r)
        Path(dump).write_text(json.dumps({"jobs": jobs, "stages": stages, "sql": sql}))
    return out


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
    return {"seconds": seconds, "groups": len(counts),
            **spark_metrics(spark, os.environ.get("BENCH_DUMP") and str(data / "floor.json"))}


def inner_skeleton(data: Path, out: Path) -> dict:
    """The skeleton (scripts/skeleton.py): the shuffles an exact audit needs, in plain
    PySpark, one anomaly write; its counts of the anomalies it covers."""
    import skeleton

    spark = _session()
    t0 = time.perf_counter()
    counts = skeleton.run(spark, data, out, os.environ.get("BENCH_FORMAT", "jsonl"))
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "counts": counts,
            **spark_metrics(spark, os.environ.get("BENCH_DUMP") and str(data / "skeleton.json"))}


def inner_audit(data: Path, out: Path) -> dict:
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import load_config
    from delivery_audit.core.window import AuditWindow

    spark = _session()
    req = AuditRequest(inputs={s: [str(data / s / "*")] for s in SOURCES},
                       window=AuditWindow.of(START, END, 60), out=str(out),
                       config=load_config(data / "config.yaml"), notify=False, spark=spark)
    t0 = time.perf_counter()
    result = run_audit(req)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "stages": result.report["run"]["stages"],
            "counts": {k: v["count"] for k, v in result.report["anomalies"].items()},
            "audit_jobs": result.report["run"].get("spark_jobs"),
            **spark_metrics(spark, os.environ.get("BENCH_DUMP") and str(data / "audit.json"))}


def day_data(messages: int, work: Path, fmt: str = "jsonl") -> Path:
    """The generated mixed day of this size (generated once per BENCH_DIR)."""
    from delivery_audit_sim.generator import generate_scenario

    data = work / f"mixed-{messages}-{fmt}"
    if not (data / "truth.json").exists():
        generate_scenario("mixed", messages, 7, START, data, fmt)
    return data


def day_args(data: Path) -> list[str]:
    return [*[x for s in SOURCES for x in (f"--{s}", str(data / s / "*"))],
            "--config", str(data / "config.yaml")]


def cold_cli_day(messages: int, work: Path) -> float:
    """A small day audited as a user runs it: `delivery-audit run` as a whole, cold process
    (its own JVM), timed from outside; the job count from its report.json. Returns the
    wall seconds."""
    from delivery_audit import class_archive

    data = day_data(messages, work)
    cpu = CpuSampler()
    wall, peak, report_dir = cold_cli_run(day_args(data), work / "reports-small", cpu)
    report = json.loads((report_dir / "report.json").read_text())
    truth = json.loads((data / "truth.json").read_text())["anomalies"]
    counts = {k: v["count"] for k, v in report["anomalies"].items()}
    print(f"\ncold whole-process audit of a {messages:,}-message day (delivery-audit run): "
          f"{wall:.1f} s, {report['run'].get('spark_jobs')} Spark jobs, class archive "
          f"{'used' if class_archive.java_options() else 'none (make class-archive)'}, "
          f"peak PSS of the process "
          f"tree (JVM included) {_gb(peak)}, counts match truth: {counts == truth}; CPU s "
          + ", ".join(f"{k} {v:.1f}" for k, v in cpu.seconds().items()), flush=True)
    return wall


def cold_cli_run(args: list[str], out: Path,
                 cpu: CpuSampler | None = None) -> tuple[float, int, Path]:
    """`delivery-audit run ARGS` over the window, as a user runs it (a cold process): wall
    seconds, peak PSS of its process tree, and the published report's folder (``cpu``:
    its CPU sampled by kind of work)."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)  # the report found is this run's
    cli = str(Path(sys.executable).parent / "delivery-audit")
    cmd = [cli, "run", *args, "--start", START.isoformat(), "--end", END, "--out", str(out)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    wall, peak, _ = run_measured(cmd, env, cpu)
    return wall, peak, next(out.rglob("report.json")).parent


def hostile_run(per_source: int, work: Path) -> None:
    """The hostile corpus (delivery_audit_sim.generator.hostile, ``per_source`` hostile lines per
    source in every format) audited by `delivery-audit run` as a cold process: wall time, peak
    PSS of the whole process tree, and every line's class checked (the table by kind)."""
    from delivery_audit_sim.generator.hostile import check_published, table_text, write_corpus

    root = work / f"hostile-{per_source}"
    corpus = write_corpus(root / "data", per_source, seed=21)
    size = sum(Path(f).stat().st_size for fs in corpus.files.values() for f in fs)
    wall, peak, report_dir = cold_cli_run(corpus.run_args(), root / "reports")
    checked = check_published(corpus, report_dir)
    rows = sum(len(corpus.rows(s)) for s in corpus.files)
    print(f"\nhostile run: {per_source:,} hostile lines per source, {rows:,} rows, "
          f"{size / 2**20:.0f} MiB in {sum(len(f) for f in corpus.files.values())} files: "
          f"{wall:.1f} s, peak PSS of the process tree (JVM included) {_gb(peak)}, "
          f"misclassified lines {sum(c['misclassified'] for c in checked.table.values())}")
    print(table_text(checked))
    for p in checked.problems[:20]:
        print("  " + p)


class ConnectBench:
    """A local Spark Connect server for the run (started on enter, stopped by PID on exit)
    and the days audited through it by whole client processes."""

    def __init__(self) -> None:
        import spark_daemons

        self.server = spark_daemons.ConnectServer(
            master="local[2]", driver_memory=os.environ.get("BENCH_CONNECT_MEMORY", "4g"))
        self.rows: list[dict] = []

    def __enter__(self) -> ConnectBench:
        t0 = time.perf_counter()
        self.server.start(timeout=300)
        print(f"\nSpark Connect server up in {time.perf_counter() - t0:.1f} s: "
              f"{self.server.url} (UI {self.server.ui_url}, pid {self.server.daemon.pid})",
              flush=True)
        return self

    def __exit__(self, *exc) -> None:
        import spark_daemons

        forced = self.server.stop()
        left = spark_daemons.marked_pids(self.server.server_id)
        print(f"Spark Connect server stopped{f' (SIGKILLed {forced})' if forced else ''}; "
              f"processes left: {left or 'none'}")

    def run(self, messages: int, data: Path, work: Path, label: str) -> dict:
        wall, peak, report_dir = cold_cli_run(
            [*day_args(data), "--spark-remote", self.server.url, "--no-notify"],
            work / f"reports-connect-{messages}")
        report = json.loads((report_dir / "report.json").read_text())
        truth = json.loads((data / "truth.json").read_text())["anomalies"]
        counts = {k: v["count"] for k, v in report["anomalies"].items()}
        jobs = self.server.jobs_tagged(f"delivery-audit-{report['run']['run_id']}")
        row = {"messages": messages, "label": label, "wall": wall, "client_pss": peak,
               "jobs": len(jobs), "truth_ok": counts == truth,
               "session": report["run"].get("spark_session"),
               "stages": report["run"]["stages"]}
        self.rows.append(row)
        print(f"through Spark Connect, {messages:,}-message day ({label}): whole client process "
              f"{wall:.1f} s, {len(jobs)} Spark jobs on the server, client peak PSS "
              f"{_gb(peak)}, counts match truth: {row['truth_ok']}", flush=True)
        return row


def print_connect(rows: list[dict], classic: dict[int, float]) -> None:
    print(f"\nwhole process, cold classic `delivery-audit run` vs a thin client of a warm local "
          f"Spark Connect server (local[2]), {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}:")
    print(f"{'messages':>12s} {'run':>22s} {'wall s':>8s} {'classic s':>10s} {'jobs':>5s} "
          f"{'client PSS':>11s} {'truth':>6s}")
    for r in rows:
        c = classic.get(r["messages"])
        print(f"{r['messages']:12,d} {r['label']:>22s} {r['wall']:8.1f} "
              f"{f'{c:.1f}' if c else '-':>10s} {r['jobs']:5d} {_gb(r['client_pss']):>11s} "
              f"{'ok' if r['truth_ok'] else 'DIFF':>6s}")


def _gb(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


class Target:
    """Where the inner runs go: local (a Python driver with its own local JVM) or a
    spark:// master (spark-submit with the library zipped for --py-files)."""

    def __init__(self, master: str | None, work: Path) -> None:
        self.master = master
        self.cluster = None
        self.py_files: Path | None = None
        self.work = work

    def __enter__(self) -> Target:
        if self.master == "cluster":
            import spark_daemons

            self.cluster = spark_daemons.SparkCluster(
                workers=int(os.environ.get("BENCH_WORKERS", "2")), cores=1,
                memory=os.environ.get("BENCH_WORKER_MEMORY", "2g"))
            print("starting a local Spark standalone cluster …", flush=True)
            self.cluster.start()
            self.master = self.cluster.master_url
            print(self.cluster.describe(), flush=True)
        if self.master:
            from delivery_audit.core.packaging import package_zip

            self.py_files = package_zip(self.work / "py-files")
        return self

    def __exit__(self, *exc) -> None:
        if self.cluster is not None:
            import spark_daemons

            forced = self.cluster.stop()
            left = spark_daemons.marked_pids(self.cluster.cluster_id)
            print(f"cluster stopped{f' (SIGKILLed {forced})' if forced else ''}; "
                  f"processes left: {left or 'none'}")

    @property
    def label(self) -> str:
        if not self.master:
            return "local[2] (DELIVERY_AUDIT_MASTER to change)" if not os.environ.get(
                "DELIVERY_AUDIT_MASTER") else os.environ["DELIVERY_AUDIT_MASTER"]
        return self.master + (" (started for this run)" if self.cluster else "")

    def command(self, kind: str, data: Path, out: Path) -> tuple[list[str], dict[str, str]]:
        inner = ["--inner", kind, str(data), str(out)]
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        if not self.master:
            env["DELIVERY_AUDIT_DRIVER_MEMORY"] = os.environ.get("BENCH_DRIVER_MEMORY", "4g")
            return [sys.executable, __file__, *inner], env
        import spark_daemons

        from delivery_audit.core.submit import audit_submit

        submit = audit_submit(
            self.master, __file__, inner, py_files=self.py_files, python=sys.executable,
            driver_memory=os.environ.get("BENCH_DRIVER_MEMORY", "2g"),
            executor_memory=os.environ.get("BENCH_EXECUTOR_MEMORY", "1g"),
            local_ip=spark_daemons.HOST)
        return submit.command(spark_daemons.spark_submit()), submit.environ(base=env)


def measure(messages: int, fmt: str, work: Path, target: Target) -> dict:
    """Generate (or reuse) the data, run baseline and audit; every figure of one size."""
    from delivery_audit_sim.generator import generate_scenario

    data = work / f"mixed-{messages}-{fmt}"
    t0 = time.perf_counter()
    if not (data / "truth.json").exists():
        generate_scenario("mixed", messages, 7, START, data, fmt)
    gen_s = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    results = {}
    kinds = ["baseline", "audit"]
    if os.environ.get("BENCH_SKELETON", "1") != "0":
        kinds.insert(1, "skeleton")
    for kind in kinds:
        cmd, env = target.command(kind, data, work / "reports")
        env["BENCH_FORMAT"] = fmt
        cpu = CpuSampler()
        wall, rss, out = run_measured(cmd, env, cpu)
        line = next(x for x in out.splitlines() if x.startswith("RESULT "))
        results[kind] = {**json.loads(line[7:]), "wall": wall, "rss": rss,
                         "cpu": cpu.seconds()}
    truth = json.loads((data / "truth.json").read_text())["anomalies"]
    return {"messages": messages, "fmt": fmt, "size": size, "gen_s": gen_s,
            "baseline": results["baseline"], "audit": results["audit"],
            "skeleton": results.get("skeleton"), "truth": truth, "load": os.getloadavg(),
            "truth_ok": results["audit"]["counts"] == truth}


def print_detail(m: dict, target: Target) -> None:
    b, a, messages = m["baseline"], m["audit"], m["messages"]
    print(f"\nmessages {messages:,} ({m['fmt']}, {m['size'] / 2**20:,.0f} MiB on disk; generated "
          f"in {m['gen_s']:,.1f} s)   machine: {os.cpu_count()} cores   master: {target.label}")
    k = m.get("skeleton")
    print(f"{'':10s} {'job s':>8s} {'process s':>10s} {'msgs/s':>10s} {'peak PSS':>10s} "
          f"{'shuffle w':>10s} {'spilled':>10s} {'jobs':>6s} {'tasks':>6s} {'exchanges':>10s}")
    for name, r in (("floor", b), ("skeleton", k), ("audit", a)):
        if r is None:
            continue
        print(f"{name:10s} {r['seconds']:8.1f} {r['wall']:10.1f} {messages / r['seconds']:10,.0f} "
              f"{_gb(r['rss']):>10s} {_gb(r.get('shuffleWriteBytes', 0)):>10s} "
              f"{_gb(r.get('diskBytesSpilled', 0) + r.get('memoryBytesSpilled', 0)):>10s} "
              f"{r.get('jobs', '?'):>6} {r.get('tasks', '?'):>6} {r.get('exchanges', '?'):>10}")
    print("CPU s of each run's process tree (jvm_cpu.py): Spark's tasks, the JIT compiling, "
          "GC, the rest of the JVM (planning, scheduling), Python")
    for name, r in (("floor", b), ("skeleton", k), ("audit", a)):
        if r is not None and sum((r.get("cpu") or {}).values()) > 0:  # nothing read: no /proc
            c = r["cpu"]
            print(f"  {name:10s} total {sum(c.values()):7.1f}   " + "  ".join(
                f"{kind} {c[kind]:.1f}" for kind in c))
    print(f"load average after the runs (1/5/15 min): "
          f"{' / '.join(f'{x:.1f}' for x in m.get('load', os.getloadavg()))}")
    print(f"audit / floor: {a['wall'] / b['wall']:.2f}x whole process, "
          f"{a['seconds'] / b['seconds']:.2f}x job time")
    if k is not None:
        print(f"skeleton / floor: {k['wall'] / b['wall']:.2f}x whole process, "
              f"{k['seconds'] / b['seconds']:.2f}x job time; audit / skeleton: "
              f"{a['wall'] / k['wall']:.2f}x whole process, {a['seconds'] / k['seconds']:.2f}x "
              "job time")
        truth = m.get("truth", {})
        print("skeleton counts / truth: " + ", ".join(
            f"{n} {c}/{truth.get(n)}{'' if c == truth.get(n) else ' DIFF'}"
            for n, c in k["counts"].items()))
    print(f"audit counts match truth: {m['truth_ok']}")
    print("\naudit stages (s):")
    for stage, secs in sorted(a["stages"].items(), key=lambda kv: -kv[1]):
        print(f"  {stage:32s} {secs:8.2f}")
    if k is not None:
        beyond = a["seconds"] - k["seconds"]
        print(f"the audit's {beyond:.1f} s beyond the skeleton (job time), by stage: every "
              "stage but detect is work the skeleton leaves out; detect minus the skeleton's "
              f"{k['seconds']:.1f} s is detection's own excess")
        for stage, secs in sorted(a["stages"].items(), key=lambda kv: -kv[1]):
            extra = secs - k["seconds"] if stage == "detect" else secs
            if abs(extra) >= 0.05:
                print(f"  {stage:32s} {extra:+8.2f}")


def print_scale(rows: list[dict], target: Target) -> None:
    print(f"\nscaling, master: {target.label}, {os.cpu_count()} cores (audit s and baseline s: "
          "job time in the driver; wall s: the audit's whole driver process; msgs/s and ratio "
          "from job time; shuffle: bytes written per message; PSS: the audit driver's process "
          "tree)")
    print(f"{'messages':>12s} {'format':>8s} {'audit s':>9s} {'wall s':>8s} {'msgs/s':>10s} "
          f"{'floor wall s':>13s} {'ratio':>6s} {'jobs':>5s} {'shuffle B/msg':>14s} "
          f"{'peak PSS':>10s} {'truth':>6s}")
    for m in rows:
        a, b, n = m["audit"], m["baseline"], m["messages"]
        print(f"{n:12,d} {m['fmt']:>8s} {a['seconds']:9.1f} {a['wall']:8.1f} "
              f"{n / a['seconds']:10,.0f} {b['wall']:13.1f} {a['wall'] / b['wall']:6.2f} "
              f"{a.get('jobs', '?'):>5} {a.get('shuffleWriteBytes', 0) / n:14,.1f} "
              f"{_gb(a['rss']):>10s} {'ok' if m['truth_ok'] else 'DIFF':>6s}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        kind, data, out = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
        inner = {"baseline": lambda: inner_baseline(data),
                 "skeleton": lambda: inner_skeleton(data, out),
                 "audit": lambda: inner_audit(data, out)}
        result = inner[kind]()
        print("RESULT " + json.dumps(result))
        return
    formats = [f.strip() for f in os.environ.get(
        "BENCH_FORMATS", os.environ.get("BENCH_FORMAT", "jsonl,parquet")).split(",") if f.strip()]
    scale = [int(x) for x in os.environ.get("BENCH_SCALE", "").replace("_", "").split(",")
             if x.strip()]
    sizes = scale or [int(os.environ.get("BENCH_MESSAGES", "1000000"))]
    work = Path(os.environ.get("BENCH_DIR") or tempfile.mkdtemp(prefix="delivery-audit-bench-"))
    rows = []
    classic: dict[int, float] = {}  # messages -> cold classic whole-process seconds
    with Target(os.environ.get("BENCH_MASTER") or None, work) as target:
        small = int(os.environ.get("BENCH_SMALL_DAY", "20000"))
        if small and not target.master:
            classic[small] = cold_cli_day(small, work)
        connect = os.environ.get("BENCH_CONNECT", "1") != "0" and not target.master
        if connect and small:
            with ConnectBench() as bench:
                bench.run(small, day_data(small, work), work, "fresh server")
                for i in range(int(os.environ.get("BENCH_CONNECT_RUNS", "2"))):
                    bench.run(small, day_data(small, work), work, f"warm #{i + 1}")
            print_connect(bench.rows, classic)
        hostile = int(os.environ.get("BENCH_HOSTILE", "1000"))
        if hostile and not target.master:
            hostile_run(hostile, work)
        if os.environ.get("BENCH_ONLY_SMALL") == "1":
            return
        for messages in sizes:
            for fmt in formats:
                m = measure(messages, fmt, work, target)
                rows.append(m)
                print_detail(m, target)
                if fmt == "jsonl":
                    classic[messages] = m["audit"]["wall"]
    print_scale(rows, target)
    if connect and os.environ.get("BENCH_CONNECT_LARGE") == "1":
        with ConnectBench() as bench:
            for messages in sizes:
                for label in ("fresh server", "warm"):
                    bench.run(messages, day_data(messages, work), work, label)
        print_connect(bench.rows, classic)


if __name__ == "__main__":
    main()
