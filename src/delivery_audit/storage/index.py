"""The report root's index: every published window in one table, so a reader sees whether last
night was worse than the week before (``<report root>/index.json`` and ``index.html``).

**The model.** ``index.json`` is ``{"schema_version": "1.0", "generated_at", "spike_rule",
"anomalies": [names], "windows": [rows]}``, one row per window (key: the window id), sorted by
window start. A row's figures are copied from the window's ``report.json``: ``verdict`` and
``reasons`` (``verdict.*``), ``judged``, ``anomalies`` (name → ``anomalies.<name>.count``),
``headline`` (the first finding of ``narrative``: severity and title, or null); with
``start``, ``end``, ``relative_dir``, ``run_id`` and ``published_at`` (the manifest's
``written_at``), ``links`` (``html``, ``json``: relative to the root) and ``flags``.

**Spikes.** A window is flagged for an anomaly when its count is at least
:data:`SPIKE_FACTOR` × the median of the same anomaly over the up to :data:`SPIKE_HISTORY`
previous windows of the same length (at least :data:`SPIKE_MIN_HISTORY` of them), and at least
:data:`SPIKE_MIN_COUNT` (so 0 → 1 is not a spike, 0 → 5 is). Flags are derived: recomputed
over all rows at every write, so a backfill of an earlier window re-judges the later ones.

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

Size: the cross-window index (read, merge under the lease, write, rebuild) for local
folders and S3; the page is index_page.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ..core.manifest import MANIFEST, Manifest, ManifestError
from ..core.s3uri import split_s3
from ..core.timefmt import instant, now_z
from .local import local_lock, local_root, write_atomic
from .lock import S3Lock
from .retry import MISSING_CODES, error_code, with_retry
from .s3 import is_s3, list_keys, make_s3_client
from .settings import PublishSettings

log = logging.getLogger("delivery_audit.storage")

INDEX_JSON = "index.json"
INDEX_HTML = "index.html"
INDEX_LOCK = ".index.lock"
SCHEMA_VERSION = "1.0"
SPIKE_FACTOR = 5  # a count ≥ this × the trailing median …
SPIKE_MIN_COUNT = 5  # … and at least this many (0 → 1 is not a spike)
SPIKE_HISTORY = 7  # the trailing median is over up to this many previous windows …
SPIKE_MIN_HISTORY = 3  # … of which at least this many (fewer: not judged)
#: a window's report folder, relative to the root: the layout the index lists
WINDOW_DIR = re.compile(r"dt=\d{4}-\d{2}-\d{2}/[^/.][^/]*")
_REPORT_KEY = re.compile(rf"({WINDOW_DIR.pattern})/(report\.json|{re.escape(MANIFEST)})")


class IndexUnreadable(ValueError):
    """index.json is not an index this version can read (it is then rebuilt)."""


# --------------------------------------------------------------------------- rows


def row_from_report(report: Any, rel: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The index row of a published window: its report.json's figures, its manifest's ids."""
    if not isinstance(report, dict):
        raise ValueError("report.json is not an object")
    window = _dict(report.get("window"))
    verdict = _dict(report.get("verdict"))
    anomalies = {str(name): _int(entry.get("count")) or 0
                 for name, entry in _dict(report.get("anomalies")).items()
                 if isinstance(entry, dict)}
    narrative = report.get("narrative")
    first = narrative[0] if isinstance(narrative, list) and narrative else None
    headline = ({"severity": _str(first.get("severity")), "title": _str(first.get("title"))}
                if isinstance(first, dict) else None)
    reasons = verdict.get("reasons")
    return {
        "window_id": str(manifest["window_id"]),
        "start": _str(window.get("start")),
        "end": _str(window.get("end")),
        "relative_dir": rel,
        "verdict": _str(verdict.get("verdict")),
        "reasons": [str(r) for r in reasons] if isinstance(reasons, list) else [],
        "judged": _int(report.get("judged")),
        "anomalies": anomalies,
        "headline": headline,
        "run_id": str(manifest["run_id"]),
        "published_at": str(manifest["written_at"]),
        "links": {"html": f"{rel}/report.html", "json": f"{rel}/report.json"},
        "flags": [],
    }


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None




def _order(row: dict[str, Any]) -> tuple:
    start, end = instant(row.get("start")), instant(row.get("end"))
    return (start is None, start.timestamp() if start else 0.0,
            end.timestamp() if end else 0.0, row["window_id"])


def merge(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """rows with `row` in place of the row of its window (or added), sorted by window start."""
    return sorted([r for r in rows if r["window_id"] != row["window_id"]] + [row], key=_order)


def _length(row: dict[str, Any]) -> float | None:
    start, end = instant(row.get("start")), instant(row.get("end"))
    return (end - start).total_seconds() if start and end else None


def flag_spikes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """rows (sorted by start) with their ``flags``: [{anomaly, count, median, previous}]."""
    out = []
    for i, row in enumerate(rows):
        length = _length(row)
        previous = [r for r in rows[:i] if _length(r) == length][-SPIKE_HISTORY:]
        flags = []
        if len(previous) >= SPIKE_MIN_HISTORY:
            for name, count in row["anomalies"].items():
                median = statistics.median(r["anomalies"].get(name, 0) for r in previous)
                if count >= SPIKE_MIN_COUNT and count >= SPIKE_FACTOR * median:
                    flags.append({"anomaly": name, "count": count,
                                  "median": int(median) if median == int(median) else median,
                                  "previous": len(previous)})
        out.append({**row, "flags": flags})
    return out


def build_index(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The index document of these rows (flags recomputed)."""
    rows = flag_spikes(sorted(rows, key=_order))
    names: dict[str, None] = {}  # first appearance: report.json lists the catalogue's order
    for row in rows:
        names.update(dict.fromkeys(row["anomalies"]))
    return {"schema_version": SCHEMA_VERSION, "generated_at": now_z(),
            "spike_rule": {"factor": SPIKE_FACTOR, "min_count": SPIKE_MIN_COUNT,
                           "history": SPIKE_HISTORY, "min_history": SPIKE_MIN_HISTORY,
                           "compared_with": "previous windows of the same length"},
            "anomalies": list(names), "windows": rows}


def parse_rows(text: str | bytes) -> list[dict[str, Any]]:
    """The rows of an index.json; :class:`IndexUnreadable` unless it is one (1.x)."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexUnreadable(f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema_version", "")).startswith("1."):
        raise IndexUnreadable("not a 1.x index document")
    rows = doc.get("windows")
    if not isinstance(rows, list):
        raise IndexUnreadable("no list of windows")
    for i, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("window_id"), str)
                and isinstance(row.get("relative_dir"), str)
                and isinstance(row.get("anomalies"), dict)
                and all(_int(v) is not None for v in row["anomalies"].values())):
            raise IndexUnreadable(f"windows[{i}] is not an index row")
    if len({r["window_id"] for r in rows}) != len(rows):
        raise IndexUnreadable("a window is listed twice")
    return rows


# --------------------------------------------------------------------------- stores


class IndexStore(Protocol):
    """Where an index lives: its lock, its two files, and the report folders beside it."""

    where: str

    def lock(self) -> contextlib.AbstractContextManager[None]: ...

    def read(self, name: str) -> bytes | None: ...

    def write(self, name: str, text: str, content_type: str) -> None: ...

    def reports(self) -> Iterator[tuple[str, bytes, bytes]]:
        """(relative dir, report.json, _manifest.json) of every window folder with both."""
        ...


class LocalIndexStore:
    def __init__(self, root: Path, run_id: str, settings: PublishSettings):
        self.root, self.run_id, self.settings = Path(root), run_id, settings
        self.where = str(self.root)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with local_lock(self.root / INDEX_LOCK, self.run_id, self.settings, what="the index"):
            for p in self.root.glob(".index.*"):  # temp files of an interrupted write
                if p.name != INDEX_LOCK:
                    p.unlink(missing_ok=True)
            yield

    def read(self, name: str) -> bytes | None:
        try:
            return (self.root / name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, text: str, content_type: str) -> None:
        write_atomic(self.root / name, text)

    def reports(self) -> Iterator[tuple[str, bytes, bytes]]:
        for folder in sorted(self.root.glob("dt=*/*")):
            rel = folder.relative_to(self.root).as_posix()
            if WINDOW_DIR.fullmatch(rel) and folder.is_dir():
                try:
                    yield rel, (folder / "report.json").read_bytes(), \
                        (folder / MANIFEST).read_bytes()
                except FileNotFoundError:
                    continue  # not published (or being re-published)


class S3IndexStore:
    def __init__(self, client: Any, destination: str, run_id: str, settings: PublishSettings,
                 extra: dict[str, str] | None = None):
        self.client, self.run_id, self.settings = client, run_id, settings
        self.extra = extra or {}  # the report's SSE headers
        self.bucket, key = split_s3(destination)
        self.prefix = key.strip("/") + "/" if key.strip("/") else ""
        self.where = f"s3://{self.bucket}/{self.prefix}"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        lock = S3Lock(self.client, self.bucket, self.prefix + INDEX_LOCK, self.run_id,
                      self.settings, self.extra, what="the index")
        try:
            lock.acquire()
            yield
        finally:
            lock.release()

    def read(self, name: str) -> bytes | None:
        try:
            obj = with_retry(f"get {self.prefix}{name}", lambda: self.client.get_object(
                Bucket=self.bucket, Key=self.prefix + name), self.settings)
        except Exception as exc:  # noqa: BLE001 - botocore's error classes are dynamic
            if error_code(exc) in MISSING_CODES:
                return None
            raise
        return obj["Body"].read()

    def write(self, name: str, text: str, content_type: str) -> None:
        body = text.encode("utf-8")
        with_retry(f"put {self.prefix}{name}", lambda: self.client.put_object(
            Bucket=self.bucket, Key=self.prefix + name, Body=body, ContentType=content_type,
            CacheControl="no-cache", **self.extra), self.settings)

    def reports(self) -> Iterator[tuple[str, bytes, bytes]]:
        found: dict[str, set[str]] = {}
        for key in list_keys(self.client, self.bucket, self.prefix, self.settings):
            m = _REPORT_KEY.fullmatch(key[len(self.prefix):])
            if m:
                found.setdefault(m.group(1), set()).add(m.group(2))
        for rel in sorted(rel for rel, names in found.items() if len(names) == 2):
            report, manifest = self.read(f"{rel}/report.json"), self.read(f"{rel}/{MANIFEST}")
            if report is not None and manifest is not None:
                yield rel, report, manifest


def index_store(destination: str, run_id: str, settings: PublishSettings, *,
                s3_client: Any = None, endpoint_url: str | None = None,
                extra: dict[str, str] | None = None) -> IndexStore:
    """The store of the index at the report root `destination` (a folder or s3://)."""
    if is_s3(destination):
        return S3IndexStore(s3_client or make_s3_client(endpoint_url), destination, run_id,
                            settings, extra)
    return LocalIndexStore(local_root(destination), run_id, settings)


# --------------------------------------------------------------------------- update


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
    from .index_page import render_index_html

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
    from ..redaction import redact_text

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
