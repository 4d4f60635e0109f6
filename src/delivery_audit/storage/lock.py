"""The window's publication lock: one publisher of a window at a time, so overlapping
publications take turns and the manifest always describes files of the run that wrote it.

* local: ``fcntl.flock`` on ``<parent>/.<window dir>.lock`` (released by the kernel if the
  publisher dies; the empty file stays);
* S3: the object ``<parent>/.<window dir>.lock``, created with a conditional put
  (``If-None-Match: *``), refreshed with ``If-Match`` (which also proves it is still ours just
  before the manifest is written) and deleted with ``If-Match`` when done. A lock whose holder
  stopped refreshing for longer than its lease (server clock), or whose holder is a dead process
  of this same host (:func:`host_identity`), is taken over. The store must honour conditional
  writes (AWS S3 and MinIO do). See docs/reliability.md.

The report root's index (index.py) is guarded by the same kinds of lock on
``<root>/.index.lock`` (``what="the index"`` names it in messages).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from ..core.process import pid_alive
from ..core.timefmt import now_z
from .retry import CONFLICT_CODES, MISSING_CODES, error_code, with_retry
from .settings import PublishError, PublishSettings

log = logging.getLogger("delivery_audit.storage")


def lock_name(window_dir_name: str) -> str:
    """The lock's name, a sibling of the window directory (never inside it)."""
    return f".{window_dir_name}.lock"


def host_identity() -> str:
    """This host and PID namespace: a lock's PID is only meaningful within the same one."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    return "|".join(parts)


def _owner(run_id: str, since: str) -> dict[str, Any]:
    return {"run_id": run_id, "host": host_identity(), "pid": os.getpid(), "since": since}


# --------------------------------------------------------------------------- local


@contextlib.contextmanager
def local_lock(path: Path, run_id: str, settings: PublishSettings,
               what: str = "this window") -> Iterator[None]:
    """An exclusive flock on path, waiting up to settings.lock_wait_s for another publisher
    (of ``what``: the window, or the report root's index)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise PublishError(f"cannot open the publication lock {path}: {exc}; no manifest was "
                           "written") from exc
    try:
        deadline = time.monotonic() + settings.lock_wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
                    raise PublishError(
                        f"another publication of {what} holds {path} ({holder or '?'}); "
                        f"gave up after {settings.lock_wait_s:g}s; no manifest was written"
                    ) from None
                time.sleep(min(settings.lock_poll_s, 0.2))
            except OSError as exc:  # e.g. ENOLCK: a filesystem without locks
                raise PublishError(f"cannot lock {path}: {exc}; no manifest was written") \
                    from exc
        os.ftruncate(fd, 0)  # who holds it, for the message of a publisher that gives up
        os.pwrite(fd, json.dumps({"run_id": run_id, "host": socket.gethostname(),
                                  "pid": os.getpid(), "since": now_z()}).encode("utf-8"), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- S3


class S3Lock:
    """The window's publication lock (or the index's: ``what``): one object, written only with
    conditional puts."""

    def __init__(self, client: Any, bucket: str, key: str, run_id: str,
                 settings: PublishSettings, extra: dict[str, str], what: str = "this window"):
        self.client, self.bucket, self.key, self.settings = client, bucket, key, settings
        self.extra = extra  # the same SSE headers as the report (bucket policies may demand)
        self.token = uuid.uuid4().hex
        self.run_id = run_id
        self.what = what
        self.since = now_z()
        self.etag: str | None = None
        self.refreshed = 0.0

    def _body(self) -> bytes:
        return json.dumps({"token": self.token, "lease_s": self.settings.lock_lease_s,
                           **_owner(self.run_id, self.since)}).encode("utf-8")

    def _read(self) -> dict[str, Any] | None:
        """The current holder (its body, etag, age by the server's clock), None if no lock."""
        try:
            obj = with_retry(f"get {self.key}", lambda: self.client.get_object(
                Bucket=self.bucket, Key=self.key), self.settings)
        except Exception as exc:  # noqa: BLE001
            if error_code(exc) in MISSING_CODES:
                return None
            raise
        try:
            holder = json.loads(obj["Body"].read().decode("utf-8"))
        except ValueError:
            holder = {}
        date = ((obj.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}).get("date")
        now = parsedate_to_datetime(date) if date else datetime.now(UTC)
        holder["etag"] = obj.get("ETag")
        holder["age_s"] = (now - obj["LastModified"]).total_seconds()
        return holder

    def _put(self, if_match: str | None = None) -> bool:
        """Conditional put of our lock body; False if another holder won."""
        cond = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        body = self._body()
        try:
            resp = with_retry(f"put {self.key}", lambda: self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=body, ContentType="application/json",
                **cond, **self.extra), self.settings)
        except Exception as exc:  # noqa: BLE001
            if error_code(exc) not in CONFLICT_CODES | MISSING_CODES:
                raise
            holder = self._read()  # our put may have landed and only its answer got lost
            if not holder or holder.get("token") != self.token:
                return False
            resp = {"ETag": holder["etag"]}
        self.etag = resp.get("ETag")
        self.refreshed = time.monotonic()
        return True

    def _stale(self, holder: dict[str, Any]) -> bool:
        lease = float(holder.get("lease_s") or self.settings.lock_lease_s)
        if holder["age_s"] > lease:
            return True
        pid = holder.get("pid")
        return (holder.get("host") == host_identity() and isinstance(pid, int)
                and pid != os.getpid() and not pid_alive(pid))

    def acquire(self) -> None:
        deadline = time.monotonic() + self.settings.lock_wait_s
        while True:
            if self._put():
                return
            holder = self._read()
            if holder is not None and self._stale(holder):
                if self._put(if_match=holder["etag"]):
                    log.warning("took over the stale publication lock %s from %s (pid %s, "
                                "run %s)", self.key, holder.get("host"), holder.get("pid"),
                                holder.get("run_id"))
                    return
                continue
            if time.monotonic() >= deadline:
                who = (f"run {holder.get('run_id')}, pid {holder.get('pid')} on "
                       f"{str(holder.get('host')).split('|')[0]}, since {holder.get('since')}"
                       if holder else "?")
                raise PublishError(f"another publication of {self.what} holds "
                                   f"s3://{self.bucket}/{self.key} ({who}); gave up after "
                                   f"{self.settings.lock_wait_s:g}s")
            if holder is not None:
                time.sleep(self.settings.lock_poll_s)

    def keep(self, force: bool = False) -> None:
        """Refresh the lease when a third of it is gone (always when force): proves we hold it."""
        if not force and time.monotonic() - self.refreshed < self.settings.lock_lease_s / 3:
            return
        if not self._put(if_match=self.etag):
            raise PublishError(f"lost the publication lock s3://{self.bucket}/{self.key} "
                               "(another publisher took it over after the lease expired)")

    def release(self) -> None:
        if self.etag is None:
            return
        try:
            with_retry(f"delete {self.key}", lambda: self.client.delete_object(
                Bucket=self.bucket, Key=self.key, IfMatch=self.etag), self.settings)
        except Exception as exc:  # noqa: BLE001 - never hide the publication's own outcome
            code = error_code(exc)
            if code in MISSING_CODES:
                pass  # gone already (our delete landed, its answer got lost)
            elif code in CONFLICT_CODES:
                log.warning("publication lock %s is no longer ours; left alone", self.key)
            else:
                log.warning("could not release the publication lock %s (%s); it expires "
                            "after %gs", self.key, code or exc, self.settings.lock_lease_s)
        self.etag = None
