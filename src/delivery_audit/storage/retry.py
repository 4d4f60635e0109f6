"""Retrying S3 calls: which errors are transient (throttling, 5xx, the connection failing),
and :func:`with_retry`, our exponential backoff around one call, on top of botocore's own
retries (attempts and delays from :class:`~.settings.PublishSettings`)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from .settings import PublishSettings

log = logging.getLogger("delivery_audit.storage")

RETRYABLE_CODES = {
    "Throttling", "ThrottlingException", "SlowDown", "RequestTimeout", "RequestTimeTooSkewed",
    "InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequests",
    "BandwidthLimitExceeded", "503", "500", "502", "504",
}
# a conditional write lost the race (or the object it was conditioned on is gone)
CONFLICT_CODES = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
MISSING_CODES = {"NoSuchKey", "404", "NotFound"}

T = TypeVar("T")


def error_code(exc: BaseException) -> str:
    """The S3 error code of a botocore error (else its HTTP status), "" for anything else."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error") or {}
        code = str(err.get("Code") or "")
        if code:
            return code
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if status:
            return str(status)
    return ""


def retryable(exc: BaseException) -> bool:
    """Throttling, 5xx, and the connection failing (refused, reset, closed, timed out)."""
    try:  # botocore only when publishing to S3 (~0.1 s to import; a local audit never needs it)
        from botocore.exceptions import ConnectionError as BotoConnectionError
        from botocore.exceptions import HTTPClientError
    except ImportError:  # pragma: no cover
        return False
    # HTTPClientError: ConnectionClosedError (reset / closed without a response),
    # ReadTimeoutError, ResponseStreamingError; BotoConnectionError: refused, connect timeout
    if isinstance(exc, BotoConnectionError | HTTPClientError | ConnectionError):
        return True
    code = error_code(exc)
    if code in RETRYABLE_CODES:
        return True
    status = ((getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}) \
        .get("HTTPStatusCode")
    return isinstance(status, int) and status >= 500


def with_retry(what: str, fn: Callable[[], T], settings: PublishSettings | None = None) -> T:
    """Our own retry around one call, on top of botocore's: throttling, 5xx, connection."""
    settings = settings or PublishSettings.from_env()
    attempts = settings.attempts
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            if attempt == attempts or not retryable(exc):
                raise
            delay = min(settings.max_retry_delay_s, settings.retry_delay_s * 2 ** (attempt - 1))
            delay *= 0.5 + random.random()
            log.warning("%s failed (%s), retry %d/%d in %.2fs", what,
                        error_code(exc) or type(exc).__name__, attempt, attempts - 1, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
