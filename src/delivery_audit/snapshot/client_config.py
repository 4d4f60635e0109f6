"""The client config (librdkafka / Java client keys, as a team already keeps them for its
consumers) as kafka-python's KafkaClient settings, and the secrets in it.

kafka-python names its settings differently (``security_protocol``, ``sasl_mechanism``,
``sasl_plain_username``/``sasl_plain_password`` for PLAIN *and* SCRAM, ``ssl_cafile``…);
a Java ``sasl.jaas.config`` line's ``username="…" password="…"`` is read too. Consumer
tuning keys (group.id, isolation.level, fetch sizes …) do not apply to a snapshot and are
left out; any other key the snapshot cannot honour is refused by name (never by value), so
a setting a team relies on (say, a truststore) is not silently dropped."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..redaction import MASK, redact_text
from .request import SnapshotFailed

# librdkafka / Java key -> kafka-python KafkaClient setting (values as given)
_DIRECT = {
    "client.id": "client_id",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "ssl.cipher.suites": "ssl_ciphers",
}
_UPPER = {"security.protocol": "security_protocol", "sasl.mechanism": "sasl_mechanism",
          "sasl.mechanisms": "sasl_mechanism"}
_MS = {"request.timeout.ms": "request_timeout_ms", "socket.timeout.ms": "request_timeout_ms",
       "reconnect.backoff.ms": "reconnect_backoff_ms",
       "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
       "retry.backoff.ms": "retry_backoff_ms"}
# settings of a consuming application that mean nothing to a snapshot's raw Fetch
_NOT_APPLICABLE = re.compile(
    r"^(bootstrap\.servers|group\.id|group\.instance\.id|enable\.auto\.commit|"
    r"auto\.commit\.interval\.ms|auto\.offset\.reset|isolation\.level|session\.timeout\.ms|"
    r"heartbeat\.interval\.ms|max\.poll\.(interval\.ms|records)|fetch\..*|max\.partition\."
    r"fetch\.bytes|partition\.assignment\.strategy|client\.rack|key\.deserializer|"
    r"value\.deserializer|enable\.partition\.eof|api\.version\.request|log_level|debug|"
    r"statistics\.interval\.ms|metadata\.max\.age\.ms|check\.crcs)$")
_SECRET_KEY = re.compile(r"password|secret|jaas|token", re.IGNORECASE)
_JAAS_VALUE = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def secrets_of(config: Mapping[str, str]) -> list[str]:
    """The values that must never be shown: passwords, JAAS lines and what is in them."""
    out = []
    for key, value in config.items():
        if _SECRET_KEY.search(key) and value:
            out.append(value)
            out += [v for k, v in _JAAS_VALUE.findall(value) if k == "password"]
    return [s for s in out if s]


def scrub(text: object, config: Mapping[str, str]) -> str:
    """`text` with every secret of `config` masked (short ones too: redact_text leaves
    values under MIN_SECRET_CHARS alone, a message here may still carry one)."""
    out = redact_text(text, extra=secrets_of(config))
    for secret in sorted(set(secrets_of(config)), key=len, reverse=True):
        out = out.replace(secret, MASK)
    return out


def _endpoint_identification(value: str) -> bool:
    return value.strip().lower() not in ("", "none")


def to_kafka_python(config: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python KafkaClient keyword settings for `config` (librdkafka / Java keys)."""
    out: dict[str, Any] = {}
    refused = []
    for key, raw in config.items():
        value = str(raw)
        if key in _DIRECT:
            out[_DIRECT[key]] = value
        elif key in _UPPER:
            out[_UPPER[key]] = value.strip().upper()
        elif key in _MS:
            out[_MS[key]] = int(value)
        elif key == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = _endpoint_identification(value)
        elif key == "sasl.jaas.config":
            found = dict(_JAAS_VALUE.findall(value))
            if "username" in found:
                out["sasl_plain_username"] = found["username"]
            if "password" in found:
                out["sasl_plain_password"] = found["password"]
        elif key == "sasl.oauthbearer.token.provider":
            out["sasl_oauth_token_provider"] = _token_provider(value)
        elif _NOT_APPLICABLE.match(key):
            continue
        else:
            refused.append(key)
    if refused:
        raise SnapshotFailed("client config: the snapshot cannot honour "
                             + ", ".join(sorted(refused))
                             + " (supported: security.protocol, sasl.mechanism(s), "
                               "sasl.username, sasl.password, sasl.jaas.config, "
                               "ssl.*.location, ssl.key.password, "
                               "ssl.endpoint.identification.algorithm, client.id, "
                               "sasl.oauthbearer.token.provider)")
    return out


def _token_provider(spec: str) -> Any:
    """``module:callable`` returning a kafka-python AbstractTokenProvider (OAUTHBEARER: an
    MSK IAM or OIDC token); no librdkafka key names a Python object, so this one is ours."""
    import importlib

    module, _, name = spec.partition(":")
    if not module or not name:
        raise SnapshotFailed("client config: sasl.oauthbearer.token.provider must be "
                             "module:callable")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SnapshotFailed(f"client config: sasl.oauthbearer.token.provider {spec}: "
                             f"{type(exc).__name__}") from None
    return factory()


__all__ = ["scrub", "secrets_of", "to_kafka_python"]
