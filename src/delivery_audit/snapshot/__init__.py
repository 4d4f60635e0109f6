"""`delivery-audit snapshot`: the broker side read from a live cluster over the Kafka
protocol (contract §9.1). Record batches as kafka-dump-log shows a segment (producer id,
epoch, transactional flag, transaction markers), through kafka-python's protocol layer and
connections; canonical broker rows under ``out/broker/``, the offsets taken at the start in
``out/offsets.json``.

Modules: ``request`` (request, result, failure, the client-config file), ``client_config``
(librdkafka/Java keys to kafka-python's, secrets), ``cluster`` (requests to a partition's
leader, offsets, committed offsets), ``batches`` (Fetch and record batches to rows),
``offsets`` (the ranges and offsets.json), ``staging`` (gzip files, publishing), ``take``
(``take_snapshot``), ``groups`` (committed offsets)."""

from .request import SnapshotFailed, SnapshotRequest, SnapshotResult, read_client_config
from .take import take_snapshot

__all__ = ["SnapshotFailed", "SnapshotRequest", "SnapshotResult", "read_client_config",
           "take_snapshot"]
