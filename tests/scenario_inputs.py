"""Several generated scenarios in one input: each scenario's files copied with every topic and
group prefixed by its name, and its config relabelled the same way (tests/test_scenarios.py,
tests/test_connect.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

SOURCES = ("sends", "broker", "ledger", "events")
# top-level config settings a scenario may write (scenarios that set one agree on it)
TOP_LEVEL = ("transaction_timeout_ms", "latency_sla_ms")


def relabel_line(line: str, prefix: str) -> str:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return line
    if not isinstance(row, dict):
        return line
    for field in ("topic", "group_id"):
        if isinstance(row.get(field), str):
            row[field] = prefix + row[field]
    return json.dumps(row, separators=(",", ":"))


def relabel(src: Path, dst: Path, prefix: str) -> dict:
    """Copy one scenario's files with every topic and group prefixed; its config too."""
    for source in SOURCES:
        (dst / source).mkdir(parents=True, exist_ok=True)
        for f in sorted((src / source).glob("*.jsonl")):
            lines = f.read_text(encoding="utf-8").splitlines()
            (dst / source / f"{prefix}{f.name}").write_text(
                "".join(relabel_line(x, prefix) + "\n" for x in lines), encoding="utf-8")
    cfg = yaml.safe_load((src / "config.yaml").read_text()) or {}
    groups = {}
    for gid, settings in (cfg.get("groups") or {}).items():
        settings = dict(settings or {})
        settings["topics"] = [prefix + t for t in settings.get("topics", [])]
        groups[prefix + gid] = settings
    ranges = [{**r, "topic": prefix + r["topic"]} for r in cfg.get("dump_ranges") or []]
    return {"groups": groups, "dump_ranges": ranges, "dense_seq": cfg.get("dense_seq", True),
            **{k: cfg[k] for k in TOP_LEVEL if k in cfg}}
