"""Publishing a run's outputs to a local directory or S3 so readers never see half a report.

Protocol (contract §7), for ``<destination>/<relative_dir>/``:

0. the window's publication lock is taken (one publisher per window at a time; see below);
1. the previous ``_manifest.json`` is removed first: from then on readers see "no report";
2. every file of the staging directory is written;
3. what a previous run left under the prefix that this run does not write is deleted;
4. ``_manifest.json`` (paths, sizes, sha256, window id, run id, written_at) is written **last**;
5. the lock is released.

A failure before step 4 raises :class:`PublishError` naming the step and leaves no manifest.
Locally the files are first copied (and fsync'ed) to a temporary sibling directory that is
swapped in by rename; leftovers of an interrupted publication are removed by the next one.

The lock makes overlapping publications of one window take turns, so the last one to finish
wins whole and the manifest always describes files of the run that wrote it:

* local: ``fcntl.flock`` on ``<parent>/.<window dir>.lock`` (released by the kernel if the
  publisher dies; the empty file stays);
* S3: the object ``<parent>/.<window dir>.lock``, created with a conditional put
  (``If-None-Match: *``), refreshed with ``If-Match`` (which also proves it is still ours just
  before the manifest is written) and deleted with ``If-Match`` when done. A lock whose holder
  stopped refreshing for longer than its lease (server clock), or whose holder is a dead process
  of this same host, is taken over. The store must honour conditional writes (AWS S3 and MinIO
  do). See docs/reliability.md.

Retries: botocore retries transient errors itself (adaptive mode), and every call is also
wrapped in :func:`_with_retry` (throttling, 5xx, connection resets and timeouts) with exponential
backoff; attempts and delays come from :class:`PublishSettings` (environment:
``DELIVERY_AUDIT_PUBLISH_ATTEMPTS``, ``DELIVERY_AUDIT_PUBLISH_RETRY_DELAY_S``,
``DELIVERY_AUDIT_PUBLISH_LOCK_WAIT_S``, ``DELIVERY_AUDIT_PUBLISH_LOCK_LEASE_S``).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import random
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar

from .core.process import pid_alive
from .core.s3uri import split_s3
from .core.timefmt import now_z

log = logging.getLogger("delivery_audit.storage")

MANIFEST = "_manifest.json"
MANIFEST_SCHEMA_VERSION = "1.0"
SSE_MODES = ("AES256", "aws:kms")

_RETRYABLE_CODES = {
    "Throttling", "ThrottlingException", "SlowDown", "RequestTimeout", "RequestTimeTooSkewed",
    "InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequests",
    "BandwidthLimitExceeded", "503", "500", "502", "504",
}
# a conditional write lost the race (or the object it was conditioned on is gone)
_CONFLICT_CODES = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
_CONTENT_TYPES = {
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".csv": "text/csv",
    ".txt": "text/plain; charset=utf-8",
    ".jsonl": "application/x-ndjson",
}

T = TypeVar("T")


class PublishError(RuntimeError):
    """Publishing failed; the destination holds no manifest for this window."""


@dataclass(frozen=True)
class PublishSettings:
    """Retry and lock tuning. :meth:`from_env` reads ``DELIVERY_AUDIT_PUBLISH_*``."""

    attempts: int = 4  # our attempts per storage call (on top of botocore's own retries)
    retry_delay_s: float = 0.5  # first backoff; doubles per attempt, jittered x0.5-1.5
    max_retry_delay_s: float = 8.0
    lock_wait_s: float = 900.0  # how long to wait for another publisher of the window
    lock_lease_s: float = 600.0  # S3: a lock not refreshed for this long is taken over
    lock_poll_s: float = 1.0  # how often to look at a held lock

    @classmethod
    def from_env(cls) -> PublishSettings:
        env = os.environ.get
        default = cls()
        return cls(
            attempts=max(1, int(env("DELIVERY_AUDIT_PUBLISH_ATTEMPTS") or default.attempts)),
            retry_delay_s=float(env("DELIVERY_AUDIT_PUBLISH_RETRY_DELAY_S")
                                or default.retry_delay_s),
            lock_wait_s=float(env("DELIVERY_AUDIT_PUBLISH_LOCK_WAIT_S") or default.lock_wait_s),
            lock_lease_s=float(env("DELIVERY_AUDIT_PUBLISH_LOCK_LEASE_S")
                               or default.lock_lease_s),
        )


# --------------------------------------------------------------------------- helpers


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def staged_files(staging_dir: Path) -> list[tuple[str, Path]]:
    """(relative posix path, absolute path) of every regular file below staging_dir, sorted.

    A ``_manifest.json`` at the top of the staging dir is ignored (the publisher writes it), and
    so are Hadoop's hidden ``.*.crc`` checksum sidecars (the manifest carries sha256 instead).
    """
    staging_dir = Path(staging_dir)
    if not staging_dir.is_dir():
        raise PublishError(f"staging directory {staging_dir} does not exist")
    out: list[tuple[str, Path]] = []
    for p in sorted(staging_dir.rglob("*")):
        if p.is_file():
            rel = p.relative_to(staging_dir).as_posix()
            if rel != MANIFEST and not (p.name.startswith(".") and p.name.endswith(".crc")):
                out.append((rel, p))
    return out


def _report_ids(staging_dir: Path, relative_dir: str) -> tuple[str, str]:
    """(window id, run id) from report.json; else the last part of relative_dir, a fresh id."""
    wid = run_id = None
    report = Path(staging_dir) / "report.json"
    if report.is_file():
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
            wid = (data.get("window") or {}).get("id")
            run_id = (data.get("run") or {}).get("run_id")
        except (OSError, ValueError, AttributeError):
            pass
    return (str(wid) if wid else relative_dir.rstrip("/").rsplit("/", 1)[-1],
            str(run_id) if run_id else uuid.uuid4().hex[:12])


def _manifest(entries: list[dict[str, Any]], window_id: str, run_id: str, relative_dir: str,
              destination: str) -> dict[str, Any]:
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "window_id": window_id,
        "run_id": run_id,
        "relative_dir": relative_dir,
        "destination": destination,
        "written_at": _now_iso(),
        "file_count": len(entries),
        "total_bytes": sum(e["size"] for e in entries),
        "files": entries,
    }


def _is_s3(destination: str) -> bool:
    return destination.startswith("s3://") or destination.startswith("s3a://")


def _split_s3(destination: str, relative_dir: str) -> tuple[str, str]:
    bucket, prefix = split_s3(destination)
    if not bucket:
        raise ValueError(f"no bucket in {destination!r}")
    parts = [p.strip("/") for p in (prefix, relative_dir) if p.strip("/")]
    return bucket, "/".join(parts) + "/"


def _local_root(destination: str) -> Path:
    return Path(destination[len("file://"):] if destination.startswith("file://") else destination)


def _check_relative(relative_dir: str) -> str:
    rel = relative_dir.strip("/")
    if not rel or any(part in ("", ".", "..") for part in rel.split("/")):
        raise ValueError(f"relative_dir must be a plain relative path, got {relative_dir!r}")
    return rel


def lock_name(window_dir_name: str) -> str:
    """The lock's name, a sibling of the window directory (never inside it)."""
    return f".{window_dir_name}.lock"


def _host_identity() -> str:
    """This host and PID namespace: a lock's PID is only meaningful within the same one."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    with contextlib.suppress(OSError):
        parts.append(os.readlink("/proc/self/ns/pid"))
    return "|".join(parts)


def _now_iso() -> str:
    return now_z()


def _owner(run_id: str, since: str) -> dict[str, Any]:
    return {"run_id": run_id, "host": _host_identity(), "pid": os.getpid(), "since": since}


# --------------------------------------------------------------------------- public API


def publish(staging_dir: Path, destination: str, relative_dir: str, *, sse: str | None = None,
            kms_key_id: str | None = None, s3_client: Any = None,
            endpoint_url: str | None = None, window_id: str | None = None,
            settings: PublishSettings | None = None) -> dict:
    """Publish every file of staging_dir under <destination>/<relative_dir>/; returns the manifest.

    destination: a local directory (or file:// URL) or ``s3://bucket/prefix``.
    sse: None, "AES256" (SSE-S3) or "aws:kms" (SSE-KMS; kms_key_id optional, and giving a
    kms_key_id alone implies "aws:kms"). Ignored for local destinations.
    window_id: defaults to report.json's window.id, else the last part of relative_dir.
    settings: retry and lock tuning; default :meth:`PublishSettings.from_env`.
    """
    staging_dir = Path(staging_dir)
    rel = _check_relative(relative_dir)
    files = staged_files(staging_dir)
    wid, run_id = _report_ids(staging_dir, rel)
    wid = window_id or wid
    settings = settings or PublishSettings.from_env()
    if _is_s3(destination):
        if kms_key_id and not sse:
            sse = "aws:kms"
        if sse is not None and sse not in SSE_MODES:
            raise ValueError(f"sse must be one of {SSE_MODES} or None, got {sse!r}")
        return _publish_s3(files, destination, rel, wid, run_id, sse=sse, kms_key_id=kms_key_id,
                           client=s3_client or make_s3_client(endpoint_url), settings=settings)
    return _publish_local(files, _local_root(destination), rel, wid, run_id, destination,
                          settings)


def read_manifest(destination: str, relative_dir: str, *, s3_client: Any = None,
                  endpoint_url: str | None = None) -> dict | None:
    """The published manifest of that prefix, or None when there is none (no complete report)."""
    rel = _check_relative(relative_dir)
    if _is_s3(destination):
        client = s3_client or make_s3_client(endpoint_url)
        bucket, prefix = _split_s3(destination, rel)
        try:
            obj = client.get_object(Bucket=bucket, Key=prefix + MANIFEST)
        except Exception as exc:  # noqa: BLE001 - botocore's error classes are dynamic
            if _error_code(exc) in _MISSING_CODES:
                return None
            raise
        return json.loads(obj["Body"].read().decode("utf-8"))
    path = _local_root(destination) / rel / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def make_s3_client(endpoint_url: str | None = None) -> Any:
    """An S3 client from the standard AWS credential chain, with adaptive retries.

    botocore retries throttling, 5xx and connection errors (resets included) itself;
    :func:`_with_retry` adds attempts on top. ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``
    are honoured by boto3 itself; an explicit endpoint_url wins over them.
    """
    import boto3
    from botocore.config import Config

    cfg = Config(retries={"max_attempts": 8, "mode": "adaptive"}, connect_timeout=10,
                 read_timeout=60)
    kwargs: dict[str, Any] = {"config": cfg}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    return boto3.client("s3", **kwargs)


# --------------------------------------------------------------------------- local


@contextlib.contextmanager
def _local_lock(path: Path, run_id: str, settings: PublishSettings) -> Iterator[None]:
    """An exclusive flock on path, waiting up to settings.lock_wait_s for another publisher."""
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
                        f"another publication of this window holds {path} ({holder or '?'}); "
                        f"gave up after {settings.lock_wait_s:g}s; no manifest was written"
                    ) from None
                time.sleep(min(settings.lock_poll_s, 0.2))
            except OSError as exc:  # e.g. ENOLCK: a filesystem without locks
                raise PublishError(f"cannot lock {path}: {exc}; no manifest was written") \
                    from exc
        os.ftruncate(fd, 0)  # who holds it, for the message of a publisher that gives up
        os.pwrite(fd, json.dumps({"run_id": run_id, "host": socket.gethostname(),
                                  "pid": os.getpid(), "since": _now_iso()}).encode("utf-8"), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish_local(files: list[tuple[str, Path]], root: Path, rel: str, wid: str, run_id: str,
                   destination: str, settings: PublishSettings) -> dict:
    target = root / rel
    parent = target.parent
    tag = uuid.uuid4().hex[:12]
    tmp_prefix, old_prefix = f".{target.name}.tmp-", f".{target.name}.old-"
    tmp = parent / f"{tmp_prefix}{tag}"
    old = parent / f"{old_prefix}{tag}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(f"publishing to {target} failed: {exc}; no manifest was written") \
            from exc
    with _local_lock(parent / lock_name(target.name), run_id, settings):
        try:
            # 0. what an interrupted publication left (we hold the lock: nobody else's)
            for p in parent.iterdir():
                if p.name.startswith((tmp_prefix, old_prefix)):
                    log.warning("removing %s, left by an interrupted publication", p)
                    shutil.rmtree(p)
            # 1. no manifest from here on
            (target / MANIFEST).unlink(missing_ok=True)
            # 2. the files, into a private directory on the same filesystem
            tmp.mkdir()
            entries = []
            dirs = {tmp}
            for rel_path, src in files:
                dst = tmp / rel_path
                dst.parent.mkdir(parents=True, exist_ok=True)
                dirs.add(dst.parent)
                shutil.copyfile(src, dst)
                _fsync(dst)
                entries.append({"path": rel_path, "size": dst.stat().st_size,
                                "sha256": _sha256(dst)})
            # 4. manifest last (inside the private dir: it appears together with the files)
            manifest = _manifest(entries, wid, run_id, rel, destination)
            _write_json_atomic(tmp / MANIFEST, manifest)
            for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
                _fsync(d)  # durable before the rename makes them visible
            # 3. swap: whatever the previous run left goes away with the old directory
            if target.exists():
                os.replace(target, old)
            os.replace(tmp, target)
            _fsync(parent)
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if old.exists() and not target.exists():
                os.replace(old, target)  # put the old files back (still without a manifest)
            raise PublishError(f"publishing to {target} failed: {exc}; no manifest was "
                               "written") from exc
        shutil.rmtree(old, ignore_errors=True)
    log.info("published %d files to %s", len(entries), target)
    return manifest


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# --------------------------------------------------------------------------- S3


def _error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error") or {}
        code = str(err.get("Code") or "")
        if code:
            return code
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if status:
            return str(status)
    return ""


def _retryable(exc: BaseException) -> bool:
    """Throttling, 5xx, and the connection failing (refused, reset, closed, timed out)."""
    try:
        from botocore.exceptions import ConnectionError as BotoConnectionError
        from botocore.exceptions import HTTPClientError
    except ImportError:  # pragma: no cover
        return False
    # HTTPClientError: ConnectionClosedError (reset / closed without a response),
    # ReadTimeoutError, ResponseStreamingError; BotoConnectionError: refused, connect timeout
    if isinstance(exc, BotoConnectionError | HTTPClientError | ConnectionError):
        return True
    code = _error_code(exc)
    if code in _RETRYABLE_CODES:
        return True
    status = ((getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}) \
        .get("HTTPStatusCode")
    return isinstance(status, int) and status >= 500


def _with_retry(what: str, fn: Callable[[], T], settings: PublishSettings | None = None) -> T:
    """Our own retry around one call, on top of botocore's: throttling, 5xx, connection."""
    settings = settings or PublishSettings.from_env()
    attempts = settings.attempts
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            if attempt == attempts or not _retryable(exc):
                raise
            delay = min(settings.max_retry_delay_s, settings.retry_delay_s * 2 ** (attempt - 1))
            delay *= 0.5 + random.random()
            log.warning("%s failed (%s), retry %d/%d in %.2fs", what,
                        _error_code(exc) or type(exc).__name__, attempt, attempts - 1, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _list_keys(client: Any, bucket: str, prefix: str, settings: PublishSettings) -> list[str]:
    keys: list[str] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = _with_retry(f"list s3://{bucket}/{prefix}",
                           functools.partial(client.list_objects_v2, **kwargs), settings)
        keys.extend(obj["Key"] for obj in page.get("Contents") or [])
        if not page.get("IsTruncated"):
            return keys
        token = page.get("NextContinuationToken")


class _S3Lock:
    """The window's publication lock: one object, written only with conditional puts."""

    def __init__(self, client: Any, bucket: str, key: str, run_id: str,
                 settings: PublishSettings, extra: dict[str, str]):
        self.client, self.bucket, self.key, self.settings = client, bucket, key, settings
        self.extra = extra  # the same SSE headers as the report (bucket policies may demand)
        self.token = uuid.uuid4().hex
        self.run_id = run_id
        self.since = _now_iso()
        self.etag: str | None = None
        self.refreshed = 0.0

    def _body(self) -> bytes:
        return json.dumps({"token": self.token, "lease_s": self.settings.lock_lease_s,
                           **_owner(self.run_id, self.since)}).encode("utf-8")

    def _read(self) -> dict[str, Any] | None:
        """The current holder (its body, etag, age by the server's clock), None if no lock."""
        try:
            obj = _with_retry(f"get {self.key}", lambda: self.client.get_object(
                Bucket=self.bucket, Key=self.key), self.settings)
        except Exception as exc:  # noqa: BLE001
            if _error_code(exc) in _MISSING_CODES:
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
            resp = _with_retry(f"put {self.key}", lambda: self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=body, ContentType="application/json",
                **cond, **self.extra), self.settings)
        except Exception as exc:  # noqa: BLE001
            if _error_code(exc) not in _CONFLICT_CODES | _MISSING_CODES:
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
        return (holder.get("host") == _host_identity() and isinstance(pid, int)
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
                raise PublishError(f"another publication of this window holds "
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
            _with_retry(f"delete {self.key}", lambda: self.client.delete_object(
                Bucket=self.bucket, Key=self.key, IfMatch=self.etag), self.settings)
        except Exception as exc:  # noqa: BLE001 - never hide the publication's own outcome
            code = _error_code(exc)
            if code in _MISSING_CODES:
                pass  # gone already (our delete landed, its answer got lost)
            elif code in _CONFLICT_CODES:
                log.warning("publication lock %s is no longer ours; left alone", self.key)
            else:
                log.warning("could not release the publication lock %s (%s); it expires "
                            "after %gs", self.key, code or exc, self.settings.lock_lease_s)
        self.etag = None


def _publish_s3(files: list[tuple[str, Path]], destination: str, rel: str, wid: str,
                run_id: str, *, sse: str | None, kms_key_id: str | None, client: Any,
                settings: PublishSettings) -> dict:
    bucket, prefix = _split_s3(destination, rel)
    manifest_key = prefix + MANIFEST
    extra: dict[str, str] = {}
    if sse:
        extra["ServerSideEncryption"] = sse
        if sse == "aws:kms" and kms_key_id:
            extra["SSEKMSKeyId"] = kms_key_id
    parent, _, name = prefix.rstrip("/").rpartition("/")
    lock = _S3Lock(client, bucket, (parent + "/" if parent else "") + lock_name(name), run_id,
                   settings, extra)
    where = f"s3://{bucket}/{prefix}"
    step = "acquiring the publication lock"
    try:
        lock.acquire()
        # 1. no manifest from here on
        step = "removing the previous manifest"
        _with_retry(f"delete {manifest_key}",
                    lambda: client.delete_object(Bucket=bucket, Key=manifest_key), settings)
        step = "listing the previous files"
        previous = set(_list_keys(client, bucket, prefix, settings))
        # 2. the files
        entries = []
        written: set[str] = set()
        for rel_path, src in files:
            key = prefix + rel_path
            step = f"uploading {rel_path}"
            lock.keep()
            size = src.stat().st_size
            digest = _sha256(src)
            content_type = _CONTENT_TYPES.get(src.suffix.lower(), "application/octet-stream")

            def put(key: str = key, src: Path = src, content_type: str = content_type) -> Any:
                with src.open("rb") as body:
                    return client.put_object(Bucket=bucket, Key=key, Body=body,
                                             ContentType=content_type, **extra)

            _with_retry(f"put {key}", put, settings)
            written.add(key)
            entries.append({"path": rel_path, "size": size, "sha256": digest})
        # 3. what the previous run left and this one did not write
        stale = sorted(previous - written - {manifest_key})
        step = "deleting stale files"
        for i in range(0, len(stale), 1000):
            batch = {"Objects": [{"Key": k} for k in stale[i:i + 1000]], "Quiet": True}
            resp = _with_retry(f"delete stale objects under {prefix}",
                               functools.partial(client.delete_objects, Bucket=bucket,
                                                 Delete=batch), settings)
            errors = resp.get("Errors") or []
            if errors:
                raise PublishError(f"could not delete {len(errors)} stale objects, e.g. "
                                   f"{errors[0].get('Key')}: {errors[0].get('Code')}")
        # 4. manifest last, while the lock is provably ours
        step = "confirming the publication lock"
        lock.keep(force=True)
        step = "writing the manifest"
        manifest = _manifest(entries, wid, run_id, rel, destination)
        body = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
        _with_retry(f"put {manifest_key}", lambda: client.put_object(
            Bucket=bucket, Key=manifest_key, Body=body, ContentType="application/json", **extra),
            settings)
    except Exception as exc:
        if step == "writing the manifest":  # the put may have landed despite the error
            try:
                _with_retry(f"delete {manifest_key}", lambda: client.delete_object(
                    Bucket=bucket, Key=manifest_key), settings)
            except Exception:  # noqa: BLE001
                log.warning("could not confirm that %s is absent", manifest_key)
        code = _error_code(exc)
        detail = f"{code}: {exc}" if code and code not in str(exc) else str(exc)
        raise PublishError(f"publishing to {where} failed while {step} ({detail}); "
                           f"no manifest was written") from exc
    finally:
        lock.release()  # also on KeyboardInterrupt / SystemExit
    log.info("published %d files to %s (sse=%s)", len(entries), where, sse or "none")
    return manifest
