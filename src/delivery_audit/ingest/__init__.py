"""Ingestion: files → valid canonical rows + quarantined rows, with the accounting checked.

For every source ``rows_read = rows_valid + rows_quarantined`` (contract §2).
Valid rows at or after the read bound (end + grace, rule 6) are counted as
``rows_after_window`` and not used; with ``lookback_minutes`` rows before the
bound are counted as ``rows_before_lookback``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..config import AuditConfig
from ..schemas import FIELDS, QUARANTINE_SCHEMA, TIME_COLUMN, canonical_schema
from ..window import AuditWindow
from .dedup import mark_duplicates, with_fingerprint
from .files import ADAPTER_FORMATS, InputError, ResolvedInput, resolve
from .parsing import fast_accepted, fast_parse, parse_tokens
from .pruning import Bounds
from .tokens import exact_tokens, read_tokens, uses_row_index

__all__ = ["Bounds", "Ingested", "InputError", "ingest", "resolve", "empty_source",
           "read_bounds", "stage_valid"]


def read_bounds(window: AuditWindow, config: AuditConfig) -> Bounds:
    """The time span of rows the audit reads (contract rule 6), for partition pruning."""
    lower = None
    if config.lookback_minutes is not None:
        lower = window.start - timedelta(minutes=config.lookback_minutes)
    return Bounds(lower, window.read_until,
                  timedelta(minutes=config.partition_slack_minutes))


@dataclass
class Ingested:
    source: str
    valid: DataFrame
    quarantine: DataFrame
    counts: dict[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    bytes: int = 0
    pruned: int = 0


def _status_column(source: str, window: AuditWindow, config: AuditConfig):
    ts = F.col(TIME_COLUMN[source])
    upper = F.lit(window.read_until.replace(tzinfo=None)).cast("timestamp")
    status = (
        F.when(F.col("_reason").isNotNull() | F.col("_dup_file").isNotNull(), F.lit("quarantined"))
        .when(ts >= upper, F.lit("after_window"))
    )
    if config.lookback_minutes is not None:
        lower = window.start - timedelta(minutes=config.lookback_minutes)
        status = status.when(ts < F.lit(lower.replace(tzinfo=None)).cast("timestamp"),
                             F.lit("before_lookback"))
    return status.otherwise(F.lit("valid"))


def _row_numbers(spark: SparkSession, tokens: DataFrame, fmt: str, rows: DataFrame,
                 file_col: str, block_col: str, pos_col: str, out_col: str) -> DataFrame:
    """Add the 1-based row (line) number in its file for a small set of rows."""
    if uses_row_index(fmt):
        return rows.withColumn(out_col, F.col(pos_col) + 1)
    splits = (
        tokens.filter(F.col("_block") >= 0)
        .groupBy("_file", "_block")
        .agg(F.min("_pos").alias("_first_pos"), F.count(F.lit(1)).alias("_n"))
        .collect()
    )
    before: list[tuple[str, int, int, int]] = []
    running: dict[str, int] = {}
    for r in sorted(splits, key=lambda r: (r["_file"], r["_block"])):
        start = running.get(r["_file"], 0)
        before.append((r["_file"], int(r["_block"]), int(r["_first_pos"]), start))
        running[r["_file"]] = start + int(r["_n"])
    table = spark.createDataFrame(
        before, "s_file string, s_block long, s_first_pos long, s_before long")
    joined = rows.join(
        F.broadcast(table),
        on=(F.col(file_col) == F.col("s_file")) & (F.col(block_col) == F.col("s_block")),
        how="left",
    )
    return joined.select(
        *rows.columns,
        F.when(F.col(block_col) == -1, F.col(pos_col) + 1)  # adapter rows know their line
        .otherwise(F.col("s_before") + F.col(pos_col) - F.col("s_first_pos") + 1)
        .alias(out_col),
    )


def ingest(spark: SparkSession, resolved: ResolvedInput, window: AuditWindow,
           config: AuditConfig, stage_dir: Path | None = None) -> Ingested:
    """One source's rows, valid or quarantined with a reason. An adapter format is converted
    into ``stage_dir`` first (a new temp folder without it), which must outlive the audit's
    use of the returned frames."""
    source, fmt = resolved.source, resolved.fmt
    if not resolved.files:  # every file pruned
        return replace(empty_source(spark, source), pruned=resolved.pruned)
    files, extra_counts = list(resolved.files), {}
    if fmt in ADAPTER_FORMATS:
        from ..adapters import convert

        stage = stage_dir or Path(tempfile.mkdtemp(prefix=f"delivery-audit-{source}-"))
        stage.mkdir(parents=True, exist_ok=True)
        files, extra_counts = convert(fmt, source, list(resolved.files),
                                      list(resolved.origins), stage, config, window=window)
        fmt = "jsonl"
    tokens = read_tokens(spark, fmt, files, source)
    rows = tokens.filter(~F.col("_blank"))
    try:
        rows_read = rows.count()
    except Exception as exc:  # a file Spark cannot decode at all
        raise InputError(f"{source}: cannot read {', '.join(resolved.origins[:3])}"
                         f"{' …' if len(resolved.origins) > 3 else ''}: "
                         f"{str(exc).splitlines()[0][:300]}") from exc
    # plainly valid rows are typed from their text; the rest by the strict rules
    split = fast_accepted(rows, source)
    fast = fast_parse(split.filter(F.col("_fast")), source)
    strict = parse_tokens(exact_tokens(fmt, split.filter(~F.col("_fast")), source), source)
    parsed = with_fingerprint(fast.unionByName(strict), source)
    names = [f.name for f in FIELDS[source]]
    # keep the parsed rows (raw text only where needed); duplicates are marked on top
    kept = (
        parsed.select(
            "_file", "_block", "_pos", "_reason", "_fp",
            F.when(F.col("_reason").isNotNull(), F.col("_raw")).alias("_raw"), *names)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    tagged = (
        mark_duplicates(kept, source)
        .withColumn("_status", _status_column(source, window, config))
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    by_status = {r["_status"]: int(r["n"]) for r in
                 tagged.groupBy("_status").agg(F.count(F.lit(1)).alias("n")).collect()}
    counts = {
        "rows_read": rows_read,
        "rows_valid": sum(v for k, v in by_status.items() if k != "quarantined"),
        "rows_quarantined": by_status.get("quarantined", 0),
        "rows_after_window": by_status.get("after_window", 0),
        "rows_before_lookback": by_status.get("before_lookback", 0),
        **extra_counts,
    }
    if counts["rows_read"] != counts["rows_valid"] + counts["rows_quarantined"]:
        raise RuntimeError(
            f"{source}: accounting broken: read {counts['rows_read']} != valid "
            f"{counts['rows_valid']} + quarantined {counts['rows_quarantined']}")
    valid = (tagged.filter(F.col("_status") == "valid")
             .select(*[F.col(n) for n in names]))
    kept.unpersist()
    quarantine = _quarantine_rows(spark, tokens, fmt, tagged, source, resolved) \
        if counts["rows_quarantined"] else empty_quarantine(spark)
    return Ingested(source, valid, quarantine, counts, resolved.origins, resolved.bytes,
                    resolved.pruned)


def _origin_map(resolved: ResolvedInput):
    """Spark names files by URI; report the path or s3:// URI the user named."""
    pairs: dict[str, str] = {}
    for local, origin in zip(resolved.files, resolved.origins, strict=True):
        path = str(Path(local).resolve())
        for form in (path, "file:" + path, "file://" + path):
            pairs[form] = origin
    return F.create_map(*[x for k, v in pairs.items() for x in (F.lit(k), F.lit(v))]) \
        if pairs else None


def _quarantine_rows(spark: SparkSession, tokens: DataFrame, fmt: str, tagged: DataFrame,
                     source: str, resolved: ResolvedInput) -> DataFrame:
    bad = tagged.filter(F.col("_status") == "quarantined")
    bad = _row_numbers(spark, tokens, fmt, bad, "_file", "_block", "_pos", "_row")
    bad = _row_numbers(spark, tokens, fmt, bad, "_dup_file", "_dup_block", "_dup_pos",
                       "_dup_row")
    names = [f.name for f in FIELDS[source]]
    origin = _origin_map(resolved)

    def shown(col):
        return F.coalesce(origin[col], col) if origin is not None else col

    same_file = F.col("_dup_file") == F.col("_file")
    dup_reason = F.concat(
        F.lit("duplicate of line "), F.col("_dup_row").cast("string"),
        F.when(same_file, F.lit("")).otherwise(F.concat(F.lit(" of "), shown(F.col("_dup_file")))),
    )
    return bad.select(
        F.lit(source).alias("source"),
        shown(F.col("_file")).alias("file"),
        F.col("_row").cast("long").alias("row"),
        F.coalesce(F.col("_reason"), dup_reason).alias("reason"),
        F.coalesce(F.col("_raw"), F.to_json(F.struct(*names))).alias("raw"),
    )


def empty_quarantine(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([], QUARANTINE_SCHEMA)


def empty_source(spark: SparkSession, source: str) -> Ingested:
    counts = {"rows_read": 0, "rows_valid": 0, "rows_quarantined": 0, "rows_after_window": 0,
              "rows_before_lookback": 0}
    return Ingested(source, spark.createDataFrame([], canonical_schema(source)),
                    empty_quarantine(spark), counts)


def stage_valid(spark: SparkSession, ingested: Ingested, path: Path) -> Ingested:
    """The valid rows written once to Parquet below ``path`` and read back from there.

    Detection joins the sources with themselves and each other dozens of times. Over the
    ingestion plan (≈125 operators per source: the fast and strict parse branches, the
    duplicate marking) Spark's analyzer spends seconds per join re-resolving that whole
    tree (a small audit spent 40 s in building the rules' plans, 2 s without it). Read
    from Parquet, each source is one leaf: plans stay small, and Spark re-reads the file
    instead of recomputing ingestion if an executor and its cached blocks are lost."""
    schema = ingested.valid.schema
    if not ingested.counts.get("rows_valid"):  # nothing to write: an empty leaf will do
        return replace(ingested, valid=spark.createDataFrame([], schema))
    ingested.valid.write.mode("overwrite").parquet(str(path))
    return replace(ingested, valid=spark.read.schema(schema).parquet(str(path)))
