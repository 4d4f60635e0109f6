"""Alerts: the log notifier (caplog) and the Slack notifier against a local HTTP server."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from report_fixtures import make_report

from delivery_audit.notify import (
    ALERT_LOGGER,
    FilteredNotifier,
    LogNotifier,
    SlackNotifier,
    SnsNotifier,
    notifier_from_config,
    summary_lines,
)

LINK = "s3://bucket/reports/dt=2025-01-01/W/report.html"


def failing_report():
    return make_report(counts={"lost_acked": 2, "dup_write": 5, "pending": 1},
                       verdict={"verdict": "fail", "reasons": ["lost_acked = 2 (critical)"]})


def test_log_notifier_logs_verdict_top_anomalies_and_link(caplog):
    with caplog.at_level(logging.INFO, logger=ALERT_LOGGER):
        LogNotifier().send(failing_report(), LINK)
    recs = [r for r in caplog.records if r.name == ALERT_LOGGER]
    assert len(recs) == 1 and recs[0].levelno == logging.ERROR
    msg = recs[0].getMessage()
    assert "FAIL" in msg and LINK in msg
    assert "lost_acked=2 (critical)" in msg and "dup_write=5" in msg
    assert msg.index("lost_acked=2") < msg.index("dup_write=5")  # worst severity first


def narrated_report():
    findings = [{"id": f"f{i}", "severity": sev, "at": f"2025-01-01T0{i}:00:00.000Z",
                 "cause": cause, "title": f"title {i}", "text": f"text {i}",
                 "fix": f"fix {i}" if i < 3 else None}
                for i, (sev, cause) in enumerate((("critical", "acks_loss"),
                                                  ("warning", "eviction"),
                                                  ("warning", "producer_retry"),
                                                  ("info", "lag")), 1)]
    return {**failing_report(), "narrative": findings}


def test_alerts_carry_the_first_findings_and_the_links_to_the_page_and_the_index(caplog):
    with caplog.at_level(logging.INFO, logger=ALERT_LOGGER):
        LogNotifier().send(narrated_report(), LINK)
    msg = caplog.records[-1].getMessage()
    assert "1. [critical] 2025-01-01 01:00:00 UTC title 1\n   text 1\n   Fix: fix 1" in msg
    assert "3. [warning] 2025-01-01 03:00:00 UTC title 3\n   text 3\n" in msg
    assert "title 4" not in msg and "… and 1 more finding in the report." in msg
    assert msg.index("What happened:") < msg.index("Report: " + LINK)
    assert "All windows: s3://bucket/reports/index.html" in msg  # <root>/index.html
    # an index given wins; a link outside the root's layout names no index
    assert summary_lines(narrated_report(), LINK, "file:///r/index.html")[-1] == \
        "All windows: file:///r/index.html"
    assert not [x for x in summary_lines(failing_report(), "https://x/page.html")
                if x.startswith("All windows")]
    assert not [x for x in summary_lines(failing_report(), LINK) if "What happened" in x]


def test_log_notifier_pass_is_info(caplog):
    with caplog.at_level(logging.INFO, logger=ALERT_LOGGER):
        LogNotifier().send(make_report(), LINK)
    assert caplog.records[-1].levelno == logging.INFO
    assert "PASS" in caplog.records[-1].getMessage()


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []
    status = 200

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append({"path": self.path, "body": json.loads(body),
                                    "ctype": self.headers["Content-Type"]})
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture()
def webhook():
    _Hook.received = []
    _Hook.status = 200
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/services/T000/B000/SECRET", _Hook
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_slack_notifier_posts_json(webhook):
    url, hook = webhook
    SlackNotifier(url, timeout_s=5).send(narrated_report(), LINK, index="s3://bucket/i.html")
    assert len(hook.received) == 1
    got = hook.received[0]
    assert got["path"] == "/services/T000/B000/SECRET"
    assert got["ctype"].split(";")[0] == "application/json"  # slack_sdk adds ;charset=utf-8
    assert "FAIL" in got["body"]["text"] and LINK in got["body"]["text"]
    assert "title 1" in got["body"]["text"] and "s3://bucket/i.html" in got["body"]["text"]


def test_slack_notifier_from_config_env(webhook, monkeypatch):
    url, hook = webhook
    monkeypatch.setenv("MY_HOOK", url)
    n = notifier_from_config({"type": "slack", "webhook_env": "MY_HOOK", "on": ["fail"]})
    assert isinstance(n, FilteredNotifier)
    n.send(make_report(), LINK)  # pass: filtered out
    n.send(failing_report(), LINK, index="s3://bucket/reports/index.html")
    assert len(hook.received) == 1
    assert "All windows: s3://bucket/reports/index.html" in hook.received[0]["body"]["text"]


def test_slack_notifier_http_error_is_logged_not_raised(webhook, caplog):
    url, hook = webhook
    hook.status = 500
    with caplog.at_level(logging.WARNING, logger=ALERT_LOGGER):
        SlackNotifier(url, timeout_s=5).send(failing_report(), LINK)
    text = caplog.text
    assert "HTTP 500" in text and "SECRET" not in text


def test_slack_notifier_unreachable_is_logged_not_raised(caplog):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger=ALERT_LOGGER):
        SlackNotifier(f"http://127.0.0.1:{port}/hooks/SECRET", timeout_s=2).send(
            failing_report(), LINK)
    assert "not delivered" in caplog.text and "SECRET" not in caplog.text


def test_slack_without_url_warns(caplog, monkeypatch):
    monkeypatch.delenv("SLACK_WEBHOOK_URL", raising=False)
    with caplog.at_level(logging.WARNING, logger=ALERT_LOGGER):
        SlackNotifier().send(failing_report(), LINK)
    assert "no webhook URL" in caplog.text


def test_sns_notifier_publishes_and_swallows_errors(caplog):
    class FakeSns:
        def __init__(self, fail=False):
            self.calls, self.fail = [], fail

        def publish(self, **kw):
            if self.fail:
                raise RuntimeError("boom")
            self.calls.append(kw)

    ok = FakeSns()
    SnsNotifier("arn:aws:sns:us-east-1:123456789012:audit", client=ok).send(
        failing_report(), LINK)
    assert ok.calls[0]["TopicArn"].endswith(":audit")
    assert len(ok.calls[0]["Subject"]) <= 100 and LINK in ok.calls[0]["Message"]
    SnsNotifier("arn:aws:sns:us-east-1:123456789012:audit", client=ok).send(
        narrated_report(), LINK)
    assert "title 1" in ok.calls[1]["Message"] and "title 1" not in ok.calls[1]["Subject"]
    with caplog.at_level(logging.WARNING, logger=ALERT_LOGGER):
        SnsNotifier("arn:aws:sns:us-east-1:1:a", client=FakeSns(fail=True)).send(
            failing_report(), LINK)
    assert "not delivered" in caplog.text


def test_notifier_from_config():
    assert isinstance(notifier_from_config(None), LogNotifier)
    assert isinstance(notifier_from_config({"type": "log"}), LogNotifier)
    assert isinstance(notifier_from_config({"type": "sns", "topic_arn": "arn:x"}), SnsNotifier)
    with pytest.raises(ValueError):
        notifier_from_config({"type": "pager"})
    with pytest.raises(ValueError):
        notifier_from_config({"type": "log", "on": ["sometimes"]})
