"""A real Spark standalone cluster (master + 2 workers, 1 core and 2 GB each) on 127.0.0.1 for
the session, started and stopped by scripts/spark_daemons.py (what the cluster script runs).

Import the fixtures into a test module: ``from spark_cluster import spark_cluster,
cluster_py_files  # noqa: F401``. Each importing module gets its own fixture definition, so
the cluster itself is shared through a module-level reference count: the first user starts
it, the last one's teardown stops it and fails if any of its processes is left running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts_loader import REPO, load_script  # noqa: F401  (REPO: test_cluster reads it here)

from delivery_audit.core.packaging import package_zip

cluster_lib = load_script("spark_daemons")

_shared: dict = {"cluster": None, "users": 0, "py_files": None}


@pytest.fixture(scope="session")
def spark_cluster():
    """The running ``SparkCluster`` (``.master_url``, ``.webui_url``, ``.kill_worker(i)``, …).
    A test that kills a worker starts it again before it ends."""
    if _shared["cluster"] is None:
        cluster = cluster_lib.SparkCluster(workers=2, cores=1, memory="2g")
        cluster.start(timeout=180)
        _shared["cluster"] = cluster
    _shared["users"] += 1
    cluster = _shared["cluster"]
    try:
        yield cluster
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            _shared["cluster"] = None
            forced = cluster.stop()
            left = cluster_lib.marked_pids(cluster.cluster_id)
            assert not left, f"Spark cluster processes left running: {left}"
            assert not forced, f"cluster processes ignored SIGTERM and were killed: {forced}"


@pytest.fixture(scope="session")
def cluster_py_files(tmp_path_factory) -> Path:
    """The ``--py-files`` zip of delivery_audit (with its GX suites), built once per session."""
    if _shared["py_files"] is None or not Path(_shared["py_files"]).is_file():
        _shared["py_files"] = package_zip(tmp_path_factory.mktemp("py-files"))
    return Path(_shared["py_files"])
