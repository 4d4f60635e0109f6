"""What a snapshot is asked for and what it answers: the request, the result, the failure,
and the client-config file the CLI reads (the Kafka tools' ``--command-config`` form)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path


class SnapshotFailed(Exception):
    """The snapshot could not be taken; the message names the topic-partition (or the
    setting) at fault and never a secret. Nothing was published under ``out``."""


@dataclass(frozen=True)
class SnapshotRequest:
    bootstrap_servers: str
    topics: tuple[str, ...]
    out: str  # a local directory
    groups: tuple[str, ...] = ()
    # librdkafka/Java-style keys: security.protocol, sasl.mechanism(s), sasl.username,
    # sasl.password, ssl.ca.location, … (client_config.py maps them to kafka-python's)
    client_config: Mapping[str, str] = field(default_factory=dict)
    start: datetime | None = None  # --from: read from the first offset at or after it
    end: datetime | None = None  # --to: read up to the first offset at or after it
    max_records: int | None = None
    progress: bool = False

    def __repr__(self) -> str:  # the client config may hold a password: never shown
        return (f"SnapshotRequest(bootstrap_servers={self.bootstrap_servers!r}, "
                f"topics={self.topics!r}, out={self.out!r}, groups={self.groups!r}, "
                f"client_config=<{len(self.client_config)} settings>, start={self.start!r}, "
                f"end={self.end!r}, max_records={self.max_records!r})")


@dataclass(frozen=True)
class SnapshotResult:
    out: str
    offsets_path: str
    broker_files: tuple[str, ...]
    records: int  # data rows written
    controls: int  # transaction markers written (control rows)


def read_client_config(path: str | Path) -> dict[str, str]:
    """``key=value`` lines (blank lines and ``#`` comments skipped; whitespace around key
    and value stripped), as Kafka's ``--command-config`` / ``client.properties``. A line
    without ``=`` is an error naming its line number only (it may be a secret)."""
    settings: dict[str, str] = {}
    text = Path(path).read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        key, sep, value = stripped.partition("=")
        if not sep or not key.strip():
            raise SnapshotFailed(f"client config {path}: line {n} is not key=value")
        settings[key.strip()] = value.strip()
    return settings


__all__ = ["SnapshotFailed", "SnapshotRequest", "SnapshotResult", "read_client_config"]
