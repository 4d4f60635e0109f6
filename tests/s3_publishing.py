"""Publishing to S3 in tests: a staged report whose every file names its run, S3 clients
(direct, or through tests/fault_proxy.py's fault-injecting proxy), the check that a window
holds exactly one run's files as its manifest lists them, and the bucket/proxy fixtures.
Shared by tests/test_faults.py and tests/test_idempotence.py."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from fault_proxy import FaultProxy
from s3_server import s3_endpoint  # noqa: F401 - the fixture

from delivery_audit.storage import MANIFEST, PublishSettings

REL = "dt=2026-11-19/20261119T000000Z_20261120T000000Z"
WID = "20261119T000000Z_20261120T000000Z"
LOCK = ".20261119T000000Z_20261120T000000Z.lock"
# tiny backoff so that a test with dozens of faults takes well under a second of sleeping
FAST = PublishSettings(attempts=6, retry_delay_s=0.002, max_retry_delay_s=0.02, lock_wait_s=20,
                       lock_lease_s=60, lock_poll_s=0.02)


def stage(root: Path, run: str, names: tuple[str, ...] | None = None) -> Path:
    """A staged report of run `run`: every file says which run wrote it."""
    names = names or ("report.json", "report.html", "anomalies/part-0000.parquet",
                      "anomalies/part-0001.parquet", "quarantine/part-0000.parquet",
                      "validation/inputs.json", "validation/results.json")
    staging = root / f"staging-{run}-{uuid.uuid4().hex[:6]}"
    for name in names:
        p = staging / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if name == "report.json":
            p.write_text(json.dumps({"window": {"id": WID}, "run": {"run_id": run}}))
        else:
            p.write_bytes(f"{run}:{name}:".encode() + os.urandom(64))
    return staging


def run_of(name: str, data: bytes) -> str:
    if name == "report.json":
        return json.loads(data)["run"]["run_id"]
    return data.split(b":", 1)[0].decode()


# --------------------------------------------------------------------------- S3 helpers


def direct_client(endpoint: str):
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(retries={"total_max_attempts": 2, "mode": "standard"}))


def client_via(proxy: FaultProxy, botocore_attempts: int = 1):
    """A client through the proxy; by default botocore does not retry, so ours is tested."""
    return boto3.client("s3", endpoint_url=proxy.url, region_name="us-east-1",
                        config=Config(retries={"total_max_attempts": botocore_attempts,
                                               "mode": "standard"},
                                      connect_timeout=5, read_timeout=15))


def s3_objects(client, bucket: str, prefix: str = "") -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents") or []:
            out[o["Key"]] = client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
    return out


def assert_s3_published(client, bucket: str, base: str, run: str) -> dict:
    """The window holds exactly run `run`'s files, all listed in its manifest, byte for byte."""
    prefix = f"{base}/{REL}/"
    objects = s3_objects(client, bucket, prefix)
    manifest = json.loads(objects.pop(prefix + MANIFEST))
    assert manifest["run_id"] == run and manifest["window_id"] == WID
    listed = {f["path"]: f for f in manifest["files"]}
    assert {k[len(prefix):] for k in objects} == set(listed), "present files = manifest files"
    for key, data in objects.items():
        name = key[len(prefix):]
        assert len(data) == listed[name]["size"], name
        assert hashlib.sha256(data).hexdigest() == listed[name]["sha256"], name
        assert run_of(name, data) == run, f"{name} belongs to another run"
    assert manifest["file_count"] == len(listed)
    return manifest


@pytest.fixture()
def bucket(s3_endpoint):  # noqa: F811
    client = direct_client(s3_endpoint)
    name = f"faults-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=name)
    return client, name


@pytest.fixture(scope="module")
def module_proxy(s3_endpoint):  # noqa: F811
    with FaultProxy(s3_endpoint) as p:
        yield p


@pytest.fixture()
def proxy(module_proxy, bucket):
    """The proxy, no faults, watching the window's prefix under s3://<bucket>/r."""
    module_proxy.set_rules(watch=watch(bucket[1]))
    return module_proxy


def watch(bucket_name: str) -> list[str]:
    return [f"{bucket_name}/r/{REL}/"]
