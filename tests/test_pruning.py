"""Partition pruning (ingest/pruning.py): which files a window reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from delivery_audit.config import AuditConfig
from delivery_audit.core.window import AuditWindow
from delivery_audit.ingest import read_bounds, resolve
from delivery_audit.ingest.pruning import Bounds, keep, path_span

T0 = datetime(2026, 11, 19, tzinfo=UTC)


@pytest.mark.parametrize(("path", "start", "hours"), [
    ("s3://b/sends/dt=2026-11-19/hour=07/part-0.jsonl", T0 + timedelta(hours=7), 1),
    ("/data/sends/dt=2026-11-19/part-0.jsonl", T0, 24),
    ("/data/sends/date=20261119/hr=7/x.csv", T0 + timedelta(hours=7), 1),
    ("/data/ledger/2026/11/19/13/part.jsonl", T0 + timedelta(hours=13), 1),
    ("/data/ledger/2026/11/19/part.jsonl", T0, 24),
    ("/data/broker/orders-2026-11-19T13.jsonl.gz", T0 + timedelta(hours=13), 1),
    ("/data/broker/orders-20261119.jsonl", T0, 24),
    ("/data/broker/orders_2026-11-19_23.parquet", T0 + timedelta(hours=23), 1),
])
def test_path_span_reads_the_layouts(path, start, hours):
    assert path_span(path) == (start, start + timedelta(hours=hours))


@pytest.mark.parametrize("path", [
    "/data/sends/part-00000.jsonl",  # nothing dated
    "/data/broker/00000000000000000000.log",  # a Kafka segment name, not a date
    "/data/sends/orders-12345678.jsonl",  # 8 digits that are no date
    "/data/sends/dt=2026-13-45/x.jsonl",  # not a real day
])
def test_undated_paths_are_always_read(path):
    assert path_span(path) is None
    assert keep(path, Bounds(T0, T0 + timedelta(hours=1)))


def test_keep_is_an_overlap_with_slack():
    bounds = Bounds(T0 + timedelta(hours=5), T0 + timedelta(hours=7))
    hour = "/d/dt=2026-11-19/hour={:02d}/f.jsonl"
    assert [h for h in range(24) if keep(hour.format(h), bounds)] == [5, 6]
    slack = Bounds(bounds.lower, bounds.upper, timedelta(minutes=30))
    assert [h for h in range(24) if keep(hour.format(h), slack)] == [4, 5, 6, 7]
    no_lower = Bounds(None, bounds.upper)
    assert [h for h in range(24) if keep(hour.format(h), no_lower)] == list(range(7))


def _month_of_hours(root, source="sends"):
    """30 days × 24 hourly partitions, one small file each."""
    for day in range(30):
        d = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(days=day)
        for hour in range(24):
            folder = root / source / f"dt={d:%Y-%m-%d}" / f"hour={hour:02d}"
            folder.mkdir(parents=True)
            (folder / "part-0.jsonl").write_text("{}\n")


def test_a_one_hour_backfill_over_a_month_reads_about_an_hour(tmp_path):
    _month_of_hours(tmp_path)
    window = AuditWindow(T0 + timedelta(hours=10), T0 + timedelta(hours=11),
                         grace_minutes=60)
    config = AuditConfig(lookback_minutes=60)
    resolved = resolve("sends", str(tmp_path / "sends"), bounds=read_bounds(window, config))
    hours = sorted(path_span(f)[0].hour for f in resolved.files)
    # look-back hour 09, the window hour 10, grace hour 11
    assert hours == [9, 10, 11]
    assert {path_span(f)[0].date() for f in resolved.files} == {T0.date()}
    assert resolved.pruned == 30 * 24 - 3
    # without a look-back everything before the window is read (contract rule 6)
    unbounded = resolve("sends", str(tmp_path / "sends"),
                        bounds=read_bounds(window, AuditConfig()))
    assert len(unbounded.files) == 18 * 24 + 12
    # every file pruned: an empty source, not an error
    late = AuditWindow(datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 2, tzinfo=UTC),
                       grace_minutes=0)
    empty = resolve("sends", str(tmp_path / "sends"),
                    bounds=Bounds(late.start, late.read_until))
    assert empty.files == () and empty.pruned == 30 * 24
