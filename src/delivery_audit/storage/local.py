"""Publishing to a local folder (or a ``file://`` URL).

Under the window's lock (:func:`~.lock.local_lock`), the files are copied and fsync'ed into a
private sibling directory ``.<window>.tmp-<tag>`` together with the manifest, which is then
swapped in by rename: a reader sees the old report, no report, or the new one whole. What an
interrupted publication left (``.tmp-`` / ``.old-`` siblings) is removed by the next one.
Then, still under the window's lock, the report root's index is updated (``after_manifest``).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from ..core.manifest import MANIFEST, ManifestFile
from .lock import local_lock, lock_name
from .settings import PublishError, PublishSettings
from .staging import file_sha256, new_manifest

log = logging.getLogger("delivery_audit.storage")


def local_root(destination: str) -> Path:
    return Path(destination[len("file://"):] if destination.startswith("file://") else destination)


def read_local_manifest(destination: str, rel: str) -> str | None:
    """The manifest's text under <destination>/<rel>/, None when there is none."""
    try:
        return (local_root(destination) / rel / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """path's new content, whole or not at all: a fsync'ed sibling renamed over it."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def publish_local(files: list[tuple[str, Path]], root: Path, rel: str, wid: str, run_id: str,
                  destination: str, settings: PublishSettings,
                  after_manifest: Callable[[dict, Callable[[], None]], None] | None = None) -> dict:
    """Publish files under root/rel (see the module's docstring); returns the manifest.

    after_manifest(manifest, confirm): called once the window is published, still under its
    lock (the report root's index, :mod:`.index`); ``confirm`` is a no-op here (a flock is
    not lost).
    """
    target = root / rel
    parent = target.parent
    tag = uuid.uuid4().hex[:12]
    tmp_prefix, old_prefix = f".{target.name}.tmp-", f".{target.name}.old-"
    tmp = parent / f"{tmp_prefix}{tag}"
    old = parent / f"{old_prefix}{tag}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(f"publishing to {target} failed: {exc}; no manifest was written") \
            from exc
    with local_lock(parent / lock_name(target.name), run_id, settings):
        try:
            # 0. what an interrupted publication left (we hold the lock: nobody else's)
            for p in parent.iterdir():
                if p.name.startswith((tmp_prefix, old_prefix)):
                    log.warning("removing %s, left by an interrupted publication", p)
                    shutil.rmtree(p)
            # 1. no manifest from here on
            (target / MANIFEST).unlink(missing_ok=True)
            # 2. the files, into a private directory on the same filesystem
            tmp.mkdir()
            entries = []
            dirs = {tmp}
            for rel_path, src in files:
                dst = tmp / rel_path
                dst.parent.mkdir(parents=True, exist_ok=True)
                dirs.add(dst.parent)
                shutil.copyfile(src, dst)
                _fsync(dst)
                entries.append(ManifestFile(rel_path, dst.stat().st_size, file_sha256(dst)))
            # 4. manifest last (inside the private dir: it appears together with the files)
            manifest = new_manifest(entries, wid, run_id, rel, destination)
            write_atomic(tmp / MANIFEST, manifest.to_json())
            for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
                _fsync(d)  # durable before the rename makes them visible
            # 3. swap: whatever the previous run left goes away with the old directory
            if target.exists():
                os.replace(target, old)
            os.replace(tmp, target)
            _fsync(parent)
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if old.exists() and not target.exists():
                os.replace(old, target)  # put the old files back (still without a manifest)
            raise PublishError(f"publishing to {target} failed: {exc}; no manifest was "
                               "written") from exc
        shutil.rmtree(old, ignore_errors=True)
        if after_manifest is not None:
            after_manifest(manifest.to_dict(), lambda: None)
    log.info("published %d files to %s", len(entries), target)
    return manifest.to_dict()
