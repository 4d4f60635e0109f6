"""DAG integrity (DagBag, no DB needed) and the orchestration logic of the plugin package."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from airflow_helpers import published_window
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)

REPO = Path(__file__).resolve().parents[1]
# the in-process Airflow settings come with airflow_helpers (imported above)

from delivery_audit_airflow import alerts, aws, uris  # noqa: E402
from delivery_audit_airflow.alerts import notifier_settings  # noqa: E402
from delivery_audit_airflow.group import alert, check_report, job_environment  # noqa: E402
from delivery_audit_airflow.operators import AuditSparkSubmitOperator  # noqa: E402
from delivery_audit_airflow.plan import (  # noqa: E402
    PlanError,
    build_plan,
    job_args,
    validate_backfill,
)
from delivery_audit_airflow.settings import (  # noqa: E402
    SCHEMA,
    VARIABLE,
    Settings,
    SettingsError,
    markdown_table,
    old_variables,
    parse_variable,
)

from delivery_audit.config import load_config  # noqa: E402
from delivery_audit.core.globs import to_regex  # noqa: E402
from delivery_audit.core.window import AuditWindow, resolve_grace  # noqa: E402
from delivery_audit.notify import summary_lines  # noqa: E402

GROUP = "audit"
TASKS = ["resolve_window", "wait_for_inputs", "snapshot", "reconcile", "check_report", "alert"]
EDGES = {  # upstream → downstream, inside the group
    ("resolve_window", "wait_for_inputs"),
    ("wait_for_inputs", "reconcile"),  # reconcile pulls the plan by task id, no extra edge
    ("resolve_window", "snapshot"),  # the optional snapshot (issue 32): after the wait
    ("wait_for_inputs", "snapshot"),
    ("snapshot", "reconcile"),
    ("resolve_window", "check_report"),
    ("reconcile", "check_report"),
    ("resolve_window", "alert"),
    ("check_report", "alert"),
}


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert {"delivery_audit_daily", "delivery_audit_backfill"} <= set(dagbag.dags)


@pytest.mark.parametrize("dag_id", ["delivery_audit_daily", "delivery_audit_backfill"])
def test_tags_retries_and_graph(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    assert "delivery-audit" in dag.tags
    assert sorted(dag.task_ids) == sorted(f"{GROUP}.{t}" for t in TASKS)
    edges = {(up.split(".", 1)[1], down.split(".", 1)[1])
             for up in dag.task_ids for down in dag.get_task(up).downstream_task_ids}
    assert edges == EDGES
    for task in dag.tasks:
        assert task.retries >= 2, task.task_id
        assert task.on_failure_callback, task.task_id
    sensor = dag.get_task(f"{GROUP}.wait_for_inputs")
    assert sensor.mode == "reschedule"
    reconcile = dag.get_task(f"{GROUP}.reconcile")
    assert type(reconcile).__name__ == "AuditSparkSubmitOperator"
    assert reconcile._conn_id == "spark_default"
    assert reconcile.application.endswith("jobs/reconcile.py")


def test_same_task_group_in_both_dags(dagbag):
    daily, backfill = dagbag.dags["delivery_audit_daily"], dagbag.dags["delivery_audit_backfill"]
    assert [type(t).__name__ for t in daily.tasks] == [type(t).__name__ for t in backfill.tasks]
    # one factory: both DAG files import it, neither defines tasks itself
    for name in ("delivery_audit_daily.py", "delivery_audit_backfill.py"):
        text = (REPO / "dags" / name).read_text()
        assert "audit_task_group()" in text and "SparkSubmitOperator" not in text


def test_daily_schedule_is_a_24h_data_interval(dagbag):
    from airflow.serialization.encoders import coerce_to_core_timetable
    from airflow.timetables.base import DataInterval, TimeRestriction

    dag = dagbag.dags["delivery_audit_daily"]
    assert type(dag.timetable).__name__ == "CronDataIntervalTimetable"
    assert dag.catchup is True
    tt = coerce_to_core_timetable(dag.timetable)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    first = tt.next_dagrun_info(last_automated_data_interval=None,
                                restriction=TimeRestriction(earliest=start, latest=None,
                                                            catchup=True))
    assert first.data_interval.start == start
    assert first.data_interval.end - first.data_interval.start == timedelta(hours=24)
    nxt = tt.next_dagrun_info(last_automated_data_interval=DataInterval(*first.data_interval),
                              restriction=TimeRestriction(earliest=start, latest=None,
                                                          catchup=True))
    assert nxt.data_interval.start == first.data_interval.end
    assert nxt.data_interval.end - nxt.data_interval.start == timedelta(hours=24)
    assert nxt.data_interval.start.utcoffset() == timedelta(0)


def test_backfill_is_manual_with_params(dagbag):
    dag = dagbag.dags["delivery_audit_backfill"]
    assert dag.timetable.__class__.__name__ == "NullTimetable"
    assert {"start", "end", "topics", "groups", "grace_minutes",
            "report_prefix"} <= set(dag.params.keys())


@pytest.mark.parametrize("dag_id", ["delivery_audit_daily", "delivery_audit_backfill"])
def test_doc_md_says_what_is_audited_where_reports_go_and_with_what(dagbag, dag_id):
    doc = dagbag.dags[dag_id].doc_md
    assert doc and doc.startswith("# ")
    window = "data_interval_start, data_interval_end" if dag_id.endswith("daily") else \
        "[start, end)"
    for text in (window, "`sends`", "`broker`", "`ledger`", "`events`", "report.json",
                 "_manifest.json", "<report_root>", f"Variable `{VARIABLE}`", "`aws_default`",
                 "endpoint_url", "`spark_default`", "Param `aws_conn_id`"):
        assert text in doc, text
    for key, spec in SCHEMA.items():  # the Variable's keys and defaults, from the schema
        assert f"| `{key}` |" in doc and json.dumps(spec.default) in doc, key


def test_docs_list_the_settings_as_the_schema_does():
    assert markdown_table() in (REPO / "docs" / "airflow.md").read_text()


def test_both_dags_take_an_aws_conn_id_param(dagbag):
    from airflow.sdk.definitions.param import ParamsDict

    for dag_id in ("delivery_audit_daily", "delivery_audit_backfill"):
        dag = dagbag.dags[dag_id]
        assert dag.params["aws_conn_id"] is None  # the Variable's, else aws_default
        base = {"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z"} \
            if dag_id.endswith("backfill") else {}
        for conn, ok in (("lake_s3", True), ("minio.eu-1", True), (None, True),
                         ("bad id", False), ("x;rm", False)):
            params = ParamsDict(dag.params)
            if ok:
                params.update({**base, "aws_conn_id": conn})
                params.validate()
            else:
                with pytest.raises(Exception):  # noqa: B017 - ParamValidationError
                    params.update({**base, "aws_conn_id": conn})
                    params.validate()
        reconcile = dag.get_task(f"{GROUP}.reconcile")
        assert reconcile._pre_execute_hook.__name__ == "job_environment"


@pytest.mark.parametrize("conf, ok", [
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z"}, True),
    ({"start": "2026-11-19T00:00:00+02:00", "end": "2026-11-20", "report_prefix": "inc/INC-42",
      "topics": ["orders"], "groups": ["billing"], "grace_minutes": 30}, True),
    ({"start": "yesterday", "end": "2026-11-19T02:00:00Z"}, False),
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z",
      "report_prefix": "../etc"}, False),
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z",
      "report_prefix": "/abs"}, False),
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z",
      "report_prefix": "a b;rm"}, False),
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z",
      "topics": ["bad topic"]}, False),
    ({"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T02:00:00Z",
      "grace_minutes": -5}, False),
])
def test_backfill_params_schema(dagbag, conf, ok):
    from airflow.sdk.definitions.param import ParamsDict

    params = ParamsDict(dagbag.dags["delivery_audit_backfill"].params)
    if ok:
        params.update(conf)
        params.validate()
    else:
        with pytest.raises(Exception):  # noqa: B017 - ParamValidationError / ValueError
            params.update(conf)
            params.validate()


def test_backfill_runtime_validation():
    ok = validate_backfill({"start": "2026-11-19T00:00:00Z", "end": "2026-11-26T00:00:00Z",
                            "groups": "a,b", "report_prefix": "x/y"}, max_days=7)
    assert ok["end"] - ok["start"] == timedelta(days=7) and ok["groups"] == ["a", "b"]
    bad = [
        {"start": "2026-11-19T02:00:00Z", "end": "2026-11-19T02:00:00Z"},  # empty
        {"start": "2026-11-19T03:00:00Z", "end": "2026-11-19T02:00:00Z"},  # reversed
        {"start": "2026-11-19T00:00:00Z", "end": "2026-11-26T00:00:01Z"},  # > 7 days
        {"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T01:00:00Z", "report_prefix": "a/.."},
        {"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T01:00:00Z", "report_prefix": "a//b"},
        {"start": "2026-11-19T00:00:00Z", "end": "2026-11-19T01:00:00Z",
         "report_prefix": "a%2F..%2Fb"},
        {"start": None, "end": "2026-11-19T01:00:00Z"},
    ]
    for params in bad:
        with pytest.raises(PlanError):
            validate_backfill(params, max_days=7)
    # the maximum comes from the Variable
    with pytest.raises(PlanError):
        validate_backfill({"start": "2026-11-19T00:00:00Z", "end": "2026-11-20T00:00:01Z"},
                          max_days=1)


def _settings(**values):
    return Settings.of(**values)


def test_the_settings_variable_defaults_and_schema():
    for text in (None, "", "  ", "{}"):
        s = Settings(parse_variable(text))
        assert s.explicit == frozenset()
        assert {k: s.get(k) for k in SCHEMA} == {k: spec.default for k, spec in SCHEMA.items()}
    s = Settings(parse_variable(json.dumps({
        "data_root": "s3://lake", "grace": 30, "events": None, "notifier": {"type": "log"},
        "spark_conf": {"spark.sql.shuffle.partitions": 4, "spark.ui.enabled": False},
        "backfill_max_days": 1.5, "wait_for_grace": False, "aws_conn_id": "lake_s3"})))
    assert s.get("data_root") == "s3://lake" and s.get("grace") == 30
    assert s.get("report_root") == "{repo}/demo/airflow/reports"  # unset: the default
    assert s.explicit >= {"data_root", "aws_conn_id"} and "report_root" not in s.explicit
    s.get("spark_conf")["x"] = "y"  # defaults and values are copies
    assert "x" not in s.get("spark_conf") and Settings().get("spark_conf") == {}
    start = datetime(2026, 11, 19, tzinfo=UTC)

    plan = build_plan(start=start, end=start + timedelta(days=1), settings=s)
    assert plan["spark_conf"] == {"spark.sql.shuffle.partitions": "4",
                                  "spark.ui.enabled": "false"}
    assert plan["sources"]["events"] is None and plan["window"]["grace_minutes"] == 30.0
    assert plan["wait_for_grace"] is False and plan["notifier"] == {"type": "log"}


@pytest.mark.parametrize("text, message", [
    ('{"data_rot": "/x"}', r"unknown key 'data_rot' \(did you mean 'data_root'\?\)"),
    ('{"sends": "a", "colour": 1}', r"unknown key 'colour'; the keys are data_root, "),
    ('{"backfill_max_days": "7"}', r"'backfill_max_days' must be number, not string"),
    ('{"backfill_max_days": true}', r"'backfill_max_days' must be number, not boolean"),
    ('{"backfill_max_days": 0}', r"'backfill_max_days' must be > 0"),
    ('{"wait_for_grace": "false"}', r"'wait_for_grace' must be boolean, not string"),
    ('{"sends": null}', r"'sends' must be string, not null"),
    ('{"notifier": "{\\"type\\": \\"log\\"}"}', r"'notifier' must be object or null, not string"),
    ('{"spark_conf": ["a=b"]}', r"'spark_conf' must be object, not array"),
    ('{"spark_conf": {"a": {"b": 1}}}', r"'spark_conf' value of 'a' must be a string"),
    ('{"grace": "soon"}', r"'grace' 'soon' is not a duration"),
    ('{"aws_conn_id": ""}', r"'aws_conn_id' '' is not a connection id"),
    ('{"aws_conn_id": "my conn"}', r"'aws_conn_id' 'my conn' is not a connection id"),
    ('["data_root"]', r"must be a JSON object of settings, not array"),
    ("{data_root: 1}", r" is not JSON: Expecting property name"),
])
def test_the_settings_variable_rejects_what_the_schema_does_not_allow(text, message):
    with pytest.raises(SettingsError, match=r"^Variable delivery_audit_settings.*" + message):
        parse_variable(text)


def test_the_old_per_setting_variables_are_an_error_not_ignored():
    env = {"AIRFLOW_VAR_DELIVERY_AUDIT_DATA_ROOT": "/x", "AIRFLOW_VAR_OTHER": "1",
           "AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS": "{}"}
    stored = ["delivery_audit_grace", "delivery_audit_mine", "delivery_audit_settings"]
    assert old_variables(env, stored=lambda: stored) == \
        ["AIRFLOW_VAR_DELIVERY_AUDIT_DATA_ROOT", "delivery_audit_grace"]

    def unreachable():
        raise RuntimeError("no API server")

    assert old_variables({}, stored=unreachable) == []  # listing is best effort
    with pytest.raises(SettingsError, match=r"move AIRFLOW_VAR_DELIVERY_AUDIT_DATA_ROOT → "
                                            r"'data_root', delivery_audit_grace → 'grace' into "
                                            r"the JSON Variable delivery_audit_settings"):
        Settings.load(reader=lambda: "{}", leftovers=lambda: old_variables(env, lambda: stored))
    s = Settings.load(reader=lambda: '{"grace": "2h"}', leftovers=list)
    assert s.get("grace") == "2h" and s.explicit == {"grace"}


@pytest.mark.parametrize("param, variable, want", [
    (None, None, ("aws_default", "default")),
    (None, "lake_s3", ("lake_s3", "variable")),
    ("minio", "lake_s3", ("minio", "run")),  # the run's Param wins
    ("", "lake_s3", ("lake_s3", "variable")),
])
def test_the_aws_connection_is_the_params_else_the_variables(param, variable, want):
    s = _settings(**({"aws_conn_id": variable} if variable else {}))
    start = datetime(2026, 11, 19, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(days=1), settings=s, aws_conn_id=param)
    assert (plan["aws_conn_id"], plan["aws_conn_from"]) == want
    assert plan["pass_aws_conn_to_job"] is True
    for bad in ("a b", "x\n", 3, "../c"):
        with pytest.raises(PlanError, match="aws_conn_id"):
            build_plan(start=start, end=start + timedelta(days=1), settings=s, aws_conn_id=bad)


def test_notifier_precedence_is_the_config_file_then_the_variable(tmp_path):
    with_notifier = tmp_path / "audit.yaml"
    with_notifier.write_text("notifier: {type: slack, webhook_env: HOOK}\n")
    without = tmp_path / "plain.yaml"
    without.write_text("dense_seq: true\n")
    variable = {"notifier": {"type": "sns", "topic_arn": "arn:aws:sns:eu-west-1:1:t"}}
    assert notifier_settings({**variable, "config_file": str(with_notifier)})["type"] == "slack"
    assert notifier_settings({**variable, "config_file": str(without)})["type"] == "sns"
    assert notifier_settings({**variable, "config_file": None})["type"] == "sns"
    assert notifier_settings({"notifier": None, "config_file": str(without)}) == {"type": "log"}


def test_plan_renders_templates_and_args(tmp_path):
    (tmp_path / "audit.yaml").write_text("dense_seq: true\n")  # no grace of its own
    s = _settings(data_root="s3://lake/kafka", report_root="s3://reports/audit",
                  sends="{data_root}/sends/dt={ds}/*.jsonl", events="",
                  ledger="{data_root}/ledger/dt={{{prev_ds},{ds},{next_ds}}}/*.jsonl",
                  config_file=str(tmp_path / "audit.yaml"), grace="2h")
    start = datetime(2026, 11, 19, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(days=1), settings=s)
    assert plan["sources"]["sends"] == "s3://lake/kafka/sends/dt=2026-11-19/*.jsonl"
    assert plan["sources"]["ledger"] == \
        "s3://lake/kafka/ledger/dt={2026-11-18,2026-11-19,2026-11-20}/*.jsonl"
    assert plan["sources"]["events"] is None
    assert plan["report_dir"] == \
        "s3://reports/audit/dt=2026-11-19/20261119T000000Z_20261120T000000Z"
    args = job_args(plan, plan["config_file"])
    assert args[args.index("--grace") + 1] == "120m"
    assert args[args.index("--out") + 1] == "s3://reports/audit"
    assert args[-3:] == ["--stage", "all", "--no-notify"] and "--events" not in args
    assert args[args.index("--start") + 1] == "2026-11-19T00:00:00Z"


@pytest.mark.parametrize(("param", "config", "want"), [
    (None, None, (120.0, "default")),  # the Variable's grace: the deployment default
    (None, "grace_minutes: 15\n", (15.0, "config")),  # the config file beats the Variable
    (30, "grace_minutes: 15\n", (30.0, "run")),  # the run's Param beats both
    (0, "grace_minutes: 15\n", (0.0, "run")),
    (None, "dense_seq: true\n", (120.0, "default")),
])
def test_grace_has_one_precedence_under_airflow_and_the_cli(tmp_path, param, config, want):
    """Param (the CLI's --grace) > the audit config's grace_minutes > the deployment default,
    under Airflow as under the CLI (one function, window.resolve_grace): the plan passes the
    result as --grace, so the job's window is the plan's."""
    path = tmp_path / "audit.yaml"
    if config:
        path.write_text(config)
    s = _settings(report_root="/r", config_file=str(path) if config else "", grace="2h")
    start = datetime(2026, 11, 19, tzinfo=UTC)
    request = None if param is None else {"grace_minutes": param}
    plan = build_plan(start=start, end=start + timedelta(days=1), settings=s, request=request)
    w = plan["window"]
    assert (w["grace_minutes"], w["grace_from"]) == want
    args = job_args(plan, plan["config_file"])
    assert args[args.index("--grace") + 1] == f"{int(want[0])}m"
    # the CLI, given what the plan passes, and given only what a user passes
    cfg = load_config(str(path) if config else None)
    assert resolve_grace(args[args.index("--grace") + 1], cfg.grace_minutes)[0] == want[0]
    cli = resolve_grace(None if param is None else f"{param}m", cfg.grace_minutes)
    assert cli == (want if want[1] != "default" else (60.0, "default"))


def test_a_config_file_the_plan_cannot_read_fails_the_plan(tmp_path):
    s = _settings(report_root="/r", config_file=str(tmp_path / "missing.yaml"))
    start = datetime(2026, 11, 19, tzinfo=UTC)
    with pytest.raises(PlanError, match="missing.yaml"):
        build_plan(start=start, end=start + timedelta(days=1), settings=s)


def test_plan_window_dir_matches_the_job():
    start, end = datetime(2026, 11, 19, 10, tzinfo=UTC), datetime(2026, 11, 19, 12, tzinfo=UTC)
    plan = build_plan(start=start, end=end, settings=_settings(report_root="/r"),
                      request={"report_prefix": "inc/1", "grace_minutes": 0.0})
    assert plan["report_dir"] == "/r/inc/1/" + AuditWindow(start, end).relative_dir
    assert plan["window"]["grace_minutes"] == 0.0


def test_bad_template_is_reported():
    start = datetime(2026, 11, 19, tzinfo=UTC)
    with pytest.raises(ValueError, match=r"delivery_audit_settings: 'sends' .* bad template"):
        build_plan(start=start, end=start + timedelta(days=1),
                   settings=_settings(sends="{root}/sends/*.jsonl"))


def test_glob_matching(tmp_path):
    (tmp_path / "sends" / "dt=2026-11-19").mkdir(parents=True)
    (tmp_path / "sends" / "dt=2026-11-19" / "part-0.jsonl").write_text("{}\n")
    assert uris.glob_matches(f"{tmp_path}/sends/dt=*/*.jsonl*")
    assert not uris.glob_matches(f"{tmp_path}/broker/dt=*/*.jsonl*")
    # the job's glob semantics (tests/test_globs.py compares the sensor and the job)

    rx = to_regex("p/dt=*/part-?.jsonl")
    assert rx.fullmatch("p/dt=2026-11-19/part-0.jsonl")
    assert not rx.fullmatch("p/dt=2026-11-19/x/part-0.jsonl")


def test_backfill_selection_becomes_job_options():
    start = datetime(2026, 11, 19, 10, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(hours=2), settings=_settings(),
                      request={"topics": ["orders", "payments"], "groups": ["billing"]})
    args = job_args(plan, None)
    assert args.count("--topic") == 2 and args[args.index("--group") + 1] == "billing"
    assert "--config" not in args


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "local[*]"])
def test_reconcile_submits_what_the_engine_says(tmp_path, monkeypatch, master):
    """The operator's spark-submit comes from delivery_audit.core.submit: the plan's job and
    arguments, the interpreter in the env and the conf and, on a cluster master only, a zip of
    delivery_audit with its GX suites as --py-files (no DELIVERY_AUDIT_EXPECTATIONS), removed
    after the run."""
    import zipfile

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    start = datetime(2026, 11, 19, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(days=1),
                      settings=_settings(report_root=str(tmp_path), events=""))
    seen: dict = {}

    def submitted(self, context):
        seen.update(application=self.application, args=self.application_args,
                    conf=dict(self.conf), env=dict(self.env_vars), py_files=self.py_files)
        if self.py_files:
            seen["shipped"] = zipfile.ZipFile(self.py_files).namelist()

    monkeypatch.setattr(SparkSubmitOperator, "execute", submitted)
    monkeypatch.setattr(AuditSparkSubmitOperator, "_master", lambda self: master)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    op = AuditSparkSubmitOperator(task_id="reconcile", plan_task_id="plan",
                                  application="/elsewhere/reconcile.py",
                                  conf={"spark.ui.enabled": "false"})

    class TI:
        def xcom_pull(self, task_ids):
            return plan

    assert op.execute({"ti": TI()}) == {"exit_code": 0, "report_dir": plan["report_dir"]}
    assert seen["application"] == plan["job"]
    assert seen["args"] == job_args(plan, plan.get("config_file"), stage="all")
    assert seen["conf"] == {"spark.ui.enabled": "false", "spark.pyspark.python": sys.executable,
                            "spark.pyspark.driver.python": sys.executable}
    assert seen["env"] == {"PYSPARK_PYTHON": sys.executable,
                           "PYSPARK_DRIVER_PYTHON": sys.executable}
    if master.startswith("local"):
        assert seen["py_files"] is None
        return
    assert Path(seen["py_files"]).name == "delivery_audit.zip"
    assert "delivery_audit/expectations/results.json" in seen["shipped"]
    assert not Path(seen["py_files"]).exists() and op.py_files is None


def test_dag_files_import_nothing_heavy():
    """Parsing the DAG files loads no Spark, GX, boto3 (nor the Amazon provider's hooks), pandas or
    Arrow, and of the engine at most its light core (delivery_audit.core)."""
    import subprocess

    code = ("import runpy, sys\n"
            "for f in ('dags/delivery_audit_daily.py', 'dags/delivery_audit_backfill.py'):\n"
            "    runpy.run_path(f)\n"
            "light = ('delivery_audit.core.',)\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', "
            "'great_expectations', 'boto3', 'botocore', 'pandas', 'pyarrow') or ("
            "m.startswith('delivery_audit.') and m != 'delivery_audit.core' "
            "and not m.startswith(light)) or "
            "m.startswith('airflow.providers.amazon.aws')]\n"
            "print(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _published(tmp_path, verdict="warn", wid="20261119T000000Z_20261120T000000Z"):
    """The plan's report folder as the publisher leaves it (manifest included)."""
    return published_window(tmp_path, _settings(report_root=str(tmp_path)), verdict=verdict,
                            wid=wid, reasons=["r"], anomalies={"lost_acked": 3, "skipped": 0})


def test_alert_carries_the_narrative_and_links_the_page_and_the_index(tmp_path, monkeypatch):
    sent = []

    class Recorder:
        def send(self, report, link, index=None):
            sent.append(summary_lines(report, link, index))

    monkeypatch.setattr(alerts, "_build_notifier", lambda settings: Recorder())
    plan, d = _published(tmp_path)
    summary = check_report.function(plan, {"exit_code": 0})
    assert alert.function(plan, summary) == "notifier log"
    msg = "\n".join(sent[0])
    assert "1. [critical] 2026-11-19 01:36:40 UTC 3 acknowledged messages lost" in msg
    assert "Fix: acks=all" in msg
    assert f"Report: {d}/report.html" in msg
    assert f"All windows: {tmp_path}/index.html" in msg  # the plan's report root


def test_check_report_reads_the_published_report(tmp_path):
    plan, _ = _published(tmp_path)
    summary = check_report.function(plan, {"exit_code": 0})
    assert summary["verdict"] == "warn" and summary["anomalies"] == {"lost_acked": 3}


def test_check_report_fails_without_manifest_or_for_another_window(tmp_path):
    plan, d = _published(tmp_path / "a", wid="20261118T000000Z_20261119T000000Z")
    with pytest.raises(ValueError, match="window"):
        check_report.function(plan, {"exit_code": 0})
    plan, d = _published(tmp_path / "b")
    (d / "report.html").unlink()
    with pytest.raises(FileNotFoundError, match="missing"):
        check_report.function(plan, {"exit_code": 0})
    (d / "_manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="manifest"):
        check_report.function(plan, {"exit_code": 0})


def test_check_report_verifies_the_reports_sha256_from_the_manifest(tmp_path):
    import json


    plan, d = _published(tmp_path)
    assert check_report.function(plan, {"exit_code": 0})["verdict"] == "warn"
    (d / "report.html").write_text("<html>changed</html>")
    with pytest.raises(ValueError, match=r"report\.html does not match the manifest"):
        check_report.function(plan, {"exit_code": 0})
    (d / "report.html").write_text("<html/>")
    report = json.loads((d / "report.json").read_text())
    (d / "report.json").write_text(json.dumps({**report, "verdict": {"verdict": "pass"}}))
    with pytest.raises(ValueError, match=r"report\.json does not match the manifest"):
        check_report.function(plan, {"exit_code": 0})


def test_check_report_rejects_exit_3_without_fail_verdict(tmp_path):
    plan, _ = _published(tmp_path, verdict="pass")
    with pytest.raises(ValueError, match="exited 3"):
        check_report.function(plan, {"exit_code": 3})


def _aws_conn(monkeypatch, conn_id: str, **conn) -> None:
    """An Airflow Connection given as AIRFLOW_CONN_<ID> (JSON), as the e2e tests and the
    demo give aws_default; the hooks cached for other connections are dropped."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "aws", **conn}))
    aws.s3_hook.cache_clear()


def test_check_report_and_alert_read_s3_through_the_plans_connection(
        tmp_path, s3_endpoint, monkeypatch):  # noqa: F811
    """No AWS_ENDPOINT_URL: the moto endpoint is known only to the Connection the plan names."""
    import boto3
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    _aws_conn(monkeypatch, "audit_s3", login="testing", password="testing-secret",
              extra={"endpoint_url": s3_endpoint, "region_name": "us-east-1"})
    _, local = _published(tmp_path)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="dag-reports")
    start = datetime(2026, 11, 19, tzinfo=UTC)
    plan = build_plan(start=start, end=start + timedelta(days=1), aws_conn_id="audit_s3",
                      settings=_settings(report_root="s3://dag-reports/audit"))
    prefix = plan["report_dir"].removeprefix("s3://dag-reports/")
    for f in local.iterdir():
        client.put_object(Bucket="dag-reports", Key=f"{prefix}/{f.name}", Body=f.read_bytes())
    summary = check_report.function(plan, {"exit_code": 0})
    assert summary["verdict"] == "warn" and summary["anomalies"] == {"lost_acked": 3}
    assert summary["report_json"] == f"s3://dag-reports/{prefix}/report.json"
    assert alert.function(plan, summary) == "notifier log"
    assert uris.on("audit_s3").glob_matches("s3://dag-reports/audit/dt=*/*/report.*") == \
        [f"s3://dag-reports/{prefix}/report.html", f"s3://dag-reports/{prefix}/report.json"]
    assert not uris.on("audit_s3").exists(f"s3://dag-reports/{prefix}/nothing.json")
    client.delete_object(Bucket="dag-reports", Key=f"{prefix}/_manifest.json")
    with pytest.raises(FileNotFoundError, match="manifest"):
        check_report.function(plan, {"exit_code": 0})


def test_the_job_gets_the_connections_s3_endpoint_region_and_credentials(monkeypatch):
    _aws_conn(monkeypatch, "lake_s3", login="AKIDEXAMPLE", password="wJalrXUtnFEMI-example",
              extra={"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"})
    env, said = aws.job_env("lake_s3")
    assert env == {"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
                   "AWS_DEFAULT_REGION": "eu-west-1", "AWS_REGION": "eu-west-1",
                   "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                   "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-example",
                   # '' (no token): an inherited AWS_SESSION_TOKEN must not pair with these keys
                   "AWS_SESSION_TOKEN": "", "AWS_SECURITY_TOKEN": ""}
    assert "wJalrXUtnFEMI" not in said and "http://127.0.0.1:9000" in said
    # no keys of its own (an instance role, say): only where S3 is, the chain does the rest
    _aws_conn(monkeypatch, "role_s3",
              extra={"service_config": {"s3": {"endpoint_url": "http://s3.internal:9000"}}})
    env, said = aws.job_env("role_s3")
    assert env == {"AWS_ENDPOINT_URL_S3": "http://s3.internal:9000"}
    assert "no credentials of its own" in said
    # no such Connection: the hook falls back to the standard chain, so does the job
    assert aws.job_env("no_such_connection") == (
        {}, "no Connection 'no_such_connection': the job uses the worker's own AWS credential "
            "chain, as the hook does")


def test_reconcile_pre_execute_hands_the_plans_connection_to_the_job(monkeypatch):
    from types import SimpleNamespace


    _aws_conn(monkeypatch, "lake_s3", login="AKIDEXAMPLE", password="wJalrXUtnFEMI-example",
              extra={"endpoint_url": "http://127.0.0.1:9000"})
    plan = {"aws_conn_id": "lake_s3", "pass_aws_conn_to_job": True, "out": "/srv/reports",
            "sources": {"sends": "s3://lake/sends/*", "broker": "/b/*", "ledger": "/l/*",
                        "events": None}}

    class TI:
        def xcom_pull(self, task_ids):
            assert task_ids == "audit.resolve_window"
            return plan

    task = SimpleNamespace(plan_task_id="audit.resolve_window", env_vars={"PYSPARK_PYTHON": "p"})
    job_environment({"task": task, "ti": TI()})
    assert task.env_vars["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:9000"
    assert task.env_vars["AWS_ACCESS_KEY_ID"] == "AKIDEXAMPLE"
    assert task.env_vars["PYSPARK_PYTHON"] == "p"  # the operator's own settings stay
    plan["pass_aws_conn_to_job"] = False  # the worker's own chain
    task.env_vars = {}
    job_environment({"task": task, "ti": TI()})
    assert task.env_vars == {}
    plan.update(pass_aws_conn_to_job=True, sources={"sends": "/s/*"})  # nothing on S3
    job_environment({"task": task, "ti": TI()})
    assert task.env_vars == {}


def test_plugin_manager_skips_the_package():
    """plugins/.airflowignore: the package is imported via sys.path, never as plugin files."""
    from airflow._shared.module_loading import find_path_from_directory

    assert list(find_path_from_directory(str(REPO / "plugins"), ".airflowignore", "glob")) == []
