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
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

_runs: dict[str, _Recording] = {}
LAB_MODULE = "test_lab.py"


class _Recording(threading.Thread):
    def __init__(self, name: str, record) -> None:
        super().__init__(name=f"lab-recording-{name}", daemon=True)
        self.folder = Path(tempfile.mkdtemp(prefix=f"delivery-audit-{name}-lab-"))
        self._record = record
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._record(self.folder)
        except BaseException as exc:  # noqa: BLE001 - handed to the test that waits for it
            self.error = exc

    def wait(self, timeout: float = 300) -> Any:
        self.join(timeout)
        if self.is_alive():
            raise TimeoutError(f"{self.name} still running after {timeout:.0f} s")
        if self.error is not None:
            from delivery_audit_sim.lab_broker import BrokerUnavailable

            if isinstance(self.error, BrokerUnavailable):
                pytest.skip(f"the lab broker cannot start here: {self.error}")
            raise self.error
        return self.result


def _rebalance(folder: Path):
    from delivery_audit_sim.lab import record_lab

    return record_lab(folder, echo=lambda *_: None)


def _transactions(folder: Path):
    from delivery_audit_sim.lab_txn import record_transactions

    return record_transactions(folder, echo=lambda *_: None)


RECORDERS = {"rebalance": _rebalance, "transactions": _transactions}


def start(items) -> None:
    """Start both recordings when a lab test is among ``items`` (once per session)."""
    if _runs or not any(item.path.name == LAB_MODULE for item in items):
        return
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return  # the tests skip, saying so
    for name, record in RECORDERS.items():
        _runs[name] = _Recording(name, record)
        _runs[name].start()


def _recording(name: str):
    pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
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
