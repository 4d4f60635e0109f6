"""Publishing a run's outputs to a local directory or S3 so readers never see half a report.

Protocol (contract §7), for ``<destination>/<relative_dir>/``:

0. the window's publication lock is taken (one publisher per window at a time; ``lock.py``);
1. the previous ``_manifest.json`` is removed first: from then on readers see "no report";
2. every file of the staging directory is written;
3. what a previous run left under the prefix that this run does not write is deleted;
4. ``_manifest.json`` (paths, sizes, sha256, window id, run id, written_at: the model of
   delivery_audit.core.manifest) is written **last** of the window's files;
5. the report root's index (``<destination>/index.json`` and ``index.html``, ``index.py``) gets
   the window's row, under the root's index lock (windows in the ``dt=…/<window id>`` layout);
6. the lock is released.

A failure before step 4 raises :class:`PublishError` naming the step and leaves no manifest.
A failure of step 5 does not: the window is published, the error is logged, and the index is
rebuilt from the report folders when it is missing or damaged (``index.py``).

* ``staging.py``: the staged files, their digests, the window and run ids, the manifest;
* ``local.py``: a local folder (files swapped in by rename);
* ``s3.py``: S3 (the client, the publication); ``retry.py``: which S3 errors are retried, and
  how (``DELIVERY_AUDIT_PUBLISH_ATTEMPTS``, ``DELIVERY_AUDIT_PUBLISH_RETRY_DELAY_S``);
* ``lock.py``: the window's lock, local (flock) and S3 (a lease,
  ``DELIVERY_AUDIT_PUBLISH_LOCK_WAIT_S``, ``DELIVERY_AUDIT_PUBLISH_LOCK_LEASE_S``);
* ``index.py``: the cross-window index at the destination's root (its update and rebuild);
  ``index_rows.py`` its rows and spike rule; ``index_stores.py`` where it lives (local or
  S3, with its lock); ``index_page.py`` its page;
* ``settings.py``: :class:`PublishSettings` and :class:`PublishError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.manifest import MANIFEST, SCHEMA_VERSION, Manifest
from .index import INDEX_HTML, INDEX_JSON, index_store, rebuild_index, refresh_index
from .local import local_root, publish_local, read_local_manifest
from .lock import lock_name
from .s3 import SSE_MODES, is_s3, make_s3_client, publish_s3, read_s3_manifest, sse_headers
from .settings import PublishError, PublishSettings
from .staging import report_ids, staged_files

MANIFEST_SCHEMA_VERSION = SCHEMA_VERSION

__all__ = ["INDEX_HTML", "INDEX_JSON", "MANIFEST", "MANIFEST_SCHEMA_VERSION", "SSE_MODES",
           "PublishError", "PublishSettings", "lock_name", "make_s3_client", "publish",
           "read_manifest", "rebuild_index", "staged_files"]


def _check_relative(relative_dir: str) -> str:
    rel = relative_dir.strip("/")
    if not rel or any(part in ("", ".", "..") for part in rel.split("/")):
        raise ValueError(f"relative_dir must be a plain relative path, got {relative_dir!r}")
    return rel


def publish(staging_dir: Path, destination: str, relative_dir: str, *, sse: str | None = None,
            kms_key_id: str | None = None, s3_client: Any = None,
            endpoint_url: str | None = None, window_id: str | None = None,
            settings: PublishSettings | None = None) -> dict:
    """Publish every file of staging_dir under <destination>/<relative_dir>/; returns the manifest.

    destination: a local directory (or file:// URL) or ``s3://bucket/prefix``.
    sse: None, "AES256" (SSE-S3) or "aws:kms" (SSE-KMS; kms_key_id optional, and giving a
    kms_key_id alone implies "aws:kms"). Ignored for local destinations.
    window_id: defaults to report.json's window.id, else the last part of relative_dir.
    settings: retry and lock tuning; default :meth:`PublishSettings.from_env`.

    The window's row of the destination's index is written after its manifest (step 5); that
    step never raises (see ``index.py``, "Failure policy").
    """
    staging_dir = Path(staging_dir)
    rel = _check_relative(relative_dir)
    files = staged_files(staging_dir)
    wid, run_id = report_ids(staging_dir, rel)
    wid = window_id or wid
    settings = settings or PublishSettings.from_env()
    report_json = dict(files).get("report.json")
    if is_s3(destination):
        if kms_key_id and not sse:
            sse = "aws:kms"
        if sse is not None and sse not in SSE_MODES:
            raise ValueError(f"sse must be one of {SSE_MODES} or None, got {sse!r}")
        client = s3_client or make_s3_client(endpoint_url)
        store = index_store(destination, run_id, settings, s3_client=client,
                            extra=sse_headers(sse, kms_key_id))
        return publish_s3(files, destination, rel, wid, run_id, sse=sse, kms_key_id=kms_key_id,
                          client=client, settings=settings,
                          after_manifest=lambda manifest, confirm: refresh_index(
                              store, rel, report_json, manifest, confirm))
    store = index_store(destination, run_id, settings)
    return publish_local(files, local_root(destination), rel, wid, run_id, destination,
                         settings, after_manifest=lambda manifest, confirm: refresh_index(
                             store, rel, report_json, manifest, confirm))


def read_manifest(destination: str, relative_dir: str, *, s3_client: Any = None,
                  endpoint_url: str | None = None) -> dict | None:
    """The published manifest of that prefix, or None when there is none (no complete report).

    Parsed through :class:`~delivery_audit.core.manifest.Manifest`: anything but the form the
    publisher writes raises :class:`~delivery_audit.core.manifest.ManifestError`.
    """
    rel = _check_relative(relative_dir)
    if is_s3(destination):
        text = read_s3_manifest(s3_client or make_s3_client(endpoint_url), destination, rel)
    else:
        text = read_local_manifest(destination, rel)
    return None if text is None else Manifest.parse(text).to_dict()
