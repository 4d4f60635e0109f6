"""CPU seconds of a process tree by kind of work, read from /proc while it runs (Linux).

A JVM's threads are named: ``Executor task launch worker`` runs Spark's tasks, ``C1/C2
CompilerThread`` is HotSpot's JIT, ``GC Thread#`` / ``VM Thread`` the collector; the rest
of a JVM (the driver's planning, the scheduler, Py4J) is ``jvm_other``; every other process
of the tree (the Python driver, PySpark's workers) is ``python``. A thread's CPU is kept at
its last sample, so threads that end (idle JIT threads do) still count.

The benchmark prints it per run (scripts/bench.py): on 2 cores a cold audit spends a third
of its CPU compiling its own plan's code (docs/plan-redesign.md, twelfth session).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from delivery_audit.core.process import stat_fields

_KINDS = (("tasks", re.compile(r"^Executor task")),
          ("jit", re.compile(r"^C[12] CompilerThre")),
          ("gc", re.compile(r"^(GC Thread|VM Thread|ParGC|G1 )")))
KINDS = ("tasks", "jit", "gc", "jvm_other", "python")
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(stat: Path) -> float:
    """utime + stime of a /proc stat file, in seconds."""
    fields = stat_fields(stat)
    return (int(fields[11]) + int(fields[12])) / _TICK


class CpuSampler:
    """Call :meth:`sample` with the tree's pids now and then; :meth:`seconds` sums the last
    sample of every thread (JVMs) or process (the rest) by kind."""

    def __init__(self) -> None:
        self._last: dict[tuple[int, int], tuple[str, float]] = {}

    def sample(self, pids: list[int]) -> None:
        for pid in pids:
            proc = Path(f"/proc/{pid}")
            try:
                if proc.joinpath("comm").read_text().strip() != "java":
                    self._keep((pid, 0), "python", _cpu(proc / "stat"))
                    continue
                tids = os.listdir(proc / "task")
            except (OSError, IndexError, ValueError):
                continue  # ended between the listing and the read
            for tid in tids:
                task = proc / "task" / tid
                try:
                    name = task.joinpath("comm").read_text().strip()
                    seconds = _cpu(task / "stat")
                except (OSError, IndexError, ValueError):
                    continue
                kind = next((k for k, pattern in _KINDS if pattern.match(name)), "jvm_other")
                self._keep((pid, int(tid)), kind, seconds)

    def _keep(self, key: tuple[int, int], kind: str, seconds: float) -> None:
        if seconds >= self._last.get(key, (kind, 0.0))[1]:
            self._last[key] = (kind, seconds)

    def seconds(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for kind, seconds in self._last.values():
            out[kind] += seconds
        return {k: round(v, 1) for k, v in out.items()}
