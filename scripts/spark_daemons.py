"""A local Spark standalone cluster's daemons (master, workers): start, wait, stop by PID, state.

* Every port is free when chosen and bound to 127.0.0.1 (``--host`` and SPARK_LOCAL_IP, which
  the web UIs bind to); the master's REST submission server (on by default since Spark 4.1)
  is turned off.
* Work, scratch, log and conf dirs are in one temp dir, removed by ``stop``.
* Ready means: the master's ``/json`` lists every worker as ALIVE.
* Each daemon is started in its own session (process group = its PID) with a marker
  variable (``DELIVERY_AUDIT_CLUSTER_ID``) in its environment, which the executors it spawns
  inherit. ``stop`` signals those process groups (TERM, then KILL), then looks for any process
  that still carries the marker and kills it by PID; it reports what it had to kill.
* ``save``/``load`` keep the cluster's PIDs and ports in a state file, so another process
  (scripts/spark_cluster.py ``stop``) can stop it.

A Spark Connect server (``ConnectServer``: one driver JVM, ``SparkConnectServer`` run by
spark-submit, gRPC and UI on free ports of 127.0.0.1, on ``local[N]`` or on a standalone
cluster's master) is started, marked, stopped and saved the same way
(scripts/spark_connect.py, ``make connect-up``).

Importable (scripts/ on sys.path, as for scripts/spark_cluster.py and scripts/bench.py, or by
file from tests/spark_cluster.py): ``SparkCluster`` (start/stop/kill_worker/start_worker/status),
``ConnectServer`` (start/stop/status/save/load), ``marked_pids``, ``free_port``,
``spark_home``, ``HOST``. What to submit to it comes from the
engine: ``delivery_audit.core.submit`` (the command, the ``--py-files`` zip).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar, Self

import pyspark

from delivery_audit.core.process import pid_alive, process_state
from delivery_audit.spark import DEFAULT_CONF

HOST = "127.0.0.1"
_CHECKOUT = hashlib.sha1(str(Path(__file__).resolve().parents[1]).encode()).hexdigest()[:8]
STATE_ENV = {"cluster": "DELIVERY_AUDIT_CLUSTER_STATE", "connect": "DELIVERY_AUDIT_CONNECT_STATE"}


def state_path(kind: str) -> Path:
    """The state file of this checkout's standalone cluster or Connect server (``kind``:
    cluster | connect); its environment variable (:data:`STATE_ENV`) overrides it."""
    default = Path(tempfile.gettempdir()) / f"delivery-audit-spark-{kind}-{_CHECKOUT}.json"
    return Path(os.environ.get(STATE_ENV[kind], default))
MARKER = "DELIVERY_AUDIT_CLUSTER_ID"


def spark_home() -> Path:
    """SPARK_HOME if set, else the installed pyspark package (it ships bin/ and jars/)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    return Path(pyspark.__file__).resolve().parent


def spark_submit() -> Path:
    """The spark-submit of that Spark (for ``AuditSubmit.command``)."""
    return spark_home() / "bin" / "spark-submit"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _json(url: str, timeout: float = 5) -> dict | list:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


# --------------------------------------------------------------------------- processes


def _proc_environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def marked_pids(cluster_id: str) -> list[int]:
    """PIDs of every live process (daemons and the executors they spawned) with the marker."""
    needle = f"{MARKER}={cluster_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        if needle in _proc_environ(pid).split(b"\0") and process_state(pid) not in (None, "Z"):
            found.append(pid)
    return sorted(found)


def _reap(pid: int) -> None:
    """Collect the exit status when the daemon is our child (no zombie left behind)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


PORT_ATTEMPTS = 3


@dataclass
class Daemon:
    name: str
    pid: int
    pgid: int
    log: str
    webui_port: int
    stopped: bool = False


class DaemonExited(RuntimeError):
    def __init__(self, daemon: Daemon, message: str) -> None:
        super().__init__(message)
        self.daemon = daemon


@dataclass
class _Daemons:
    """What a standalone cluster and a Connect server share: a temp folder of their own
    (logs, conf, scratch; removed by ``stop`` when they made it), an environment with their
    marker, each daemon in a session of its own, a start retried on other free ports when a
    port was taken meanwhile, stop by process group then by marker, and a state file."""

    base_dir: str = ""
    _own_base: bool = False

    _PREFIX: ClassVar[str] = "delivery-audit-spark-"
    _FOLDERS: ClassVar[tuple[str, ...]] = ("logs", "local", "conf")

    @property
    def marker_id(self) -> str:  # the value of MARKER in every process of this set
        raise NotImplementedError

    def daemons(self) -> list[Daemon]:
        """Every daemon started, to be stopped (process group leaders)."""
        raise NotImplementedError

    def _make_base(self) -> Path:
        if not self.base_dir:
            self.base_dir = tempfile.mkdtemp(prefix=self._PREFIX)
            self._own_base = True
        base = Path(self.base_dir)
        for sub in self._FOLDERS:
            (base / sub).mkdir(parents=True, exist_ok=True)
        return base

    def _env(self) -> dict[str, str]:
        """This process's environment without a client's Spark settings, plus the daemons'."""
        base = Path(self.base_dir)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYSPARK_GATEWAY")
               and k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
        env.update({
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_DIRS": str(base / "local"),
            "SPARK_CONF_DIR": str(base / "conf"),
            "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable),
            MARKER: self.marker_id,
        })
        return env

    def _popen(self, name: str, cmd: list[str], webui_port: int) -> Daemon:
        """Start one daemon in a session of its own, its output in ``logs/<name>.log``.
        spark-class and spark-submit exec java, so the PID is the JVM's, its group its own."""
        base = Path(self.base_dir)
        log = base / "logs" / f"{name}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, env=self._env(), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=base, start_new_session=True)
        return Daemon(name=name, pid=proc.pid, pgid=proc.pid, log=str(log),
                      webui_port=webui_port)

    @staticmethod
    def _on_free_ports(launch: Callable[[], Daemon], wait: Callable[[], object]) -> None:
        """``launch`` (choosing free ports) then ``wait``; again on other ports when the
        daemon exited (a port taken between choosing and binding), up to PORT_ATTEMPTS."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            daemon = launch()
            try:
                wait()
                return
            except DaemonExited:
                _reap(daemon.pid)
                if attempt == PORT_ATTEMPTS:
                    raise

    def stop(self, timeout: float = 30) -> list[int]:
        """Stop every daemon by its process group, then kill any process left with the
        marker. Returns the PIDs that needed the final SIGKILL."""
        leftovers = _stop_groups(self.daemons(), self.marker_id, timeout)
        if self._own_base and self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        return leftovers

    def running(self) -> list[int]:
        """The live processes that carry this set's marker."""
        return marked_pids(self.marker_id)

    # ------------------------------------------------------------------ state file

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> Self:
        return cls(**cls._from_state(json.loads(path.read_text())))

    @classmethod
    def _from_state(cls, raw: dict) -> dict:
        return raw

    @classmethod
    def running_at(cls, path: Path) -> Self | None:
        """The set a state file describes, when any of its processes still runs."""
        if not path.exists():
            return None
        old = cls.load(path)
        return old if old.running() else None

    def stop_saved(self, path: Path) -> str:
        """Stop, forget the state file; what happened, in a line."""
        leftovers = self.stop()
        path.unlink(missing_ok=True)
        return ("stopped" + (f" (SIGKILLed {leftovers})" if leftovers else "")
                + f"; processes left: {self.running() or 'none'}")


@dataclass
class SparkCluster(_Daemons):
    workers: int = 2
    cores: int = 1
    memory: str = "2g"
    daemon_memory: str = "512m"
    cluster_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    master_port: int = 0
    master_webui_port: int = 0
    master: Daemon | None = None
    worker_daemons: list[Daemon] = field(default_factory=list)
    killed: list[dict] = field(default_factory=list)

    _FOLDERS: ClassVar[tuple[str, ...]] = ("logs", "work", "local", "conf")

    @property
    def marker_id(self) -> str:
        return self.cluster_id

    # ------------------------------------------------------------------ addresses

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{HOST}:{self.master_webui_port}"

    # ------------------------------------------------------------------ lifecycle

    def _env(self) -> dict[str, str]:
        return {**super()._env(), "SPARK_DAEMON_MEMORY": self.daemon_memory}

    def _spawn(self, name: str, args: list[str], webui_port: int) -> Daemon:
        conf = Path(self.base_dir) / "conf" / "spark-defaults.conf"
        return self._popen(name, [str(spark_home() / "bin" / "spark-class"), *args,
                                  "--properties-file", str(conf)], webui_port)

    def start(self, timeout: float = 120) -> SparkCluster:
        base = self._make_base()
        (base / "conf" / "spark-defaults.conf").write_text(
            "spark.master.rest.enabled false\n"
            "spark.ui.showConsoleProgress false\n"
            # a port taken between choosing and binding fails the daemon (and it is started
            # again on other ports) instead of silently moving to port+1
            "spark.port.maxRetries 0\n"
            # a worker that stops heart-beating is declared lost after this
            "spark.worker.timeout 30\n")

        def launch() -> Daemon:
            self.master_port, self.master_webui_port = free_port(), free_port()
            self.master = self._spawn(
                "master", ["org.apache.spark.deploy.master.Master", "--host", HOST,
                           "--port", str(self.master_port),
                           "--webui-port", str(self.master_webui_port)],
                self.master_webui_port)
            return self.master

        try:
            self._on_free_ports(launch, lambda: self._wait(
                lambda s: s.get("status") == "ALIVE", timeout, "the master"))
            for i in range(self.workers):
                self.start_worker(i, timeout=0)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def start_worker(self, index: int, timeout: float = 120) -> Daemon:
        """Start worker ``index`` (again, after a kill); waits for every worker when timeout."""
        port = free_port()
        work = Path(self.base_dir) / "work" / f"worker-{index}"
        work.mkdir(parents=True, exist_ok=True)
        daemon = self._spawn(
            f"worker-{index}",
            ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", HOST,
             "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(port),
             "--work-dir", str(work)], port)
        if index < len(self.worker_daemons):
            self.worker_daemons[index] = daemon
        else:
            self.worker_daemons.append(daemon)
        if timeout:
            self.wait_ready(timeout)
        return daemon

    def wait_ready(self, timeout: float = 120) -> dict:
        """Until the master lists every live worker daemon as ALIVE (a worker that exits on
        the way, e.g. its UI port was taken meanwhile, is started again on another port)."""
        deadline = time.monotonic() + timeout
        restarts = 0
        while True:
            want = {f"{HOST}:{d.webui_port}" for d in self.worker_daemons if not d.stopped}

            def ready(state: dict, want=want) -> bool:
                alive = {w.get("webuiaddress", "").split("//")[-1]
                         for w in state.get("workers", []) if w.get("state") == "ALIVE"}
                return want <= alive

            try:
                return self._wait(ready, max(deadline - time.monotonic(), 1),
                                  f"{len(want)} ALIVE worker(s)")
            except DaemonExited as exc:
                index = next((i for i, d in enumerate(self.worker_daemons)
                              if d.name == exc.daemon.name), None)
                restarts += 1
                if index is None or restarts > PORT_ATTEMPTS * max(len(self.worker_daemons), 1):
                    raise
                _reap(exc.daemon.pid)
                self.start_worker(index, timeout=0)

    def _wait(self, check, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for d in [self.master, *self.worker_daemons]:
                if d and not d.stopped and not pid_alive(d.pid):
                    raise DaemonExited(d, f"{d.name} exited while waiting for {what}; "
                                          f"log {d.log}:\n{_tail(d.log)}")
            with contextlib.suppress(urllib.error.URLError, OSError, ValueError):
                state = self.status()
                if check(state):
                    return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} within {timeout:.0f} s; master log:\n"
                                   f"{_tail(self.master.log) if self.master else ''}")
            time.sleep(0.3)

    def status(self) -> dict:
        """The master's JSON: status, workers (state, cores, memory), active/completed apps."""
        return _json(f"{self.webui_url}/json/")

    def worker_state(self, index: int) -> dict:
        d = self.worker_daemons[index]
        return _json(f"http://{HOST}:{d.webui_port}/json/")

    def kill_worker(self, index: int, sig: int = signal.SIGKILL) -> Daemon:
        """Kill one worker's JVM by PID (its executors are left to notice on their own)."""
        d = self.worker_daemons[index]
        os.kill(d.pid, sig)
        deadline = time.monotonic() + 30
        while pid_alive(d.pid) and time.monotonic() < deadline:
            _reap(d.pid)
            time.sleep(0.05)
        _reap(d.pid)
        d.stopped = True
        self.killed.append({**asdict(d), "signal": int(sig), "at": time.time()})
        return d

    def group_pids(self, pgid: int) -> list[int]:
        """Live processes of one of our process groups that carry the marker."""
        return [p for p in marked_pids(self.cluster_id) if _pgid(p) == pgid]

    def daemons(self) -> list[Daemon]:
        """Workers first, then the master, then the workers killed on purpose."""
        return [d for d in [*self.worker_daemons, self.master] if d] + [
            Daemon(**{k: v for k, v in k_.items() if k in Daemon.__dataclass_fields__})
            for k_ in self.killed]

    def stop(self, timeout: float = 30) -> list[int]:
        """Stop every daemon by its process group (workers first), then kill any process left
        with the cluster's marker. Returns the PIDs that needed the final SIGKILL."""
        try:
            return super().stop(timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"cluster {exc}") from None

    @classmethod
    def _from_state(cls, raw: dict) -> dict:
        raw["master"] = Daemon(**raw["master"]) if raw.get("master") else None
        raw["worker_daemons"] = [Daemon(**d) for d in raw.get("worker_daemons", [])]
        return raw

    def describe(self) -> str:
        lines = [f"master   {self.master_url}   UI {self.webui_url}   pid {self.master.pid}"
                 if self.master else "master   (none)"]
        for d in self.worker_daemons:
            lines.append(f"{d.name:8s} UI http://{HOST}:{d.webui_port}   pid {d.pid}"
                         f"{'   (stopped)' if d.stopped else ''}")
        lines.append(f"dir      {self.base_dir}")
        return "\n".join(lines)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _signal_group(pgid: int, sig: int, cluster_id: str) -> None:
    """Signal a process group only while one of its members carries our marker (a PID and
    its group number could have been reused since the state file was written)."""
    members = [p for p in marked_pids(cluster_id) if _pgid(p) == pgid]
    if not members:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _tail(path: str, n: int = 3000) -> str:
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return ""


# --------------------------------------------------------------------------- Spark Connect

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _port_open(port: int, timeout: float = 1) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=timeout):
        return True
    return False


@dataclass
class ConnectServer(_Daemons):
    """A Spark Connect server on 127.0.0.1: ``url`` (sc://) for clients, ``ui_url`` for its
    driver UI (and REST API: the jobs its clients ran). ``master``: ``local[N]`` (the
    server's own JVM runs the tasks) or a standalone cluster's ``spark://`` URL (executors
    of ``executor_memory`` on its workers). The server's static settings are the engine's
    (``delivery_audit.spark.DEFAULT_CONF``), with its UI on; each client sets its own SQL
    settings on its session."""

    master: str = "local[2]"
    driver_memory: str = "2g"
    executor_memory: str = "1g"
    server_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    port: int = 0
    ui_port: int = 0
    daemon: Daemon | None = None

    _PREFIX: ClassVar[str] = "delivery-audit-connect-"

    @property
    def marker_id(self) -> str:
        return self.server_id

    def daemons(self) -> list[Daemon]:
        return [self.daemon] if self.daemon else []

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://{HOST}:{self.ui_port}"

    def _conf(self) -> dict[str, str]:
        conf = {k: v for k, v in DEFAULT_CONF.items() if k != "spark.driver.extraJavaOptions"}
        conf.update({
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "true",
            "spark.ui.port": str(self.ui_port),
            # a port taken between choosing and binding fails the server (started again on
            # other ports) instead of silently moving to port+1
            "spark.port.maxRetries": "0",
            "spark.connect.grpc.port.maxRetries": "0",
            "spark.master.rest.enabled": "false",
        })
        if self.master.startswith("spark://"):
            conf["spark.executor.memory"] = self.executor_memory
            conf["spark.executor.extraJavaOptions"] = DEFAULT_CONF[
                "spark.executor.extraJavaOptions"]
        return conf

    def start(self, timeout: float = 120) -> ConnectServer:
        self._make_base()

        def launch() -> Daemon:
            self.port, self.ui_port = free_port(), free_port()
            self.daemon = self._spawn()
            return self.daemon

        try:
            self._on_free_ports(launch, lambda: self._wait(timeout))
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self) -> Daemon:
        props = Path(self.base_dir) / "conf" / "spark-defaults.conf"
        props.write_text("".join(f"{k} {v}\n" for k, v in self._conf().items()))
        return self._popen("connect-server", [
            str(spark_submit()), "--class", CONNECT_SERVER_CLASS, "--master", self.master,
            "--name", "delivery-audit-connect", "--driver-memory", self.driver_memory,
            "--driver-java-options", "-XX:+UseParallelGC", "--properties-file", str(props)],
            self.ui_port)

    def _wait(self, timeout: float) -> None:
        """Until the gRPC port accepts connections and the UI's REST API lists the app."""
        deadline = time.monotonic() + timeout
        while True:
            d = self.daemon
            if d is None or not pid_alive(d.pid):
                raise DaemonExited(d, f"the Spark Connect server exited while starting; log "
                                      f"{d.log if d else ''}:\n{_tail(d.log) if d else ''}")
            if _port_open(self.port):
                with contextlib.suppress(urllib.error.URLError, OSError, ValueError):
                    if self.status().get("apps"):
                        return
            if time.monotonic() > deadline:
                raise TimeoutError(f"no Spark Connect server within {timeout:.0f} s; log:\n"
                                   f"{_tail(d.log)}")
            time.sleep(0.3)

    def status(self) -> dict:
        """The server's applications (its UI's REST API) and whether its gRPC port answers."""
        return {"grpc": _port_open(self.port),
                "apps": _json(f"{self.ui_url}/api/v1/applications")}

    def jobs_tagged(self, tag: str, timeout: float = 10) -> list[dict]:
        """The server's jobs that carry ``tag`` in one of their job tags (its UI's REST API):
        a Connect client's tagged operations (delivery_audit.spark_jobs.JobCounter)."""
        jobs: list[dict] = []
        for app in _json(f"{self.ui_url}/api/v1/applications", timeout):
            jobs += [j for j in _json(f"{self.ui_url}/api/v1/applications/{app['id']}/jobs",
                                      timeout)
                     if any(tag in t for t in j.get("jobTags", []))]
        return jobs

    @classmethod
    def _from_state(cls, raw: dict) -> dict:
        raw["daemon"] = Daemon(**raw["daemon"]) if raw.get("daemon") else None
        return raw

    def describe(self) -> str:
        pid = self.daemon.pid if self.daemon else "(none)"
        return (f"connect  {self.url}   master {self.master}   pid {pid}\n"
                f"UI       {self.ui_url}\ndir      {self.base_dir}")


def _stop_groups(groups: list[Daemon], marker_id: str, timeout: float) -> list[int]:
    """TERM each daemon's process group, wait, then KILL the groups and any process left
    with the marker; the PIDs that needed the KILL. Raises if any is still running."""
    for d in groups:
        _signal_group(d.pgid, signal.SIGTERM, marker_id)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in groups:
            _reap(d.pid)
        if not marked_pids(marker_id):
            break
        time.sleep(0.2)
    leftovers = marked_pids(marker_id)
    for d in groups:
        _signal_group(d.pgid, signal.SIGKILL, marker_id)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while marked_pids(marker_id) and time.monotonic() < deadline:
        for d in groups:
            _reap(d.pid)
        time.sleep(0.1)
    for d in groups:
        _reap(d.pid)
        d.stopped = True
    still = marked_pids(marker_id)
    if still:
        raise RuntimeError(f"processes still running after SIGKILL: {still}")
    return leftovers
