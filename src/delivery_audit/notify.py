"""Data-quality alerts: tell someone the verdict, what happened (the narrative's first
findings) and where the report and the report root's index of windows are.

A notifier never fails the audit: network and service errors are logged, not raised.
Configuration (``notifier`` in the audit config)::

    {"type": "log"}                                    # default
    {"type": "slack", "webhook_url": "https://hooks.slack.com/...", "timeout_s": 10}
    {"type": "slack", "webhook_env": "SLACK_WEBHOOK_URL"}   # the URL from the environment
    {"type": "sns", "topic_arn": "arn:aws:sns:...", "region": "eu-west-1"}

Any of them takes ``"on": ["warn", "fail"]`` to stay quiet for the other verdicts.
"""

from __future__ import annotations

import http.client
import logging
import os
import re
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from slack_sdk.webhook import WebhookClient

from delivery_audit.anomalies import BY_NAME, SEVERITIES
from delivery_audit.redaction import redact_mapping, redact_text

ALERT_LOGGER = "delivery_audit.alerts"
log = logging.getLogger(ALERT_LOGGER)
#: slack_sdk's own logger for the webhook client, silenced: it quotes the webhook URL (a
#: secret) at DEBUG and INFO ("Going to retry the same request: POST <url>") and its errors;
#: this module logs each outcome itself, without the URL
_SDK_LOG = logging.getLogger(f"{ALERT_LOGGER}.slack_sdk")
_SDK_LOG.disabled = True
_SDK_LOG.propagate = False

VERDICTS = ("pass", "warn", "fail")
NARRATED = 3  # the narrative's first findings an alert carries
# a window's page in the report root's layout: <root>/dt=YYYY-MM-DD/<window id>/report.html
_WINDOW_PAGE = re.compile(r"^(?P<root>.+?)/dt=\d{4}-\d{2}-\d{2}/[^/]+/report\.html$")


@runtime_checkable
class Notifier(Protocol):
    def send(self, report: dict, link: str, index: str | None = None) -> None: ...


# --------------------------------------------------------------------------- message


def verdict_of(report: dict) -> str:
    v = report.get("verdict")
    if isinstance(v, dict):
        v = v.get("verdict")
    return str(v or "unknown")


def top_anomalies(report: dict, n: int = 5) -> list[tuple[str, int, str]]:
    """(name, count, severity) of the anomalies with a count > 0, worst severity first."""
    rows = []
    for name, entry in (report.get("anomalies") or {}).items():
        count = int((entry or {}).get("count") or 0)
        if count > 0:
            sev = (entry or {}).get("severity") or getattr(BY_NAME.get(name), "severity", "info")
            rank = SEVERITIES.index(sev) if sev in SEVERITIES else len(SEVERITIES)
            rows.append((rank, -count, name, count, sev))
    rows.sort()
    return [(name, count, sev) for _, _, name, count, sev in rows[:n]]


def index_link(link: str | None) -> str | None:
    """The report root's index (``<root>/index.html``) of a window page's link in the
    root's layout (``<root>/dt=…/<window id>/report.html``); None for any other link."""
    m = _WINDOW_PAGE.match(link or "")
    return f"{m['root']}/index.html" if m else None


def narrative_lines(report: dict, n: int = NARRATED) -> list[str]:
    """The narrative's first ``n`` findings (severity, time, title; text; fix) and how
    many more the report tells."""
    findings = [f for f in report.get("narrative") or [] if isinstance(f, dict)]
    if not findings:
        return []
    lines = ["What happened:"]
    for i, f in enumerate(findings[:n], 1):
        at = f.get("at") if isinstance(f.get("at"), str) else ""
        when = f" {at[:19].replace('T', ' ')} UTC" if at else ""
        lines.append(f"{i}. [{f.get('severity', '?')}]{when} {f.get('title', '')}")
        if f.get("text"):
            lines.append(f"   {f['text']}")
        if f.get("fix"):
            lines.append(f"   Fix: {f['fix']}")
    if len(findings) > n:
        more = len(findings) - n
        lines.append(f"… and {more} more finding{'s' if more > 1 else ''} in the report.")
    return lines


def summary_lines(report: dict, link: str, index: str | None = None) -> list[str]:
    """The alert's text: verdict, reasons, the narrative's first findings, the top
    anomalies, the report's link and the index's (``index``, else derived from
    ``link``: index_link)."""
    window = report.get("window") or {}
    verdict = verdict_of(report)
    lines = [f"Kafka delivery audit {window.get('id', '?')}: {verdict.upper()}"]
    reasons = (report.get("verdict") or {}).get("reasons") if isinstance(
        report.get("verdict"), dict) else None
    for reason in (reasons or [])[:5]:
        lines.append(f"- {reason}")
    lines += narrative_lines(report)
    top = top_anomalies(report)
    if top:
        lines.append("Top anomalies: " + ", ".join(f"{n}={c} ({s})" for n, c, s in top))
    else:
        lines.append("No anomalies.")
    if "judged" in report:
        lines.append(f"Judged messages: {report['judged']}")
    if link:
        lines.append(f"Report: {link}")
    index = index or index_link(link)
    if index:
        lines.append(f"All windows: {index}")
    return lines


# --------------------------------------------------------------------------- notifiers


class LogNotifier:
    """Logs the verdict through logging (logger ``delivery_audit.alerts``)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or log

    def send(self, report: dict, link: str, index: str | None = None) -> None:
        verdict = verdict_of(report)
        level = {"fail": logging.ERROR, "warn": logging.WARNING}.get(verdict, logging.INFO)
        self.logger.log(level, "\n".join(summary_lines(report, link, index)))


class SlackNotifier:
    """Posts to a Slack incoming webhook (JSON ``{"text": ...}``) with a timeout, through
    slack_sdk's ``WebhookClient`` (which retries once on a connection error)."""

    def __init__(self, webhook_url: str | None = None, *, webhook_env: str = "SLACK_WEBHOOK_URL",
                 timeout_s: float = 10.0) -> None:
        self.webhook_url = webhook_url or os.environ.get(webhook_env) or ""
        self.webhook_env = webhook_env
        self.timeout_s = float(timeout_s)

    def _where(self) -> str:
        # the webhook path is a secret: only ever show the host (without any user-info)
        parts = urlsplit(self.webhook_url)
        host = parts.netloc.rsplit("@", 1)[-1]
        return f"{parts.scheme}://{host}/…" if host else "(invalid URL)"

    def _redact(self, reason: object) -> str:
        """An error text without the webhook URL, its path or any credential in it."""
        parts = urlsplit(self.webhook_url)
        userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else None
        return redact_text(reason, extra=[self.webhook_url, parts.path, parts.path.lstrip("/"),
                                          userinfo])

    def send(self, report: dict, link: str, index: str | None = None) -> None:
        if not self.webhook_url:
            log.warning("slack notifier: no webhook URL (config webhook_url or env %s); "
                        "alert not sent", self.webhook_env)
            return
        verdict = verdict_of(report)
        icon = {"pass": ":white_check_mark:", "warn": ":warning:", "fail": ":x:"}.get(verdict, "")
        text = f"{icon} " + "\n".join(summary_lines(report, link, index))
        try:
            # built inside the try: a malformed URL raises here, and its message quotes it
            client = WebhookClient(self.webhook_url, timeout=max(1, round(self.timeout_s)),
                                   logger=_SDK_LOG)
            resp = client.send(text=text.strip())
        except (OSError, ValueError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            log.warning("slack notifier: cannot reach %s (%s); alert not delivered",
                        self._where(), self._redact(reason))
            return
        if not 200 <= resp.status_code < 300:
            log.warning("slack notifier: %s answered HTTP %s; alert not delivered",
                        self._where(), resp.status_code)
            return
        log.info("slack notifier: alert delivered to %s (HTTP %s)", self._where(),
                 resp.status_code)


class SnsNotifier:
    """Publishes to an SNS topic (boto3, standard credential chain)."""

    def __init__(self, topic_arn: str, *, region: str | None = None, client: Any = None) -> None:
        if not topic_arn:
            raise ValueError("sns notifier needs topic_arn")
        self.topic_arn = topic_arn
        self.region = region
        self._client = client

    def _sns(self) -> Any:
        if self._client is None:
            import boto3

            kwargs = {"region_name": self.region} if self.region else {}
            self._client = boto3.client("sns", **kwargs)
        return self._client

    def send(self, report: dict, link: str, index: str | None = None) -> None:
        lines = summary_lines(report, link, index)
        subject = lines[0][:100]
        try:
            self._sns().publish(TopicArn=self.topic_arn, Subject=subject,
                                Message="\n".join(lines))
        except Exception as exc:  # noqa: BLE001 - an alert must not fail the audit
            code = ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code")
            log.warning("sns notifier: publish to %s failed (%s); alert not delivered",
                        self.topic_arn, code or type(exc).__name__)
            return
        log.info("sns notifier: alert published to %s", self.topic_arn)


class FilteredNotifier:
    """Only passes on the verdicts listed in ``on``."""

    def __init__(self, inner: Notifier, on: tuple[str, ...]) -> None:
        self.inner = inner
        self.on = on

    def send(self, report: dict, link: str, index: str | None = None) -> None:
        if verdict_of(report) in self.on:
            self.inner.send(report, link, index)


def describe(notifier_cfg: dict | None) -> dict:
    """Notifier settings safe to log or show: webhook URLs and other secrets masked."""
    return redact_mapping(dict(notifier_cfg or {}))


def notifier_from_config(notifier_cfg: dict | None) -> Notifier:
    cfg = dict(notifier_cfg or {"type": "log"})
    kind = str(cfg.get("type", "log")).lower()
    notifier: Notifier
    if kind == "log":
        notifier = LogNotifier()
    elif kind == "slack":
        notifier = SlackNotifier(cfg.get("webhook_url"),
                                 webhook_env=str(cfg.get("webhook_env", "SLACK_WEBHOOK_URL")),
                                 timeout_s=float(cfg.get("timeout_s", 10)))
    elif kind == "sns":
        notifier = SnsNotifier(str(cfg.get("topic_arn") or ""), region=cfg.get("region"))
    else:
        raise ValueError(f"unknown notifier type {kind!r} (use log, slack or sns)")
    on = cfg.get("on")
    if on:
        on_t = tuple(str(v).lower() for v in ([on] if isinstance(on, str) else on))
        bad = [v for v in on_t if v not in VERDICTS]
        if bad:
            raise ValueError(f"notifier.on: unknown verdicts {bad} (use pass, warn, fail)")
        notifier = FilteredNotifier(notifier, on_t)
    return notifier
