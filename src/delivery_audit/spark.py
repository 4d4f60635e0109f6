"""The SparkSession the auditor runs on: local and loopback-bound unless told otherwise."""

from __future__ import annotations

import os
import re
import socket
import warnings
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
from pyspark import SparkConf, SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from . import class_archive

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.ansi.enabled": "true",
    # detection's passes hash partition their rows once (detection/routes.py: by key in
    # pass 1); a join by identity of two sides so partitioned needs no exchange of either
    # side (Spark's default asks for every join key in the partitioning)
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    # no runtime bloom filters: each one is a scalar subquery, a Spark job of its own (the
    # published evidence's semi joins of the events got two, detection/evidence_table.py)
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    # a JSON object with a repeated key: the last one wins, in both JSON readers
    "spark.sql.variant.allowDuplicateKeys": "true",
    # ingestion writes each source once, partitioned by row status: a writer per status
    # instead of sorting every task's rows by status first
    "spark.sql.maxConcurrentOutputFileWriters": "8",
    # HotSpot never JIT-compiles a method over 8000 bytes of bytecode: a whole stage whose
    # generated method is larger ran interpreted (ingestion's typing of 1M ledger rows: 36.7 s
    # at Spark's default 65535, 16.3 s at 8000, where such a stage falls back to compiled
    # expressions per operator; docs/scaling.md)
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # a batch job on few cores: the throughput collector, not G1, whose concurrent threads
    # compete with the tasks (cold 20k-message audit 43.2/43.7 s vs 47.2/49.5 s; 1M
    # Parquet 166.4 s vs 178.9 s; docs/scaling.md). Python-started JVMs only: under
    # spark-submit the driver JVM already runs, pass it there
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
}


# The driver's heap follows the input (local mode runs everything in the driver JVM): a
# floor for the session and the plans, and room for the data on top. Measured on the
# whole process tree (scripts/bench.py, PSS, the JVM included): a 20k-message day peaked at
# 2.50 GiB with a fixed 4 GiB heap, 1.60 GiB with 1.5 GiB, in the same time; the 10,000-per-
# source hostile run 3.28 GiB and 2.28 GiB. An input of unknown size (s3://) keeps the cap.
DRIVER_HEAP_FLOOR_MIB = 1536
DRIVER_HEAP_CAP_MIB = 4096
DRIVER_HEAP_PER_INPUT_MIB = 4  # MiB of heap per MiB of input files, above the floor


def driver_memory_for(input_bytes: int | None) -> str:
    """The driver heap for an input of this size (None: unknown); DELIVERY_AUDIT_DRIVER_MEMORY
    overrides."""
    if "DELIVERY_AUDIT_DRIVER_MEMORY" in os.environ:
        return os.environ["DELIVERY_AUDIT_DRIVER_MEMORY"]
    if input_bytes is None:
        return f"{DRIVER_HEAP_CAP_MIB}m"
    mib = DRIVER_HEAP_FLOOR_MIB + DRIVER_HEAP_PER_INPUT_MIB * (input_bytes >> 20)
    return f"{min(DRIVER_HEAP_CAP_MIB, mib)}m"


def _submitted_conf() -> set[str]:
    """Keys spark-submit already set (its --conf values reach the driver as system
    properties); empty when Python starts the JVM itself."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return set()
    SparkContext._ensure_initialized()  # connect to spark-submit's JVM: SparkConf reads it
    return {k for k, _ in SparkConf().getAll()}


def driver_java_options() -> str:
    """The driver JVM's options when Python starts it: the default ones and the class
    archive's when one was built (class_archive.py)."""
    archive = class_archive.java_options()
    base = DEFAULT_CONF["spark.driver.extraJavaOptions"]
    return f"{base} {archive}" if archive else base


def spark_remote(remote: str | None = None) -> str | None:
    """The Spark Connect endpoint to use (``sc://HOST:PORT[/;param=value…]``): the given one,
    else SPARK_REMOTE (which PySpark itself honours); None: a classic session."""
    return remote or os.environ.get("SPARK_REMOTE") or None


def get_spark(app_name: str = "delivery-audit", master: str | None = None,
              conf: dict[str, str] | None = None,
              input_bytes: int | None = None, remote: str | None = None) -> SparkSession:
    """Get (or create) the session; the master comes from spark-submit when set there.
    ``input_bytes``: the size of the input files, which sizes a new driver's heap (None:
    unknown, the cap); spark-submit's own --driver-memory wins. ``remote`` (or
    SPARK_REMOTE): a Spark Connect client session instead (:func:`get_connect_spark`); an
    explicit ``master`` wins over SPARK_REMOTE."""
    url = remote or (None if master else spark_remote())
    if url:
        if master:
            raise ValueError("give a Spark master or a Spark Connect endpoint, not both")
        return get_connect_spark(url, app_name, conf)
    os.environ.pop("SPARK_REMOTE", None)  # PySpark's builder would go to it instead
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif "SPARK_MASTER" in os.environ:
        builder = builder.master(os.environ["SPARK_MASTER"])
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        builder = builder.master(os.environ.get("DELIVERY_AUDIT_MASTER", "local[2]"))
    given = _submitted_conf()
    memory = {"spark.driver.memory": driver_memory_for(input_bytes)}
    defaults = {**DEFAULT_CONF, "spark.driver.extraJavaOptions": driver_java_options()}
    for k, v in {**defaults, **memory, **(conf or {})}.items():
        if k not in given or (conf and k in conf):  # spark-submit --conf wins over defaults
            builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


CONNECT_DEFAULT_PORT = 15002  # PySpark's, when the sc:// URL names none


def check_reachable(url: str, timeout: float = 10) -> None:
    """Fail fast (ConnectionError naming host and port, never the URL's token) when nothing
    accepts a TCP connection at the endpoint: PySpark's client would otherwise retry an
    unavailable server for 10 minutes."""
    netloc = urlparse(url.split(";", 1)[0]).netloc if url.startswith("sc://") else ""
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if not host:
        raise ValueError("a Spark Connect endpoint is sc://HOST[:PORT][/;param=value…]")
    port_n = int(port) if port.isdigit() else CONNECT_DEFAULT_PORT
    try:
        socket.create_connection((host.strip("[]"), port_n), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"no Spark Connect server answers at {host}:{port_n} "
                              f"({exc.strerror or exc})") from None


def get_connect_spark(url: str, app_name: str = "delivery-audit",
                      conf: dict[str, str] | None = None) -> SparkSession:
    """A Spark Connect client session on ``url``: no JVM here, the server's Spark runs the
    plans. Each client session has its own SQL settings on the server: the engine's
    (DEFAULT_CONF's runtime ones, then ``conf``) are set on it; the static ones (driver,
    UI, memory) are the server's own (scripts/spark_connect.py starts it with them)."""
    # the Connect client warns of a window without partitioning itself, which a classic
    # session only logs (at WARN, below the auditor's log level)
    warnings.filterwarnings("ignore", message="WARN WindowExpression: No Partition Defined")
    check_reachable(url)
    spark = SparkSession.builder.remote(url).appName(app_name).getOrCreate()
    for k, v in {**DEFAULT_CONF, **(conf or {})}.items():
        if k.startswith("spark.sql.") and spark.conf.isModifiable(k):
            spark.conf.set(k, v)
    return spark


# Session settings follow the data (docs/scaling.md, "Tuning the data calls for").
# Detection's shuffles are sized by the staged Parquet (ingestion's typed copy of every
# source), not by the input files, whose size depends on their format: about this much
# staged Parquet per shuffle partition (1M messages stage ~134 MiB)
STAGED_BYTES_PER_SHUFFLE_PARTITION = 64 * 1024 * 1024
# below this much staged Parquet (about 120k messages) detection runs its shuffles in one
# partition: its ~30 shuffle stages each cost a task per partition, and on a small day a
# task's fixed cost is most of its time (1,500-message day warm: 329 tasks 15.0 s, 169
# tasks 12.7 s, medians of 4; cold 36.0 s against 31.6 s)
SMALL_STAGED_BYTES = 16 * 1024 * 1024
# no adaptive execution unless pinned: each detection pass reads the previous pass's
# exchanged rows, checkpointed, by their hash partitioning (detection/routes.py), and a
# plan checkpointed under adaptive execution no longer states its partitioning, so every
# read of it would shuffle again. Before the two-pass detection it already cost more
# than it saved: each shuffle stage a job of its own (1M detection 71.1 s with it,
# 53.4-57.5 s without; a small audit 259 jobs with it, 125 without)
# below this much input Spark evaluates expressions interpreted instead of compiling them:
# a 20k-message day (15 MB of JSON Lines) generated ~970 classes, 10 s of compiling in a
# 52 s audit, for rows each touched a handful of times (45 s interpreted, same counts)
CODEGEN_FROM_BYTES = 64 * 1024 * 1024


def _env_flag(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).lower() == "true"


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def local_frame(spark: SparkSession, rows: Sequence[Sequence[Any]],
                schema: str | T.StructType) -> DataFrame:
    """A frame of a few driver-side rows (a lookup table, an empty source), handed to Spark as
    an Arrow table: a local relation the JVM reads alone. (A classic session's
    ``createDataFrame`` of a list is a pickled RDD instead: every job that reads it runs a
    Python worker per task, 0.27 s against 0.06 s for an empty frame's count here.) Spark
    Connect's client already sends a list as Arrow."""
    if is_connect(spark):
        return spark.createDataFrame(list(rows), schema)
    struct = schema if isinstance(schema, T.StructType) else T.StructType.fromDDL(schema)
    arrow = to_arrow_schema(struct)
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in struct.fields]
    table = pa.table([pa.array(c, type=f.type) for c, f in zip(columns, arrow, strict=True)],
                     schema=arrow)
    return spark.createDataFrame(table, schema=struct)


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's default parallelism: the SparkContext's in a classic session; under
    Spark Connect, the split count of a range's physical plan (Spark plans ``range`` with
    that many splits; an analysis request, no job)."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    splits = range_splits(spark.range(1)._explain_string(mode="simple"))  # noqa: SLF001
    return splits or 2


def range_splits(plan: str) -> int | None:
    """The split count of the Range in a plan's text (``Range (0, 1, step=1, splits=2)``)."""
    found = re.search(r"splits=(\d+)", plan)
    return int(found.group(1)) if found else None


def session_kind(spark: SparkSession) -> dict[str, str]:
    """How the audit reached Spark, for report.json's run section: ``spark_session``
    (classic or connect) and ``spark_master`` (the master the driver runs on; under
    Connect, the server's ``spark.master``, or "connect" when it does not say)."""
    if not is_connect(spark):
        return {"spark_session": "classic", "spark_master": spark.sparkContext.master}
    try:
        master = spark.conf.get("spark.master") or "connect"
    except Exception:  # noqa: BLE001 - a managed endpoint may hide its static conf
        master = "connect"
    return {"spark_session": "connect", "spark_master": master}


def tune_for_input(spark: SparkSession, input_bytes: int) -> None:
    """Before ingestion: generated code (whole-stage and per expression) from 64 MiB of
    input files, interpreted below; no adaptive execution and one shuffle partition per
    core, one below 64 MiB (ingestion sizes its tallies' shuffle by the staged bytes once
    they are written: ``tune_for_staged``).
    DELIVERY_AUDIT_CODEGEN (true/false) pins the first."""
    large = input_bytes >= CODEGEN_FROM_BYTES
    codegen = _env_flag("DELIVERY_AUDIT_CODEGEN", large)
    spark.conf.set("spark.sql.codegen.wholeStage", str(codegen).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK" if codegen else "NO_CODEGEN")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(default_parallelism(spark) if large else 1))
    _split_files(spark, small=not large)


def tune_for_staged(spark: SparkSession, staged_bytes: int) -> int:
    """Before ingestion's tallies and detection: ``spark.sql.shuffle.partitions`` at least
    the cluster's parallelism, one per ~64 MiB of staged Parquet beyond that, one below
    16 MiB (a small day); no adaptive execution.
    DELIVERY_AUDIT_SHUFFLE_PARTITIONS and DELIVERY_AUDIT_ADAPTIVE (true/false) pin them.
    Returns the partition count."""
    pinned = os.environ.get("DELIVERY_AUDIT_SHUFFLE_PARTITIONS")
    if pinned:
        n = int(pinned)
    elif staged_bytes < SMALL_STAGED_BYTES:
        n = 1
    else:
        parallelism = default_parallelism(spark)
        n = min(4000, max(parallelism, round(staged_bytes / STAGED_BYTES_PER_SHUFFLE_PARTITION)))
    adaptive = _env_flag("DELIVERY_AUDIT_ADAPTIVE", False)
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
    _split_files(spark, small=staged_bytes < SMALL_STAGED_BYTES)
    return n


def _split_files(spark: SparkSession, small: bool) -> None:
    """A small day's file scans in as few splits as their files pack into (one per scan
    of a few files), not one per core: Spark sizes a scan's splits by its bytes over
    ``spark.sql.files.minPartitionNum`` (the parallelism by default), so each source's scan
    was 2–8 tasks of a few hundred kB (20k-message day: 101 tasks, 74 with this)."""
    if small:
        spark.conf.set("spark.sql.files.minPartitionNum", "1")
    else:
        spark.conf.unset("spark.sql.files.minPartitionNum")
