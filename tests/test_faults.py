"""Publication under faults: a real moto S3 server behind a fault-injecting proxy
(tests/fault_proxy.py), and a local publisher killed at every step.

What is checked, besides each test's outcome: the proxy *watches* the window's prefix. It
handles requests one at a time and reads the manifest and the files it lists before the first
request and after every write, so "a reader never saw a manifest pointing at missing or
different files" is checked at every state the store went through, not sampled.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from s3_publishing import (
    FAST,
    LOCK,
    REL,
    WID,
    assert_s3_published,
    client_via,
    run_of,
    s3_objects,
    stage,
    watch,
)
from s3_server import s3_endpoint  # noqa: F401 - the fixture

from delivery_audit import storage
from delivery_audit.storage import MANIFEST, PublishError, publish, read_manifest

# publications through a faulty proxy to a moto server, killed subprocesses
pytestmark = pytest.mark.audit  # not in make test-fast

SRC = Path(storage.__file__).resolve().parents[2]  # src/: subprocesses import the same code


def faults_of(stats: dict, key_suffix: str = "") -> list[dict]:
    return [f for f in stats["faults"] if f["key"].endswith(key_suffix)]


# --------------------------------------------------------------------------- (a) moderate faults


@pytest.mark.parametrize("retrier,share,seed,min_faults", [("ours", 0.3, 14, 8),
                                                            ("botocore", 0.15, 23, 4)])
def test_moderate_faults_are_retried_to_a_valid_manifest(tmp_path, bucket, proxy, retrier,
                                                         share, seed, min_faults):
    """A share of the requests fail (503 SlowDown, 500 InternalError, connection reset, or
    forwarded then reset): the publication retries and completes; the manifest is valid.

    "ours": botocore does not retry, storage.retry.with_retry does it all (seed 14: 9 faults in 22
    requests: the lock PUT 3 times, a file once, the manifest PUT 5 times in a row, the last
    one landing but answered with a reset). "botocore": the production client from
    make_s3_client (adaptive mode retries; their backoff is real seconds, hence a smaller share).
    """
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "old"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=share, faults=["503", "500", "reset", "drop"], seed=seed,
                    watch=watch(name))
    client = client_via(proxy) if retrier == "ours" else storage.make_s3_client(proxy.url)
    manifest = publish(stage(tmp_path, "new"), dest, REL, s3_client=client, settings=FAST)
    stats = proxy.stats()
    kinds = {f["outcome"] for f in stats["faults"]}
    assert kinds == {"fault:503", "fault:500", "fault:reset", "fault:drop"}, stats["faults"]
    assert len(stats["faults"]) >= min_faults
    assert stats["violations"] == [], json.dumps(stats["violations"][:2])
    assert assert_s3_published(direct, name, "r", "new") == manifest
    assert read_manifest(dest, REL, s3_client=direct) == manifest
    objects = s3_objects(direct, name)
    assert LOCK not in {k.rsplit("/", 1)[-1] for k in objects}, "lock released"
    # the report root's index, written after the manifest through the same faults
    assert ".index.lock" not in {k.rsplit("/", 1)[-1] for k in objects}, "index lock released"
    index = json.loads(objects["r/index.json"])
    assert [(w["window_id"], w["run_id"]) for w in index["windows"]] == [(WID, "new")]


INDEX_KEYS = r"/(index\.json|index\.html|\.index\.lock)$"


def index_rows(client, bucket: str) -> list[tuple[str, str]]:
    index = json.loads(s3_objects(client, bucket, "r/index.json")["r/index.json"])
    return [(w["window_id"], w["run_id"]) for w in index["windows"]]


def test_faults_on_the_index_are_retried(tmp_path, bucket, proxy):
    """Half the requests on the report root's index (its lock, index.json, index.html) fail
    (seed 1: 8 faults of every kind; the index lock's conditional PUT lands but its answer is
    lost, and so is the first read-back that finds it ours; index.json's GET and PUT, and
    index.html's PUT fail once; the lock's DELETE twice): the index gets the row all the
    same."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "old"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=0.5, faults=["503", "500", "reset", "drop"], seed=1,
                    key_regex=INDEX_KEYS, watch=watch(name))
    manifest = publish(stage(tmp_path, "new"), dest, REL, s3_client=client_via(proxy),
                       settings=FAST)
    stats = proxy.stats()
    assert {f["outcome"] for f in stats["faults"]} == {"fault:503", "fault:500", "fault:reset",
                                                        "fault:drop"}, stats["faults"]
    assert ("PUT", "r/.index.lock", "fault:drop") in [(f["method"], f["key"], f["outcome"])
                                                      for f in stats["faults"]]
    assert stats["violations"] == []
    assert assert_s3_published(direct, name, "r", "new") == manifest
    assert index_rows(direct, name) == [(WID, "new")]
    assert not [k for k in s3_objects(direct, name) if k.endswith(".lock")], "locks released"


def test_an_index_that_cannot_be_written_leaves_the_window_published(tmp_path, bucket, proxy,
                                                                      caplog):
    """Every PUT of index.json fails: the window is published (manifest, files, exit as
    usual), the error is logged, the index keeps its previous rows (stale, not broken)."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "old"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=1.0, faults=["503"], methods=["PUT"], key_regex=r"/index\.json$",
                    watch=watch(name))
    manifest = publish(stage(tmp_path, "new"), dest, REL, s3_client=client_via(proxy),
                       settings=FAST)
    assert assert_s3_published(direct, name, "r", "new") == manifest
    assert len(proxy.stats()["faults"]) == FAST.attempts
    assert "is published, but the index at s3://" in caplog.text and "SlowDown" in caplog.text
    assert index_rows(direct, name) == [(WID, "old")]
    assert not [k for k in s3_objects(direct, name) if k.endswith(".lock")], "locks released"


# --------------------------------------------------------------------------- (b) persistent faults


@pytest.mark.parametrize("kind,says", [("503", "SlowDown"), ("500", "InternalError"),
                                       ("reset", "Connection was closed"),
                                       ("drop", "Connection was closed")])
def test_every_put_of_one_object_failing_fails_loudly_without_manifest(tmp_path, bucket, proxy,
                                                                      kind, says):
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "old"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=1.0, faults=[kind], methods=["PUT"],
                    key_regex=r"/anomalies/part-0001\.parquet$", watch=watch(name))
    with pytest.raises(PublishError) as err:
        publish(stage(tmp_path, "new"), dest, REL, s3_client=client_via(proxy), settings=FAST)
    message = str(err.value)
    assert "while uploading anomalies/part-0001.parquet" in message and says in message
    assert f"s3://{name}/r/{REL}/" in message and "no manifest was written" in message
    stats = proxy.stats()
    assert len(faults_of(stats, "part-0001.parquet")) == FAST.attempts, "retried, then gave up"
    assert stats["violations"] == []
    assert read_manifest(dest, REL, s3_client=direct) is None
    keys = s3_objects(direct, name)
    assert f"r/{REL}/{MANIFEST}" not in keys and f"r/dt=2026-11-19/{LOCK}" not in keys


def test_every_request_failing_changes_nothing(tmp_path, bucket, proxy):
    """Nothing gets through: the error names the first step; the previous report is intact
    (its manifest could not be removed, but none of its files could be touched either)."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "old"), dest, REL, s3_client=direct, settings=FAST)
    before = s3_objects(direct, name)
    proxy.set_rules(share=1.0, faults=["reset", "503"], seed=3, watch=watch(name))
    with pytest.raises(PublishError, match="while acquiring the publication lock"):
        publish(stage(tmp_path, "new"), dest, REL, s3_client=client_via(proxy), settings=FAST)
    assert proxy.stats()["forwarded"] == 0
    assert s3_objects(direct, name) == before
    assert_s3_published(direct, name, "r", "old")


# --------------------------------------------------------------------------- (c) interrupted runs


@pytest.mark.parametrize("kind", ["503", "drop"])
def test_failed_manifest_put_then_rerun_replaces_everything(tmp_path, bucket, proxy, kind):
    """Run B writes its files but not its manifest ("drop": the manifest lands but its answer
    is lost, so B removes it again); run C, with other file names, then replaces everything."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "A"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=1.0, faults=[kind], methods=["PUT"], key_regex=r"_manifest\.json$",
                    watch=watch(name))
    with pytest.raises(PublishError, match="while writing the manifest"):
        publish(stage(tmp_path, "B"), dest, REL, s3_client=client_via(proxy), settings=FAST)
    assert read_manifest(dest, REL, s3_client=direct) is None
    left = s3_objects(direct, name, f"r/{REL}/")
    assert {run_of(k.rsplit(f"{REL}/", 1)[1], v) for k, v in left.items()} == {"B"}
    assert len(left) == 7
    stats = proxy.stats()
    assert stats["violations"] == []
    if kind == "drop":  # the manifest did land (and was a valid one) before B removed it
        landed = [e for e in stats["log"] if e["key"].endswith(MANIFEST) and e["method"] == "PUT"]
        assert len(landed) == FAST.attempts

    proxy.set_rules(watch=watch(name))  # no more faults, still watching
    names = ("report.json", "report.html", "anomalies/part-0002.parquet")
    manifest = publish(stage(tmp_path, "C", names), dest, REL, s3_client=client_via(proxy),
                       settings=FAST)
    assert sorted(f["path"] for f in manifest["files"]) == sorted(names)
    assert_s3_published(direct, name, "r", "C")
    assert proxy.stats()["violations"] == []


PUBLISHER = textwrap.dedent("""
    import sys
    import boto3
    from botocore.config import Config
    from delivery_audit.storage import PublishSettings, publish
    staging, dest, rel, url = sys.argv[1:5]
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          config=Config(retries={"total_max_attempts": 1}, read_timeout=120))
    publish(staging, dest, rel, s3_client=client, settings=PublishSettings(retry_delay_s=0.01))
""")


def test_publisher_killed_between_objects_then_rerun_replaces_everything(tmp_path, bucket,
                                                                         proxy):
    """A publishing process is SIGKILLed while its 3rd object is on the wire (held by the
    proxy); its lock stays behind. The next run takes the lock over (its holder is a dead
    process of this host, no need to wait for the lease) and replaces everything."""
    direct, name = bucket
    dest = f"s3://{name}/r"
    publish(stage(tmp_path, "A"), dest, REL, s3_client=direct, settings=FAST)
    proxy.set_rules(share=1.0, faults=["stall"], methods=["PUT"], stall_s=60,
                    key_regex=r"/quarantine/part-0000\.parquet$", watch=watch(name))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", PUBLISHER, str(stage(tmp_path, "B")), dest,
                             REL, proxy.url], env=env, stderr=subprocess.PIPE)
    try:
        proxy.wait_for(lambda s: s["stalled"] == 1 or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        # mid-publication: the old manifest is gone, a reader sees no report
        assert read_manifest(dest, REL, s3_client=direct) is None
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    prefix = f"r/{REL}/"
    left = s3_objects(direct, name)
    runs = {run_of(k[len(prefix):], v) for k, v in left.items() if k.startswith(prefix)}
    assert runs == {"A", "B"}, "B wrote some objects over A's, then died"
    assert f"r/dt=2026-11-19/{LOCK}" in left, "the dead publisher's lock is still there"

    proxy.set_rules(watch=watch(name))
    started = time.monotonic()
    publish(stage(tmp_path, "C"), dest, REL, s3_client=client_via(proxy), settings=FAST)
    assert time.monotonic() - started < FAST.lock_lease_s / 2, "did not wait for the lease"
    assert_s3_published(direct, name, "r", "C")
    assert f"r/dt=2026-11-19/{LOCK}" not in s3_objects(direct, name)
    assert proxy.stats()["violations"] == []


# --------------------------------------------------------------------------- local: killed


LOCAL_PUBLISHER = textwrap.dedent("""
    import os, shutil, sys, time
    from delivery_audit import storage
    from delivery_audit.storage import local
    staging, dest, rel, what, nth = sys.argv[1:6]
    nth = int(nth)
    calls = {"n": 0}
    real = {"copyfile": shutil.copyfile, "replace": os.replace}[what]
    def pause_then_call(*a, **kw):
        calls["n"] += 1
        if calls["n"] == nth:
            print("PAUSED", flush=True)
            time.sleep(120)
        return real(*a, **kw)
    if what == "copyfile":
        local.shutil.copyfile = pause_then_call
    else:
        local.os.replace = pause_then_call
    storage.publish(staging, dest, rel)
    print("DONE", flush=True)
""")


def local_view(dest: Path) -> str:
    """What a reader sees: "none", or the run of a manifest whose files are all there."""
    manifest = read_manifest(str(dest), REL)
    if manifest is None:
        return "none"
    for f in manifest["files"]:
        data = (dest / REL / f["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f"{f['path']} differs"
    return manifest["run_id"]


# os.replace: 1 = the manifest into the private dir, 2 = old dir aside, 3 = new dir in
@pytest.mark.parametrize("what,nth", [("copyfile", 1), ("copyfile", 4), ("replace", 1),
                                      ("replace", 2), ("replace", 3)])
def test_local_publisher_killed_mid_way_then_rerun_replaces_everything(tmp_path, what, nth):
    """Killed before the 1st or 4th file copy, or before any of the renames: from the first
    step on a reader sees no report (never a manifest with missing files); the next run
    removes the leftovers and replaces everything."""
    dest = tmp_path / "reports"
    publish(stage(tmp_path, "A"), str(dest), REL)
    assert local_view(dest) == "A"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", LOCAL_PUBLISHER, str(stage(tmp_path, "B")),
                             str(dest), REL, what, str(nth)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "PAUSED", proc.stderr.read()[-2000:]
        assert local_view(dest) == "none"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert local_view(dest) == "none"
    parent = dest / "dt=2026-11-19"
    leftovers = [p.name for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    assert leftovers, "the killed publisher left its private directory behind"

    manifest = publish(stage(tmp_path, "C", ("report.json", "anomalies/part-0009.parquet")),
                       str(dest), REL)
    assert local_view(dest) == "C" == manifest["run_id"]
    present = sorted(p.relative_to(dest / REL).as_posix()
                     for p in (dest / REL).rglob("*") if p.is_file())
    assert present == sorted([MANIFEST, "report.json", "anomalies/part-0009.parquet"])
    assert sorted(p.name for p in parent.iterdir()) == sorted([WID, LOCK]), "leftovers removed"
