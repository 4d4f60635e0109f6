"""A report folder's ``_manifest.json``: the model the publisher writes (last, so that its
presence means the folder holds a complete report) and the one check a reader runs on it.

No I/O here: :func:`verify_manifest` is given the manifest's text, the names present in the
folder and a function reading a file by its name, so the publisher (delivery_audit.storage)
and Airflow's report check (local paths or S3, through whichever client it has) share it.

The form, exactly as written (``json.dumps(indent=2)``, keys in this order)::

    {"schema_version": "1.0", "window_id": "...", "run_id": "...", "relative_dir": "...",
     "destination": "...", "written_at": "...Z", "file_count": 2, "total_bytes": 123,
     "files": [{"path": "report.json", "size": 100, "sha256": "<64 hex>"}, ...]}

``path`` is relative to the report folder ('/'-separated, never ``_manifest.json``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MANIFEST = "_manifest.json"
SCHEMA_VERSION = "1.0"
REPORT_FILES = ("report.json", "report.html")  # what readers open: verified byte for byte

_KEYS = ("schema_version", "window_id", "run_id", "relative_dir", "destination", "written_at",
         "file_count", "total_bytes", "files")
_FILE_KEYS = ("path", "size", "sha256")
# A reader accepts any 1.x manifest and ignores keys it does not know: a newer job may add
# a field without breaking an older Airflow's report check (a change readers must
# understand bumps the major version).
_MAJOR = SCHEMA_VERSION.split(".")[0] + "."
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ManifestError(ValueError):
    """The text is not a manifest in the form the publisher writes."""


@dataclass(frozen=True)
class ManifestFile:
    path: str  # relative to the report folder
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    window_id: str
    run_id: str
    relative_dir: str  # the report folder, relative to the destination
    destination: str
    written_at: str  # ISO-8601 UTC with Z
    files: tuple[ManifestFile, ...]
    schema_version: str = SCHEMA_VERSION

    @property
    def file_count(self) -> int:
        return len(self.files)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "window_id": self.window_id,
            "run_id": self.run_id,
            "relative_dir": self.relative_dir,
            "destination": self.destination,
            "written_at": self.written_at,
            "file_count": self.file_count,
            "total_bytes": self.total_bytes,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
        }

    def to_json(self) -> str:
        """The file's text, as the publisher writes it."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def parse(cls, text: str | bytes) -> Manifest:
        """The manifest in ``text``; :class:`ManifestError` unless it is exactly the form the
        publisher writes (every key, consistent counts; unknown keys of a 1.x manifest are
        ignored)."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"not a manifest: not JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Manifest:
        _keys(data, _KEYS, "")
        if not str(data["schema_version"]).startswith(_MAJOR):
            raise ManifestError(f"not a manifest: schema_version {data['schema_version']!r}, "
                                f"expected {_MAJOR}x")
        for key in ("window_id", "run_id", "relative_dir", "destination", "written_at"):
            if not isinstance(data[key], str) or not data[key]:
                raise ManifestError(f"not a manifest: {key} is {data[key]!r}, not a string")
        if not isinstance(data["files"], list):
            raise ManifestError("not a manifest: files is not a list")
        files = tuple(_file(f, i) for i, f in enumerate(data["files"]))
        paths = [f.path for f in files]
        if len(set(paths)) != len(paths):
            raise ManifestError("not a manifest: a path is listed twice")
        manifest = cls(window_id=data["window_id"], run_id=data["run_id"],
                       relative_dir=data["relative_dir"], destination=data["destination"],
                       written_at=data["written_at"], files=files)
        for key in ("file_count", "total_bytes"):
            if not _count(data[key]) or data[key] != getattr(manifest, key):
                raise ManifestError(f"not a manifest: {key} is {data[key]!r} for the "
                                    f"{len(files)} files listed")
        return manifest


def _keys(data: Any, keys: tuple[str, ...], what: str) -> None:
    if not isinstance(data, dict):
        raise ManifestError(f"not a manifest: {what or 'the document'} is a "
                            f"{type(data).__name__}, not an object")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ManifestError(f"not a manifest: {what or 'the document'} has no "
                            f"{', '.join(missing)}")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _file(entry: Any, i: int) -> ManifestFile:
    _keys(entry, _FILE_KEYS, f"files[{i}]")
    path, size, digest = entry["path"], entry["size"], entry["sha256"]
    if not isinstance(path, str) or path == MANIFEST or path.startswith("/") or any(
            part in ("", ".", "..") for part in path.split("/")):
        raise ManifestError(f"not a manifest: files[{i}].path {path!r} is not a path relative "
                            "to the report folder")
    if not _count(size):
        raise ManifestError(f"not a manifest: files[{i}].size is {size!r}")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise ManifestError(f"not a manifest: files[{i}].sha256 is {digest!r}")
    return ManifestFile(path, size, digest)


def verify_manifest(text: str | bytes, *, window_id: str, present: Iterable[str],
                    read: Callable[[str], bytes], where: str = "",
                    verify: Iterable[str] = REPORT_FILES) -> Manifest:
    """Check a published report folder against its manifest; returns the manifest.

    text: the manifest's content; window_id: the window the folder must be for; present: the
    names of the files in the folder (relative, as the manifest lists them); read(name): a
    file's bytes; where: the folder, to name things in errors; verify: the files that must be
    listed and whose bytes must match their sha256 (report.json and report.html).

    Raises :class:`ManifestError` (not a manifest), ValueError (another window; a file that
    changed after publication) or FileNotFoundError (a listed file is missing; a file of
    ``verify`` is not listed).
    """
    at = where.rstrip("/") + "/" if where else ""
    try:
        manifest = Manifest.parse(text)
    except ManifestError as exc:
        raise ManifestError(f"{at}{MANIFEST}: {exc}") from None
    if manifest.window_id != window_id:
        raise ValueError(f"{at}{MANIFEST} is for window {manifest.window_id}, expected "
                         f"{window_id}")
    present = set(present)
    lost = [f.path for f in manifest.files if f.path not in present]
    if lost:
        raise FileNotFoundError(f"the manifest of {where or 'the report'} lists files that are "
                                f"missing: {lost[:10]}")
    listed = {f.path: f for f in manifest.files}
    for name in verify:
        if name not in listed:
            raise FileNotFoundError(f"{at}{MANIFEST} does not list {name}")
        want = listed[name].sha256
        got = hashlib.sha256(read(name)).hexdigest()
        if got != want:
            raise ValueError(f"{at}{name} does not match the manifest (sha256 {got[:12]}…, "
                             f"manifest {want[:12]}…): changed after publication")
    return manifest
