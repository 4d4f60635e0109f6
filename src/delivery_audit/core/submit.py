"""The spark-submit of an audit job: master, Python, memory, ``--py-files``, conf and env."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .packaging import package_zip


def is_cluster_master(master: str | None) -> bool:
    """True for a master whose executors are other processes that must be sent the package
    (``spark://…``, ``yarn``, ``k8s://…``); False for ``local…`` and no master."""
    return bool(master) and not str(master).startswith("local")


@contextmanager
def shipped_package(master: str | None, py_files: str | Path | None = None,
                    ) -> Iterator[str | None]:
    """What to pass as ``--py-files`` for this master: ``py_files`` if given, else on a
    cluster master a zip of the installed ``delivery_audit`` built for the occasion (its temp
    folder removed on exit), else None (local master: the driver's own import serves)."""
    if py_files or not is_cluster_master(master):
        yield str(py_files) if py_files else None
        return
    folder = Path(tempfile.mkdtemp(prefix="delivery-audit-py-files-"))
    try:
        yield str(package_zip(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class AuditSubmit:
    """Everything spark-submit is given for one run of an audit application (client mode):
    ``command()`` is the command line, ``env`` what to add to its environment."""

    master: str
    application: str
    args: tuple[str, ...]
    python: str
    driver_python: str
    py_files: str | None = None
    driver_memory: str | None = None  # None: spark-submit's default
    executor_memory: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def command(self, spark_submit: str | Path = "spark-submit") -> list[str]:
        """``spark-submit --master … [--driver-memory …] [--py-files …] --conf … app args``."""
        cmd = [str(spark_submit), "--master", self.master]
        if self.driver_memory:
            cmd += ["--driver-memory", self.driver_memory]
        if self.executor_memory:
            cmd += ["--executor-memory", self.executor_memory]
        if self.py_files:
            cmd += ["--py-files", self.py_files]
        for k, v in self.conf.items():
            cmd += ["--conf", f"{k}={v}"]
        return [*cmd, self.application, *self.args]

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment for spark-submit: ``base`` (default os.environ) + ``env``."""
        return {**(os.environ if base is None else base), **self.env}


def audit_submit(master: str, application: str | Path, args: Sequence[str] = (), *,
                 py_files: str | Path | None = None, conf: Mapping[str, str] | None = None,
                 env: Mapping[str, str] | None = None, python: str | None = None,
                 driver_memory: str | None = None, executor_memory: str | None = None,
                 local_ip: str | None = None) -> AuditSubmit:
    """The spark-submit of ``application`` (jobs/reconcile.py, or the benchmark's runner) on
    ``master``.

    * Python: ``python``, else PYSPARK_PYTHON from ``env`` or this process's environment, else
      this interpreter (the one with the dependencies); the driver's is PYSPARK_DRIVER_PYTHON
      from the same places, else the same one. Both go into the environment (PYSPARK_PYTHON,
      PYSPARK_DRIVER_PYTHON) and the conf (spark.pyspark.python, spark.pyspark.driver.python).
    * ``py_files``: what ``--py-files`` ships (``shipped_package`` decides it for a master).
    * ``conf`` is the caller's and wins over the above; ``env`` is the caller's too (its
      Python settings decide the Python, see above); ``local_ip`` sets SPARK_LOCAL_IP (a
      cluster on loopback).
    """
    given = dict(env or {})

    def setting(name: str) -> str | None:
        return given.get(name) or os.environ.get(name)

    python = python or setting("PYSPARK_PYTHON") or sys.executable
    driver_python = setting("PYSPARK_DRIVER_PYTHON") or python
    base_env = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": driver_python}
    if local_ip:
        base_env["SPARK_LOCAL_IP"] = local_ip
    base_conf = {"spark.pyspark.python": python, "spark.pyspark.driver.python": driver_python}
    return AuditSubmit(master=master, application=str(application), args=tuple(args),
                       python=python, driver_python=driver_python,
                       py_files=str(py_files) if py_files else None,
                       driver_memory=driver_memory, executor_memory=executor_memory,
                       conf={**base_conf, **(conf or {})}, env={**given, **base_env})
