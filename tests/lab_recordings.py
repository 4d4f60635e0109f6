"""The labs' recordings (the rebalance lab and the transactions lab on librdkafka's mock
cluster), made in background threads from the start of the session.

A lab's recording is mostly waiting: the rebalance lab's slow member stalls past
max.poll.interval.ms and the group then has to go quiet (about 30 s of sleeping threads),
the transactions lab's consumers wait for their idle timeout. None of it needs Spark. So
when a lab test is selected, :func:`start` (called from conftest's collection hook) starts
both recordings at once, each in its own thread, while the other tests run; the fixtures
``lab_recording`` and ``txn_recording`` wait for theirs (or re-raise what it raised) and the
lab tests audit them on the session's Spark. A broker that cannot start here skips the
tests that need it.

Under pytest-xdist (make test runs two workers) the controller process makes them: it
sees each worker's collected test ids (``pytest_xdist_node_collection_finished``, before any
test runs), records in its own threads into a folder named by ``SHARED_ENV`` (which the
workers inherit), and writes each recording's result or error there as a pickle; the lab
fixture in whichever worker runs test_lab.py waits for that file. Every worker collects every
test, so none of them starts a recording of its own.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

_runs: dict[str, _Recording] = {}
LAB_MODULE = "test_lab.py"
#: the folder where the xdist controller's recordings leave their results (unset: no xdist)
SHARED_ENV = "DELIVERY_AUDIT_TEST_LAB_RECORDINGS"
STARTED = "started"


class _Recording(threading.Thread):
    def __init__(self, name: str, record, shared: Path | None = None) -> None:
        super().__init__(name=f"lab-recording-{name}", daemon=True)
        self.recording = name
        self.folder = Path(tempfile.mkdtemp(prefix=f"delivery-audit-{name}-lab-", dir=shared))
        self._record = record
        self._shared = shared
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._record(self.folder)
        except BaseException as exc:  # noqa: BLE001 - handed to the test that waits for it
            self.error = exc
        if self._shared is not None:  # for the xdist worker that runs the lab tests
            done = _result_file(self._shared, self.recording)
            part = done.with_suffix(".part")
            try:
                payload = pickle.dumps((self.result, self.error))
            except Exception as exc:  # noqa: BLE001 - an error that does not pickle
                payload = pickle.dumps((None, RuntimeError(f"{self.name}: {self.error!r} "
                                                           f"({exc})")))
            part.write_bytes(payload)
            part.rename(done)  # whole or absent

    def wait(self, timeout: float = 300) -> Any:
        self.join(timeout)
        if self.is_alive():
            raise TimeoutError(f"{self.name} still running after {timeout:.0f} s")
        return _outcome(self.result, self.error)


def _outcome(result: Any, error: BaseException | None) -> Any:
    if error is not None:
        from delivery_audit_sim.lab_broker import BrokerUnavailable

        if isinstance(error, BrokerUnavailable):
            pytest.skip(f"the lab broker cannot start here: {error}")
        raise error
    return result


def _result_file(shared: Path, name: str) -> Path:
    return shared / f"{name}.pickle"


def _shared_folder() -> Path | None:
    folder = os.environ.get(SHARED_ENV)
    return Path(folder) if folder else None


def _rebalance(folder: Path):
    from delivery_audit_sim.lab import record_lab

    return record_lab(folder, echo=lambda *_: None)


def _transactions(folder: Path):
    from delivery_audit_sim.lab_txn import record_transactions

    return record_transactions(folder, echo=lambda *_: None)


RECORDERS = {"rebalance": _rebalance, "transactions": _transactions}


def start(items) -> None:
    """Start both recordings when a lab test is among ``items`` (once per session; an xdist
    worker leaves it to the controller, :func:`start_for_workers`)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    _start([item.path.name for item in items])


def start_for_workers(nodeids: list[str]) -> None:
    """The xdist controller's :func:`start`, from a worker's collected test ids."""
    shared = _shared_folder()
    if shared is not None:
        _start([nodeid.split("::", 1)[0].rsplit("/", 1)[-1] for nodeid in nodeids], shared)


def _start(module_names: list[str], shared: Path | None = None) -> None:
    if _runs or LAB_MODULE not in module_names:
        return
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return  # the tests skip, saying so
    for name, record in RECORDERS.items():
        _runs[name] = _Recording(name, record, shared)
        _runs[name].start()
    if shared is not None:
        (shared / STARTED).touch()


def _from_controller(name: str, shared: Path, timeout: float = 300) -> Any:
    done = _result_file(shared, name)
    deadline = time.monotonic() + timeout
    while not done.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the {name} lab's recording still running after {timeout:.0f} s")
        time.sleep(0.5)
    return _outcome(*pickle.loads(done.read_bytes()))


def _recording(name: str):
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    shared = _shared_folder()
    if shared is not None and (shared / STARTED).exists():  # an xdist worker
        yield _from_controller(name, shared)  # the controller removes the folder
        return
    if name not in _runs:  # collected without the hook (e.g. a module run on its own)
        _runs[name] = _Recording(name, RECORDERS[name])
        _runs[name].start()
    try:
        yield _runs[name].wait()
    finally:
        shutil.rmtree(_runs[name].folder, ignore_errors=True)


@pytest.fixture(scope="session")
def lab_recording():
    """The rebalance lab's LabRecording (delivery_audit_sim.lab.record_lab)."""
    yield from _recording("rebalance")


@pytest.fixture(scope="session")
def txn_recording():
    """The transactions lab's TxnRecording (delivery_audit_sim.lab_txn.record_transactions)."""
    yield from _recording("transactions")
