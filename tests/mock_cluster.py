"""librdkafka's mock Kafka cluster (the lab's broker, delivery_audit_sim.lab_broker) for a
test module: on 127.0.0.1, skipped with the reason when confluent-kafka is missing or the
cluster cannot start, and stopped (by the library, in this process) after every client of
the module is gone."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def mock_cluster(brokers: int = 1) -> Iterator:
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    from delivery_audit_sim.lab_broker import BrokerUnavailable, MockCluster

    try:
        cluster = MockCluster(brokers=brokers)
    except BrokerUnavailable as exc:
        pytest.skip(f"the lab broker cannot start here: {exc}")
    try:
        yield cluster
    finally:
        gc.collect()  # every client is gone before the cluster
        cluster.stop()
