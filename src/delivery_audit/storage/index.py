"""The report root's index: every published window in one table, so a reader sees whether last
night was worse than the week before (``<report root>/index.json`` and ``index.html``).
The rows and the spike rule: index_rows.py; where the index lives (local or S3, its lock):
index_stores.py; the page: index_page.py. This module updates and rebuilds it.

**The update** (:func:`refresh_index`, called by ``storage.publish`` for every window published
in the layout ``dt=YYYY-MM-DD/<window id>``; other relative dirs are not indexed), after the
window's manifest is written and still under the window's lock:

1. the index lock is taken: a **root-level lock** (``<root>/.index.lock``; local: ``flock``,
   S3: the conditional-put lease lock of lock.py), so publications of different windows take
   turns for one read and two writes. (Not a conditional put of index.json alone: the page
   must be written from the same state, and a put of index.html cannot be conditioned on
   index.json.) Locks are always taken window first, then index: no deadlock;
2. ``index.json`` is read; if it is missing or unreadable, the rows are **rebuilt** from the
   report folders under the root (``dt=*/*/report.json`` whose ``_manifest.json`` lists it
   with that sha256: only published windows);
3. the window's row replaces its previous one or is inserted (re-runs and backfills never
   duplicate a row), rows are sorted by window start, the flags recomputed;
4. on S3 the window's lock is confirmed (a publication whose window lock was taken over
   leaves the index to the newer one); ``index.json`` is written, then ``index.html``: each
   whole or not at all (local: a fsync'ed temp file and ``os.replace``; S3: one PUT each);
5. the index lock is released.

A reader therefore never sees a row of a window whose manifest was not written yet (a re-run in
progress keeps its previous row until its own manifest is there).

**Derived data, self-healing.** The index holds nothing that is not in the report folders: a
missing or damaged ``index.json`` is rebuilt by the next publication, and
``delivery-audit index --out <root>`` (:func:`rebuild_index`) rebuilds it now
(also what adds a row that a failed update missed).

**Failure policy.** The window is published before the index is touched, so a failing index
update never un-publishes it: :func:`refresh_index` logs an ERROR naming the cause and the
rebuild command, and the publication's result (manifest, exit code) is unchanged. The page is
drawn by :mod:`.index_page`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.manifest import Manifest, ManifestError
from ..redaction import redact_text
from .index_page import render_index_html
from .index_rows import IndexUnreadable, build_index, merge, parse_rows, row_from_report
from .index_stores import WINDOW_DIR, IndexStore, index_store
from .local import local_root
from .s3 import is_s3
from .settings import PublishSettings

log = logging.getLogger("delivery_audit.storage")

INDEX_JSON = "index.json"
INDEX_HTML = "index.html"


def rebuild_rows(store: IndexStore) -> list[dict[str, Any]]:
    """The rows of every published window under the store's root (its manifest lists its
    report.json with that sha256; one row per window id, the last published); anything else
    is skipped with a warning. Lists the whole root (S3: every key under it)."""
    rows = []
    for rel, report, manifest_text in store.reports():
        try:
            manifest = Manifest.parse(manifest_text)
            listed = {f.path: f.sha256 for f in manifest.files}
            if listed.get("report.json") != hashlib.sha256(report).hexdigest():
                raise ValueError("report.json is not the one its manifest lists")
            rows.append(row_from_report(json.loads(report), rel, manifest.to_dict()))
        except (ManifestError, ValueError, UnicodeDecodeError) as exc:
            log.warning("index: %s/%s left out: %s", store.where.rstrip("/"), rel, exc)
    out: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: r["published_at"]):  # one row per window: the last
        out = merge(out, row)
    return out


def _write(store: IndexStore, rows: list[dict[str, Any]],
           confirm: Callable[[], None]) -> dict[str, Any]:
    doc = build_index(rows)
    html = render_index_html(doc)
    confirm()
    store.write(INDEX_JSON, json.dumps(doc, indent=2) + "\n", "application/json")
    store.write(INDEX_HTML, html, "text/html; charset=utf-8")
    return doc


def update_index(store: IndexStore, row: dict[str, Any],
                 confirm: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Put `row` into the store's index (steps 1-5 of the module's docstring); the document.

    confirm(): raises if this publication may no longer speak for its window (S3: its window
    lock was taken over); called under the index lock, before anything is written.
    """
    with store.lock():
        text = store.read(INDEX_JSON)
        rows = None
        if text is not None:
            try:
                rows = parse_rows(text)
            except IndexUnreadable as exc:
                log.warning("index: %s%s is unreadable (%s): rebuilt from the report folders",
                            store.where.rstrip("/") + "/", INDEX_JSON, exc)
        if rows is None:
            rows = rebuild_rows(store)
        return _write(store, merge(rows, row), confirm)


def rebuild_index(destination: str, *, s3_client: Any = None, endpoint_url: str | None = None,
                  settings: PublishSettings | None = None) -> dict[str, Any]:
    """Rebuild the index of the report root `destination` from its report folders, now.
    FileNotFoundError if a local root is not a directory (no index is made up for a typo)."""
    if not is_s3(destination) and not local_root(destination).is_dir():
        raise FileNotFoundError(f"no report root at {destination}: not a directory")
    store = index_store(destination, "rebuild", settings or PublishSettings.from_env(),
                        s3_client=s3_client, endpoint_url=endpoint_url)
    with store.lock():
        return _write(store, rebuild_rows(store), lambda: None)


def refresh_index(store: IndexStore, rel: str, report_json: Path | None,
                  manifest: dict[str, Any], confirm: Callable[[], None]) -> dict | None:
    """The publication's index update; never raises (see "Failure policy" above).

    Returns the index document, or None when the window is not indexed (not in the
    ``dt=…/<window id>`` layout, no report.json) or the update failed (logged as an ERROR).
    """
    if not WINDOW_DIR.fullmatch(rel) or report_json is None:
        log.info("index: %s is not a report folder of the dt=…/<window> layout with a "
                 "report.json: not indexed", rel)
        return None
    try:
        row = row_from_report(json.loads(report_json.read_bytes()), rel, manifest)
        return update_index(store, row, confirm)
    except Exception as exc:  # noqa: BLE001 - the window is published whatever happens here
        log.error("the window %s is published, but the index at %s was not updated (%s); the "
                  "next publication rebuilds it only if index.json is missing or unreadable: "
                  "run `delivery-audit index --out %s` to rebuild it now",
                  manifest.get("window_id"), store.where, redact_text(f"{type(exc).__name__}: "
                                                                      f"{exc}"),
                  redact_text(store.where))
        return None
