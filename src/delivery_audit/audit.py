"""The engine's entry point: one audit run, request in, result out, extract → transform → load.

:func:`run_audit` takes an :class:`AuditRequest` (the inputs, the window, the report root,
the config, the Spark to run on: a session, a master or a Spark Connect endpoint, whether
to publish and alert) and returns an :class:`AuditResult` (the report, where it was
published, the verdict's exit status, the manifest); an audit that cannot finish raises
:class:`AuditFailed` with its exit status (these types, and ``build_request`` for
command-line style values: delivery_audit/request.py). The CLI, jobs/reconcile.py, the
Airflow tasks and the tests all call it.

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
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import __version__
from . import spark as sessions
from .anomaly_table import read_anomalies
from .core.timefmt import epoch_ms, iso_z
from .detection import detect
from .detection.facts import facts_from
from .ingest import Ingested, Ingestion, InputError, ingest_all, read_bounds, resolve
from .ingest.files import local_size
from .ingest.offsets import OffsetsFile, read_offsets
from .notify import notifier_from_config
from .privacy import pseudonym_key, pseudonymise_frames
from .quality import prepare_in_background, validate_inputs, validate_results, write_results
from .quarantine import write_quarantine
from .rebalance import rebalance_event_tables, rebalance_report
from .redaction import redact_text
from .remediation import write_remediation
from .report.assemble import (
    Detected,
    IngestionSummary,
    ReportParts,
    RunInfo,
    RunTimings,
    Validation,
    assemble,
)
from .report.digest import Digest
from .report.html import render_html
from .report.insights import build_insights, insight_tables
from .report.narrative import build_narrative
from .report.offsets import partition_offsets
from .report.summary import anomaly_count_table, build_transactions, state_rows
from .report.transactions import transaction_evidence
from .report.verdict import decide
from .request import (
    EXIT_FAIL,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_PUBLISH,
    AuditFailed,
    AuditRequest,
    AuditResult,
    StageHook,
    build_request,
)
from .schemas import ANOMALY_SCHEMA, SOURCES
from .spark import (
    session_kind,
    spark_remote,
    tune_for_input,
    tune_for_staged,
)
from .spark_jobs import JobCounter, in_thread, job_labels
from .storage import PublishError, publish

log = logging.getLogger("delivery_audit")

__all__ = ["EXIT_FAIL", "EXIT_INPUT", "EXIT_OK", "EXIT_PUBLISH", "AuditFailed", "AuditRequest",
           "AuditResult", "Stages", "build_request", "run_audit"]


class Stages:
    """Wall time per stage, reported in report.json and by the benchmark; ``hooks`` wrap
    every stage (e.g. spark_jobs.job_labels)."""

    def __init__(self, hooks: list[StageHook] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.hooks = list(hooks or [])

    @contextmanager
    def stage(self, name: str):
        with ExitStack() as around:
            for hook in self.hooks:
                around.enter_context(hook(name))
            t0 = time.perf_counter()
            try:
                yield
            finally:
                self.seconds[name] = round(self.seconds.get(name, 0.0)
                                           + time.perf_counter() - t0, 3)


def run_audit(req: AuditRequest) -> AuditResult:
    """The audit of ``req``: its report, published (manifest last) and alerted on unless
    the request says not to. Raises AuditFailed for an unreadable or invalid input, an
    unreachable Spark Connect server or a failed publication."""
    spark, owned = _session(req)
    try:
        return _audit(spark, req)
    except InputError as exc:
        raise AuditFailed("input", redact_text(exc), EXIT_INPUT) from None
    except PublishError as exc:  # already redacted by publish_report
        raise AuditFailed("publish", redact_text(exc), EXIT_PUBLISH) from None
    finally:
        if owned:  # release the server-side session: its checkpoints and cached blocks
            spark.stop()  # would otherwise stay on the warm server until it times out


def _session(req: AuditRequest) -> tuple[SparkSession, bool]:
    """The request's session, and whether the audit owns it (a Connect client it made)."""
    if req.spark is not None:
        return req.spark, False
    if req.master and req.remote:
        raise ValueError("give a Spark master or a Spark Connect endpoint, not both")
    prepare_in_background()  # GX's imports overlap the JVM's start (or the connection)
    url = None if req.master else spark_remote(req.remote)
    size = None if url else local_size([p for ps in req.inputs.values() for p in ps or []])
    try:  # through the module: tests that must not start Spark replace sessions.get_spark
        return sessions.get_spark(master=req.master, remote=url, input_bytes=size), bool(url)
    except Exception as exc:  # noqa: BLE001 - e.g. no Connect server at that address
        if not url:
            raise
        raise AuditFailed("spark connect", redact_text(exc), EXIT_INPUT) from None


def _audit(spark: SparkSession, req: AuditRequest) -> AuditResult:
    started = datetime.now(UTC)
    stages = Stages([job_labels(spark), *([req.on_stage] if req.on_stage else [])])
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
        out = ingest_all(spark, resolved, req.window, req.config, work, defer_metrics=True)
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


@dataclass
class Reconciled:
    """What the transform stage hands to the load stage."""

    parts: ReportParts  # the report's parts known after detection
    written: Any  # detection.outputs.Written: the report's small tables
    anomalies: DataFrame  # the anomaly table as written
    ingested: dict[str, Ingested]
    frames: dict[str, DataFrame]
    facts: Any  # detection.facts.Facts
    collected: dict[str, list[dict[str, Any]]]  # every small table of the summary's action


def reconcile(spark: SparkSession, req: AuditRequest, stages: Stages, staging: Path,
              ingestion: Ingestion, frames: dict[str, DataFrame], run_id: str,
              started: datetime, offsets: OffsetsFile | None = None,
              on_planned: Callable[[], object] | None = None) -> Reconciled:
    """Detect every anomaly and state, with the report's small tables (counts, insights,
    rebalance events) in the same Spark job: the report's first parts (``offsets``: a live
    read's offsets file, rule 26). ``on_planned`` is called once the plan is built in
    Python, as its job starts (work for another thread: the driver's Python is idle then)."""
    config = req.audited_config
    ingested = ingestion.sources
    until = req.window.read_until
    facts = facts_from(ingestion.facts, config, req.topics, offsets and offsets.stated(until))
    with stages.stage("detect"):
        detection = detect(spark, frames, req.window, config, facts)
        # the report's small tables of the anomaly rows and the events, in the same job
        events = frames["events"].filter(F.col("group_id").isin(*facts.group_ids))
        tables = {"anomalies": anomaly_count_table(detection.anomalies),
                  **rebalance_event_tables(events, list(facts.group_ids)),
                  **insight_tables(detection.anomalies, {"events": events}, req.window)}
        if on_planned is not None:
            on_planned()
        written = detection.write_anomalies(str(staging / "anomalies"), tables,
                                            evidence=staging / "evidence")
    anomalies = spark.read.schema(ANOMALY_SCHEMA).parquet(str(staging / "anomalies"))
    with stages.stage("summarise"):
        got = {name: written.tables.get(name, []) for name in tables}
        got["insights_produce_latency"] = [written.produce] if written.produce else []
        got["insights_e2e_latency"] = written.e2e
        got["rebalance_stats"] = written.processing
        got["rebalance_handovers"] = written.handovers
        rows = [{**r, "units": int(r["units"])} for r in got["anomalies"]]
    parts = ReportParts(
        run=RunInfo(run_id, iso_z(started), __version__, spark.version, session_kind(spark)),
        ingestion=IngestionSummary(
            window={**req.window.as_dict(), "read_until": iso_z(req.window.read_until),
                    "lookback_minutes": config.lookback_minutes,
                    "partition_bounds": read_bounds(req.window, config).describe()},
            config={"dense_seq": config.dense_seq, "topics": req.topics or None,
                    "pseudonymise": config.pseudonymise,
                    "groups": {g.group_id: g.settings for g in config.groups},
                    "transaction_timeout_ms": config.transaction_timeout_ms,
                    "latency_sla_ms": config.latency_sla_ms},
            inputs=_inputs_summary(ingested),
            offsets_file=offsets and offsets.report_section(until)),
        detected=Detected(
            judged_by_topic=written.judged_by_topic, anomaly_rows=rows,
            state_rows=state_rows(written.states, written.judged_by_topic,
                                  facts.topics_of), group_ids=list(facts.group_ids),
            group_topics={g: list(ts) for g, ts in facts.topics_of.items()},
            transactions=build_transactions(
                written.transactions, config.transaction_timeout_ms,
                (epoch_ms(req.window.start), epoch_ms(req.window.end))),
            sla_ms={g: config.sla_ms(g) for g in facts.group_ids}),
    )
    return Reconciled(parts, written, anomalies, ingested, frames, facts, got)


def _run(spark: SparkSession, req: AuditRequest, stages: Stages, run_id: str,
         started: datetime, staging: Path, work: Path, jobs: JobCounter) -> AuditResult:
    # a pseudonymising run without its secret must not start (privacy.py)
    key = pseudonym_key() if req.config.pseudonymise else None
    config = req.audited_config

    # extract (the offsets file first: a bad one fails the run before any Spark job)
    offsets = read_offsets(req.offsets, work / "offsets") if req.offsets else None
    ingestion = extract(spark, req, stages, work)
    ingested = ingestion.sources
    frames = scope({s: i.valid for s, i in ingested.items()}, req.topics)
    if key is not None:  # before anything reads the frames: every output shows pseudonyms
        frames = pseudonymise_frames(frames, key)
    # transform, while a thread validates the inputs: the metrics of the sources that lost
    # rule 5's later copies (a Spark job beside detection's), then the input suites (GX on
    # the driver). It starts once detection's plan is built (GX's Python would slow the
    # building) and overlaps its job; "validate_inputs" times only the wait after it
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="validate-inputs") as pool:
        validating: list[Future] = []

        def inputs() -> dict[str, Any]:
            ingestion.finish_metrics(req.window, config)
            metrics = {s: {**i.counts, **i.metrics} for s, i in ingested.items()}
            return validate_inputs(metrics, req.window, config, topics=req.topics or None)

        def validate() -> None:
            validating.append(pool.submit(in_thread(spark, inputs)))

        rec = reconcile(spark, req, stages, staging, ingestion, frames, run_id, started,
                        offsets, on_planned=validate)
        with stages.stage("validate_inputs"):
            input_validation = validating[0].result()
    write_results(input_validation, staging / "validation" / "inputs.json")
    invalid = sorted(s for s, r in input_validation.items() if not r.get("success", True))
    if invalid and config.on_invalid_input == "fail":  # before anything is published
        raise InputError(f"input validation failed for {', '.join(invalid)} "
                         "(on_invalid_input: fail); see validation/inputs.json")
    parts = rec.parts.with_(input_validation={s: Validation.of(r)
                                              for s, r in input_validation.items()})
    with stages.stage("write_quarantine"):
        write_quarantine(ingested, staging / "quarantine", pseudonymised=key is not None)

    # load
    parts = finish_report(req, parts, rec, stages, staging, jobs)
    with stages.stage("publish"):
        report = assemble(parts.with_(timings=_timings(stages, jobs)))
        _write_json(staging / "report.json", report)
        manifest = publish_report(staging, req.out, req.window.relative_dir) \
            if req.publish else None
    verdict = report["verdict"]["verdict"]
    if req.publish and req.notify and verdict in ("warn", "fail"):
        notifier_from_config(config.notifier).send(
            report, f"{req.destination}/report.html", index=f"{req.out.rstrip('/')}/index.html")
    return AuditResult(report=report, destination=req.destination, manifest=manifest,
                       exit_code=EXIT_FAIL if verdict == "fail" else EXIT_OK)


def _timings(stages: Stages, jobs: JobCounter | None) -> RunTimings:
    return RunTimings(finished_at=iso_z(datetime.now(UTC)), stages=dict(stages.seconds),
                      spark_jobs=jobs.count() if jobs is not None else None,
                      planning_s=jobs.planning_seconds() if jobs is not None else None)


def publish_report(staging: Path, out: str, relative_dir: str, **kwargs: Any) -> dict:
    """storage.publish, with credentials masked in its error: botocore's messages quote the
    endpoint URL, user-info included. Any failure is a PublishError naming no secret."""
    try:
        return publish(staging, out, relative_dir, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every publishing failure, re-raised redacted
        message = redact_text(exc if isinstance(exc, PublishError)
                              else f"publishing to {out} failed: {type(exc).__name__}: {exc}")
        raise PublishError(message) from None


def finish_report(req: AuditRequest, parts: ReportParts, rec: Reconciled, stages: Stages,
                  staging: Path, jobs: JobCounter | None = None) -> ReportParts:
    """The report's remaining parts: rebalance forensics (its second round: one more
    action), results validation, the verdict, the narrative and the remediation files; and
    the HTML page (with the run's timings so far). From what the summary's action
    collected; the narrative, the remediation files and the offset strips also from the
    staged anomaly table (pyarrow)."""
    config = req.audited_config
    with stages.stage("rebalances"):
        groups = list(rec.facts.group_ids)
        judged = F.col("group_id").isin(*groups)
        parts = parts.with_(rebalances=rebalance_report(
            rec.frames["ledger"].filter(judged), rec.frames["events"].filter(judged), groups,
            config, rec.anomalies, round1=rec.collected))
    with stages.stage("validate_results"):
        results_validation = validate_results(assemble(parts), config)
    write_results(results_validation, staging / "validation" / "results.json")
    checked = Validation.of(results_validation)
    parts = parts.with_(results_validation=checked,
                        verdict=decide(assemble(parts), config, checked.as_dict()))
    # the staged anomaly table, read once with pyarrow (no Spark job) for the narrative, the
    # remediation files and the offset strips
    table = read_anomalies(staging / "anomalies")
    with stages.stage("narrative"):
        parts = parts.with_(narrative=build_narrative(assemble(parts),
                                                      Digest.from_table(table)))
    with stages.stage("remediation"):
        parts = parts.with_(remediation=write_remediation(table, staging, assemble(parts),
                                                          rec.facts.reach))
    with stages.stage("insights"):
        insights = {**build_insights(rec.collected, req.window),
                    "offsets": partition_offsets(table, rec.facts.ranges,
                                                 log_starts=rec.facts.log_starts),
                    "transaction_evidence": transaction_evidence(table)}  # contract §9
    with stages.stage("render_html"):
        page = assemble(parts.with_(timings=_timings(stages, jobs)))  # the duration so far
        (staging / "report.html").write_text(render_html(page, insights), encoding="utf-8")
    return parts
