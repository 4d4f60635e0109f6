"""report.json, assembled once from the stages' typed results (docs/report-schema.md).

Every stage of an audit hands its result over as a value (the dataclasses below);
:func:`assemble` turns the parts present into the report dict, in report.json's key order,
and nothing edits that dict afterwards. A stage that reads the report (the verdict, results
validation, the narrative, the remediation files, the page) reads an assembly of the parts
known by then; the next part is added to the parts (:meth:`ReportParts.with_`), never to a
report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .summary import SCHEMA_VERSION, build_anomalies, build_groups, build_latency_sla


@dataclass(frozen=True)
class RunInfo:
    """Who ran the audit, known when it starts."""

    run_id: str
    started_at: str  # ISO-8601 Z
    tool_version: str
    spark_version: str
    session: dict[str, Any]  # spark.session_kind: spark_session, spark_master

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": self.started_at,
                "tool_version": self.tool_version, "spark_version": self.spark_version,
                **self.session}


@dataclass(frozen=True)
class RunTimings:
    """How long the run took, known when its report is complete: ``stages`` (seconds per
    stage, in the order they ran), the Spark jobs it ran and the seconds Spark spent
    planning them (planning_time.py; both None under Spark Connect)."""

    finished_at: str
    stages: dict[str, float]
    spark_jobs: int | None
    planning_s: float | None = None

    @property
    def duration_s(self) -> float:
        return round(sum(self.stages.values()), 3)

    def as_dict(self) -> dict[str, Any]:
        return {"finished_at": self.finished_at, "stages": dict(self.stages),
                "spark_jobs": self.spark_jobs, "planning_s": self.planning_s,
                "duration_s": self.duration_s}


@dataclass(frozen=True)
class IngestionSummary:
    """The window, the audit's settings and what every source read (extract's summary)."""

    window: dict[str, Any]
    config: dict[str, Any]
    inputs: dict[str, Any]  # per source: rows read/valid/quarantined…, files, bytes
    offsets_file: dict[str, Any] | None = None  # `run --offsets`: the file's offsets (rule 26)


@dataclass(frozen=True)
class Detected:
    """Detection's small tables (the summary's action): anomaly units per (anomaly, group,
    topic, cause), states per (group, topic, state), judged identities per topic, the
    groups judged with their topics, the transactional partitions and the latency SLAs."""

    judged_by_topic: dict[str, int]
    anomaly_rows: list[dict[str, Any]]
    state_rows: list[dict[str, Any]]
    group_ids: list[str]
    group_topics: dict[str, list[str]]
    transactions: list[dict[str, Any]] = field(default_factory=list)
    sla_ms: dict[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Validation:
    """A GX validation's outcome as report.json states it (the full results are written
    to validation/ beside it)."""

    success: bool | None
    failed: list[Any]

    @classmethod
    def of(cls, results: dict[str, Any]) -> Validation:
        return cls(results.get("success"), list(results.get("failed", [])))

    @property
    def ok(self) -> bool:
        return self.success is not False

    def as_dict(self) -> dict[str, Any]:
        return {"success": self.success, "failed": list(self.failed)}


@dataclass(frozen=True)
class ReportParts:
    """Every stage's result; the later ones None until their stage has run."""

    run: RunInfo
    ingestion: IngestionSummary
    detected: Detected
    input_validation: dict[str, Validation] | None = None  # per source
    rebalances: dict[str, Any] | None = None
    verdict: dict[str, Any] | None = None  # verdict.decide's
    results_validation: Validation | None = None
    narrative: list[dict[str, Any]] | None = None
    remediation: dict[str, Any] | None = None
    timings: RunTimings | None = None

    def with_(self, **parts: Any) -> ReportParts:
        """These parts added (a new value: the parts are never edited either)."""
        return replace(self, **parts)


def assemble(parts: ReportParts) -> dict[str, Any]:
    """report.json from the parts present, in its documented key order."""
    d = parts.detected
    anomalies = build_anomalies(d.anomaly_rows)
    groups = build_groups(d.group_ids, d.group_topics, d.judged_by_topic, d.state_rows,
                          anomalies)
    run = parts.run.as_dict()
    if parts.timings is not None:
        run = {**run, **parts.timings.as_dict()}
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "window": parts.ingestion.window,
        "config": parts.ingestion.config,
        "inputs": parts.ingestion.inputs,
        "judged": sum(d.judged_by_topic.values()),
        "judged_by_topic": dict(sorted(d.judged_by_topic.items())),
        "anomalies": anomalies,
        "groups": groups,
        "balance_ok": all(g["balance_ok"] for g in groups.values()),
        "transactions": list(d.transactions),
        "latency_sla": build_latency_sla(d.group_ids, d.sla_ms, anomalies),
    }
    if parts.ingestion.offsets_file is not None:  # only with an offsets file (rule 26)
        report["offsets_file"] = parts.ingestion.offsets_file
    later = {
        "input_validation": None if parts.input_validation is None else
        {s: v.as_dict() for s, v in parts.input_validation.items()},
        "rebalances": parts.rebalances,
        "verdict": parts.verdict,
        "results_validation": None if parts.results_validation is None else
        parts.results_validation.as_dict(),
        "narrative": parts.narrative,
        "remediation": parts.remediation,
    }
    return {**report, **{k: v for k, v in later.items() if v is not None}}
