"""Shared fixtures: one real local SparkSession per test process (make test runs two pytest-xdist
workers, each with its own session, Airflow home and servers; see SHARED_WORKER below)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
# the CLI's tables are as wide as their rows whatever the tmp paths in them (an xdist
# worker's are longer: …/popen-gw0/…); rich reads COLUMNS when it is not on a terminal
os.environ.setdefault("COLUMNS", "200")

# Airflow's home for the in-process Airflow of any test (one per xdist worker), before any
# module imports Airflow
import airflow_helpers  # noqa: E402, F401

# the SQL settings every test module starts from (an audit run by a test re-applies the
# engine's defaults and tunes the session for its input; an audit that fails before tuning
# would leave the defaults behind, and a later module's job counts would depend on order)
TEST_SQL_CONF = {"spark.sql.shuffle.partitions": "1",
                 # tiny frames: as the audit does below 1 GiB staged (spark.py)
                 "spark.sql.adaptive.enabled": "false"}


@pytest.fixture(scope="session")
def spark():
    from delivery_audit.spark import get_spark

    session = get_spark("delivery-audit-tests", master="local[2]",
                        conf={**TEST_SQL_CONF, "spark.default.parallelism": "2",
                              # one JVM serves every test: room for the audits, and cached
                              # blocks that execution may evict (UNABLE_TO_ACQUIRE_MEMORY)
                              "spark.driver.memory": "6g",
                              "spark.memory.storageFraction": "0.1"})
    yield session
    session.stop()


def release_cached_frames() -> None:
    """Unpersist every cached frame of the active session. ingest() and detect() persist
    frames that only run_audit() releases; left cached across tests they fill the storage
    memory that execution cannot evict (spark.memory.storageFraction), and a later
    aggregation fails with UNABLE_TO_ACQUIRE_MEMORY."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.catalog.clearCache()


@pytest.fixture(autouse=True, scope="module")
def _release_cached_frames_after_module():
    yield
    release_cached_frames()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:  # the next module starts from the tests' settings
        for key, value in TEST_SQL_CONF.items():
            active.conf.set(key, value)


# The hostile input's plain audit, shared by test_security.py and test_privacy.py. Defined
# here, once: a session fixture bound into two test modules is two fixtures, run twice.
# The labs' recordings, started in the background when a lab test is selected (test_lab.py).
import lab_recordings  # noqa: E402
from hostile_audit import hostile_inputs, plain_audit  # noqa: E402, F401
from lab_recordings import lab_recording, txn_recording  # noqa: E402, F401

# S3 publishing fixtures (a bucket, the fault proxy), shared by test_faults.py and
# test_idempotence.py
from s3_publishing import bucket, module_proxy, proxy  # noqa: E402, F401

# every generated scenario in one input and its classic audit, shared by test_scenarios.py
# and test_connect.py
from shared_audits import scenario_audit, scenario_day  # noqa: E402, F401

# tests/data/small through the CLI, shared by test_cli.py and test_idempotence.py
from small_audit import small_audit  # noqa: E402, F401

# py4j logs "Closing down clientserver connection" from __del__ at interpreter exit, after
# pytest closed its streams; keep it quiet.
logging.getLogger("py4j").setLevel(logging.WARNING)


# Fixtures that run a whole audit: a test using one is an `audit` test (not in make
# test-fast), wherever it lives.
AUDIT_FIXTURES = {"small_audit", "plain_audit", "pseudo_audit", "two_runs",
                  "scenario_audit"}


@pytest.hookimpl(trylast=True)  # after -m has deselected: only for selected lab tests
def pytest_collection_finish(session):
    lab_recordings.start(session.items)


# --- pytest-xdist (make test: -n 2 --dist loadgroup) ------------------------------------------

#: modules that share a session fixture or a server (the Connect server, the scenario, small
#: and hostile audits, the S3 fault proxy) run on one worker, so that it is made once; every
#: other module is a group of its own (its module fixtures made once)
SHARED_WORKER = {
    "servers": ("test_airflow_e2e.py", "test_airflow_snapshot.py", "test_airflow_outputs.py",
                "test_dags.py", "test_connect.py", "test_scenarios.py", "test_cli.py",
                "test_explain.py", "test_idempotence.py", "test_remediation.py",
                "test_faults.py"),
    "hostile": ("test_security.py", "test_privacy.py"),
}
_GROUP_OF = {module: group for group, modules in SHARED_WORKER.items() for module in modules}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(items):
    for item in items:
        if AUDIT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.audit)
        module = item.path.relative_to(item.config.rootpath).as_posix()
        item.add_marker(pytest.mark.xdist_group(_GROUP_OF.get(item.path.name, module)))


def pytest_configure(config):
    """The xdist controller's folder for the lab recordings (tests/lab_recordings.py)."""
    if config.pluginmanager.hasplugin("dsession"):  # the controller, not a worker
        folder = tempfile.mkdtemp(prefix="delivery-audit-lab-recordings-")
        os.environ[lab_recordings.SHARED_ENV] = folder  # the workers, started later, inherit it
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    lab_recordings.start_for_workers(ids)

