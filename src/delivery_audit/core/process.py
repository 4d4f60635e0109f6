"""Whether a process is alive, by PID: for the publisher's lease lock (is its holder still
running?) and the local Spark cluster script (are its daemons still up?)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def stat_fields(stat: Path) -> list[str]:
    """The fields of a /proc stat file (a process's or a thread's) after its name, which may
    hold spaces and parentheses: ``[0]`` the state letter, ``[11]``/``[12]`` utime/stime in
    clock ticks. Raises OSError when it cannot be read (the process ended)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, Z, ...), or None if it cannot be read."""
    with contextlib.suppress(OSError, IndexError):
        return stat_fields(Path(f"/proc/{pid}/stat"))[0]
    return None


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (killed, not yet reaped: dead for
    our purpose). A process of another user (EPERM) counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return process_state(pid) != "Z"
