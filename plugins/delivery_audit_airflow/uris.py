"""Minimal local-path / s3:// access for the orchestration tasks (the sensor's glob, existence
checks, reading the published report). S3 goes through the Amazon provider's ``S3Hook`` on an
Airflow AWS Connection (delivery_audit_airflow.aws), imported only when an s3:// URI is used;
which files a pattern means is the engine's light core (delivery_audit.core.globs), fed the
hook's client.

``on(aws_conn_id)`` binds the functions to one Connection (the plan's); the module-level
functions use ``aws_default``.
"""

from __future__ import annotations

from pathlib import Path

# the engine's light core (standard library only: fine at DAG parse time)
from delivery_audit.core.globs import local_files, s3_keys
from delivery_audit.core.s3uri import key_lister, split_s3
from delivery_audit_airflow.aws import s3_hook
from delivery_audit_airflow.settings import DEFAULT_AWS_CONN_ID


def is_s3(uri: str) -> bool:
    return uri.startswith(("s3://", "s3a://"))


def local_path(uri: str) -> Path:
    return Path(uri[len("file://"):] if uri.startswith("file://") else uri)


def join(root: str, *parts: str) -> str:
    out = root.rstrip("/")
    for p in parts:
        out += "/" + p.strip("/")
    return out


class Files:
    """Local paths and s3:// URIs, S3 through one AWS Connection (None: aws_default)."""

    join = staticmethod(join)
    is_s3 = staticmethod(is_s3)

    def __init__(self, aws_conn_id: str | None = None) -> None:
        self.aws_conn_id = aws_conn_id

    def _hook(self):
        return s3_hook(self.aws_conn_id or DEFAULT_AWS_CONN_ID)

    def glob_matches(self, pattern: str, limit: int = 1000) -> list[str]:
        """Files a job input pattern means, local or s3://, by the job's own rules
        (delivery_audit.core.globs: '*' within a segment, '**' across, {a,b}, a folder is every
        file below it); an s3a:// or s3n:// pattern is refused, as the job refuses it."""
        if pattern.startswith(("s3a://", "s3n://")):
            raise ValueError(f"{pattern}: use s3:// URIs")
        if not is_s3(pattern):
            return local_files(str(local_path(pattern)))[:limit]
        bucket, key_glob = split_s3(pattern)
        keys = s3_keys(key_glob, key_lister(self._hook().get_conn(), bucket))
        return [f"s3://{bucket}/{k}" for k in keys][:limit]

    def exists(self, uri: str) -> bool:
        if not is_s3(uri):
            return local_path(uri).is_file()
        bucket, key = split_s3(uri)
        return self._hook().head_object(key=key, bucket_name=bucket) is not None  # None: 404

    def read_bytes(self, uri: str) -> bytes:
        if not is_s3(uri):
            return local_path(uri).read_bytes()
        bucket, key = split_s3(uri)
        return self._hook().get_conn().get_object(Bucket=bucket, Key=key)["Body"].read()

    def read_text(self, uri: str) -> str:
        return self.read_bytes(uri).decode("utf-8")

    def list_files(self, prefix_uri: str) -> list[str]:
        """Every file below a folder URI (recursive), as paths relative to it."""
        if not is_s3(prefix_uri):
            root = local_path(prefix_uri)
            if not root.is_dir():
                return []
            return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        bucket, key = split_s3(prefix_uri.rstrip("/") + "/")
        return sorted(k[len(key):] for k in key_lister(self._hook().get_conn(), bucket)(key))

    def replace_prefix(self, local_dir: Path, prefix_uri: str, names: list[str]) -> None:
        """Upload ``names`` (paths relative to local_dir, in this order) below an s3://
        folder, then delete the keys below it that were there before and are not among them:
        the folder ends up holding exactly these files."""
        bucket, key = split_s3(prefix_uri.rstrip("/") + "/")
        client = self._hook().get_conn()
        before = set(key_lister(client, bucket)(key))
        for name in names:
            client.upload_file(str(Path(local_dir) / name), bucket, key + name)
        stale = sorted(before - {key + n for n in names})
        for start in range(0, len(stale), 1000):
            client.delete_objects(Bucket=bucket, Delete={
                "Objects": [{"Key": k} for k in stale[start:start + 1000]]})


def on(aws_conn_id: str | None) -> Files:
    """The functions of this module on one AWS Connection (the plan's ``aws_conn_id``)."""
    return Files(aws_conn_id)


def glob_matches(pattern: str, limit: int = 1000) -> list[str]:
    return Files().glob_matches(pattern, limit)


def exists(uri: str) -> bool:
    return Files().exists(uri)


def read_bytes(uri: str) -> bytes:
    return Files().read_bytes(uri)


def read_text(uri: str) -> str:
    return Files().read_text(uri)


def list_files(prefix_uri: str) -> list[str]:
    return Files().list_files(prefix_uri)
