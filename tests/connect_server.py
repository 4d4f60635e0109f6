"""A real Spark Connect server on 127.0.0.1 for the session, started and stopped by
scripts/spark_connect.py (what ``make connect-up`` / ``make connect-down`` run), with its own
state file.

Import the fixture into a test module: ``from connect_server import connect_server  # noqa:
F401``. Each importing module gets its own fixture definition, so the server is shared
through a module-level reference count (as tests/spark_cluster.py shares its cluster): the
first user starts it, the last one's teardown stops it by PID and fails if any of its
processes is left running.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from scripts_loader import load_script

cluster_lib = load_script("spark_daemons")
connect_cli = load_script("spark_connect")  # after spark_daemons, which it imports
_shared: dict = {"server": None, "state": None, "users": 0}


@pytest.fixture(scope="session")
def connect_server():
    """The running ``ConnectServer`` (``.url`` sc://127.0.0.1:PORT, ``.ui_url``), started
    like ``make connect-up`` on ``local[2]`` with a 1 GiB driver heap (small days only)."""
    if _shared["server"] is None:
        state = Path(tempfile.mkdtemp(prefix="delivery-audit-connect-test-")) / "state.json"
        assert connect_cli.main(["start", "--state", str(state), "--master", "local[2]",
                                 "--driver-memory", "1g"]) == 0
        _shared["server"], _shared["state"] = cluster_lib.ConnectServer.load(state), state
    _shared["users"] += 1
    server = _shared["server"]
    try:
        yield server
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            _shared["server"] = None
            assert connect_cli.main(["stop", "--state", str(_shared["state"])]) == 0
            left = cluster_lib.marked_pids(server.server_id)
            assert not left, f"Spark Connect server processes left running: {left}"
            assert not _shared["state"].exists()
