"""The one registry of adapters: format name → its module.

Each module has ``convert_file(path, origin, source, writer, opts)`` and ``SOURCES`` (the
sources it can feed). Everything else that names the formats derives from this dict:
``adapters.convert``, the sniffer's candidates (sniff.py), ``delivery-audit convert``,
ingestion's formats (``ingest/files.ADAPTER_FORMATS``) and the CLI's ``--format``.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    client_log,
    console_consumer,
    coordinator_log,
    dump_log,
    kcat,
    librdkafka_log,
    mapping,
    verifiable_consumer,
    verifiable_producer,
)

__all__ = ["ADAPTERS", "AUTO"]

AUTO = "auto"  # the format of each file sniffed from its first lines (sniff.py)

ADAPTERS: dict[str, ModuleType] = {
    "kafka-verifiable-producer": verifiable_producer,
    "kafka-verifiable-consumer": verifiable_consumer,
    "kafka-dump-log": dump_log,
    "kafka-console-consumer": console_consumer,
    "kcat": kcat,  # kcat -C -J envelopes, or -f output with adapters.format
    "client-log": client_log,  # Java client / Spring Kafka / kafka-python consumer logs
    "coordinator-log": coordinator_log,  # broker GroupCoordinator server.log
    "librdkafka-log": librdkafka_log,  # librdkafka (confluent-kafka-*, rust-rdkafka) logs
    "mapping": mapping,  # an application's own lines by adapters.mapping rules (never sniffed)
}
