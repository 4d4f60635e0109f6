"""Publishing a run's outputs to a local directory or S3 so readers never see half a report.

Protocol (contract §7), for ``<destination>/<relative_dir>/``:

1. the previous ``_manifest.json`` is removed first: from then on readers see "no report";
2. every file of the staging directory is written;
3. what a previous run left under the prefix that this run does not write is deleted;
4. ``_manifest.json`` (paths, sizes, sha256, window id, written_at) is written **last**.

A failure before step 4 raises :class:`PublishError` and leaves no manifest. Locally the files
are first copied to a temporary sibling directory that is swapped in by rename.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger("delivery_audit.storage")

MANIFEST = "_manifest.json"
MANIFEST_SCHEMA_VERSION = "1.0"
SSE_MODES = ("AES256", "aws:kms")

_RETRYABLE_CODES = {
    "Throttling", "ThrottlingException", "SlowDown", "RequestTimeout", "RequestTimeTooSkewed",
    "InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequests",
    "BandwidthLimitExceeded", "503", "500", "502", "504",
}
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


def _window_id(staging_dir: Path, relative_dir: str) -> str:
    report = Path(staging_dir) / "report.json"
    if report.is_file():
        try:
            wid = (json.loads(report.read_text(encoding="utf-8")).get("window") or {}).get("id")
            if wid:
                return str(wid)
        except (OSError, ValueError, AttributeError):
            pass
    return relative_dir.rstrip("/").rsplit("/", 1)[-1]


def _manifest(entries: list[dict[str, Any]], window_id: str, relative_dir: str,
              destination: str) -> dict[str, Any]:
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "window_id": window_id,
        "relative_dir": relative_dir,
        "destination": destination,
        "written_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "file_count": len(entries),
        "total_bytes": sum(e["size"] for e in entries),
        "files": entries,
    }


def _is_s3(destination: str) -> bool:
    return destination.startswith("s3://") or destination.startswith("s3a://")


def _split_s3(destination: str, relative_dir: str) -> tuple[str, str]:
    rest = destination.split("://", 1)[1]
    bucket, _, prefix = rest.partition("/")
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


# --------------------------------------------------------------------------- public API


def publish(staging_dir: Path, destination: str, relative_dir: str, *, sse: str | None = None,
            kms_key_id: str | None = None, s3_client: Any = None,
            endpoint_url: str | None = None, window_id: str | None = None) -> dict:
    """Publish every file of staging_dir under <destination>/<relative_dir>/; returns the manifest.

    destination: a local directory (or file:// URL) or ``s3://bucket/prefix``.
    sse: None, "AES256" (SSE-S3) or "aws:kms" (SSE-KMS; kms_key_id optional, and giving a
    kms_key_id alone implies "aws:kms"). Ignored for local destinations.
    window_id: defaults to report.json's window.id, else the last part of relative_dir.
    """
    staging_dir = Path(staging_dir)
    rel = _check_relative(relative_dir)
    files = staged_files(staging_dir)
    wid = window_id or _window_id(staging_dir, rel)
    if _is_s3(destination):
        if kms_key_id and not sse:
            sse = "aws:kms"
        if sse is not None and sse not in SSE_MODES:
            raise ValueError(f"sse must be one of {SSE_MODES} or None, got {sse!r}")
        return _publish_s3(files, destination, rel, wid, sse=sse, kms_key_id=kms_key_id,
                           client=s3_client or make_s3_client(endpoint_url))
    return _publish_local(files, _local_root(destination), rel, wid, destination)


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
            if _error_code(exc) in ("NoSuchKey", "404", "NotFound"):
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

    ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` are honoured by boto3 itself; an explicit
    endpoint_url wins over them.
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


def _publish_local(files: list[tuple[str, Path]], root: Path, rel: str, wid: str,
                   destination: str) -> dict:
    target = root / rel
    parent = target.parent
    tag = uuid.uuid4().hex[:12]
    tmp = parent / f".{target.name}.tmp-{tag}"
    old = parent / f".{target.name}.old-{tag}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        # 1. no manifest from here on
        (target / MANIFEST).unlink(missing_ok=True)
        # 2. the files, into a private directory on the same filesystem
        tmp.mkdir()
        entries = []
        for rel_path, src in files:
            dst = tmp / rel_path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            entries.append({"path": rel_path, "size": dst.stat().st_size,
                            "sha256": _sha256(dst)})
        # 4. manifest last (inside the private dir: it appears together with the files)
        manifest = _manifest(entries, wid, rel, destination)
        _write_json_atomic(tmp / MANIFEST, manifest)
        # 3. swap: whatever the previous run left goes away with the old directory
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    except Exception as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not target.exists():
            os.replace(old, target)  # put the old files back (still without a manifest)
        raise PublishError(f"publishing to {target} failed: {exc}; no manifest was written") \
            from exc
    shutil.rmtree(old, ignore_errors=True)
    log.info("published %d files to %s", len(entries), target)
    return manifest


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
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
    try:
        from botocore.exceptions import ConnectionError as BotoConnectionError
        from botocore.exceptions import EndpointConnectionError
    except ImportError:  # pragma: no cover
        return False
    if isinstance(exc, EndpointConnectionError | BotoConnectionError):
        return True
    code = _error_code(exc)
    if code in _RETRYABLE_CODES:
        return True
    status = ((getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}) \
        .get("HTTPStatusCode")
    return isinstance(status, int) and status >= 500


def _with_retry(what: str, fn: Callable[[], T], attempts: int = 4, base_delay: float = 0.5) -> T:
    """Our own retry around one call, on top of botocore's: throttling, 5xx, connection."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001
            if attempt == attempts or not _retryable(exc):
                raise
            delay = base_delay * 2 ** (attempt - 1) * (0.5 + random.random())
            log.warning("%s failed (%s), retry %d/%d in %.1fs", what,
                        _error_code(exc) or type(exc).__name__, attempt, attempts - 1, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _list_keys(client: Any, bucket: str, prefix: str) -> list[str]:
    keys: list[str] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = _with_retry(f"list s3://{bucket}/{prefix}",
                           lambda kw=kwargs: client.list_objects_v2(**kw))
        keys.extend(obj["Key"] for obj in page.get("Contents") or [])
        if not page.get("IsTruncated"):
            return keys
        token = page.get("NextContinuationToken")


def _publish_s3(files: list[tuple[str, Path]], destination: str, rel: str, wid: str, *,
                sse: str | None, kms_key_id: str | None, client: Any) -> dict:
    bucket, prefix = _split_s3(destination, rel)
    manifest_key = prefix + MANIFEST
    extra: dict[str, str] = {}
    if sse:
        extra["ServerSideEncryption"] = sse
        if sse == "aws:kms" and kms_key_id:
            extra["SSEKMSKeyId"] = kms_key_id
    where = f"s3://{bucket}/{prefix}"
    step = "removing the previous manifest"
    try:
        # 1. no manifest from here on
        _with_retry(f"delete {manifest_key}",
                    lambda: client.delete_object(Bucket=bucket, Key=manifest_key))
        step = "listing the previous files"
        previous = set(_list_keys(client, bucket, prefix))
        # 2. the files
        entries = []
        written: set[str] = set()
        for rel_path, src in files:
            key = prefix + rel_path
            step = f"uploading {rel_path}"
            size = src.stat().st_size
            digest = _sha256(src)
            content_type = _CONTENT_TYPES.get(src.suffix.lower(), "application/octet-stream")

            def put(key: str = key, src: Path = src, content_type: str = content_type) -> Any:
                with src.open("rb") as body:
                    return client.put_object(Bucket=bucket, Key=key, Body=body,
                                             ContentType=content_type, **extra)

            _with_retry(f"put {key}", put)
            written.add(key)
            entries.append({"path": rel_path, "size": size, "sha256": digest})
        # 3. what the previous run left and this one did not write
        stale = sorted(previous - written - {manifest_key})
        step = "deleting stale files"
        for i in range(0, len(stale), 1000):
            batch = {"Objects": [{"Key": k} for k in stale[i:i + 1000]], "Quiet": True}
            resp = _with_retry(f"delete stale objects under {prefix}",
                               lambda b=batch: client.delete_objects(Bucket=bucket, Delete=b))
            errors = resp.get("Errors") or []
            if errors:
                raise PublishError(f"could not delete {len(errors)} stale objects, e.g. "
                                   f"{errors[0].get('Key')}: {errors[0].get('Code')}")
        # 4. manifest last
        step = "writing the manifest"
        manifest = _manifest(entries, wid, rel, destination)
        body = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
        _with_retry(f"put {manifest_key}", lambda: client.put_object(
            Bucket=bucket, Key=manifest_key, Body=body, ContentType="application/json", **extra))
    except Exception as exc:
        if step == "writing the manifest":  # the put may have landed despite the error
            try:
                client.delete_object(Bucket=bucket, Key=manifest_key)
            except Exception:  # noqa: BLE001
                log.warning("could not confirm that %s is absent", manifest_key)
        code = _error_code(exc)
        detail = f"{code}: {exc}" if code and code not in str(exc) else str(exc)
        raise PublishError(f"publishing to {where} failed while {step} ({detail}); "
                           f"no manifest was written") from exc
    log.info("published %d files to %s (sse=%s)", len(entries), where, sse or "none")
    return manifest
