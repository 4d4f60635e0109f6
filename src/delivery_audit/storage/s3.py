"""Publishing to ``s3://bucket/prefix``: the client, listing, and the publication itself.

Under the window's lock (:class:`~.lock.S3Lock`): the old manifest is deleted, every file is
put, what the previous run left and this one did not write is deleted, the lock is confirmed,
and the manifest is put last; then, still under the window's lock, the report root's index is
updated (``after_manifest``). Every call goes through :func:`~.retry.with_retry` on top of
botocore's own (adaptive) retries. boto3 is imported only when a client is made here.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.manifest import MANIFEST, ManifestFile
from ..core.s3uri import split_s3
from .lock import S3Lock, lock_name
from .retry import MISSING_CODES, error_code, with_retry
from .settings import PublishError, PublishSettings
from .staging import file_sha256, new_manifest

log = logging.getLogger("delivery_audit.storage")

SSE_MODES = ("AES256", "aws:kms")
_CONTENT_TYPES = {
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".csv": "text/csv",
    ".txt": "text/plain; charset=utf-8",
    ".jsonl": "application/x-ndjson",
}


def is_s3(destination: str) -> bool:
    return destination.startswith("s3://") or destination.startswith("s3a://")


def make_s3_client(endpoint_url: str | None = None) -> Any:
    """An S3 client from the standard AWS credential chain, with adaptive retries.

    botocore retries throttling, 5xx and connection errors (resets included) itself;
    :func:`~.retry.with_retry` adds attempts on top. ``AWS_ENDPOINT_URL`` /
    ``AWS_ENDPOINT_URL_S3`` are honoured by boto3 itself; an explicit endpoint_url wins over
    them.
    """
    import boto3  # only when publishing to S3: boto3 costs ~0.3 s to import (-X importtime)
    from botocore.config import Config

    cfg = Config(retries={"max_attempts": 8, "mode": "adaptive"}, connect_timeout=10,
                 read_timeout=60)
    kwargs: dict[str, Any] = {"config": cfg}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    return boto3.client("s3", **kwargs)


def split_destination(destination: str, relative_dir: str) -> tuple[str, str]:
    """(bucket, key prefix ending in '/') of <destination>/<relative_dir>/."""
    bucket, prefix = split_s3(destination)
    if not bucket:
        raise ValueError(f"no bucket in {destination!r}")
    parts = [p.strip("/") for p in (prefix, relative_dir) if p.strip("/")]
    return bucket, "/".join(parts) + "/"


def read_s3_manifest(client: Any, destination: str, rel: str) -> str | None:
    """The manifest's text under <destination>/<rel>/, None when there is none."""
    bucket, prefix = split_destination(destination, rel)
    try:
        obj = client.get_object(Bucket=bucket, Key=prefix + MANIFEST)
    except Exception as exc:  # noqa: BLE001 - botocore's error classes are dynamic
        if error_code(exc) in MISSING_CODES:
            return None
        raise
    return obj["Body"].read().decode("utf-8")


def sse_headers(sse: str | None, kms_key_id: str | None) -> dict[str, str]:
    """The put_object arguments of the server-side encryption asked for."""
    extra: dict[str, str] = {}
    if sse:
        extra["ServerSideEncryption"] = sse
        if sse == "aws:kms" and kms_key_id:
            extra["SSEKMSKeyId"] = kms_key_id
    return extra


def list_keys(client: Any, bucket: str, prefix: str, settings: PublishSettings) -> list[str]:
    """Every key under prefix (all pages), each call retried."""
    keys: list[str] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = with_retry(f"list s3://{bucket}/{prefix}",
                          functools.partial(client.list_objects_v2, **kwargs), settings)
        keys.extend(obj["Key"] for obj in page.get("Contents") or [])
        if not page.get("IsTruncated"):
            return keys
        token = page.get("NextContinuationToken")


def publish_s3(files: list[tuple[str, Path]], destination: str, rel: str, wid: str,
               run_id: str, *, sse: str | None, kms_key_id: str | None, client: Any,
               settings: PublishSettings,
               after_manifest: Callable[[dict, Callable[[], None]], None] | None = None) -> dict:
    """Publish files under <destination>/<rel>/ (see the module's docstring); the manifest.

    after_manifest(manifest, confirm): called once the manifest is written, still under the window's
    lock (the report root's index, :mod:`.index`); ``confirm()`` refreshes the window's lock
    when a third of its lease is gone, and raises PublishError if it was taken over.
    """
    bucket, prefix = split_destination(destination, rel)
    manifest_key = prefix + MANIFEST
    extra = sse_headers(sse, kms_key_id)
    parent, _, name = prefix.rstrip("/").rpartition("/")
    lock = S3Lock(client, bucket, (parent + "/" if parent else "") + lock_name(name), run_id,
                  settings, extra)
    where = f"s3://{bucket}/{prefix}"
    step = "acquiring the publication lock"
    try:
        lock.acquire()
        # 1. no manifest from here on
        step = "removing the previous manifest"
        with_retry(f"delete {manifest_key}",
                   lambda: client.delete_object(Bucket=bucket, Key=manifest_key), settings)
        step = "listing the previous files"
        previous = set(list_keys(client, bucket, prefix, settings))
        # 2. the files
        entries = []
        written: set[str] = set()
        for rel_path, src in files:
            key = prefix + rel_path
            step = f"uploading {rel_path}"
            lock.keep()
            size = src.stat().st_size
            digest = file_sha256(src)
            content_type = _CONTENT_TYPES.get(src.suffix.lower(), "application/octet-stream")

            def put(key: str = key, src: Path = src, content_type: str = content_type) -> Any:
                with src.open("rb") as body:
                    return client.put_object(Bucket=bucket, Key=key, Body=body,
                                             ContentType=content_type, **extra)

            with_retry(f"put {key}", put, settings)
            written.add(key)
            entries.append(ManifestFile(rel_path, size, digest))
        # 3. what the previous run left and this one did not write
        stale = sorted(previous - written - {manifest_key})
        step = "deleting stale files"
        for i in range(0, len(stale), 1000):
            batch = {"Objects": [{"Key": k} for k in stale[i:i + 1000]], "Quiet": True}
            resp = with_retry(f"delete stale objects under {prefix}",
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
        manifest = new_manifest(entries, wid, run_id, rel, destination)
        body = manifest.to_json().encode("utf-8")
        with_retry(f"put {manifest_key}", lambda: client.put_object(
            Bucket=bucket, Key=manifest_key, Body=body, ContentType="application/json", **extra),
            settings)
    except Exception as exc:
        if step == "writing the manifest":  # the put may have landed despite the error
            try:
                with_retry(f"delete {manifest_key}", lambda: client.delete_object(
                    Bucket=bucket, Key=manifest_key), settings)
            except Exception:  # noqa: BLE001
                log.warning("could not confirm that %s is absent", manifest_key)
        code = error_code(exc)
        detail = f"{code}: {exc}" if code and code not in str(exc) else str(exc)
        raise PublishError(f"publishing to {where} failed while {step} ({detail}); "
                           f"no manifest was written") from exc
    else:
        if after_manifest is not None:
            after_manifest(manifest.to_dict(), lock.keep)
    finally:
        lock.release()  # also on KeyboardInterrupt / SystemExit
    log.info("published %d files to %s (sse=%s)", len(entries), where, sse or "none")
    return manifest.to_dict()
