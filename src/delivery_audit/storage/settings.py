"""The publisher's tuning (:class:`PublishSettings`: retries and the window lock, from
``DELIVERY_AUDIT_PUBLISH_*``) and its one error (:class:`PublishError`)."""

from __future__ import annotations

import os
from dataclasses import dataclass


class PublishError(RuntimeError):
    """Publishing failed; the destination holds no manifest for this window."""


@dataclass(frozen=True)
class PublishSettings:
    """Retry and lock tuning. :meth:`from_env` reads ``DELIVERY_AUDIT_PUBLISH_*``."""

    attempts: int = 4  # our attempts per storage call (on top of botocore's own retries)
    retry_delay_s: float = 0.5  # first backoff; doubles per attempt, jittered x0.5-1.5
    max_retry_delay_s: float = 8.0
    lock_wait_s: float = 900.0  # how long to wait for another publisher of the window
    lock_lease_s: float = 600.0  # S3: a lock not refreshed for this long is taken over
    lock_poll_s: float = 1.0  # how often to look at a held lock

    @classmethod
    def from_env(cls) -> PublishSettings:
        env = os.environ.get
        default = cls()
        return cls(
            attempts=max(1, int(env("DELIVERY_AUDIT_PUBLISH_ATTEMPTS") or default.attempts)),
            retry_delay_s=float(env("DELIVERY_AUDIT_PUBLISH_RETRY_DELAY_S")
                                or default.retry_delay_s),
            lock_wait_s=float(env("DELIVERY_AUDIT_PUBLISH_LOCK_WAIT_S") or default.lock_wait_s),
            lock_lease_s=float(env("DELIVERY_AUDIT_PUBLISH_LOCK_LEASE_S")
                               or default.lock_lease_s),
        )
