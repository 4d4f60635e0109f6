"""Real Spark standalone clusters on 127.0.0.1 for the session, started and stopped by
scripts/spark_daemons.py (what the cluster script runs): ``spark_cluster``, master + 2
workers of 1 core and 2 GB (a worker can be killed while the other goes on: test_cluster),
and ``spark_cluster_one_worker``, master + 1 worker of 2 cores and 2 GB (one executor JVM
to warm up instead of two on a 2-core machine: the DAG e2e).

Import the fixtures into a test module: ``from spark_cluster import spark_cluster,
cluster_py_files  # noqa: F401``. Each importing module gets its own fixture definition, so
each cluster is shared through a module-level reference count: the first user starts it,
the last one's teardown stops it and fails if any of its processes is left running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts_loader import REPO, load_script  # noqa: F401  (REPO: test_cluster reads it here)

from delivery_audit.core.packaging import package_zip

cluster_lib = load_script("spark_daemons")

_shared: dict = {"clusters": {}, "users": {}, "py_files": None}


def _cluster(workers: int, cores: int):
    """The running cluster of this shape for the caller's fixture (a generator)."""
    shape = (workers, cores)
    if _shared["clusters"].get(shape) is None:
        cluster = cluster_lib.SparkCluster(workers=workers, cores=cores, memory="2g")
        cluster.start(timeout=180)
        _shared["clusters"][shape] = cluster
    _shared["users"][shape] = _shared["users"].get(shape, 0) + 1
    cluster = _shared["clusters"][shape]
    try:
        yield cluster
    finally:
        _shared["users"][shape] -= 1
        if _shared["users"][shape] == 0:
            _shared["clusters"][shape] = None
            forced = cluster.stop()
            left = cluster_lib.marked_pids(cluster.cluster_id)
            assert not left, f"Spark cluster processes left running: {left}"
            assert not forced, f"cluster processes ignored SIGTERM and were killed: {forced}"


@pytest.fixture(scope="session")
def spark_cluster():
    """The running 2-worker ``SparkCluster`` (``.master_url``, ``.webui_url``,
    ``.kill_worker(i)``, …). A test that kills a worker starts it again before it ends."""
    yield from _cluster(workers=2, cores=1)


@pytest.fixture(scope="session")
def spark_cluster_one_worker():
    """The running 1-worker, 2-core ``SparkCluster``."""
    yield from _cluster(workers=1, cores=2)


@pytest.fixture(scope="session")
def cluster_py_files(tmp_path_factory) -> Path:
    """The ``--py-files`` zip of delivery_audit (with its GX suites), built once per session."""
    if _shared["py_files"] is None or not Path(_shared["py_files"]).is_file():
        _shared["py_files"] = package_zip(tmp_path_factory.mktemp("py-files"))
    return Path(_shared["py_files"])
