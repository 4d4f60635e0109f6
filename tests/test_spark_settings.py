"""The session settings an audit picks from the size of its data (spark.tune_for_input
before ingestion, spark.tune_for_staged before detection)."""

from __future__ import annotations

import pytest

from delivery_audit.spark import (
    CODEGEN_FROM_BYTES,
    SMALL_STAGED_BYTES,
    STAGED_BYTES_PER_SHUFFLE_PARTITION,
    tune_for_input,
    tune_for_staged,
)

MiB = 1024 * 1024
GiB = 1024 * MiB
KEYS = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
        "spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")
SPLITS = "spark.sql.files.minPartitionNum"


@pytest.fixture
def session(spark, monkeypatch):
    for name in ("DELIVERY_AUDIT_CODEGEN", "DELIVERY_AUDIT_ADAPTIVE",
                 "DELIVERY_AUDIT_SHUFFLE_PARTITIONS"):
        monkeypatch.delenv(name, raising=False)
    saved = {k: spark.conf.get(k) for k in KEYS}
    yield spark
    for k, v in saved.items():
        spark.conf.set(k, v)
    spark.conf.unset(SPLITS)


def _settings(spark):
    return {k.rsplit(".", 1)[-1]: spark.conf.get(k) for k in KEYS}


def test_small_input_is_interpreted_and_large_input_compiled(session):
    cores = str(session.sparkContext.defaultParallelism)
    tune_for_input(session, 15 * MiB)  # a small input's aggregations: one partition
    assert _settings(session) == {"partitions": "1", "enabled": "false",
                                  "wholeStage": "false", "factoryMode": "NO_CODEGEN"}
    assert session.conf.get(SPLITS) == "1"  # a small input's scans: one split per scan
    tune_for_input(session, CODEGEN_FROM_BYTES)
    assert _settings(session) == {"partitions": cores, "enabled": "false",
                                  "wholeStage": "true", "factoryMode": "FALLBACK"}
    assert session.conf.get(SPLITS, None) is None  # Spark's default: the parallelism


def test_shuffles_are_sized_by_the_staged_parquet(session):
    cores = session.sparkContext.defaultParallelism
    assert tune_for_staged(session, 2 * MiB) == 1  # a small day: one partition per shuffle
    assert tune_for_staged(session, SMALL_STAGED_BYTES - 1) == 1
    assert session.conf.get(SPLITS) == "1"
    assert tune_for_staged(session, SMALL_STAGED_BYTES) == cores
    assert session.conf.get(SPLITS, None) is None
    assert tune_for_staged(session, 134 * MiB) == cores  # 1M messages
    assert session.conf.get("spark.sql.adaptive.enabled") == "false"
    n = tune_for_staged(session, 2 * GiB)
    assert n == 2 * GiB // STAGED_BYTES_PER_SHUFFLE_PARTITION == 32
    # never adaptive unless pinned: it would hide the cached by-key rows' partitioning
    assert session.conf.get("spark.sql.adaptive.enabled") == "false"
    assert session.conf.get("spark.sql.shuffle.partitions") == "32"


def test_environment_pins_the_settings(session, monkeypatch):
    monkeypatch.setenv("DELIVERY_AUDIT_CODEGEN", "true")
    monkeypatch.setenv("DELIVERY_AUDIT_ADAPTIVE", "true")
    monkeypatch.setenv("DELIVERY_AUDIT_SHUFFLE_PARTITIONS", "3")
    tune_for_input(session, 1)
    assert tune_for_staged(session, 1) == 3
    assert _settings(session) == {"partitions": "3", "enabled": "true",
                                  "wholeStage": "true", "factoryMode": "FALLBACK"}
    monkeypatch.setenv("DELIVERY_AUDIT_CODEGEN", "false")
    monkeypatch.setenv("DELIVERY_AUDIT_ADAPTIVE", "false")
    tune_for_input(session, 10 * CODEGEN_FROM_BYTES)
    tune_for_staged(session, 10 * GiB)
    assert _settings(session)["wholeStage"] == "false"
    assert _settings(session)["enabled"] == "false"


def test_the_driver_heap_follows_the_input(monkeypatch, tmp_path):
    from delivery_audit.ingest.files import local_size
    from delivery_audit.spark import driver_memory_for

    monkeypatch.delenv("DELIVERY_AUDIT_DRIVER_MEMORY", raising=False)
    assert driver_memory_for(15 * 2**20) == "1596m"  # a small day: the floor and a little
    assert driver_memory_for(116 * 2**20) == "2000m"
    assert driver_memory_for(700 * 2**20) == "4096m"  # the cap
    assert driver_memory_for(None) == "4096m"  # unknown (S3): the cap
    monkeypatch.setenv("DELIVERY_AUDIT_DRIVER_MEMORY", "3g")
    assert driver_memory_for(1) == "3g"
    (tmp_path / "a.jsonl").write_bytes(b"x" * 1000)
    (tmp_path / "b.jsonl").write_bytes(b"x" * 24)
    assert local_size([str(tmp_path / "*.jsonl")]) == 1024
    assert local_size([str(tmp_path / "a.jsonl"), "s3://bucket/b.jsonl"]) is None


def test_the_driver_jvm_uses_the_class_archive_only_when_built(tmp_path, monkeypatch):
    """class_archive.py: no archive in the environment → the driver's options are the
    defaults; once built (a file at archive_path) → the JVM maps it, its CDS log off;
    DELIVERY_AUDIT_CLASS_ARCHIVE=0 → not used. The path is keyed by the jars it was built
    on: another jar list is another archive."""
    from delivery_audit import class_archive
    from delivery_audit.spark import DEFAULT_CONF, driver_java_options

    monkeypatch.setattr(class_archive.sys, "prefix", str(tmp_path))
    monkeypatch.delenv(class_archive.OFF, raising=False)
    path = class_archive.archive_path()
    assert path.parent == tmp_path / "share" / "delivery-audit"
    assert driver_java_options() == DEFAULT_CONF["spark.driver.extraJavaOptions"]
    path.parent.mkdir(parents=True)
    path.write_bytes(b"built")
    options = driver_java_options().split()
    assert options[0] == "-XX:+UseParallelGC"
    assert f"-XX:SharedArchiveFile={path}" in options and "-Xlog:cds=off" in options
    monkeypatch.setenv(class_archive.OFF, "0")
    assert driver_java_options() == DEFAULT_CONF["spark.driver.extraJavaOptions"]
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"x")
    monkeypatch.setattr(class_archive, "_jars", lambda: jars)
    assert class_archive.archive_path() != path
