"""Where a snapshot is written: a hidden staging folder inside ``out`` (same file system, so
publishing is a rename), one gzip JSON Lines file per partition streamed as batches arrive
(memory stays bounded however large the partition), and the move into place at the end:
``out/broker/`` and ``out/offsets.json`` appear only when every partition was read."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .request import SnapshotFailed

BROKER_DIR = "broker"
OFFSETS_FILE = "offsets.json"


class PartitionFile:
    """``<topic>-<partition>.jsonl.gz``: canonical broker rows, one JSON object a line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = gzip.open(path, "wt", encoding="utf-8", compresslevel=6)  # noqa: SIM115

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")

    def close(self) -> None:
        self._fh.close()


class Staging:
    """The snapshot being written; ``publish`` moves it into place, ``discard`` drops it."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            self.dir = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=self.out))
        except OSError as exc:
            raise SnapshotFailed(f"cannot write under {self.out}: {exc.strerror}") from None
        (self.dir / BROKER_DIR).mkdir()

    def partition_file(self, topic: str, partition: int) -> PartitionFile:
        return PartitionFile(self.dir / BROKER_DIR / f"{topic}-{partition}.jsonl.gz")

    def publish(self, offsets: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """Write offsets.json and move both into ``out`` (replacing an earlier snapshot
        there); returns (offsets path, broker files)."""
        (self.dir / OFFSETS_FILE).write_text(json.dumps(offsets, indent=1) + "\n",
                                             encoding="utf-8")
        broker, offsets_path = self.out / BROKER_DIR, self.out / OFFSETS_FILE
        if broker.exists():
            old = Path(tempfile.mkdtemp(prefix=".snapshot-old-", dir=self.out))
            os.replace(broker, old / BROKER_DIR)
            shutil.rmtree(old)
        os.replace(self.dir / BROKER_DIR, broker)
        os.replace(self.dir / OFFSETS_FILE, offsets_path)
        self.discard()
        files = tuple(sorted(str(p) for p in broker.glob("*.jsonl.gz")))
        return str(offsets_path), files

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


__all__ = ["BROKER_DIR", "OFFSETS_FILE", "PartitionFile", "Staging"]
