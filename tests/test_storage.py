"""Publishing semantics: local directory and S3 (a real moto server in a subprocess)."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from s3_server import s3_endpoint  # noqa: F401 - the fixture

from delivery_audit import storage
from delivery_audit.storage import MANIFEST, PublishError, local, publish, read_manifest, retry

REL = "dt=2025-01-01/20250101T000000Z_20250102T000000Z"


def make_staging(root: Path, files: dict[str, bytes] | None = None) -> Path:
    files = files if files is not None else {
        "report.json": json.dumps({"window": {"id": "W1"}}).encode(),
        "report.html": b"<html></html>",
        "anomalies/part-0000.parquet": b"PAR1data",
        "quarantine/part-0000.parquet": b"PAR1q",
        "validation/results.json": b"{}",
    }
    staging = root / f"staging-{uuid.uuid4().hex[:6]}"
    for rel, data in files.items():
        p = staging / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return staging


# --------------------------------------------------------------------------- local


def test_local_publish_writes_files_and_manifest(tmp_path):
    staging = make_staging(tmp_path)
    dest = tmp_path / "reports"
    manifest = publish(staging, str(dest), REL)
    out = dest / REL
    assert manifest["window_id"] == "W1"
    paths = sorted(f["path"] for f in manifest["files"])
    assert paths == sorted(["report.json", "report.html", "anomalies/part-0000.parquet",
                            "quarantine/part-0000.parquet", "validation/results.json"])
    for f in manifest["files"]:
        data = (out / f["path"]).read_bytes()
        assert f["size"] == len(data)
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert read_manifest(str(dest), REL) == manifest
    assert len(manifest["run_id"]) == 12  # report.json names no run: a fresh id
    assert not [p for p in dest.rglob(".*tmp*")], "no temp dirs left behind"


def test_local_rerun_replaces_prefix_whole(tmp_path):
    dest = tmp_path / "reports"
    publish(make_staging(tmp_path), str(dest), REL)
    second = make_staging(tmp_path, {"report.json": b'{"window": {"id": "W1"}}',
                                     "anomalies/part-0001.parquet": b"new"})
    manifest = publish(second, str(dest), REL)
    files = sorted(p.relative_to(dest / REL).as_posix()
                   for p in (dest / REL).rglob("*") if p.is_file())
    assert files == sorted([MANIFEST, "report.json", "anomalies/part-0001.parquet"])
    assert manifest["file_count"] == 2


def test_local_failure_leaves_no_manifest(tmp_path, monkeypatch):
    dest = tmp_path / "reports"
    publish(make_staging(tmp_path), str(dest), REL)
    assert read_manifest(str(dest), REL) is not None
    real_copy = local.shutil.copyfile
    calls = {"n": 0}

    def flaky(src, dst, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real_copy(src, dst, *a, **kw)

    monkeypatch.setattr(local.shutil, "copyfile", flaky)
    with pytest.raises(PublishError, match="no manifest"):
        publish(make_staging(tmp_path), str(dest), REL)
    assert read_manifest(str(dest), REL) is None
    assert not [p for p in dest.rglob(".*tmp*")]


def test_missing_staging_dir_is_a_clear_error(tmp_path):
    with pytest.raises(PublishError, match="does not exist"):
        publish(tmp_path / "nope", str(tmp_path / "d"), REL)


def test_relative_dir_must_stay_inside(tmp_path):
    with pytest.raises(ValueError):
        publish(make_staging(tmp_path), str(tmp_path / "d"), "../escape")


# --------------------------------------------------------------------------- S3


class Recorder:
    """Wraps a boto3 client: records mutating calls; put_object can fail for chosen keys."""

    def __init__(self, client, fail_put=None):
        self._client = client
        self.calls: list[tuple[str, str]] = []
        self.fail_put = fail_put  # (key, how many puts so far) -> bool
        self.puts = 0
        self.lock_sse: list[str | None] = []

    def put_object(self, **kw):
        self.puts += 1
        if kw["Key"].endswith(".lock"):
            self.lock_sse.append(kw.get("ServerSideEncryption"))
        if self.fail_put is not None and self.fail_put(kw["Key"], self.puts):
            raise RuntimeError("simulated network failure")
        self.calls.append(("put", kw["Key"]))
        return self._client.put_object(**kw)

    def delete_object(self, **kw):
        self.calls.append(("delete", kw["Key"]))
        return self._client.delete_object(**kw)

    def delete_objects(self, **kw):
        for o in kw["Delete"]["Objects"]:
            self.calls.append(("delete", o["Key"]))
        return self._client.delete_objects(**kw)

    def __getattr__(self, name):
        return getattr(self._client, name)


def split_lock_calls(calls, lock_key):
    """(calls on the publication lock, the other calls), each in order."""
    return [c for c in calls if c[1] == lock_key], [c for c in calls if c[1] != lock_key]


def split_index_calls(calls, root):
    """(calls on the report root's index and its lock, the window's calls), each in order."""
    index = {f"{root}/{name}" for name in (".index.lock", storage.INDEX_JSON, storage.INDEX_HTML)}
    return [c for c in calls if c[1] in index], [c for c in calls if c[1] not in index]


@pytest.fixture()
def s3(s3_endpoint):  # noqa: F811
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1",
                          config=Config(retries={"max_attempts": 2, "mode": "standard"}))
    bucket = f"audit-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    return client, bucket


def keys(client, bucket, prefix=""):
    resp = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {o["Key"]: o for o in resp.get("Contents") or []}


def test_s3_publish_manifest_last_and_checksums(tmp_path, s3):
    client, bucket = s3
    rec = Recorder(client)
    dest = f"s3://{bucket}/audit/reports"
    manifest = publish(make_staging(tmp_path), dest, REL, s3_client=rec, sse="AES256")
    prefix = f"audit/reports/{REL}/"
    lock = "audit/reports/dt=2025-01-01/.20250101T000000Z_20250102T000000Z.lock"
    # the report root's index: after the manifest, before the window's lock is released
    index_calls, window_calls = split_index_calls(rec.calls, "audit/reports")
    assert index_calls == [("put", "audit/reports/.index.lock"),
                           ("put", "audit/reports/index.json"),
                           ("put", "audit/reports/index.html"),
                           ("delete", "audit/reports/.index.lock")]
    assert rec.calls[-6:-1] == [("put", prefix + MANIFEST), *index_calls]
    # the lock is taken first, confirmed just before the manifest, released last
    assert window_calls[0] == ("put", lock) and window_calls[-3:-1] == [
        ("put", lock), ("put", prefix + MANIFEST)]
    assert rec.calls[-1] == ("delete", lock)
    lock_calls, calls = split_lock_calls(window_calls, lock)
    assert len(lock_calls) == 3
    # the old manifest is removed first, the new one written last
    assert calls[0] == ("delete", prefix + MANIFEST)
    assert calls[-1] == ("put", prefix + MANIFEST)
    listed = keys(client, bucket, prefix)
    assert set(listed) == {prefix + f["path"] for f in manifest["files"]} | {prefix + MANIFEST}
    last = max(o["LastModified"] for o in listed.values())
    assert listed[prefix + MANIFEST]["LastModified"] == last
    for f in manifest["files"]:
        body = client.get_object(Bucket=bucket, Key=prefix + f["path"])
        data = body["Body"].read()
        assert hashlib.sha256(data).hexdigest() == f["sha256"]
        assert body.get("ServerSideEncryption") == "AES256"
    assert read_manifest(dest, REL, s3_client=client) == manifest
    # the lock objects (the window's, twice; the index's) are written with the same SSE
    assert rec.lock_sse == ["AES256"] * 3
    index = client.get_object(Bucket=bucket, Key="audit/reports/index.json")
    assert index.get("ServerSideEncryption") == "AES256"


def test_s3_rerun_deletes_stale_files_after_manifest_removed(tmp_path, s3):
    client, bucket = s3
    dest = f"s3://{bucket}/r"
    publish(make_staging(tmp_path), dest, REL, s3_client=client)
    rec = Recorder(client)
    publish(make_staging(tmp_path, {"report.json": b"{}", "report.html": b"x"}), dest, REL,
            s3_client=rec)
    prefix = f"r/{REL}/"
    assert set(keys(client, bucket, prefix)) == {prefix + "report.json", prefix + "report.html",
                                                 prefix + MANIFEST}
    _, calls = split_lock_calls(split_index_calls(rec.calls, "r")[1],
                                f"r/dt=2025-01-01/.{REL.rsplit('/', 1)[1]}.lock")
    stale_deletes = [i for i, c in enumerate(calls)
                     if c[0] == "delete" and c[1].endswith(".parquet")]
    assert stale_deletes and min(stale_deletes) > 0
    assert calls[0] == ("delete", prefix + MANIFEST)
    assert calls[-1] == ("put", prefix + MANIFEST)
    # the root's index is beside the window's prefix, not in it: never a "stale" object
    assert not [c for c in rec.calls if c[0] == "delete" and "index" in c[1] and "lock" not in c[1]]
    assert {"r/index.json", "r/index.html"} <= set(keys(client, bucket, "r/index"))


def test_s3_failure_mid_publish_leaves_no_manifest(tmp_path, s3):
    client, bucket = s3
    dest = f"s3://{bucket}/r"
    publish(make_staging(tmp_path), dest, REL, s3_client=client)
    assert read_manifest(dest, REL, s3_client=client) is not None
    rec = Recorder(client, fail_put=lambda key, n: n == 3)  # the lock, a file, then this
    with pytest.raises(PublishError, match="no manifest was written") as err:
        publish(make_staging(tmp_path), dest, REL, s3_client=rec)
    assert "uploading" in str(err.value)
    assert read_manifest(dest, REL, s3_client=client) is None
    assert f"r/{REL}/{MANIFEST}" not in keys(client, bucket)


def test_s3_failure_on_manifest_put_leaves_no_manifest(tmp_path, s3):
    client, bucket = s3
    staging = make_staging(tmp_path)
    rec = Recorder(client, fail_put=lambda key, n: key.endswith(MANIFEST))
    with pytest.raises(PublishError, match="writing the manifest"):
        publish(staging, f"s3://{bucket}/r", REL, s3_client=rec)
    assert read_manifest(f"s3://{bucket}/r", REL, s3_client=client) is None
    written = {k for op, k in rec.calls if op == "put" and not k.endswith(".lock")}
    assert len(written) == len(storage.staged_files(staging)), "every file was written"
    assert not [k for k in keys(client, bucket) if k.endswith(".lock")], "lock released"


def test_s3_client_from_env_endpoint(tmp_path, s3, s3_endpoint, monkeypatch):  # noqa: F811
    client, bucket = s3
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    manifest = publish(make_staging(tmp_path), f"s3://{bucket}", REL)
    assert read_manifest(f"s3://{bucket}", REL) == manifest
    assert f"{REL}/{MANIFEST}" in keys(client, bucket)


def test_s3_read_manifest_absent(s3):
    client, bucket = s3
    assert read_manifest(f"s3://{bucket}/nothing", REL, s3_client=client) is None


def test_retry_on_throttling(monkeypatch):
    from botocore.exceptions import ClientError

    monkeypatch.setattr(retry.time, "sleep", lambda s: None)
    attempts = {"n": 0}

    def call():
        attempts["n"] += 1
        if attempts["n"] < 3:
            raise ClientError({"Error": {"Code": "SlowDown", "Message": "slow"},
                               "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")
        return "ok"

    assert retry.with_retry("put", call) == "ok"
    assert attempts["n"] == 3

    def denied():
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "PutObject")

    with pytest.raises(ClientError):
        retry.with_retry("put", denied)


def test_connection_failures_are_retryable_and_refusals_are_not():
    """What with_retry retries (through a real connection reset: tests/test_faults.py)."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    for exc in (ConnectionClosedError(endpoint_url="http://x"),  # reset / closed, no response
                ReadTimeoutError(endpoint_url="http://x"),
                EndpointConnectionError(endpoint_url="http://x"),
                ConnectionResetError(104, "Connection reset by peer"),
                ClientError({"Error": {"Code": "SlowDown"}}, "PutObject"),
                ClientError({"Error": {}, "ResponseMetadata": {"HTTPStatusCode": 502}}, "Put")):
        assert retry.retryable(exc), exc
    for exc in (ClientError({"Error": {"Code": "AccessDenied"}}, "PutObject"),
                ClientError({"Error": {"Code": "PreconditionFailed"}}, "PutObject"),
                OSError(28, "No space left on device")):
        assert not retry.retryable(exc), exc


def test_publish_settings_from_env(monkeypatch):
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_ATTEMPTS", "7")
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_RETRY_DELAY_S", "0.01")
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_LOCK_WAIT_S", "5")
    monkeypatch.setenv("DELIVERY_AUDIT_PUBLISH_LOCK_LEASE_S", "30")
    s = storage.PublishSettings.from_env()
    assert (s.attempts, s.retry_delay_s, s.lock_wait_s, s.lock_lease_s) == (7, 0.01, 5, 30)
    monkeypatch.delenv("DELIVERY_AUDIT_PUBLISH_ATTEMPTS")
    assert storage.PublishSettings.from_env().attempts == storage.PublishSettings().attempts


def test_hadoop_crc_sidecars_are_not_published(tmp_path):
    staging = make_staging(tmp_path, {"report.json": b"{}",
                                      "anomalies/part-0.parquet": b"x",
                                      "anomalies/.part-0.parquet.crc": b"crc",
                                      "anomalies/_SUCCESS": b""})
    manifest = publish(staging, str(tmp_path / "d"), REL)
    assert sorted(f["path"] for f in manifest["files"]) == [
        "anomalies/_SUCCESS", "anomalies/part-0.parquet", "report.json"]
