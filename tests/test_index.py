"""The report root's cross-window index (storage/index.py, index_rows.py, index_stores.py,
index_page.py): a week of daily windows published with storage.publish to a local folder and
to S3 (a moto server), re-runs and backfills, the spike rule, the page, concurrency, healing
and the failure policy.

The report folders are staged from tests/report_fixtures.make_report (the shape of a real
report.json) with a window, a run and counts per day: no Spark.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from report_fixtures import EVIL, make_report
from s3_server import s3_endpoint  # noqa: F401 - the fixture

from delivery_audit.storage import (
    INDEX_HTML,
    INDEX_JSON,
    MANIFEST,
    PublishError,
    PublishSettings,
    index,
    index_page,
    index_rows,
    index_stores,
    publish,
    read_manifest,
    rebuild_index,
)

FAST = PublishSettings(attempts=3, retry_delay_s=0.01, max_retry_delay_s=0.05, lock_wait_s=30,
                       lock_lease_s=60, lock_poll_s=0.02)
# a week: redelivery jumps on day 6 (30 against a median of 3); dup_write goes 0 → 1 on day 5
# (not a spike: under the minimum); judged varies
WEEK = {d: {"redelivery": r, "dup_write": w, "judged": 1000 + 10 * d}
        for d, r, w in [(1, 2, 0), (2, 3, 0), (3, 2, 0), (4, 4, 0), (5, 3, 1), (6, 30, 0),
                        (7, 3, 0)]}
ORDER = (2, 1, 4, 3, 5, 7, 6)  # published out of order: the index sorts by window start


def wid(day: int) -> str:
    return f"202611{day:02d}T000000Z_202611{day + 1:02d}T000000Z"


def rel(day: int) -> str:
    return f"dt=2026-11-{day:02d}/{wid(day)}"


def day_report(day: int, run: str, redelivery: int = 0, dup_write: int = 0,
               lost_acked: int = 0, judged: int = 1000, **extra) -> dict:
    """A report.json of window `day` (of November 2026), as the audit writes it."""
    report = make_report(counts={"redelivery": redelivery, "dup_write": dup_write,
                                 "lost_acked": lost_acked}, judged=judged)
    report["window"].update(start=f"2026-11-{day:02d}T00:00:00Z",
                            end=f"2026-11-{day + 1:02d}T00:00:00Z", id=wid(day),
                            read_until=f"2026-11-{day + 1:02d}T01:00:00Z")
    report["run"]["run_id"] = run
    if lost_acked:
        report["verdict"] = {"verdict": "fail", "reasons": [f"lost_acked = {lost_acked}"]}
    elif redelivery > 10:
        report["verdict"] = {"verdict": "warn", "reasons": [f"redelivery = {redelivery}"]}
    report.update(extra)
    return report


def stage(tmp: Path, report: dict) -> Path:
    staging = tmp / f"staging-{uuid.uuid4().hex[:8]}"
    (staging / "anomalies").mkdir(parents=True)
    (staging / "report.json").write_text(json.dumps(report, indent=2))
    (staging / "report.html").write_text("<html>report</html>")
    (staging / "anomalies" / "part-0000.parquet").write_bytes(b"PAR1" + uuid.uuid4().bytes)
    return staging


def publish_day(tmp: Path, where, day: int, run: str, **counts) -> dict:
    """Publish window `day` (the week's figures unless counts say otherwise) to `where`."""
    counts = {**WEEK.get(day, {}), **counts}
    return publish(stage(tmp, day_report(day, run, **counts)), where.dest, rel(day),
                   settings=FAST, **where.kwargs())


# --------------------------------------------------------------------------- destinations


class Local:
    def __init__(self, root: Path):
        self.root, self.dest = root, str(root)

    def kwargs(self, fresh: bool = False) -> dict:
        return {}

    def read(self, key: str) -> bytes | None:
        p = self.root / key
        return p.read_bytes() if p.exists() else None

    def write(self, key: str, data: bytes) -> None:
        (self.root / key).write_bytes(data)

    def delete(self, key: str) -> None:
        (self.root / key).unlink()


class S3:
    def __init__(self, endpoint: str, bucket: str):
        self.endpoint, self.bucket = endpoint, bucket
        self.client = s3_client(endpoint)
        self.client.create_bucket(Bucket=bucket)
        self.dest = f"s3://{bucket}/audit/reports"

    def kwargs(self, fresh: bool = False) -> dict:
        """publish()'s client argument (fresh: a client of its own, for a thread)."""
        return {"s3_client": s3_client(self.endpoint) if fresh else self.client}

    def read(self, key: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket,
                                          Key=f"audit/reports/{key}")["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def write(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=f"audit/reports/{key}", Body=data)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=f"audit/reports/{key}")

    def keys(self) -> set[str]:
        resp = self.client.list_objects_v2(Bucket=self.bucket)
        return {o["Key"] for o in resp.get("Contents") or []}


def s3_client(endpoint: str):
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 2, "mode": "standard"}))


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.audit)])
def where(request, tmp_path):
    if request.param == "local":
        yield Local(tmp_path / "reports")
        return
    yield S3(request.getfixturevalue("s3_endpoint"), f"index-{uuid.uuid4().hex[:8]}")


def the_index(where) -> dict:
    return json.loads(where.read(INDEX_JSON))


def assert_rows_equal_reports(where, doc: dict) -> None:
    """Every row's figures are those of its window's published report.json."""
    for row in doc["windows"]:
        report = json.loads(where.read(f"{row['relative_dir']}/report.json"))
        manifest = json.loads(where.read(f"{row['relative_dir']}/{MANIFEST}"))
        assert row["window_id"] == report["window"]["id"] == manifest["window_id"]
        assert (row["start"], row["end"]) == (report["window"]["start"], report["window"]["end"])
        assert row["verdict"] == report["verdict"]["verdict"]
        assert row["reasons"] == report["verdict"]["reasons"]
        assert row["judged"] == report["judged"]
        assert row["anomalies"] == {n: a["count"] for n, a in report["anomalies"].items()}
        assert row["run_id"] == report["run"]["run_id"] == manifest["run_id"]
        assert row["published_at"] == manifest["written_at"]
        assert row["links"] == {"html": f"{row['relative_dir']}/report.html",
                                "json": f"{row['relative_dir']}/report.json"}


# --------------------------------------------------------------------------- a week


def test_a_week_gives_seven_rows_and_a_rerun_of_day_3_replaces_its_row(tmp_path, where):
    for day in ORDER:
        publish_day(tmp_path, where, day, f"run-{day}")
    doc = the_index(where)
    assert [r["window_id"] for r in doc["windows"]] == [wid(d) for d in range(1, 8)]
    assert_rows_equal_reports(where, doc)
    assert [r["anomalies"]["redelivery"] for r in doc["windows"]] == [2, 3, 2, 4, 3, 30, 3]
    assert [r["judged"] for r in doc["windows"]] == [1010, 1020, 1030, 1040, 1050, 1060, 1070]
    # the spike: day 6 only, with the median of the 5 windows before it; 0 → 1 is not one
    assert {r["window_id"]: r["flags"] for r in doc["windows"] if r["flags"]} == {
        wid(6): [{"anomaly": "redelivery", "count": 30, "median": 3, "previous": 5}]}
    html = where.read(INDEX_HTML).decode()
    assert html.count('<tr class="') == 7
    assert html.index(f'id="w-{wid(7)}"') < html.index(f'id="w-{wid(1)}"'), "newest first"
    assert f'href="{rel(6)}/report.html"' in html and f'href="{rel(6)}/report.json"' in html
    assert re.search(r'<td class="n spike"[^>]*>30 ▲</td>', html)
    assert len(re.findall(r'fill="#b91c1c"><title>', html)) == 1, "one red bar: day 6"
    assert '<th class="n mono">lost_acked</th>' not in html, "no column for an all-0 anomaly"

    # the re-run of day 3, with other figures: still seven rows, day 3's are the new ones
    publish_day(tmp_path, where, 3, "rerun-3", redelivery=9, lost_acked=2)
    doc = the_index(where)
    assert [r["window_id"] for r in doc["windows"]] == [wid(d) for d in range(1, 8)]
    assert_rows_equal_reports(where, doc)
    day3 = doc["windows"][2]
    assert (day3["run_id"], day3["verdict"], day3["anomalies"]["lost_acked"],
            day3["anomalies"]["redelivery"]) == ("rerun-3", "fail", 2, 9)
    assert [r["run_id"] for r in doc["windows"]] == [
        "run-1", "run-2", "rerun-3", "run-4", "run-5", "run-6", "run-7"]
    html = where.read(INDEX_HTML).decode()
    assert html.count('<tr class="') == 7 and html.count(f'id="w-{wid(3)}"') == 1
    assert '<th class="n mono">lost_acked</th>' in html  # a column now: day 3 has some


def test_index_is_written_after_the_manifest_under_the_window_lock(tmp_path, s3_endpoint):  # noqa: F811
    """On S3 the calls are: … the window's manifest, the index lock, index.json, index.html,
    the index lock released, the window's lock released last."""
    where = S3(s3_endpoint, f"order-{uuid.uuid4().hex[:8]}")
    client, bucket = where.client, where.bucket
    calls: list[tuple[str, str]] = []

    class Recorder:
        def __getattr__(self, name):
            fn = getattr(client, name)
            if name in ("put_object", "delete_object"):
                def record(**kw):
                    calls.append((name.split("_")[0], kw["Key"]))
                    return fn(**kw)
                return record
            return fn

    publish(stage(tmp_path, day_report(1, "r1")), f"s3://{bucket}/root", rel(1),
            s3_client=Recorder(), settings=FAST)
    window_lock = f"root/dt=2026-11-01/.{wid(1)}.lock"
    assert calls[-6:] == [("put", f"root/{rel(1)}/{MANIFEST}"), ("put", "root/.index.lock"),
                          ("put", "root/index.json"), ("put", "root/index.html"),
                          ("delete", "root/.index.lock"), ("delete", window_lock)]


# --------------------------------------------------------------------------- the spike rule


def row(day: int, length_h: int = 24, **counts) -> dict:
    start = f"2026-11-{day:02d}T00:00:00Z"
    end = (f"2026-11-{day + 1:02d}T00:00:00Z" if length_h == 24
           else f"2026-11-{day:02d}T{length_h:02d}:00:00Z")
    return {"window_id": f"w{day}-{length_h}", "start": start, "end": end,
            "anomalies": {"a": 0, **counts}, "flags": []}


def flagged(rows: list[dict]) -> dict[str, list]:
    return {r["window_id"]: [(f["anomaly"], f["count"], f["median"]) for f in r["flags"]]
            for r in index_rows.flag_spikes(rows) if r["flags"]}


def test_spike_rule():
    # ≥ 5× the trailing median: 5× flagged, 4.9× not
    assert flagged([row(d, a=2) for d in (1, 2, 3)] + [row(4, a=10)]) == {"w4-24": [("a", 10, 2)]}
    assert flagged([row(d, a=2) for d in (1, 2, 3)] + [row(4, a=9)]) == {}
    # the minimum: 0 → 1 and 0 → 4 are not spikes, 0 → 5 is
    assert flagged([row(d) for d in (1, 2, 3)] + [row(4, a=1), row(5, a=4)]) == {}
    assert flagged([row(d) for d in (1, 2, 3)] + [row(4, a=5)]) == {"w4-24": [("a", 5, 0)]}
    # fewer than 3 previous windows: not judged
    assert flagged([row(1), row(2), row(3, a=50)]) == {}
    # the median of the last 7 only (0 of 0,3,0,3,0,3,0): with the 8th-oldest window (100) it
    # would be 1.5, and 5 would not be a spike
    rows = [row(1, a=100)] + [row(d, a=3 if d % 2 else 0) for d in range(2, 9)] + [row(9, a=5)]
    assert flagged(rows) == {"w9-24": [("a", 5, 0)]}
    # windows of another length are not neighbours (2-hour windows with more traffic)
    mixed = [row(d, a=1) for d in (1, 2, 3)] + [row(d, 2, a=40) for d in (1, 2, 3)]
    assert flagged(mixed + [row(4, a=6)]) == {"w4-24": [("a", 6, 1)]}
    assert flagged(mixed + [row(4, 2, a=60)]) == {}
    # a backfill of an earlier window re-judges the later ones: day 5 gets its 3rd neighbour
    week = [row(1, a=3), row(2, a=3), row(5, a=20)]
    assert flagged(week) == {}
    assert flagged(index_rows.merge(week, row(3, a=3))) == {"w5-24": [("a", 20, 3)]}


# --------------------------------------------------------------------------- the page


def test_page_is_self_contained_and_escapes_the_data(tmp_path):
    where = Local(tmp_path / "reports")
    for day in (1, 2, 3):
        publish_day(tmp_path, where, day, f"run-{day}")
    report = day_report(4, EVIL, lost_acked=1, narrative=[
        {"id": "f1", "severity": "critical", "title": f"consumer {EVIL} was evicted"}])
    report["verdict"] = {"verdict": "fail", "reasons": [f"lost_acked on topic {EVIL} = 1"]}
    report["anomalies"][EVIL] = {"count": 7, "severity": "info"}  # a name from the data
    publish(stage(tmp_path, report), where.dest, rel(4), settings=FAST)
    doc = the_index(where)
    assert doc["windows"][3]["headline"] == {"severity": "critical",
                                             "title": f"consumer {EVIL} was evicted"}
    assert doc["windows"][3]["anomalies"][EVIL] == 7
    html = where.read(INDEX_HTML).decode()
    assert EVIL not in html
    assert "consumer &lt;script&gt;alert(1)&lt;/script&gt; was evicted" in html
    assert "lost_acked on topic &lt;script&gt;" in html  # the reasons' tooltip
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # + column, chart, bar
    # self-contained: no script, no stylesheet or image fetched, links relative
    lowered = html.lower()
    for banned in ("<script", "<link", "<img", "<iframe", " src=", "@import", "url("):
        assert banned not in lowered, banned
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert len(hrefs) == 4 * 3 + 1  # label, html, json per row; the spike list's one
    assert all(not re.match(r"[a-z]+:|//", h) for h in hrefs), hrefs
    assert all((tmp_path / "reports" / h).is_file() for h in hrefs), "links resolve"


def test_window_labels():
    assert index_page.window_label({"window_id": "w", "start": "2026-11-19T00:00:00Z",
                                    "end": "2026-11-20T00:00:00Z"}) == "2026-11-19"
    assert index_page.window_label({"window_id": "w", "start": "2026-11-19T10:00:00Z",
                                    "end": "2026-11-19T12:00:00Z"}) == "2026-11-19 10:00 → 12:00"
    assert index_page.window_label({"window_id": "w", "start": None, "end": None}) == "w"


# --------------------------------------------------------------------------- concurrency


def slow_reads(monkeypatch, seconds: float = 0.25) -> None:
    """Every index update holds what it read for a while before writing: without the index
    lock, concurrent updates would each write what they read plus their own row only."""
    real = index.parse_rows

    def slow(text):
        rows = real(text)
        time.sleep(seconds)
        return rows

    monkeypatch.setattr(index, "parse_rows", slow)  # the name update_index reads


def race(tmp_path: Path, where, days: tuple[int, ...]) -> dict[int, object]:
    stagings = {d: stage(tmp_path, day_report(d, f"run-{d}", **WEEK[d])) for d in days}
    barrier = threading.Barrier(len(days))
    results: dict[int, object] = {}

    def go(day: int) -> None:
        kwargs = where.kwargs(fresh=True)
        barrier.wait()
        try:
            results[day] = publish(stagings[day], where.dest, rel(day), settings=FAST,
                                   **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported by the assertions
            results[day] = exc

    threads = [threading.Thread(target=go, args=(d,)) for d in days]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_concurrent_local_publications_of_different_windows_keep_every_row(tmp_path,
                                                                           monkeypatch):
    where = Local(tmp_path / "reports")
    publish_day(tmp_path, where, 1, "run-1")  # the index exists: no rebuild to hide a loss
    slow_reads(monkeypatch)
    started = time.monotonic()
    results = race(tmp_path, where, (2, 3, 4, 5, 6, 7))
    assert all(isinstance(r, dict) for r in results.values()), results
    assert time.monotonic() - started >= 6 * 0.25, "the updates took turns"
    doc = the_index(where)
    assert [r["window_id"] for r in doc["windows"]] == [wid(d) for d in range(1, 8)]
    assert_rows_equal_reports(where, doc)


def test_without_the_index_lock_concurrent_updates_lose_rows(tmp_path, monkeypatch):
    """The check above can fail: the same race with the index lock taken away loses rows."""
    import contextlib

    where = Local(tmp_path / "reports")
    publish_day(tmp_path, where, 1, "run-1")
    slow_reads(monkeypatch)
    monkeypatch.setattr(index_stores.LocalIndexStore, "lock", lambda self: contextlib.nullcontext())
    race(tmp_path, where, (2, 3, 4))
    assert len(the_index(where)["windows"]) < 4


@pytest.mark.audit
def test_concurrent_s3_publications_of_different_windows_keep_every_row(tmp_path, monkeypatch,
                                                                        s3_endpoint):  # noqa: F811
    where = S3(s3_endpoint, f"race-{uuid.uuid4().hex[:8]}")
    publish_day(tmp_path, where, 1, "run-1")
    slow_reads(monkeypatch, 0.15)
    started = time.monotonic()
    results = race(tmp_path, where, (2, 3, 4, 5))
    assert time.monotonic() - started >= 4 * 0.15, "the updates took turns"
    assert all(isinstance(r, dict) for r in results.values()), results
    doc = the_index(where)
    assert [r["window_id"] for r in doc["windows"]] == [wid(d) for d in range(1, 6)]
    assert_rows_equal_reports(where, doc)
    assert not [k for k in where.keys() if k.endswith(".lock")], "every lock released"


# --------------------------------------------------------------------------- healing


def test_missing_or_damaged_index_is_rebuilt_from_the_published_windows(tmp_path, where):
    for day in (1, 2, 3, 4):
        publish_day(tmp_path, where, day, f"run-{day}")
    good = the_index(where)["windows"]
    # day 4 is being re-published (no manifest: not a report), day 2's report.json was
    # changed after publication (not the one its manifest lists)
    where.delete(f"{rel(4)}/{MANIFEST}")
    where.write(f"{rel(2)}/report.json",
                json.dumps(day_report(2, "tampered", lost_acked=9)).encode())
    for damage in (b"{not json", b'{"schema_version": "1.0", "windows": [{"x": 1}]}', None):
        if damage is None:
            where.delete(INDEX_JSON)
        else:
            where.write(INDEX_JSON, damage)
        publish_day(tmp_path, where, 5, "run-5")
        doc = the_index(where)
        assert [r["window_id"] for r in doc["windows"]] == [wid(1), wid(3), wid(5)]
        assert doc["windows"][:2] == [good[0], good[2]], "the same rows as before"
        assert_rows_equal_reports(where, doc)
    # rebuilt on demand (delivery-audit index --out ROOT)
    publish_day(tmp_path, where, 4, "run-4b")
    where.write(INDEX_JSON, b"garbage")
    doc = rebuild_index(where.dest, settings=FAST, **where.kwargs())
    assert [r["window_id"] for r in doc["windows"]] == [wid(1), wid(3), wid(4), wid(5)]
    assert the_index(where)["windows"] == doc["windows"]
    assert_rows_equal_reports(where, doc)


def test_rebuild_command(tmp_path):
    from typer.testing import CliRunner

    from delivery_audit.cli import app

    where = Local(tmp_path / "reports")
    for day in (1, 2, 3, 4, 5, 6):
        publish_day(tmp_path, where, day, f"run-{day}")
    where.delete(INDEX_JSON)
    where.delete(INDEX_HTML)
    result = CliRunner().invoke(app, ["index", "--out", where.dest])
    assert result.exit_code == 0, result.output
    assert "6 windows indexed (1 flagged)" in result.output
    assert len(the_index(where)["windows"]) == 6 and where.read(INDEX_HTML)
    for wrong in (str(tmp_path / "a/../b"), str(tmp_path / "typo")):
        result = CliRunner().invoke(app, ["index", "--out", wrong])
        assert result.exit_code == 1 and "error:" in result.output, result.output
    assert not (tmp_path / "typo").exists()


# --------------------------------------------------------------------------- failure policy


def test_a_failing_index_update_leaves_the_window_published(tmp_path, monkeypatch, caplog):
    where = Local(tmp_path / "reports")
    publish_day(tmp_path, where, 1, "run-1")
    before = where.read(INDEX_JSON)

    def broken(doc):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index, "render_index_html", broken)  # the name the update calls
    manifest = publish_day(tmp_path, where, 2, "run-2")
    assert read_manifest(where.dest, rel(2)) == manifest, "published all the same"
    assert where.read(INDEX_JSON) == before, "the index is untouched (no half update)"
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "is published, but the index" in errors[0].getMessage()
    assert "No space left on device" in errors[0].getMessage()
    assert "delivery-audit index --out" in errors[0].getMessage()
    monkeypatch.undo()
    publish_day(tmp_path, where, 3, "run-3")  # the index works again, day 2 still missing
    assert [r["window_id"] for r in the_index(where)["windows"]] == [wid(1), wid(3)]


@pytest.mark.audit
def test_a_failing_s3_index_put_leaves_the_window_published(tmp_path, s3_endpoint,  # noqa: F811
                                                            caplog):
    where = S3(s3_endpoint, f"fail-{uuid.uuid4().hex[:8]}")
    client = where.client

    class Failing:
        def __getattr__(self, name):
            return getattr(client, name)

        def put_object(self, **kw):
            if kw["Key"].endswith(INDEX_JSON):
                raise PublishError("AccessDenied: index.json")
            return client.put_object(**kw)

    manifest = publish(stage(tmp_path, day_report(1, "r1")), where.dest, rel(1),
                       s3_client=Failing(), settings=FAST)
    assert read_manifest(where.dest, rel(1), s3_client=client) == manifest
    assert where.read(INDEX_JSON) is None and where.read(INDEX_HTML) is None
    assert "is published, but the index" in caplog.text
    assert not [k for k in where.keys() if k.endswith(".lock")], "both locks released"


def test_a_lost_window_lock_leaves_the_index_to_the_newer_publication(tmp_path):
    where = Local(tmp_path / "reports")
    publish_day(tmp_path, where, 1, "run-1")
    before = where.read(INDEX_JSON)
    store = index_stores.LocalIndexStore(tmp_path / "reports", "r", FAST)
    new = index_rows.row_from_report(day_report(1, "late"), rel(1), {
        "window_id": wid(1), "run_id": "late", "written_at": "2026-11-02T00:00:00Z"})

    def lost():
        raise PublishError("lost the publication lock")

    with pytest.raises(PublishError):
        index.update_index(store, new, confirm=lost)
    assert where.read(INDEX_JSON) == before


def test_only_the_report_root_layout_is_indexed(tmp_path):
    """A folder published outside the dt=…/<window> layout is not a window of the root."""
    dest = tmp_path / "elsewhere"
    publish(stage(tmp_path, day_report(1, "r1")), str(dest), wid(1), settings=FAST)
    assert read_manifest(str(dest), wid(1)) is not None
    assert not (dest / INDEX_JSON).exists()
