"""Alerts the Airflow way: a warn/fail verdict through a provider's notifier and an Airflow
Connection, where a deployment's other DAGs send theirs.

The notifier settings (the run's ``notifier`` Param > the audit config file's ``notifier`` >
the ``notifier`` of Variable delivery_audit_settings; alerts.notifier_settings) name the
notifier and its Connection id::

    {"type": "slack", "conn_id": "slack_audit"}           # SlackWebhookNotifier (Slack provider)
    {"type": "sns", "conn_id": "aws_default", "target_arn": "arn:aws:sns:…"}   # SnsNotifier
    {"type": "smtp", "conn_id": "smtp_default", "to": ["sre@example.com"]}   # SmtpNotifier

(``"on": ["fail"]`` as the engine's notifiers). Settings without ``conn_id`` (``log``, or the
engine's ``webhook_env``/``topic_arn`` notifiers) go through ``delivery_audit.notify``, as the
CLI does. The message is the engine's (``delivery_audit.notify.summary_lines``): the verdict,
the narrative's first findings, the link to report.html and the index of every window.

A notifier that fails never fails the task: :func:`send_through_provider` raises, and
alerts.send_alert logs a warning that names the notifier and its Connection id, never the
webhook URL or a token, and logs the alert itself instead. The providers are imported only
here, when an alert is sent (never at DAG parse time).
"""

from __future__ import annotations

import re
from typing import Any

#: the notifier types sent through a provider's notifier (with ``conn_id``)
PROVIDER_TYPES = ("slack", "sns", "smtp")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")


def is_provider(settings: dict[str, Any] | None) -> bool:
    """True when the settings name a Connection: the provider's notifier sends the alert."""
    s = settings or {}
    return bool(s.get("conn_id")) and str(s.get("type", "")).lower() in PROVIDER_TYPES


def wanted(settings: dict[str, Any], verdict: str) -> bool:
    """The settings' ``on`` filter (all verdicts when absent)."""
    on = settings.get("on")
    if not on:
        return True
    return verdict in {str(v).lower() for v in ([on] if isinstance(on, str) else on)}


def build(settings: dict[str, Any], subject: str, text: str):
    """The provider's notifier for ``settings`` carrying ``text`` (``subject`` for SNS and
    e-mail). A ValueError names a missing setting."""
    kind = str(settings.get("type", "")).lower()
    conn_id = str(settings["conn_id"])
    if kind == "slack":
        from airflow.providers.slack.notifications.slack_webhook import SlackWebhookNotifier

        return SlackWebhookNotifier(slack_webhook_conn_id=conn_id, text=text,
                                    timeout=int(settings.get("timeout_s", 10)))
    if kind == "sns":
        if not settings.get("target_arn"):
            raise ValueError("the sns notifier needs target_arn")
        from airflow.providers.amazon.aws.notifications.sns import SnsNotifier

        return SnsNotifier(aws_conn_id=conn_id, target_arn=str(settings["target_arn"]),
                           message=text, subject=subject[:100],
                           region_name=settings.get("region"))
    if kind == "smtp":
        if not settings.get("to"):
            raise ValueError("the smtp notifier needs to (one address or a list)")
        from html import escape

        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        return SmtpNotifier(to=settings["to"], from_email=settings.get("from"),
                            subject=subject, smtp_conn_id=conn_id,
                            html_content=f"<pre>{escape(text)}</pre>")
    raise ValueError(f"unknown notifier type {kind!r} with a conn_id (use slack, sns or smtp)")


def send_through_provider(settings: dict[str, Any], report: dict[str, Any], link: str,
                          index: str | None, context: Any = None) -> None:
    """Send the alert through the provider's notifier; raises what it raises. ``notify`` is
    called directly (not ``__call__``): the report's text is not a Jinja template."""
    from delivery_audit.notify import summary_lines

    lines = summary_lines(report, link, index)
    notifier = build(settings, lines[0], "\n".join(lines))
    notifier.notify(dict(context or {}))


def safe_reason(exc: BaseException) -> str:
    """An error's text without any URL in it (a webhook URL is the secret) and without the
    values the engine redacts; the exception's type always."""
    from delivery_audit.redaction import redact_text

    text = _URL.sub("<url>", str(exc))
    return f"{type(exc).__name__}: {redact_text(text)}"[:300]


def describe(settings: dict[str, Any]) -> str:
    """``slack (Connection 'slack_audit')``: what a log line may say about the notifier."""
    return f"{settings.get('type', '?')} (Connection {settings.get('conn_id')!r})"
