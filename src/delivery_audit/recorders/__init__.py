"""Client recorders: confluent-kafka producer and consumer wrappers that write the auditor's
canonical JSON Lines (contract §2: ``sends``, ``ledger``, ``events``) while the application
runs. The README's "Recording sends and processing" has an example and the fields each
callback writes.

    from delivery_audit.recorders import Recorder, RecordingConsumer, RecordingProducer

Importing this package loads neither PySpark nor confluent-kafka: ``Recorder`` (the writer)
is standard library; ``RecordingProducer`` / ``RecordingConsumer`` load confluent-kafka (the
``kafka`` extra: ``pip install 'delivery-audit[kafka]'``) when first named.

* ``writer``: ``Recorder`` (one thread-safe JSON Lines file per source), the seq header;
* ``producer``: ``RecordingProducer`` (delivery reports and transactions → sends rows);
* ``consumer``: ``RecordingConsumer`` (processing → ledger rows; assignments, commits and
  a poll-interval expiry → events rows);
* ``kafka_client``: the confluent-kafka names both use, imported once with the install hint.
"""

from __future__ import annotations

import importlib
from typing import Any

from .writer import SEQ_HEADER, Recorder, as_text, header_seq, now_ms

# the client wrappers, loaded (with confluent-kafka) when first named
_CLIENT_CLASSES = {"RecordingProducer": "producer", "RecordingConsumer": "consumer"}


def __getattr__(name: str) -> Any:
    module = _CLIENT_CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["SEQ_HEADER", "Recorder", "RecordingConsumer", "RecordingProducer", "as_text",
           "header_seq", "now_ms"]
