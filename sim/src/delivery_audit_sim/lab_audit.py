"""What both labs (lab.py, lab_txn.py) do around their Kafka work: a fresh recordings
folder, the files each source reads from it, and the audit of a recording's window."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any


def fresh_recordings(workdir: Path) -> Path:
    """`workdir`/recordings, created, without the JSON Lines of an earlier run."""
    rec_dir = workdir / "recordings"
    rec_dir.mkdir(parents=True, exist_ok=True)
    for old in rec_dir.glob("*.jsonl"):
        old.unlink()
    return rec_dir


def recorded_files(rec_dir: Path, broker_file: str) -> dict[str, list[str]]:
    """The audit's inputs in a recordings folder: the producer's sends, the broker dump,
    every member's ledger and events."""
    return {
        "sends": [str(rec_dir / "producer.sends.jsonl")],
        "broker": [str(rec_dir / broker_file)],
        "ledger": sorted(str(p) for p in rec_dir.glob("*.ledger.jsonl")),
        "events": sorted(str(p) for p in rec_dir.glob("*.events.jsonl")),
    }


def audit_recordings(files: dict[str, list[str]], started: datetime, finished: datetime,
                     config: dict[str, Any], out: Path, spark=None):
    """run_audit over the whole minutes the recording spans (no grace); returns its
    AuditResult (destination, report)."""
    from delivery_audit.audit import AuditRequest, run_audit
    from delivery_audit.config import AuditConfig
    from delivery_audit.core.window import AuditWindow

    window = AuditWindow(started.replace(second=0, microsecond=0),
                         (finished + timedelta(minutes=1)).replace(second=0, microsecond=0),
                         grace_minutes=0)
    if spark is None:
        from delivery_audit.spark import get_spark

        spark = get_spark("delivery-audit-lab")
    return run_audit(AuditRequest(inputs=files, window=window, out=str(out),
                                  config=AuditConfig.from_dict(config), notify=False,
                                  spark=spark))


__all__ = ["audit_recordings", "fresh_recordings", "recorded_files"]
