"""What a publication publishes: the staged files, their sha256, the window and run ids (from
report.json) and the manifest describing them (delivery_audit.core.manifest's model)."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from ..core.manifest import MANIFEST, Manifest, ManifestFile
from ..core.timefmt import now_z
from .settings import PublishError


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def staged_files(staging_dir: Path) -> list[tuple[str, Path]]:
    """(relative posix path, absolute path) of every regular file below staging_dir, sorted.

    A ``_manifest.json`` at the top of the staging dir is ignored (the publisher writes it), and
    so are Hadoop's hidden ``.*.crc`` checksum sidecars (the manifest carries sha256 instead).
    """
    staging_dir = Path(staging_dir)
    if not staging_dir.is_dir():
        raise PublishError(f"staging directory {staging_dir} does not exist")
    out: list[tuple[str, Path]] = []
    for p in sorted(staging_dir.rglob("*")):
        if p.is_file():
            rel = p.relative_to(staging_dir).as_posix()
            if rel != MANIFEST and not (p.name.startswith(".") and p.name.endswith(".crc")):
                out.append((rel, p))
    return out


def report_ids(staging_dir: Path, relative_dir: str) -> tuple[str, str]:
    """(window id, run id) from report.json; else the last part of relative_dir, a fresh id."""
    wid = run_id = None
    report = Path(staging_dir) / "report.json"
    if report.is_file():
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
            wid = (data.get("window") or {}).get("id")
            run_id = (data.get("run") or {}).get("run_id")
        except (OSError, ValueError, AttributeError):
            pass
    return (str(wid) if wid else relative_dir.rstrip("/").rsplit("/", 1)[-1],
            str(run_id) if run_id else uuid.uuid4().hex[:12])


def new_manifest(entries: list[ManifestFile], window_id: str, run_id: str, relative_dir: str,
                 destination: str) -> Manifest:
    """The manifest of the files just written, stamped now."""
    return Manifest(window_id=window_id, run_id=run_id, relative_dir=relative_dir,
                    destination=destination, written_at=now_z(), files=tuple(entries))
