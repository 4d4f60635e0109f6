"""Inputs named by s3:// URI are listed, matched and staged through boto3, against a real
moto server over HTTP; quarantine rows name the s3:// object, not the staged copy."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from s3_server import s3_endpoint  # noqa: F401

from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.ingest import InputError, ingest, resolve

pytestmark = pytest.mark.audit  # inputs on a moto server: not in make test-fast

DATA = Path(__file__).parent / "data" / "small"


@pytest.fixture()
def bucket(s3_endpoint, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket="inputs")
    for name in ("sends.jsonl", "ledger.jsonl"):
        client.upload_file(str(DATA / name), "inputs", f"day=2026-11-19/{name}")
    client.put_object(Bucket="inputs", Key="day=2026-11-19/notes.txt", Body=b"ignore me")
    return client


def test_s3_glob_is_staged_and_named_by_uri(bucket, spark, tmp_path):
    resolved = resolve("sends", "s3://inputs/day=2026-11-19/*.jsonl", stage_dir=tmp_path)
    assert resolved.origins == ("s3://inputs/day=2026-11-19/ledger.jsonl",
                                "s3://inputs/day=2026-11-19/sends.jsonl")
    assert all(Path(f).is_file() for f in resolved.files)
    only_sends = resolve("sends", "s3://inputs/day=2026-11-19/sends.jsonl", stage_dir=tmp_path)
    window = AuditWindow.of("2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z")
    got = ingest(spark, only_sends, window, AuditConfig())
    assert got.counts["rows_read"] == 14 and got.counts["rows_quarantined"] == 4
    files = {r["file"] for r in got.quarantine.collect()}
    assert files == {"s3://inputs/day=2026-11-19/sends.jsonl"}


def test_s3_prefix_without_matches_fails_naming_it(bucket, tmp_path):
    with pytest.raises(InputError, match="s3://inputs/nothing/"):
        resolve("sends", "s3://inputs/nothing/*.jsonl", stage_dir=tmp_path)


def test_s3_object_that_is_not_what_its_name_says_is_named_by_uri(bucket, tmp_path):
    bucket.put_object(Bucket="inputs", Key="day=2026-11-19/sends.jsonl.gz", Body=b"plain text\n")
    with pytest.raises(InputError) as err:
        resolve("sends", "s3://inputs/day=2026-11-19/*.gz", stage_dir=tmp_path)
    assert str(err.value) == \
        "s3://inputs/day=2026-11-19/sends.jsonl.gz: named .gz but is not gzip data"
    assert str(tmp_path) not in str(err.value)
