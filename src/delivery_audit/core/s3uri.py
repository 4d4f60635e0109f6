"""``s3://bucket/key`` URIs."""

from __future__ import annotations


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")`` (any ``scheme://`` is cut the same way)."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    bucket, _, key = rest.partition("/")
    return bucket, key
