"""Every generated scenario in one input, and its classic audit: computed once per session
and read by tests/test_scenarios.py (each scenario against its truth.json) and
tests/test_connect.py (the same input through a Spark Connect client must give the same
report). Registered in conftest.py.

``scenario_day``: each scenario generated (seed 11; SIZES, else 600 rows), its files copied
with every topic and group prefixed by its name (tests/scenario_inputs.py), and one config
(config.yaml) with every scenario's groups, dump ranges and top-level settings.

``scenario_audit``: the day audited by run_audit on the test session (published, not
notified) with generated code on (DELIVERY_AUDIT_CODEGEN=true), as Spark runs audits of
64 MiB and more; smaller inputs are evaluated interpreted, every other test's audit runs
that way. The audit's own extract and detect are observed, not replaced (they are wrapped,
and called with the arguments they were given): what the staging folder and the frames
detection read look like while the audit runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from scenario_inputs import TOP_LEVEL, relabel

START = datetime(2026, 11, 19, tzinfo=UTC)
SOURCES = ("sends", "broker", "ledger", "events")
SIZES = {"mixed": 2000}
SEED = 11
#: the environment of every audit of the day (the classic one and test_connect's client)
AUDIT_ENV = {"DELIVERY_AUDIT_CODEGEN": "true"}


@pytest.fixture(scope="session")
def scenario_day(tmp_path_factory) -> dict:
    """``truths`` (per scenario), ``inputs`` (per source, a glob), ``config`` (config.yaml),
    ``window`` (the generator's: start, end, grace_minutes), ``scenarios``."""
    from delivery_audit_sim.generator import SCENARIOS, generate_scenario

    tmp = tmp_path_factory.mktemp("scenario-day")
    truths, groups, ranges, top = {}, {}, [], {}
    for scenario in SCENARIOS:
        truth = generate_scenario(scenario, SIZES.get(scenario, 600), SEED, START,
                                  tmp / scenario)
        cfg = relabel(tmp / scenario, tmp / "all", f"{scenario}.")
        assert cfg["dense_seq"] is True
        groups.update(cfg["groups"])
        ranges += cfg["dump_ranges"]
        for k in TOP_LEVEL:
            if k in cfg:
                assert top.setdefault(k, cfg[k]) == cfg[k], k   # one value for every scenario
        truths[scenario] = truth
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"groups": groups, "dump_ranges": ranges, **top}))
    return {"truths": truths, "scenarios": list(SCENARIOS), "config": config,
            "inputs": {s: [str(tmp / "all" / s / "*")] for s in SOURCES},
            "window": truth["window"], "root": tmp}


@pytest.fixture(scope="session")
def scenario_audit(spark, scenario_day, tmp_path_factory) -> dict:
    """``report`` (report.json), ``rows`` (the anomaly table's units per anomaly, topic and
    cause), ``html`` (report.html), ``factory_mode`` (the session's codegen mode after
    extract), ``work`` (extract's staging folder) and ``frames`` (per source, the analyzed
    plan and input files of the frame detection read)."""
    import delivery_audit.audit as audit
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import load_config
    from delivery_audit.core.window import AuditWindow

    tmp = tmp_path_factory.mktemp("scenario-audit")
    w = scenario_day["window"]
    seen: dict = {}
    real_extract, real_detect = audit.extract, audit.detect

    def extract(spark_, req, stages, work):
        out = real_extract(spark_, req, stages, work)
        seen["work"] = Path(work).resolve()
        seen["factory_mode"] = spark_.conf.get("spark.sql.codegen.factoryMode")
        return out

    def detect(spark_, frames, *args, **kwargs):
        seen["frames"] = {
            s: {"tree": df._jdf.queryExecution().analyzed().treeString().strip(),
                "files": list(df.inputFiles())} for s, df in frames.items()}
        return real_detect(spark_, frames, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        for k, v in AUDIT_ENV.items():
            mp.setenv(k, v)
        mp.setattr(audit, "extract", extract)
        mp.setattr(audit, "detect", detect)
        result = run_audit(AuditRequest(
            inputs=scenario_day["inputs"],
            window=AuditWindow.of(w["start"], w["end"], w["grace_minutes"]),
            out=str(tmp / "reports"), config=load_config(scenario_day["config"]),
            notify=False, spark=spark))
    published = Path(result.destination)
    rows = [r.asDict() for r in spark.read.parquet(str(published / "anomalies"))
            .groupBy("anomaly", "topic", "cause").sum("units")
            .withColumnRenamed("sum(units)", "units").collect()]
    return {"report": result.report, "rows": rows, "dir": published,
            "html": (published / "report.html").read_text("utf-8"), **seen}
