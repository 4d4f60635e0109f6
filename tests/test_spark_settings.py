"""The session settings an audit picks from its input size (spark.size_shuffle_partitions)."""

from __future__ import annotations

import pytest

from delivery_audit.spark import ADAPTIVE_FROM_BYTES, CODEGEN_FROM_BYTES, size_shuffle_partitions

MiB = 1024 * 1024


@pytest.fixture
def restore(spark):
    keys = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
            "spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")
    saved = {k: spark.conf.get(k) for k in keys}
    yield
    for k, v in saved.items():
        spark.conf.set(k, v)


def _settings(spark):
    return (spark.conf.get("spark.sql.adaptive.enabled"),
            spark.conf.get("spark.sql.codegen.wholeStage"),
            spark.conf.get("spark.sql.codegen.factoryMode"))


def test_small_input_runs_interpreted_without_adaptive_execution(spark, restore, monkeypatch):
    for name in ("DELIVERY_AUDIT_CODEGEN", "DELIVERY_AUDIT_ADAPTIVE",
                 "DELIVERY_AUDIT_SHUFFLE_PARTITIONS"):
        monkeypatch.delenv(name, raising=False)
    n = size_shuffle_partitions(spark, 15 * MiB)
    assert n == spark.sparkContext.defaultParallelism
    assert _settings(spark) == ("false", "false", "NO_CODEGEN")
    size_shuffle_partitions(spark, CODEGEN_FROM_BYTES)
    assert _settings(spark) == ("false", "true", "FALLBACK")
    n = size_shuffle_partitions(spark, 10 * ADAPTIVE_FROM_BYTES)
    assert _settings(spark) == ("true", "true", "FALLBACK")
    assert n == 10 * ADAPTIVE_FROM_BYTES // (96 * MiB) + 1


def test_environment_pins_the_settings(spark, restore, monkeypatch):
    monkeypatch.setenv("DELIVERY_AUDIT_CODEGEN", "true")
    monkeypatch.setenv("DELIVERY_AUDIT_ADAPTIVE", "true")
    monkeypatch.setenv("DELIVERY_AUDIT_SHUFFLE_PARTITIONS", "3")
    assert size_shuffle_partitions(spark, 1) == 3
    assert _settings(spark) == ("true", "true", "FALLBACK")
    monkeypatch.setenv("DELIVERY_AUDIT_CODEGEN", "false")
    size_shuffle_partitions(spark, 10 * ADAPTIVE_FROM_BYTES)
    assert _settings(spark) == ("true", "false", "NO_CODEGEN")
