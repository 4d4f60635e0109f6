"""Security: report HTML escapes every data value; credentials never reach logs, reports or
messages; output locations are validated before any Spark work.

One real audit (tests/hostile_audit.py, shared with test_privacy.py) runs markup payloads in
keys, member ids, producer ids, group ids, topics, error texts, event details and quarantined
rows through the CLI, with secrets in the environment and in the notifier config.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import traceback
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hostile_audit import (
    AWS_SECRET,
    GROUP,
    KEY_A,
    KEY_B,
    MEMBER_1,
    MEMBER_2,
    PAYLOADS,
    SECRETS,
    SLACK_SECRET,
    TOPIC,
    WINDOW,
    closed_port,
    text_of,
)
from markupsafe import escape
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text a browser shows."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def parse_html(html: str) -> Elements:
    p = Elements()
    p.feed(html)
    p.close()
    return p


# --------------------------------------------------------------------------- HTML escaping


def test_report_html_shows_payloads_only_as_text(plain_audit):
    html = (plain_audit.dir / "report.html").read_text("utf-8")
    page = parse_html(html)
    names = {t for t, _ in page.tags}
    assert not names & {"script", "img", "iframe", "object", "embed", "b", "link"}
    handlers = [(t, a) for t, attrs in page.tags for a, _ in attrs if a.lower().startswith("on")]
    assert handlers == []
    for payload in PAYLOADS:
        assert payload not in html, payload
    # the data did reach the page, escaped: the browser shows the literal strings
    shown = "".join(page.text)
    for value in (TOPIC, GROUP, KEY_A, KEY_B, MEMBER_1, MEMBER_2):
        assert escape(value) in html, value
        assert value in shown, value


def test_report_html_svg_text_is_escaped(plain_audit):
    """Topic labels in the heat map and member ids in the timeline's tooltips are SVG text."""
    html = (plain_audit.dir / "report.html").read_text("utf-8")
    heatmap = html[html.index('id="heatmap"'):html.index('id="latency"')]
    assert "<svg" in heatmap and f"{escape(TOPIC)} [0]" in heatmap
    timeline = html[html.index('id="timeline"'):html.index('id="heatmap"')]
    assert escape(GROUP) in timeline and escape(MEMBER_1) in timeline


def test_json_outputs_stay_valid_and_carry_the_data_verbatim(plain_audit):
    run = plain_audit
    assert run.exit_code == 3, run.output  # lost_acked is critical: verdict fail
    assert run.report["anomalies"]["lost_acked"]["count"] == 1
    assert run.report["anomalies"]["dup_write"]["count"] == 1
    assert run.report["anomalies"]["redelivery"]["count"] == 1
    assert list(run.report["groups"]) == [GROUP]
    assert run.report["judged_by_topic"] == {TOPIC: 6}
    for name in ("report.json", "validation/inputs.json", "validation/results.json",
                 "_manifest.json"):
        json.loads((run.dir / name).read_text("utf-8"))


# --------------------------------------------------------------------------- secrets


def test_no_secret_in_outputs_logs_or_console(plain_audit):
    run = plain_audit
    # the notifier ran and failed (closed port), so its error path was exercised
    assert any("slack notifier: cannot reach http://127.0.0.1:" in line for line in run.logs)
    assert len(run.files()) >= 6
    haystacks = {"console": run.output, "logs": "\n".join(run.logs)}
    haystacks.update({str(p.relative_to(run.dir)): text_of(p) for p in run.files()})
    for where, text in haystacks.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret!r} in {where}"


def test_slack_notifier_never_echoes_a_malformed_webhook(caplog):
    from delivery_audit.notify import ALERT_LOGGER, SlackNotifier

    report = {"verdict": {"verdict": "fail", "reasons": ["x"]}, "window": {"id": "w"}}
    bad_urls = [f"hooks.slack.com/services/T0/B0/{SLACK_SECRET}",  # no scheme
                f"https://hooks.slack.com/services/T0/B0/{SLACK_SECRET} x",  # a space
                f"http://user:{SLACK_SECRET}@127.0.0.1:{closed_port()}/services/x"]
    with caplog.at_level(logging.DEBUG, logger=ALERT_LOGGER):
        for url in bad_urls:
            SlackNotifier(url, timeout_s=2).send(report, "link")  # must not raise
    assert caplog.text.count("alert not delivered") == len(bad_urls)
    assert SLACK_SECRET not in caplog.text


def test_notifier_settings_and_config_repr_hide_the_webhook():
    from delivery_audit.config import AuditConfig
    from delivery_audit.notify import describe

    url = f"https://hooks.slack.com/services/T0/B0/{SLACK_SECRET}"
    cfg = AuditConfig.from_dict({"notifier": {"type": "slack", "webhook_url": url,
                                              "webhook_env": "MY_HOOK"}})
    assert cfg.notifier["webhook_url"] == url  # still usable
    assert SLACK_SECRET not in repr(cfg)
    shown = describe(cfg.notifier)
    assert shown == {"type": "slack", "webhook_url": "***", "webhook_env": "MY_HOOK"}


def test_redact_text_masks_urls_signatures_and_env_secrets():
    from delivery_audit.redaction import redact_text

    text = (f"endpoint http://AKIA:{AWS_SECRET}@minio:9000/b, "
            f"hook https://hooks.slack.com/services/T0/B0/{SLACK_SECRET}, "
            "get https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=f00d"
            f" and {AWS_SECRET[::-1]}")
    out = redact_text(text, environ={"MY_SECRET_TOKEN": AWS_SECRET[::-1], "SHORT_TOKEN": "1"})
    for secret in (AWS_SECRET, SLACK_SECRET, "f00d", "AKIA%2F1", AWS_SECRET[::-1]):
        assert secret not in out
    assert "http://***@minio:9000/b" in out and "hooks.slack.com/services/***" in out


def _staging(tmp_path: Path) -> Path:
    staging = tmp_path / "staging"
    (staging / "anomalies").mkdir(parents=True)
    (staging / "report.json").write_text(json.dumps({"window": {"id": "W"}}))
    (staging / "anomalies" / "part-0.parquet").write_bytes(b"PAR1")
    return staging


REL = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"


def _assert_clean_failure(exc_info, caplog, secret: str) -> None:
    message = str(exc_info.value)
    shown = "".join(traceback.format_exception(exc_info.value))
    assert "publishing to s3://bucket/reports" in message
    assert secret not in message and secret not in shown and secret not in caplog.text


def test_publish_failure_to_an_unreachable_endpoint_names_no_credential(tmp_path, caplog,
                                                                        monkeypatch):
    """botocore quotes the endpoint URL, user-info included; publish_report masks it."""
    import boto3
    from botocore.config import Config

    from delivery_audit.audit import publish_report
    from delivery_audit.storage import PublishError

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTSECURITY01")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_ATTEMPTS", "1")
    password = "EndpointPassw0rdInUrl"
    client = boto3.client("s3", endpoint_url=f"http://minio:{password}@127.0.0.1:{closed_port()}",
                          config=Config(retries={"max_attempts": 1}, connect_timeout=2))
    with caplog.at_level(logging.DEBUG, logger="delivery_audit"), \
            pytest.raises(PublishError) as exc_info:
        publish_report(_staging(tmp_path), "s3://bucket/reports", REL, s3_client=client)
    _assert_clean_failure(exc_info, caplog, password)
    assert AWS_SECRET not in str(exc_info.value)


def test_publish_failure_on_a_bad_endpoint_setting_names_no_credential(tmp_path, caplog,
                                                                       monkeypatch):
    from delivery_audit.audit import publish_report
    from delivery_audit.storage import PublishError

    password = "EndpointPassw0rdInEnv"
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://minio:{password}@127.0.0.1:notaport")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTSECURITY01")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_ATTEMPTS", "1")
    with caplog.at_level(logging.DEBUG, logger="delivery_audit"), \
            pytest.raises(PublishError) as exc_info:
        publish_report(_staging(tmp_path), "s3://bucket/reports", REL)
    _assert_clean_failure(exc_info, caplog, password)


def test_cli_traceback_shows_no_locals(tmp_path):
    """An unexpected error in the CLI prints a traceback without local variables (the
    config, with its webhook URL, is a local of `run`)."""
    script = textwrap.dedent(f"""
        from delivery_audit.cli import app

        @app.command("boom")
        def boom() -> None:
            webhook = "https://hooks.slack.com/services/T0/B0/" + {SLACK_SECRET!r}[::-1]
            raise RuntimeError("unexpected")

        app()
    """)
    proc = subprocess.run([sys.executable, "-c", script, "boom"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 1
    assert "RuntimeError" in proc.stderr and "unexpected" in proc.stderr
    assert SLACK_SECRET[::-1] not in proc.stderr + proc.stdout


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize("root", [
    "reports", "./reports", "/srv/audit/reports", "reports/", "file:///srv/reports",
    "s3://audit-reports", "s3://audit-reports/daily/dt=x", "s3a://b.c-d/prefix/",
])
def test_report_root_accepted(root):
    from delivery_audit.paths import check_report_root

    assert check_report_root(root) == root


@pytest.mark.parametrize("root, why", [
    ("../reports", "'..'"), ("/srv/reports/../../etc", "'..'"), ("reports/..", "'..'"),
    ("file:///srv/../etc", "'..'"), ("s3://bucket/a/../b", "'..'"),
    ("s3://bucket/a/./b", "'..'"), ("s3://bucket//etc/passwd", "empty segment"),
    ("s3://bucket/a b", "characters other"), ("s3://Bad_Bucket/x", "bucket"),
    ("s3://../x", "bucket"), ("reports\x00.json", "control"), ("rep\norts", "control"),
    ("rep\torts", "control"), ("rep\u202eorts", "control"), ("rep\x7forts", "control"),
    ("http://evil.example/x", "scheme"), ("file://relative/x", "absolute"), ("", "empty"),
    ("x" * 2000, "longer"),
])
def test_report_root_rejected(root, why):
    from delivery_audit.paths import PathError, check_report_root

    with pytest.raises(PathError, match=why):
        check_report_root(root)


@pytest.mark.parametrize("prefix", ["", "incidents/INC-123", "a.b_c-d", "a/b/c/d/e"])
def test_prefix_accepted(prefix):
    from delivery_audit.paths import check_prefix

    assert check_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", [
    "..", "../x", "a/../b", "/abs", "a//b", "a/./b", ".hidden", "a/", "a\nb", "a\n",
    "a\x00", "a b", "a/b/c/d/e/f", "x" * 65, "a;rm -rf", "a$b", "~/x", "a\\b",
])
def test_prefix_rejected(prefix):
    from delivery_audit.paths import PathError, check_prefix

    with pytest.raises(PathError):
        check_prefix(prefix)


def test_window_id_and_folder():
    from delivery_audit.core.window import AuditWindow
    from delivery_audit.paths import PathError, check_relative_dir, check_window_id

    w = AuditWindow.of("2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z")
    assert check_window_id(w.window_id) == w.window_id
    assert check_relative_dir(w.relative_dir) == w.relative_dir
    for bad in ("../20261119T000000Z_20261120T000000Z", "20261119T000000Z_20261120T000000Z\n",
                "20261119T000000Z", "20261119T000000Z_20261120T000000Z/..", ""):
        with pytest.raises(PathError):
            check_window_id(bad)
        with pytest.raises(PathError):
            check_relative_dir(f"dt=2026-11-19/{bad}")


def _plan():
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    if str(REPO / "plugins") not in sys.path:
        sys.path.append(str(REPO / "plugins"))
    from delivery_audit_airflow import plan

    return plan


BACKFILL = {"start": "2026-11-19T00:00:00Z", "end": "2026-11-20T00:00:00Z"}


@pytest.mark.parametrize("params", [
    {"report_prefix": "incidents/../../etc"}, {"report_prefix": "/etc"},
    {"report_prefix": "inc\n"}, {"report_prefix": "inc\x00"}, {"report_prefix": "a\u2028b"},
    {"report_prefix": "/".join(["abcdefghij" * 4] * 5)},  # 204 characters: over the maximum
    {"report_prefix": ["a"]}, {"topics": ["orders\n"]}, {"topics": ["../x"]},
    {"groups": ["-rf"]}, {"groups": "a,b c"}, {"start": "2026-11-19T00:00:00Z\n"},
    {"grace_minutes": True},
])
def test_backfill_params_rejected(params):
    plan = _plan()
    with pytest.raises(plan.PlanError):
        plan.validate_backfill({**BACKFILL, **params}, max_days=7)


def test_backfill_params_accepted_and_dag_patterns_agree():
    plan = _plan()
    from delivery_audit.paths import PathError, check_prefix

    req = plan.validate_backfill({**BACKFILL, "report_prefix": "incidents/INC-123",
                                  "topics": "orders, payments", "groups": ["billing"],
                                  "grace_minutes": 30}, max_days=7)
    assert req["report_prefix"] == "incidents/INC-123"
    assert req["topics"] == ["orders", "payments"] and req["grace_minutes"] == 30.0
    # the DAG's Param pattern and the engine's prefix rule agree on these
    import re

    for p in ("", "incidents/INC-123", "a/b/c/d/e", "../x", "/x", "a//b", "a b"):
        by_dag = re.fullmatch(plan.PREFIX_PATTERN, p) is not None
        try:
            check_prefix(p)
            by_engine = True
        except PathError:
            by_engine = False
        assert by_dag == by_engine, p


def test_plan_refuses_a_traversing_report_root():
    plan = _plan()
    from datetime import UTC, datetime, timedelta

    from delivery_audit_airflow.settings import Settings

    start = datetime(2026, 11, 19, tzinfo=UTC)
    for root in ("/srv/reports/../../etc", "s3://bucket//x", "/srv/rep\norts"):
        with pytest.raises(plan.PlanError, match="report root"):
            plan.build_plan(start=start, end=start + timedelta(days=1),
                            settings=Settings.of(report_root=root))


@pytest.mark.parametrize("args, why", [
    (["--out", "../reports"], "'..'"),
    (["--out", "s3://bucket//etc"], "empty segment"),
    (["--out", "reports\x1b[2J"], "control"),
    (["--out", "reports", "--topic", "orders\r\nX"], "control"),
])
def test_cli_rejects_bad_locations_before_spark(args, why, tmp_path, monkeypatch):
    """Rejected with a clear message and exit 1 before a SparkSession is asked for."""
    import delivery_audit.spark
    from delivery_audit.cli import app

    def no_spark(*a, **k):
        raise AssertionError("Spark must not start for a rejected location")

    monkeypatch.setattr(delivery_audit.spark, "get_spark", no_spark)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")  # no wrapped error lines
    base = ["run", "--sends", "s.jsonl", "--broker", "b.jsonl", "--ledger", "l.jsonl", *WINDOW]
    result = CliRunner().invoke(app, [*base, *args])
    assert result.exit_code == 1, result.output
    assert "error:" in result.output and why in result.output
    assert not isinstance(result.exception, AssertionError)
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere
