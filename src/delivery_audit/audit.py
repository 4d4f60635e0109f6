"""One audit run, extract → transform → load.

extract:   resolve and ingest each source (quarantine, accounting), validate inputs (GX)
transform: detect every anomaly and delivery state
load:      stage report.json, report.html, anomalies/, evidence/, quarantine/, validation/
           locally, validate results (GX), then publish to the report root (manifest last) and alert
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import __version__
from .config import AuditConfig
from .core.timefmt import epoch_ms, iso_z
from .core.window import AuditWindow
from .detection import detect
from .ingest import Ingested, Ingestion, InputError, ingest_all, read_bounds, resolve
from .privacy import pseudonym_key, pseudonymise_frames, withhold_raw
from .redaction import redact_text
from .report.summary import anomaly_count_table, build_report, build_transactions
from .schemas import ANOMALY_SCHEMA, SOURCES
from .spark import JobCounter, session_kind, tune_for_input, tune_for_staged

log = logging.getLogger("delivery_audit")

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_FAIL = 3


@dataclass
class AuditRequest:
    inputs: dict[str, list[str]]  # source -> globs/URIs; "events" optional
    window: AuditWindow
    out: str
    config: AuditConfig = field(default_factory=AuditConfig)
    formats: dict[str, str] = field(default_factory=dict)
    notify: bool = True
    topics: list[str] = field(default_factory=list)  # audit only these topics
    groups: list[str] = field(default_factory=list)  # judge only these groups


@dataclass
class AuditResult:
    report: dict[str, Any]
    destination: str
    exit_code: int
    manifest: dict[str, Any] | None = None


class Stages:
    """Wall time per stage, reported in report.json and by the benchmark."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - t0, 3)


def _iso(dt: datetime) -> str:
    return iso_z(dt)


def extract(spark: SparkSession, req: AuditRequest, stages: Stages,
            work: Path) -> Ingestion:
    """Every source resolved (pruned), ingested, and its valid rows staged as Parquet.
    Downloaded S3 objects, adapter output and the staged rows go below ``work``; its owner
    removes it after the audit (Spark reads them lazily)."""
    bounds = read_bounds(req.window, req.config)
    with stages.stage("resolve_inputs"):
        resolved = {source: resolve(source, req.inputs.get(source), req.formats.get(source),
                                    required=source != "events", bounds=bounds,
                                    stage_dir=work / "s3" / source)
                    for source in SOURCES}
    tune_for_input(spark, sum(r.bytes for r in resolved.values() if r))
    with stages.stage("ingest"):
        out = ingest_all(spark, resolved, req.window, req.config, work)
    tune_for_staged(spark, sum(i.staged_bytes for i in out.sources.values()))
    return out


def scope(frames: dict[str, DataFrame], topics: list[str]) -> dict[str, DataFrame]:
    """Restrict every source to the audited topics (events without a topic stay)."""
    if not topics:
        return frames
    keep = F.col("topic").isin(*topics)
    return {s: df.filter(keep | F.col("topic").isNull() if s == "events" else keep)
            for s, df in frames.items()}


def _inputs_summary(ingested: dict[str, Ingested]) -> dict[str, Any]:
    return {
        s: {**i.counts, "files": list(i.files), "bytes": i.bytes, "files_pruned": i.pruned}
        for s, i in ingested.items()
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n",
                    encoding="utf-8")


def run_audit(spark: SparkSession, req: AuditRequest) -> AuditResult:
    started = datetime.now(UTC)
    stages = Stages()
    run_id = uuid.uuid4().hex[:12]
    staging = Path(tempfile.mkdtemp(prefix="delivery-audit-"))  # what gets published
    work = Path(tempfile.mkdtemp(prefix="delivery-audit-work-"))  # inputs staged for Spark
    try:
        with JobCounter(spark, f"delivery-audit-{run_id}") as jobs:
            result = _run(spark, req, stages, run_id, started, staging, work, jobs)
        log.debug("audit %s ran %s Spark jobs", run_id, jobs.jobs)
        return result
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        spark.catalog.clearCache()  # one audit's cached frames must not pile up


@dataclass
class Reconciled:
    """What the transform stage hands to the load stage."""

    report: dict[str, Any]
    written: Any  # detection.outputs.Written: the report's small tables
    anomalies: DataFrame  # the anomaly table as written
    ingested: dict[str, Ingested]
    frames: dict[str, DataFrame]
    facts: Any  # detection.facts.Facts
    input_metrics: dict[str, dict[str, Any]]  # per source, for the input suites (quality/)
    collected: dict[str, list[dict[str, Any]]]  # every small table of the summary's action


def state_rows(written: Any, facts: Any) -> list[dict[str, Any]]:
    """States per (group, topic, state): detection counts every state but delivered_once,
    which is the rest of the topic's judged identities."""
    rows = [dict(r) for r in written.states]
    others: dict[tuple[str, str], int] = {}
    for r in rows:
        others[(r["group_id"], r["topic"])] = others.get((r["group_id"], r["topic"]), 0) \
            + int(r["n"])
    for g, topics in facts.topics_of.items():
        for t in topics:
            once = written.judged_by_topic.get(t, 0) - others.get((g, t), 0)
            if once:
                rows.append({"group_id": g, "topic": t, "state": "delivered_once", "n": once})
    return rows


def reconcile(spark: SparkSession, req: AuditRequest, stages: Stages, staging: Path,
              ingestion: Ingestion, frames: dict[str, DataFrame], run_id: str,
              started: datetime) -> Reconciled:
    """Detect every anomaly and state, with the report's small tables (counts, insights,
    rebalance events) in the same Spark job, then build report.json."""
    from .detection.facts import facts_from
    from .rebalance import rebalance_event_tables
    from .report.insights import insight_tables

    ingested = ingestion.sources
    facts = facts_from(ingestion.facts, req.config, req.topics)
    with stages.stage("detect"):
        detection = detect(spark, frames, req.window, req.config, facts)
        # the report's small tables of the anomaly rows and the events, in the same job
        events = frames["events"].filter(F.col("group_id").isin(*facts.group_ids))
        tables = {"anomalies": anomaly_count_table(detection.anomalies),
                  **rebalance_event_tables(events, list(facts.group_ids)),
                  **insight_tables(detection.anomalies, {"events": events}, req.window)}
        written = detection.write_anomalies(str(staging / "anomalies"), tables,
                                            evidence=staging / "evidence")
    anomalies = spark.read.schema(ANOMALY_SCHEMA).parquet(str(staging / "anomalies"))
    with stages.stage("summarise"):
        got = {name: written.tables.get(name, []) for name in tables}
        got["insights_produce_latency"] = [written.produce] if written.produce else []
        got["insights_e2e_latency"] = written.e2e
        got["rebalance_stats"] = written.processing
        got["rebalance_handovers"] = written.handovers
        input_metrics = {s: {**i.counts, **i.metrics} for s, i in ingested.items()}
        rows = [{**r, "units": int(r["units"])} for r in got["anomalies"]]
    report = build_report(
        window={**req.window.as_dict(), "read_until": _iso(req.window.read_until),
                "lookback_minutes": req.config.lookback_minutes,
                "partition_bounds": read_bounds(req.window, req.config).describe()},
        run={"run_id": run_id, "started_at": _iso(started), "tool_version": __version__,
             "spark_version": spark.version, **session_kind(spark)},
        inputs=_inputs_summary(ingested),
        judged_by_topic=written.judged_by_topic, anomaly_rows=rows,
        state_rows=state_rows(written, facts), group_ids=list(facts.group_ids),
        group_topics={g: list(ts) for g, ts in facts.topics_of.items()},
        config_summary={"dense_seq": req.config.dense_seq, "topics": req.topics or None,
                        "pseudonymise": req.config.pseudonymise,
                        "groups": {g.group_id: g.settings for g in req.config.groups},
                        "transaction_timeout_ms": req.config.transaction_timeout_ms,
                        "latency_sla_ms": req.config.latency_sla_ms},
        transactions=build_transactions(
            written.transactions, req.config.transaction_timeout_ms,
            (epoch_ms(req.window.start), epoch_ms(req.window.end))),
        sla_ms={g: req.config.sla_ms(g) for g in facts.group_ids},
    )
    return Reconciled(report, written, anomalies, ingested, frames, facts, input_metrics, got)


def _run(spark: SparkSession, req: AuditRequest, stages: Stages, run_id: str,
         started: datetime, staging: Path, work: Path, jobs: JobCounter) -> AuditResult:
    from .quality import validate_inputs, write_results

    # a pseudonymising run without its secret must not start (privacy.py)
    key = pseudonym_key() if req.config.pseudonymise else None

    # extract
    ingestion = extract(spark, req, stages, work)
    ingested = ingestion.sources
    frames = scope({s: i.valid for s, i in ingested.items()}, req.topics)
    if key is not None:  # before anything reads the frames: every output shows pseudonyms
        frames = pseudonymise_frames(frames, key)
    if req.groups:
        req.config = req.config.only_groups(req.groups)
    # transform
    rec = reconcile(spark, req, stages, staging, ingestion, frames, run_id, started)
    report = rec.report
    with stages.stage("validate_inputs"):
        input_validation = validate_inputs(rec.input_metrics, req.window, req.config,
                                           topics=req.topics or None)
    write_results(input_validation, staging / "validation" / "inputs.json")
    invalid = sorted(s for s, r in input_validation.items() if not r.get("success", True))
    if invalid and req.config.on_invalid_input == "fail":  # before anything is published
        raise InputError(f"input validation failed for {', '.join(invalid)} "
                         "(on_invalid_input: fail); see validation/inputs.json")
    report["input_validation"] = {s: {"success": r.get("success"), "failed": r.get("failed", [])}
                                  for s, r in input_validation.items()}
    with stages.stage("write_quarantine"):
        quarantine: DataFrame = reduce(DataFrame.unionByName,
                                       [i.quarantine for i in ingested.values()])
        if key is not None:
            quarantine = withhold_raw(quarantine)
        quarantine.coalesce(1).write.mode("overwrite").parquet(str(staging / "quarantine"))

    # load
    _finish_report(req, report, rec, stages, staging)
    with stages.stage("publish"):
        report["run"].update(finished_at=_iso(datetime.now(UTC)), stages=stages.seconds,
                             spark_jobs=jobs.count(),
                             duration_s=round(sum(stages.seconds.values()), 3))
        _write_json(staging / "report.json", report)
        manifest = publish_report(staging, req.out, req.window.relative_dir)
    destination = f"{req.out.rstrip('/')}/{req.window.relative_dir}"
    if req.notify and report["verdict"]["verdict"] in ("warn", "fail"):
        from .notify import notifier_from_config

        notifier_from_config(req.config.notifier).send(
            report, f"{destination}/report.html", index=f"{req.out.rstrip('/')}/index.html")
    code = EXIT_FAIL if report["verdict"]["verdict"] == "fail" else EXIT_OK
    return AuditResult(report=report, destination=destination, exit_code=code, manifest=manifest)


def publish_report(staging: Path, out: str, relative_dir: str, **kwargs: Any) -> dict:
    """storage.publish, with credentials masked in its error: botocore's messages quote the
    endpoint URL, user-info included. Any failure is a PublishError naming no secret."""
    from .storage import PublishError, publish

    try:
        return publish(staging, out, relative_dir, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every publishing failure, re-raised redacted
        message = redact_text(exc if isinstance(exc, PublishError)
                              else f"publishing to {out} failed: {type(exc).__name__}: {exc}")
        raise PublishError(message) from None


def _finish_report(req: AuditRequest, report: dict[str, Any], rec: Reconciled,
                   stages: Stages, staging: Path) -> None:
    """Rebalance forensics (its second round: one more action), verdict, results
    validation, the narrative, insights and the HTML page, from what the summary's action
    collected; the narrative, the remediation files and the offset strips also from the
    staged anomaly table (pyarrow)."""
    from .anomaly_table import read_anomalies
    from .quality import validate_results, write_results
    from .rebalance import rebalance_report
    from .remediation import write_remediation
    from .report.digest import Digest
    from .report.html import render_html
    from .report.insights import build_insights
    from .report.narrative import build_narrative
    from .report.offsets import partition_offsets
    from .report.transactions import transaction_evidence
    from .report.verdict import decide

    with stages.stage("rebalances"):
        groups = list(rec.facts.group_ids)
        judged = F.col("group_id").isin(*groups)
        report["rebalances"] = rebalance_report(
            rec.frames["ledger"].filter(judged), rec.frames["events"].filter(judged), groups,
            req.config, rec.anomalies, round1=rec.collected)
    report["verdict"] = decide(report, req.config)
    with stages.stage("validate_results"):
        results_validation = validate_results(report, req.config)
    write_results(results_validation, staging / "validation" / "results.json")
    report["results_validation"] = {"success": results_validation.get("success"),
                                    "failed": results_validation.get("failed", [])}
    if not results_validation.get("success", True) and report["verdict"]["verdict"] != "fail":
        report["verdict"] = {"verdict": "fail", "reasons": [
            *report["verdict"].get("reasons", []), "results validation failed"]}
    # the staged anomaly table, read once with pyarrow (no Spark job) for the narrative, the
    # remediation files and the offset strips
    table = read_anomalies(staging / "anomalies")
    with stages.stage("narrative"):
        report["narrative"] = build_narrative(report, Digest.from_table(table))
    with stages.stage("remediation"):
        report["remediation"] = write_remediation(table, staging, report, rec.facts.reach)
    with stages.stage("insights"):
        insights = build_insights(rec.collected, req.window)
        insights["offsets"] = partition_offsets(table, rec.facts.ranges)
        insights["transaction_evidence"] = transaction_evidence(table)  # contract §9
    with stages.stage("render_html"):
        (staging / "report.html").write_text(render_html(report, insights), encoding="utf-8")
