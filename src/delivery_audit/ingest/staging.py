"""Staging: every source's one scan (read, typed, flagged) written once to Parquet in the run's
work folder, all sources in one Spark job, partitioned by ``_source`` and ``_status``
(valid, after_window, before_lookback, quarantined, blank); and the staged copy read back.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..adapters import convert
from ..config import AuditConfig
from ..core.window import AuditWindow
from ..schemas import FIELDS, TIME_COLUMN, canonical_schema
from ..spark import local_frame
from . import native
from .dedup import fingerprint
from .deferred import DEFERRED, Deferred, jsonl_rows
from .files import ADAPTER_FORMATS, InputError, ResolvedInput, file_format
from .parsing import typed_rows
from .tokens import exact_for, read_tokens, union_all


def status_column(source: str, window: AuditWindow, config: AuditConfig):
    ts = F.col(TIME_COLUMN[source])
    upper = F.lit(window.read_until.replace(tzinfo=None)).cast("timestamp")
    status = (
        F.when(F.col("_blank"), F.lit("blank"))
        .when(F.col("_reason").isNotNull(), F.lit("quarantined"))
        .when(ts >= upper, F.lit("after_window"))
    )
    if config.lookback_minutes is not None:
        lower = window.start - timedelta(minutes=config.lookback_minutes)
        status = status.when(ts < F.lit(lower.replace(tzinfo=None)).cast("timestamp"),
                             F.lit("before_lookback"))
    return status.otherwise(F.lit("valid"))


STATUSES = ("valid", "after_window", "before_lookback", "quarantined", "blank")
_POSITION = [("_file", T.StringType()), ("_block", T.LongType()), ("_pos", T.LongType()),
             ("_rid", T.LongType()), ("_raw", T.StringType()), ("_reason", T.StringType()),
             ("_fp", T.LongType())]


def staged_schema(source: str) -> T.StructType:
    """A staged source's columns: position, raw text (quarantined rows only), reason,
    rule-5 fingerprint, the typed fields, and ``_status`` (the partition column)."""
    return T.StructType(
        [T.StructField(n, t) for n, t in _POSITION]
        + list(canonical_schema(source).fields)
        + [T.StructField("_status", T.StringType())])


@dataclass
class Staged:
    """One source read once and written to Parquet at ``root``, partitioned by ``_status``."""

    resolved: ResolvedInput
    root: Path
    extra_counts: dict[str, int]

    @property
    def source(self) -> str:
        return self.resolved.source


# the row ids of rows written after the staged write (deferred.Deferred): above any id
# monotonically_increasing_id gives in one job (partition index << 33 + row number)
_LATE_RIDS = 1 << 62


def staged_rows(spark: SparkSession, resolved: ResolvedInput, window: AuditWindow,
                config: AuditConfig, work: Path
                ) -> tuple[DataFrame, dict[str, int], list[Deferred]]:
    """The plan of a source's one scan: read, typed and flagged (an adapter's canonical
    output goes to ``work/adapted/<source>`` first, on the driver); the adapter's extra
    counts; and the groups whose rows that are not plain are typed only when there are
    any (deferred.Deferred: JSON Lines and native Parquet; CSV and other Parquet go
    through the strict rules' chain whole)."""
    source, fmt = resolved.source, resolved.fmt
    files, extra_counts = list(resolved.files), {}
    if fmt in ADAPTER_FORMATS:
        adapted = work / "adapted" / source
        adapted.mkdir(parents=True, exist_ok=True)
        files, extra_counts = convert(fmt, source, list(resolved.files),
                                      list(resolved.origins), adapted, config, window=window)
        fmt = "jsonl"
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(file_format(fmt, f), []).append(f)
    # each format by its own reader and rules: the typed rows have the same columns
    parts, deferred = [], []
    for g, group in sorted(groups.items()):
        if g == "parquet":
            rows, later = native.parquet_rows(spark, group, source)
            parts.append(rows.withColumn("_later", F.lit(False)))
            deferred += [later] if later else []
        elif g == "jsonl":
            rows, later = jsonl_rows(spark, group, source, _deferred_dir(work, source))
            parts.append(rows)
            deferred.append(later)
        else:
            parts.append(typed_rows(read_tokens(spark, g, group, source), source,
                                    exact_for(g, source)).withColumn("_later", F.lit(False)))
    return flagged(union_all(parts), source, window, config), extra_counts, deferred


def _deferred_dir(work: Path, source: str) -> Path:
    return work / "staged" / f"_source={source}" / f"_status={DEFERRED}"


def flagged(rows: DataFrame, source: str, window: AuditWindow, config: AuditConfig,
            rid_base: int = 0) -> DataFrame:
    """Typed rows (parsing.typed_rows' columns) in the staged columns: a row id, the raw
    text of a row that does not parse, the rule-5 fingerprint of one that does, and the
    status. A row with ``_later`` set is a JSON line kept for the strict rules
    (deferred.jsonl_rows): its text as read, in the status folder deferred.DEFERRED."""
    later = F.col("_later") if "_later" in rows.columns else F.lit(False)
    parsed = F.col("_reason").isNull() & ~F.col("_blank") & ~later
    # a row id unique in the source's staged copy: above any union of file groups
    # (inside one, each branch numbers its own partitions from 0)
    rid = F.monotonically_increasing_id()
    return rows.select(
        "_file", "_block", "_pos",
        (rid + F.lit(rid_base)).alias("_rid") if rid_base else rid.alias("_rid"),
        F.when(~parsed & ~F.col("_blank"), F.col("_raw")).alias("_raw"),
        "_reason",
        F.when(parsed, fingerprint(source)).alias("_fp"),
        *[F.col(f.name) for f in FIELDS[source]],
        F.when(later, F.lit(DEFERRED)).otherwise(status_column(source, window, config))
        .alias("_status"),
    )


def _all_columns() -> list[T.StructField]:
    """Every source's staged columns, once each (a name has one type in every source)."""
    seen: dict[str, T.StructField] = {}
    for source in FIELDS:
        for f in staged_schema(source).fields:
            seen.setdefault(f.name, f)
    return [f for n, f in seen.items() if n != "_status"]


def _cannot_read(resolved: ResolvedInput, exc: Exception) -> InputError:
    return InputError(f"{resolved.source}: cannot read {', '.join(resolved.origins[:3])}"
                      f"{' …' if len(resolved.origins) > 3 else ''}: "
                      f"{str(exc).splitlines()[0][:300]}")


def stage_sources(spark: SparkSession, resolved: dict[str, ResolvedInput],
                  window: AuditWindow, config: AuditConfig, work: Path) -> dict[str, Staged]:
    """Every source's one scan, written in **one** Spark job to ``work/staged``, partitioned
    by ``_source`` and ``_status``: each source's copy is ``work/staged/_source=<source>``
    (its own columns; the other sources' are null there and not read back). A file Spark
    cannot decode fails the run naming its source: the write is retried source by source
    to find which (only on failure)."""
    planned = {s: staged_rows(spark, r, window, config, work) for s, r in resolved.items()}
    columns = _all_columns()
    root = work / "staged"

    def aligned(s: str, df: DataFrame) -> DataFrame:
        own = set(staged_schema(s).names)
        return df.select(
            *[F.col(c.name) if c.name in own else F.lit(None).cast(c.dataType).alias(c.name)
              for c in columns],
            F.lit(s).alias("_source"), "_status")

    def write(frames: dict[str, DataFrame], mode: str, probe: Path) -> None:
        """One write of every source's rows; when Spark fails (a file it cannot decode
        at all), each source's rows alone find which: only on failure."""
        try:
            (union_all(list(frames.values())).write.partitionBy("_source", "_status")
             .mode(mode).parquet(str(root)))
        except Exception:
            for s, df in frames.items():
                try:
                    df.write.mode("overwrite").parquet(str(probe / s))
                except Exception as one:  # noqa: BLE001 - this source's files are the cause
                    raise _cannot_read(resolved[s], one) from one
            raise  # no source fails alone: not an input's fault, Spark's own error stands

    write({s: aligned(s, planned[s][0]) for s in sorted(planned)}, "overwrite", work / "probe")
    # the rows the first write left (deferred.Deferred), typed by the strict rules now: one
    # more job, appending (row ids above the first write's)
    late = {s: [d for d in planned[s][2] if d.pending()] for s in sorted(planned)}
    if any(late.values()):
        write({s: aligned(s, flagged(union_all([d.rows() for d in ds]), s, window, config,
                                     _LATE_RIDS))
               for s, ds in late.items() if ds}, "append", work / "probe-late")
    for s in planned:  # the lines kept for the strict rules are typed now: not a status
        if _deferred_dir(work, s).is_dir():
            shutil.rmtree(_deferred_dir(work, s))
    return {s: Staged(r, root / f"_source={s}", planned[s][1]) for s, r in resolved.items()}


def read_staged(spark: SparkSession, st: Staged) -> DataFrame:
    return spark.read.schema(staged_schema(st.source)).parquet(str(st.root))


def status_leaf(spark: SparkSession, st: Staged, status: str,
                more: tuple[str, ...] = ()) -> DataFrame:
    """The rows of one status as one Parquet leaf of canonical columns and the staged
    columns ``more``; empty when none has that status (Spark writes no folder for a
    partition without rows)."""
    path, source = st.root / f"_status={status}", st.source
    staged = {f.name: f for f in staged_schema(source).fields}
    schema = T.StructType([*canonical_schema(source).fields, *[staged[c] for c in more]])
    if not path.is_dir():
        return local_frame(spark, [], schema)
    return spark.read.schema(schema).parquet(str(path))


def staged_size(root: Path) -> tuple[int, int]:
    """(rows, bytes) of the staged files. The rows, by their Parquet footers, are the
    accounting's independent check (every line or row scanned is in exactly one status
    folder); the bytes size detection's shuffles (spark.tune_for_staged)."""
    files = list(root.rglob("*.parquet"))
    return (sum(pq.ParquetFile(str(f)).metadata.num_rows for f in files),
            sum(f.stat().st_size for f in files))
