"""Keeping credentials out of messages: error texts, log lines, printed settings.

``redact_text`` removes, from any text about to be shown:

* the user-info part of URLs (``https://user:password@host`` → ``https://***@host``);
* the secret path of Slack webhooks (``hooks.slack.com/services/…``);
* the ``token`` parameter of Spark Connect URLs (``sc://host:443/;token=…``);
* presigned-URL signatures and tokens (``X-Amz-Signature=…``, ``X-Amz-Credential=…``,
  ``X-Amz-Security-Token=…``);
* the value of every secret-looking environment variable (``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SESSION_TOKEN``, ``DELIVERY_AUDIT_PSEUDONYM_KEY``, ``SLACK_WEBHOOK_URL``, any
  ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*WEBHOOK*``), and any extra secret passed in.

``redact_mapping`` masks the values of secret-looking keys of a settings dict (a notifier's
``webhook_url``, a ``password``…) so the dict can be logged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
#: shorter values are not scrubbed from text (they would mangle ordinary words)
MIN_SECRET_CHARS = 8

_SECRET_ENV = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|WEBHOOK|PSEUDONYM_KEY|API_KEY|"
                         r"PRIVATE_KEY|CREDENTIAL", re.IGNORECASE)
_SECRET_FIELD = re.compile(r"url|secret|token|password|passwd|webhook|credential|api_?key|"
                           r"private_?key|^key$|authorization", re.IGNORECASE)
# user-info may hold '/', '@' or ':' unescaped: mask up to the last '@' of the URL token
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s'\"`<>]*@")
_SLACK = re.compile(r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[^\s'\"`<>)]+")
_CONNECT_TOKEN = re.compile(r"(?i)(;token=)[^;\s'\"`<>]+")
_SIGNED = re.compile(r"(?i)\b(X-Amz-(?:Signature|Credential|Security-Token)=)[^&\s'\"`<>]+")


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of secret-looking environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_ENV.search(k) and v
              and len(v) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact_text(text: Any, extra: Iterable[str | None] = (),
                environ: Mapping[str, str] | None = None) -> str:
    """``text`` as a string with credentials masked (see the module docstring)."""
    out = str(text)
    secrets = [s for s in extra if s and len(s) >= MIN_SECRET_CHARS]
    for secret in sorted(set(secrets) | set(secret_values(environ)), key=len, reverse=True):
        out = out.replace(secret, MASK)
    out = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", out)
    out = _SLACK.sub(lambda m: m.group(1) + MASK, out)
    out = _CONNECT_TOKEN.sub(lambda m: m.group(1) + MASK, out)
    return _SIGNED.sub(lambda m: m.group(1) + MASK, out)


def _is_secret_field(name: str) -> bool:
    # ``webhook_env`` and the like name a variable; they hold no secret
    return bool(_SECRET_FIELD.search(name)) and not name.lower().endswith("_env")


def redact_mapping(data: Any) -> Any:
    """A copy of a (nested) settings dict safe to log: secret-looking keys masked."""
    if isinstance(data, Mapping):
        return {k: (MASK if _is_secret_field(str(k)) and v not in (None, "")
                    else redact_mapping(v)) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [redact_mapping(v) for v in data]
    if isinstance(data, str):
        return redact_text(data)
    return data
