"""Ingestion: files → valid canonical rows + quarantined rows, with the accounting checked.

For every source ``rows_read = rows_valid + rows_quarantined`` (contract §2).
Valid rows at or after the read bound (end + grace, rule 6) are counted as
``rows_after_window`` and not used; with ``lookback_minutes`` rows before the
bound are counted as ``rows_before_lookback``.

One scan per source: the files are read once, every row typed by one projection chain
(parsing.typed_rows; a Parquet file whose columns already have their fields' types: its
plainly valid rows straight from the scan, native.py) and written once to Parquet in the
run's work folder, every source in one Spark job, partitioned by source and status (valid,
after_window, before_lookback, quarantined, blank; staging.py). Everything else
comes from that staged copy: the accounting, the line numbers of quarantined rows and the
exact duplicates of rule 5 from one small aggregation shared by every source
(:func:`ingest_all`), and detection reads the ``_status=valid`` folder as one leaf.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import sqlexpr as S
from ..collect import collect_all
from ..config import AuditConfig
from ..core.window import AuditWindow
from ..detection.facts import fact_tallies
from ..quality import metric_names, metric_tally
from ..schemas import FIELDS, QUARANTINE_SCHEMA, canonical_schema
from ..spark import local_frame, tune_for_staged
from ..tally import Tally, collect_tallies, one
from .dedup import compared_values, later_copies
from .files import InputError, ResolvedInput, resolve
from .pruning import Bounds
from .staging import (
    STATUSES,
    Staged,
    read_staged,
    stage_sources,
    staged_size,
    status_leaf,
)

__all__ = ["Bounds", "Ingested", "Ingestion", "InputError", "ingest", "ingest_all", "resolve",
           "empty_source", "read_bounds"]


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
    staged_bytes: int = 0  # the source's staged Parquet, every status
    # what the input suites need beyond counts (quality/): duplicates_quarantined,
    # by_topic (valid rows per topic) and the metric aggregates of the valid rows
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Splits:
    """Where each input split starts, for line numbers (text formats number lines across the
    splits of a file). Rows whose ``_block`` is −1 carry their number (``_pos`` + 1):
    Parquet's row index, an adapter's original line."""

    first: dict[tuple[str, int], int]
    before: dict[tuple[str, int], int]

    @classmethod
    def of(cls, rows: list[dict]) -> _Splits:
        first: dict[tuple[str, int], int] = {}
        count: dict[tuple[str, int], int] = {}
        for r in rows:
            if r["_block"] < 0:
                continue
            k = (r["_file"], int(r["_block"]))
            first[k] = min(first.get(k, r["first_pos"]), r["first_pos"])
            count[k] = count.get(k, 0) + int(r["n"])
        before, running = {}, {}
        for k in sorted(count):
            before[k] = running.get(k[0], 0)
            running[k[0]] = before[k] + count[k]
        return cls(first, before)

    def line(self, file: str, block: int, pos: int) -> int:
        if block < 0:
            return pos + 1
        k = (file, block)
        return self.before[k] + pos - self.first[k] + 1


def _origin_pairs(resolved: ResolvedInput) -> dict[str, str]:
    """Spark names files by URI; report the path or s3:// URI the user named."""
    pairs: dict[str, str] = {}
    for local, origin in zip(resolved.files, resolved.origins, strict=True):
        path = str(Path(local).resolve())
        for form in (path, "file:" + path, "file://" + path):
            pairs[form] = origin
    return pairs


def _shown(pairs: dict[str, str], col: Column) -> Column:
    return F.coalesce(_lookup(pairs)[col], col) if pairs else col


def _quarantine_frame(st: Staged, staged: DataFrame, splits: _Splits,
                      later: list[dict]) -> DataFrame:
    """Quarantined rows with file, line and reason; later copies of rule 5 with theirs.
    Small lookups travel as map literals: no broadcast job, no join."""
    source, pairs = st.source, _origin_pairs(st.resolved)
    bad = staged.filter(F.col("_status") == "quarantined")
    row = F.col("_pos") + 1
    if splits.first:  # line = lines before the split + index in it
        shift = {f"{f}|{b}": splits.before[(f, b)] - splits.first[(f, b)] + 1
                 for f, b in splits.first}
        split_key = F.concat_ws("|", F.col("_file"), F.col("_block").cast("string"))
        row = F.when(F.col("_block") < 0, row).otherwise(F.col("_pos") + _lookup(shift)[split_key])
    out = bad.select(
        F.lit(source).alias("source"), _shown(pairs, F.col("_file")).alias("file"),
        row.cast("long").alias("row"), F.col("_reason").alias("reason"),
        F.col("_raw").alias("raw"))
    if not later:
        return out
    names = [f.name for f in FIELDS[source]]
    rids = [r["_rid"] for r in later]
    rid = F.col("_rid")
    copies = _with_values(staged.sparkSession, staged, "_rid", rids, keep=True).select(
        F.lit(source).alias("source"), _shown(pairs, F.col("_file")).alias("file"),
        _lookup({r["_rid"]: r["d_row"] for r in later})[rid].cast("long").alias("row"),
        _lookup({r["_rid"]: r["d_reason"] for r in later})[rid].alias("reason"),
        F.to_json(F.struct(*names)).alias("raw"))
    return out.unionByName(copies)


def _lookup(mapping: dict) -> Column:
    """A dict (keys and values strings or ints) as a Spark map literal, given as SQL text:
    one call into the JVM however many entries (a ``create_map`` of ``lit`` columns made
    four per entry: rule 5's later copies of a 10M day, tens of thousands)."""
    def ddl(v: Any) -> str:
        return "string" if isinstance(v, str) else "bigint"

    if not mapping:
        return F.lit(None).cast("map<string,string>")
    k, v = next(iter(mapping.items()))
    return S.column(S.map_literal(list(mapping.items()), f"map<{ddl(k)},{ddl(v)}>"))


# up to this many values a filter names them (pushed down to Parquet, no broadcast job);
# beyond, a broadcast join of a local table
_LITERAL_VALUES = 10_000


def _with_values(spark: SparkSession, df: DataFrame, column: str, values: list[int],
                 keep: bool) -> DataFrame:
    """The rows of ``df`` whose long ``column`` is (``keep``) or is not among ``values``."""
    if not values:
        return df if not keep else df.filter(F.lit(False))
    if len(values) <= _LITERAL_VALUES:  # as SQL text: one call into the JVM, not one per value
        hit = F.expr(f"`{column}` IN ({', '.join(str(int(v)) for v in values)})")
        return df.filter(hit if keep else ~hit)
    table = local_frame(spark, [(v,) for v in values], f"{column} long")
    return df.join(F.broadcast(table), on=column, how="left_semi" if keep else "left_anti")


@dataclass
class Ingestion:
    """Every source ingested, and what detection needs to know of the whole input
    (detection.facts: its tables, collected in ingestion's one action). ``pending``: the
    sources whose valid rows lost rule 5's later copies, their metrics still those of every
    valid row until :meth:`finish_metrics` (one Spark job for all of them)."""

    sources: dict[str, Ingested]
    facts: dict[str, list[dict]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)

    def finish_metrics(self, window: AuditWindow, config: AuditConfig) -> None:
        """The metrics of the ``pending`` sources' valid rows, without the later copies:
        one Spark job (a scan of each such source's valid rows and one aggregation)."""
        if not self.pending:
            return
        got = collect_tallies([metric_tally(s, self.sources[s].valid, window, config)
                               for s in self.pending])
        for s in self.pending:
            self.sources[s].metrics.update(got[f"{s}:metrics"][0])
        self.pending = set()


def ingest_all(spark: SparkSession, resolved: dict[str, ResolvedInput | None],
               window: AuditWindow, config: AuditConfig, work: Path,
               defer_metrics: bool = False) -> Ingestion:
    """Every source staged (one scan each), then one Spark action for the accounting of all
    of them, the input metrics of the GX suites and detection's facts (tallies of one
    aggregation); rule-5 duplicates, when a fingerprint repeats, cost one more small action
    (the rows of the repeated fingerprints); the valid rows of the sources holding later
    copies leave them out as they are read (a filter by row id: no rewrite), and their
    metrics are computed again without them: in one more job, at once, or with
    ``defer_metrics`` when the caller calls :meth:`Ingestion.finish_metrics` (the audit:
    in a thread, while detection's job runs). Returns each source's valid rows (a Parquet
    leaf below ``work``), its quarantine and its counts."""
    out: dict[str, Ingested] = {}
    to_stage: dict[str, ResolvedInput] = {}
    for source, r in resolved.items():
        if r is None:
            out[source] = empty_source(spark, source)
        elif not r.files:  # every file pruned
            out[source] = replace(empty_source(spark, source), pruned=r.pruned)
        else:
            to_stage[source] = r
    if not to_stage:
        return Ingestion(out)
    staged = stage_sources(spark, to_stage, window, config, work)
    frames = {s: read_staged(spark, st) for s, st in staged.items()}
    is_valid = F.col("_status") == F.lit("valid")
    tallies = fact_tallies(frames, is_valid)
    for s, df in frames.items():
        tallies += [
            Tally(f"{s}:splits", df, keys={"_file": F.col("_file"), "_status": F.col("_status")},
                  int_keys={"_block": F.col("_block")}, sums={"n": one()},
                  mins={"first_pos": F.col("_pos")}),
            Tally(f"{s}:repeated", df, F.col("_fp").isNotNull(),
                  int_keys={"_fp": F.col("_fp")}, sums={"n": one()}, at_least=("n", 2),
                  narrow=True),
            metric_tally(s, df, window, config, is_valid)]
    sizes = {s: staged_size(st.root) for s, st in staged.items()}
    # the tallies' shuffle partitions follow the staged size, as detection's do: rule 5's
    # fingerprint tally is one group per row (at 10M messages, 2 reduce tasks spilled 6.6 GiB)
    tune_for_staged(spark, sum(b for _, b in sizes.values()))
    got = collect_tallies(tallies)

    repeated = {s: [r["_fp"] for r in got[f"{s}:repeated"]] for s in frames}
    suspects: dict[str, list[dict]] = {s: [] for s in frames}
    if any(repeated.values()):
        probe = {}
        for s, fps in repeated.items():
            if not fps:
                continue
            probe[s] = _with_values(spark, frames[s], "_fp", fps, keep=True).select(
                "_fp", compared_values(s).alias("_values"), "_file", "_block", "_pos",
                "_rid", "_status", "topic")
        suspects.update(collect_all(probe))

    pending: set[str] = set()  # sources whose valid rows lost later copies (rule 5)
    for s, st in staged.items():
        splits_rows = got[f"{s}:splits"]
        splits = _Splits.of(splits_rows)
        by_status = dict.fromkeys(STATUSES, 0)
        for r in splits_rows:
            by_status[r["_status"]] += int(r["n"])
        scanned, staged_bytes = sizes[s]
        if scanned != sum(by_status.values()):
            raise RuntimeError(f"{s}: accounting broken: {scanned} rows staged, "
                               f"{sum(by_status.values())} counted by status")
        later = later_copies(suspects[s], splits.line, _origin_pairs(st.resolved))
        moved = {k: sum(1 for r in later if r["_status"] == k) for k in STATUSES}
        by_topic = {r["topic"]: int(r["n"]) for r in got[f"facts:topics:{s}"]}
        for r in later:
            if r["_status"] == "valid":
                by_topic[r["topic"]] -= 1
        counts = {
            "rows_read": scanned - by_status["blank"],
            "rows_quarantined": by_status["quarantined"] + len(later),
            "rows_after_window": by_status["after_window"] - moved["after_window"],
            "rows_before_lookback": by_status["before_lookback"] - moved["before_lookback"],
            **st.extra_counts,
        }
        # every staged row is in one status (checked against the footers above), so
        # rows_read = rows_valid + rows_quarantined holds by construction from here
        counts["rows_valid"] = counts["rows_read"] - counts["rows_quarantined"]
        if moved["valid"]:
            rids = [r["_rid"] for r in later if r["_status"] == "valid"]
            valid = _with_values(spark, status_leaf(spark, st, "valid", ("_rid",)), "_rid",
                                 rids, keep=False).drop("_rid")
            pending.add(s)
        else:
            valid = status_leaf(spark, st, "valid")
        quarantine = (_quarantine_frame(st, frames[s], splits, later)
                      if counts["rows_quarantined"] else empty_quarantine(spark))
        metrics = {"duplicates_quarantined": len(later), "by_topic": by_topic,
                   **got[f"{s}:metrics"][0]}
        r = st.resolved
        out[s] = Ingested(s, valid, quarantine, counts, r.origins, r.bytes, r.pruned,
                          staged_bytes, metrics)
    ingestion = Ingestion(out, {k: v for k, v in got.items() if k.startswith("facts:")},
                          pending)
    if not defer_metrics:
        ingestion.finish_metrics(window, config)
    return ingestion


def ingest(spark: SparkSession, resolved: ResolvedInput, window: AuditWindow,
           config: AuditConfig, work: Path | None = None) -> Ingested:
    """One source's rows, valid or quarantined with a reason (see :func:`ingest_all`);
    staged below ``work`` (a new temp folder without it), which must outlive the use of
    the returned frames."""
    if work is None:  # the frames read it until the process ends: removed then
        work = Path(tempfile.mkdtemp(prefix=f"delivery-audit-{resolved.source}-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
    return ingest_all(spark, {resolved.source: resolved}, window, config,
                      work).sources[resolved.source]

def empty_quarantine(spark: SparkSession) -> DataFrame:
    return local_frame(spark, [], QUARANTINE_SCHEMA)


def empty_source(spark: SparkSession, source: str) -> Ingested:
    counts = {"rows_read": 0, "rows_valid": 0, "rows_quarantined": 0, "rows_after_window": 0,
              "rows_before_lookback": 0}

    metrics = {"duplicates_quarantined": 0, "by_topic": {},
               **{n: None if n.endswith("_ms") else 0 for n in metric_names(source)}}
    return Ingested(source, local_frame(spark, [], canonical_schema(source)),
                    empty_quarantine(spark), counts, metrics=metrics)
