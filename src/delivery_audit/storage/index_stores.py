"""Where the report root's index lives (:class:`IndexStore`): a local folder or an S3
prefix, each with the index's root-level lock (``<root>/.index.lock``; local: ``flock``,
S3: the conditional-put lease lock of lock.py), its two files (local: a fsync'ed temp file
and ``os.replace``; S3: one PUT each), and the published report folders beside it
(``dt=YYYY-MM-DD/<window id>``, :data:`WINDOW_DIR`) that a rebuild reads."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from ..core.manifest import MANIFEST
from ..core.s3uri import split_s3
from .local import local_lock, local_root, write_atomic
from .lock import S3Lock
from .retry import MISSING_CODES, error_code, with_retry
from .s3 import is_s3, list_keys, make_s3_client
from .settings import PublishSettings

INDEX_LOCK = ".index.lock"
#: a window's report folder, relative to the root: the layout the index lists
WINDOW_DIR = re.compile(r"dt=\d{4}-\d{2}-\d{2}/[^/.][^/]*")
_REPORT_KEY = re.compile(rf"({WINDOW_DIR.pattern})/(report\.json|{re.escape(MANIFEST)})")


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
