"""The Airflow-native outputs at task level (no DAG run; tests/test_airflow_e2e.py has the one
run of all three): alerts through the providers' notifiers and Connections (Slack to a stand-in
for Slack's endpoint on 127.0.0.1, a closed port, SNS on a moto server), the report root's
Asset and its event, the OpenLineage datasets and data-quality facets of reconcile, and the
downstream DAG's ticket."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from airflow_helpers import published_window, slack_stand_in
from s3_server import s3_endpoint  # noqa: F401  (fixture: a moto server on 127.0.0.1)

REPO = Path(__file__).resolve().parents[1]
# the in-process Airflow settings come with airflow_helpers (imported above)

from delivery_audit_airflow import assets, downstream, lineage, notifiers  # noqa: E402
from delivery_audit_airflow.alerts import ALERT_LOGGER, notifier_settings  # noqa: E402
from delivery_audit_airflow.group import alert, check_report  # noqa: E402
from delivery_audit_airflow.settings import Settings  # noqa: E402

WID = "20261119T000000Z_20261120T000000Z"


def _published(root: Path, verdict: str = "fail") -> tuple[dict, Path]:
    """A window's plan and its folder as the publisher leaves it (manifest last)."""
    return published_window(root, Settings.of(report_root=str(root), data_root="/lake"),
                            verdict=verdict, wid=WID, reasons=["lost_acked = 3"],
                            anomalies={"lost_acked": 3, "dup_write": 0})


@pytest.fixture()
def slack_endpoint():
    with slack_stand_in() as endpoint:
        yield endpoint


def _slack_conn(monkeypatch, conn_id: str, host: str) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(
        {"conn_type": "slackwebhook", "host": f"{host}/services", "password": "T1/B2/TOKEN9"}))


def test_alert_goes_through_the_slack_providers_notifier_and_connection(
        tmp_path, slack_endpoint, monkeypatch):
    url, hook = slack_endpoint
    _slack_conn(monkeypatch, "slack_audit", url)
    plan, folder = _published(tmp_path)
    plan["notifier_param"] = {"type": "slack", "conn_id": "slack_audit"}
    summary = check_report.function(plan, {"exit_code": 3})
    assert alert.function(plan, summary) == "notifier slack (Connection 'slack_audit')"
    assert [r["path"] for r in hook.received] == ["/services/T1/B2/TOKEN9"]
    text = hook.received[0]["body"]["text"]
    assert text.startswith(f"Kafka delivery audit {WID}: FAIL")
    assert "1. [critical] 2026-11-19 01:36:40 UTC 3 acknowledged messages lost" in text
    assert f"Report: {folder}/report.html" in text
    assert f"All windows: {tmp_path}/index.html" in text


def test_a_notifier_on_a_closed_port_leaves_the_task_green_with_a_warning(
        tmp_path, monkeypatch, caplog):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _slack_conn(monkeypatch, "slack_closed", f"http://127.0.0.1:{port}")
    plan, _ = _published(tmp_path)
    plan["notifier_param"] = {"type": "slack", "conn_id": "slack_closed", "timeout_s": 2}
    summary = check_report.function(plan, {"exit_code": 3})
    with caplog.at_level(logging.WARNING, logger=ALERT_LOGGER):
        assert alert.function(plan, summary) == "log (notifier failed)"
    warnings = [r.getMessage() for r in caplog.records
                if r.name == ALERT_LOGGER and r.levelno == logging.WARNING]
    assert any(m.startswith("notifier slack (Connection 'slack_closed') failed (") for m in
               warnings), warnings
    assert any(m.startswith(f"AUDIT FAIL {WID}") for m in warnings)  # the alert, logged
    assert "TOKEN9" not in caplog.text and f"127.0.0.1:{port}/" not in caplog.text


def test_the_runs_notifier_param_beats_the_config_file_and_the_variable(tmp_path):
    config = tmp_path / "audit.yaml"
    config.write_text("notifier: {type: sns, topic_arn: 'arn:aws:sns:eu-west-1:1:t'}\n")
    plan = {"notifier": {"type": "log"}, "config_file": str(config)}
    assert notifier_settings(plan)["type"] == "sns"
    plan["notifier_param"] = {"type": "slack", "conn_id": "slack_audit"}
    assert notifier_settings(plan) == {"type": "slack", "conn_id": "slack_audit"}


def test_the_on_filter_and_the_missing_settings_of_the_provider_notifiers(tmp_path):
    settings = {"type": "slack", "conn_id": "c", "on": ["fail"]}
    assert notifiers.is_provider(settings) and not notifiers.is_provider({"type": "slack"})
    assert notifiers.wanted(settings, "fail") and not notifiers.wanted(settings, "warn")
    with pytest.raises(ValueError, match="target_arn"):
        notifiers.build({"type": "sns", "conn_id": "aws_default"}, "s", "t")
    with pytest.raises(ValueError, match="to"):
        notifiers.build({"type": "smtp", "conn_id": "smtp_default"}, "s", "t")
    smtp = notifiers.build({"type": "smtp", "conn_id": "smtp_x", "to": "sre@example.com"},
                           "Kafka delivery audit W: FAIL", "a <b>\nReport: x")
    assert type(smtp).__name__ == "SmtpNotifier" and smtp.smtp_conn_id == "smtp_x"
    assert smtp.html_content == "<pre>a &lt;b&gt;\nReport: x</pre>"
    assert notifiers.safe_reason(OSError("POST https://hooks.slack.com/services/T/B/X failed")) \
        == "OSError: POST <url> failed"


def test_alert_goes_through_the_amazon_providers_sns_notifier(
        tmp_path, s3_endpoint, monkeypatch):  # noqa: F811
    """SnsNotifier on an AWS Connection whose endpoint is the moto server; the message
    reaches an SQS queue subscribed to the topic."""
    import boto3

    kw = {"endpoint_url": s3_endpoint, "region_name": "us-east-1",
          "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    sns, sqs = boto3.client("sns", **kw), boto3.client("sqs", **kw)
    topic = sns.create_topic(Name="audit-alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="audit-alerts-q")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    monkeypatch.setenv("AIRFLOW_CONN_AWS_ALERTS", json.dumps({
        "conn_type": "aws", "login": "testing", "password": "testing",
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}))
    plan, folder = _published(tmp_path)
    plan["notifier_param"] = {"type": "sns", "conn_id": "aws_alerts", "target_arn": topic}
    summary = check_report.function(plan, {"exit_code": 3})
    assert alert.function(plan, summary) == "notifier sns (Connection 'aws_alerts')"
    got = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=2)["Messages"]
    body = json.loads(got[0]["Body"])
    assert body["Subject"] == f"Kafka delivery audit {WID}: FAIL"
    assert f"Report: {folder}/report.html" in body["Message"]


class _OutletEvents(dict):
    """outlet_events as the task runner gives it: asset → an object with .extra."""

    def __missing__(self, asset):
        self[asset] = type("Event", (), {"extra": None})()
        return self[asset]


def test_check_report_sets_the_asset_events_extra(tmp_path, monkeypatch):
    from delivery_audit_airflow import group

    plan, folder = _published(tmp_path)
    asset = assets.report_asset({assets.ASSET_ENV: str(tmp_path)})
    assert asset.uri == tmp_path.as_uri() and asset.name == asset.uri
    monkeypatch.setattr(group, "get_current_context",
                        lambda: {"task": type("T", (), {"outlets": [asset]})()})
    events = _OutletEvents()
    check_report.function(plan, {"exit_code": 3}, outlet_events=events)
    extra = events[asset].extra
    assert extra["window"] == WID and extra["verdict"] == "fail"
    assert extra["anomalies"] == {"lost_acked": 3}
    assert extra["report_json"] == f"{folder}/report.json"
    assert extra["index"] == f"{tmp_path}/index.html"
    json.dumps(extra)  # an event's extra is JSON


def test_the_assets_uri_at_parse_time():
    var = "AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS"
    assert assets.report_root_at_parse({var: '{"report_root": "s3://r/delivery"}'}) == \
        "s3://r/delivery"
    assert assets.report_root_at_parse({var: '{"report_root": "s3://r/d"}',
                                        assets.ASSET_ENV: "s3://other/x"}) == "s3://other/x"
    default = assets.report_root_at_parse({var: "not json"})
    assert default == str(REPO / "demo" / "airflow" / "reports")
    assert assets.as_uri("/srv/reports/") == "file:///srv/reports"
    assert assets.as_uri("s3://r/delivery/") == "s3://r/delivery"


def test_an_s3_bucket_root_is_its_assets_uri_and_a_prefix_is_named_apart(capsys):
    """Airflow keeps s3://bucket as s3://bucket/: a run publishing at the bucket's root is
    the Asset's (no 'not the Asset's URI' line); one under a report_prefix is named apart."""
    asset = assets.report_asset({assets.ASSET_ENV: "s3://reports"})
    assert asset.uri == "s3://reports/"
    summary = {"verdict": "fail", "report_json": "r.json", "report_html": "r.html"}
    for out, apart in (("s3://reports", False), ("s3://reports/backfill/x", True)):
        plan = {"window": {"id": WID, "start": "s", "end": "e"}, "out": out,
                "report_dir": f"{out}/dt=2026-11-19/{WID}"}
        extra = assets.emit(_OutletEvents(), [asset], plan, summary, None)
        assert extra["report_root"] == out
        assert ("is not the Asset's URI" in capsys.readouterr().out) is apart, out


def test_the_downstream_dag_is_scheduled_on_the_asset_check_report_emits():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    outlets = {d: bag.dags[d].get_task("audit.check_report").outlets
               for d in ("delivery_audit_daily", "delivery_audit_backfill")}
    on_report = bag.dags["delivery_audit_on_report"]
    scheduled = list(on_report.timetable.asset_condition.objects)
    assert [a.uri for a in scheduled] == [o[0].uri for o in outlets.values()][:1]
    assert [o[0].uri for o in outlets.values()] == [scheduled[0].uri] * 2
    assert on_report.get_task("read_report").inlets == scheduled


def test_lineage_names_every_input_the_report_folder_and_the_quality(tmp_path):
    plan, folder = _published(tmp_path)
    start = lineage.operator_lineage(plan)
    assert sorted((d.namespace, d.name) for d in start.inputs) == sorted(
        ("file", f"/lake/{s}/dt=*/*.jsonl*") for s in ("sends", "broker", "ledger", "events"))
    assert [(d.namespace, d.name) for d in start.outputs] == [
        ("file", str(folder)), ("file", f"{folder}/anomalies")]
    report = json.loads((folder / "report.json").read_text())
    done = lineage.operator_lineage(plan, report)
    table = done.outputs[1]
    got = {a.name: (a.success, a.actual) for a in
           table.facets["dataQualityAssertions"].assertions}
    assert got == {"verdict": (False, "fail"), "lost_acked": (False, "3"),
                   "dup_write": (True, "0")}
    assert table.outputFacets["outputStatistics"].rowCount == 3
    assert lineage.dataset_name("s3://lake/ledger/dt=*/x.jsonl") == ("s3://lake",
                                                                     "ledger/dt=*/x.jsonl")


def test_the_operator_reports_lineage_from_its_rendered_plan(tmp_path):
    from delivery_audit_airflow.operators import AuditSparkSubmitOperator

    plan, folder = _published(tmp_path)
    op = AuditSparkSubmitOperator(task_id="reconcile", plan_task_id="audit.resolve_window",
                                  application="jobs/reconcile.py")
    assert "plan_json" in op.template_fields
    assert op.get_openlineage_facets_on_start().inputs == []  # not rendered: no plan
    op.plan_json = json.dumps(plan)  # as rendered before the task starts
    assert len(op.get_openlineage_facets_on_start().inputs) == 4
    done = op.get_openlineage_facets_on_complete(None)
    assert done.outputs[0].name == str(folder)
    assert "dataQualityAssertions" in done.outputs[0].facets


def test_the_downstream_tickets_a_fail_and_pages_on_the_second(tmp_path):
    plan, folder = _published(tmp_path / "r")
    extra = assets.event_extra(plan, check_report.function(plan, {"exit_code": 3}),
                               f"{tmp_path}/r/index.html")
    first = downstream.handle(extra, "pass", str(tmp_path / "t"))
    assert first["action"] == "ticket" and first["page"] is False
    ticket = json.loads(Path(first["ticket"]).read_text())
    assert ticket["findings"] == ["3 acknowledged messages lost"]
    assert ticket["report"] == f"{folder}/report.html"
    assert downstream.handle(extra, "fail", str(tmp_path / "t"))["action"] == "page"
    wrong = {**extra, "window": "20261118T000000Z_20261119T000000Z"}
    with pytest.raises(ValueError, match="the event names"):
        downstream.handle(wrong, None, str(tmp_path / "t"))
    assert downstream.handle(None, None, str(tmp_path / "t")) == {"action": "none"}
