"""The lab's broker: librdkafka's in-process mock Kafka cluster (inside the confluent-kafka
wheel, reached through its C API with ctypes; it listens on 127.0.0.1) and the broker view
of a topic read back as `delivery-audit snapshot` reads it. Shared by the rebalance lab
(lab.py), the transactions lab (lab_txn.py), `lab --serve` (lab_serve.py) and the
recorders' tests."""

from __future__ import annotations

import ctypes
import glob
import gzip
import shutil
import tempfile
from pathlib import Path

# Kafka protocol API keys the tests inject errors into (rd_kafka_mock_push_request_errors)
PRODUCE_API = 0


class BrokerUnavailable(RuntimeError):
    """The mock cluster cannot start here (no confluent-kafka, no librdkafka symbols)."""


def _librdkafka() -> ctypes.CDLL:
    try:
        import confluent_kafka
    except ImportError as exc:
        raise BrokerUnavailable("confluent-kafka is not installed "
                                "(pip install 'delivery-audit[kafka]')") from exc
    base = Path(confluent_kafka.__file__).resolve().parent
    candidates = sorted(glob.glob(str(base.parent / "confluent_kafka.libs" /
                                      "librdkafka*.so*")))
    candidates += sorted(glob.glob(str(base / ".dylibs" / "librdkafka*.dylib")))
    if not candidates:
        raise BrokerUnavailable(f"no bundled librdkafka next to {base}")
    lib = ctypes.CDLL(candidates[0])
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    try:
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, cp, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_new.restype = vp
        lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
        lib.rd_kafka_mock_cluster_bootstraps.restype = cp
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
        lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_mock_push_request_errors_array.argtypes = [
            vp, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
        lib.rd_kafka_mock_broker_set_down.argtypes = [vp, ctypes.c_int32]
        lib.rd_kafka_mock_broker_set_up.argtypes = [vp, ctypes.c_int32]
    except AttributeError as exc:
        raise BrokerUnavailable(f"librdkafka without the mock cluster API: {exc}") from exc
    return lib


class MockCluster:
    """librdkafka's in-process mock Kafka cluster, through its C API."""

    def __init__(self, brokers: int = 1) -> None:
        lib = self._lib = _librdkafka()
        err = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
        self._rk = lib.rd_kafka_new(0, conf, err, 512)  # a producer handle owns the cluster
        if not self._rk:
            raise BrokerUnavailable(f"rd_kafka_new failed: {err.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise BrokerUnavailable("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        rc = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, 1)
        if rc != 0:
            raise RuntimeError(f"mock topic {name}: error {rc}")

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        """The next len(errors) requests of `api_key` fail with these Kafka error codes."""
        codes = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(errors),
                                                          codes)

    def set_broker_down(self, broker_id: int = 1, down: bool = True) -> None:
        """Disconnect a broker's clients and refuse new ones (down=False: serve again)."""
        setter = self._lib.rd_kafka_mock_broker_set_down if down else \
            self._lib.rd_kafka_mock_broker_set_up
        if setter(self._mc, broker_id) != 0:
            raise RuntimeError(f"mock broker {broker_id}: cannot set {'down' if down else 'up'}")

    def stop(self) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dump_topic(bootstrap: str, topic: str, path: Path) -> int:
    """The canonical broker rows of `topic` in the JSON Lines file `path`, read the way
    `delivery-audit snapshot` reads a live cluster (delivery_audit.snapshot): every
    partition up to the end offsets taken when it starts, record batches with their producer
    ids and transaction markers as control rows. Returns the rows written."""
    from delivery_audit.snapshot import SnapshotRequest, take_snapshot

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-snapshot-", dir=path.parent) as tmp:
        snap = take_snapshot(SnapshotRequest(bootstrap, (topic,), tmp))
        with open(path, "w", encoding="utf-8") as out:
            for name in snap.broker_files:
                with gzip.open(name, "rt", encoding="utf-8") as rows:
                    shutil.copyfileobj(rows, out)
    return snap.records + snap.controls


__all__ = ["PRODUCE_API", "BrokerUnavailable", "MockCluster", "dump_topic"]
