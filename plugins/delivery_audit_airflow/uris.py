"""Minimal local-path / s3:// access for the orchestration tasks (existence checks, reading the
published report). boto3 is imported only when an s3:// URI is used; it honours the usual
``AWS_*`` variables including ``AWS_ENDPOINT_URL`` (MinIO, moto)."""

from __future__ import annotations

from pathlib import Path

# the engine's light core (standard library only: fine at DAG parse time)
from delivery_audit.core.globs import local_files, s3_keys
from delivery_audit.core.s3uri import key_lister, split_s3


def is_s3(uri: str) -> bool:
    return uri.startswith(("s3://", "s3a://"))


def _local(uri: str) -> Path:
    return Path(uri[len("file://"):] if uri.startswith("file://") else uri)


def join(root: str, *parts: str) -> str:
    out = root.rstrip("/")
    for p in parts:
        out += "/" + p.strip("/")
    return out


def _s3_client():
    import boto3

    return boto3.client("s3")


def glob_matches(pattern: str, limit: int = 1000) -> list[str]:
    """Files a job input pattern means, local or s3://, by the job's own rules
    (delivery_audit.globs: '*' within a segment, '**' across, {a,b}, a folder is every file
    below it); an s3a:// or s3n:// pattern is refused, as the job refuses it."""
    if pattern.startswith(("s3a://", "s3n://")):
        raise ValueError(f"{pattern}: use s3:// URIs")
    if not is_s3(pattern):
        return local_files(str(_local(pattern)))[:limit]
    bucket, key_glob = split_s3(pattern)
    keys = s3_keys(key_glob, key_lister(_s3_client(), bucket))
    return [f"s3://{bucket}/{k}" for k in keys][:limit]


def exists(uri: str) -> bool:
    if not is_s3(uri):
        return _local(uri).is_file()
    bucket, key = split_s3(uri)
    from botocore.exceptions import ClientError

    try:
        _s3_client().head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise


def read_bytes(uri: str) -> bytes:
    if not is_s3(uri):
        return _local(uri).read_bytes()
    bucket, key = split_s3(uri)
    return _s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()


def read_text(uri: str) -> str:
    return read_bytes(uri).decode("utf-8")


def list_files(prefix_uri: str) -> list[str]:
    """Every file below a folder URI (recursive), as paths relative to it."""
    if not is_s3(prefix_uri):
        root = _local(prefix_uri)
        if not root.is_dir():
            return []
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    bucket, key = split_s3(prefix_uri.rstrip("/") + "/")
    return sorted(k[len(key):] for k in key_lister(_s3_client(), bucket)(key))
