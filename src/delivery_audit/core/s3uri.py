"""``s3://bucket/key`` URIs."""

from __future__ import annotations

from collections.abc import Callable, Iterator


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "a/b")`` (any ``scheme://`` is cut the same way)."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    bucket, _, key = rest.partition("/")
    return bucket, key


def key_lister(client, bucket: str) -> Callable[[str], Iterator[str]]:
    """``list_keys(prefix)``: the keys of ``bucket`` under a prefix, every page, through an
    S3 client (boto3's; passed in, so this module imports nothing)."""
    def list_keys(prefix: str) -> Iterator[str]:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                      Prefix=prefix):
            yield from (obj["Key"] for obj in page.get("Contents", []))

    return list_keys
