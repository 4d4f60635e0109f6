"""Which files an input pattern means (delivery_audit.globs): the job's resolver and
Airflow's sensor (delivery_audit_airflow.uris) agree on tricky patterns, on the same file
tree, locally and on S3 (a moto server; the sensor through the Amazon provider's S3Hook on an
Airflow Connection), and both read brace alternatives."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import boto3
import pytest
from s3_server import s3_endpoint  # noqa: F401

from delivery_audit.core.globs import expand_braces, select
from delivery_audit.ingest import InputError, resolve

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "plugins") not in sys.path:
    sys.path.append(str(REPO / "plugins"))

TREE = ["lake/sends/dt=2026-11-18/part-0.jsonl", "lake/sends/dt=2026-11-19/part-0.jsonl",
        "lake/sends/dt=2026-11-19/part-1.jsonl.gz", "lake/sends/dt=2026-11-19/_SUCCESS",
        "lake/sends/dt=2026-11-19/.part-0.jsonl.crc", "lake/sends/dt=2026-11-20/part-0.jsonl",
        "lake/sends/dt=2026-11-20/late/part-9.jsonl", "lake/sends/top.jsonl",
        "lake/sends/[x].jsonl"]
# pattern (relative to the root) -> the files it means
CASES = {
    "lake/sends/dt=2026-11-19/*.jsonl": ["lake/sends/dt=2026-11-19/part-0.jsonl"],
    "lake/sends/dt=2026-11-19/*": ["lake/sends/dt=2026-11-19/_SUCCESS",
                                   "lake/sends/dt=2026-11-19/part-0.jsonl",
                                   "lake/sends/dt=2026-11-19/part-1.jsonl.gz"],
    "lake/sends/*/part-0.jsonl": ["lake/sends/dt=2026-11-18/part-0.jsonl",
                                  "lake/sends/dt=2026-11-19/part-0.jsonl",
                                  "lake/sends/dt=2026-11-20/part-0.jsonl"],
    "lake/sends/*.jsonl": ["lake/sends/[x].jsonl", "lake/sends/top.jsonl"],  # not below
    "lake/sends/dt={2026-11-18,2026-11-20}/*.jsonl": ["lake/sends/dt=2026-11-18/part-0.jsonl",
                                                      "lake/sends/dt=2026-11-20/part-0.jsonl"],
    "lake/sends/dt=2026-11-2[0-9]/**/*.jsonl": ["lake/sends/dt=2026-11-20/late/part-9.jsonl",
                                                "lake/sends/dt=2026-11-20/part-0.jsonl"],
    "lake/sends/dt=2026-11-1[!8]/part-?.json*": ["lake/sends/dt=2026-11-19/part-0.jsonl",
                                                 "lake/sends/dt=2026-11-19/part-1.jsonl.gz"],
    "lake/sends/dt=2026-11-19": ["lake/sends/dt=2026-11-19/part-0.jsonl",  # a folder: every
                                 "lake/sends/dt=2026-11-19/part-1.jsonl.gz"],  # file, no _/.
    "lake/sends/top.jsonl": ["lake/sends/top.jsonl"],
    "lake/sends/[[]x].jsonl": ["lake/sends/[x].jsonl"],
    "lake/sends/nothing-*.jsonl": [],
}


def _content(rel: str) -> bytes:
    data = b'{"topic": "t"}\n'
    return gzip.compress(data) if rel.endswith(".gz") else data


def _write_tree(root: Path) -> None:
    for rel in TREE:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_content(rel))


def _job(source_pattern: str, **kwargs) -> list[str]:
    try:
        return list(resolve("sends", source_pattern, fmt="jsonl", **kwargs).origins)
    except InputError as exc:
        assert "no files match" in str(exc)
        return []


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_sensor_and_job_mean_the_same_local_files(tmp_path, pattern):
    from delivery_audit_airflow.uris import glob_matches

    _write_tree(tmp_path)
    want = [str(tmp_path / rel) for rel in CASES[pattern]]
    full = str(tmp_path / pattern)
    assert glob_matches(full) == want
    assert sorted(_job(full)) == want


def test_sensor_and_job_mean_the_same_s3_objects(s3_endpoint, monkeypatch, tmp_path):  # noqa: F811
    from delivery_audit_airflow.aws import s3_hook
    from delivery_audit_airflow.uris import glob_matches

    # the sensor finds the server through the aws_default Connection only, the job through
    # its own client
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps(
        {"conn_type": "aws", "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}))
    s3_hook.cache_clear()
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    client.create_bucket(Bucket="tree")
    for rel in TREE:
        client.put_object(Bucket="tree", Key=rel, Body=_content(rel))
    client.put_object(Bucket="tree", Key="lake/sends/folder-marker/", Body=b"")
    for pattern, rel in CASES.items():
        want = [f"s3://tree/{r}" for r in rel]
        uri = f"s3://tree/{pattern}"
        assert glob_matches(uri) == want, pattern
        assert sorted(_job(uri, stage_dir=tmp_path / "stage", s3_client=client)) == want, \
            pattern


def test_s3a_is_refused_by_both():
    from delivery_audit_airflow.uris import glob_matches

    with pytest.raises(ValueError, match="use s3://"):
        glob_matches("s3a://tree/lake/*.jsonl")
    with pytest.raises(InputError, match="use s3://"):
        resolve("sends", "s3a://tree/lake/*.jsonl")


def test_braces_and_hidden_names():
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("{x") == ["{x"]
    keys = ["d/.hidden.jsonl", "d/a.jsonl", "d/.cfg/b.jsonl", "d/sub/c.jsonl"]
    assert select("d/*.jsonl", keys) == ["d/a.jsonl"]
    assert select("d/.*.jsonl", keys) == ["d/.hidden.jsonl"]
    assert select("d/**/*.jsonl", keys) == ["d/a.jsonl", "d/sub/c.jsonl"]


def test_a_doubled_slash_is_one_locally_and_literal_on_s3(tmp_path):
    """Issue 34: ``data//ledger-*.jsonl`` (a shell variable ending in ``/``) means the files
    of ``data/ledger-*.jsonl`` on a local disk, for the job and the sensor; an S3 key holds
    its doubled slash: the pattern means the keys spelled with it, and only those."""
    from delivery_audit_airflow.uris import glob_matches

    from delivery_audit.core.globs import local_files, s3_keys

    _write_tree(tmp_path)
    single = str(tmp_path / "lake/sends/dt=2026-11-19/*.jsonl")
    doubled = str(tmp_path) + "//lake/sends//dt=2026-11-19/*.jsonl"
    want = [str(tmp_path / "lake/sends/dt=2026-11-19/part-0.jsonl")]
    assert local_files(single) == want
    assert local_files(doubled) == want
    assert local_files(str(tmp_path) + "//lake/sends/top.jsonl") == [
        str(tmp_path / "lake/sends/top.jsonl")]
    assert sorted(_job(doubled)) == want
    assert glob_matches(doubled) == want

    keys = ["data/ledger-1.jsonl", "data//ledger-2.jsonl", "data//x/ledger-3.jsonl"]

    def list_keys(prefix: str) -> list[str]:
        return [k for k in keys if k.startswith(prefix)]

    assert s3_keys("data//ledger-*.jsonl", list_keys) == ["data//ledger-2.jsonl"]
    assert s3_keys("data/ledger-*.jsonl", list_keys) == ["data/ledger-1.jsonl"]
