"""The GX suite files (package data, one locator) and the parameters they are run with."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from delivery_audit.core.packaging import SUITES_DIR
from delivery_audit.core.window import AuditWindow, parse_instant

INPUT_SUITES: tuple[str, ...] = ("sends", "broker", "ledger", "events")
RESULTS_SUITE = "results"
_TS_FLOOR = datetime(2000, 1, 1, tzinfo=UTC)

# Suite parameters with their defaults; config.raw["quality"][name] overrides each.
THRESHOLD_DEFAULTS: dict[str, float] = {
    "null_key_share_max": 0.5,  # sends, broker: null keys / valid rows
    "null_seq_share_max": 0.5,  # broker: records without seq / valid rows
    "duplicate_share_max": 0.05,  # rule-5 duplicates / rows read
    "quarantined_share_max": 0.1,  # quarantined / rows read
    "topic_rows_min": 1,  # valid rows of every topic the config names for a group
}


def quality_cfg(config: Any) -> dict:
    """The config's ``quality`` section ({} without one)."""
    raw = getattr(config, "raw", None) or {}
    q = raw.get("quality") if isinstance(raw, dict) else None
    return q if isinstance(q, dict) else {}


def expectations_dir(config: Any = None) -> Traversable:
    """Where the suite files are: the config's ``quality.expectations_dir`` when set, else the
    suites that ship with the engine, package data ``delivery_audit/expectations/`` read
    through importlib.resources (a source tree, where it links to the top-level
    ``expectations/``, an installed wheel and the ``--py-files`` zip alike)."""
    override = quality_cfg(config).get("expectations_dir")
    if override:
        return Path(override)
    return files("delivery_audit") / SUITES_DIR


def load_suite_dict(name: str, config: Any = None) -> dict:
    """The suite ``<name>.json`` as a dict."""
    path = expectations_dir(config) / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"expectation suite file {path} is missing") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"expectation suite file {path} is not valid JSON: {exc}") from exc


def timestamp_bounds(window: AuditWindow, config: Any = None) -> dict[str, str]:
    """The ``ts_min`` / ``ts_max`` suite parameters (ISO-8601, UTC)."""
    quality = quality_cfg(config)
    lo = max(window.start - timedelta(days=3650), _TS_FLOOR)
    hi = window.read_until + timedelta(days=366)
    if quality.get("ts_min"):
        lo = parse_instant(quality["ts_min"])
    if quality.get("ts_max"):
        hi = parse_instant(quality["ts_max"])
    return {"ts_min": lo.isoformat(), "ts_max": hi.isoformat()}


def thresholds(config: Any = None) -> dict[str, float]:
    """The threshold suite parameters: THRESHOLD_DEFAULTS, overridden by config quality.*."""
    quality = quality_cfg(config)
    out: dict[str, float] = {}
    for name, default in THRESHOLD_DEFAULTS.items():
        value = quality.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"quality.{name} must be a number, got {value!r}")
        out[name] = value
    return out


def suite_parameters(window: AuditWindow, config: Any = None) -> dict[str, Any]:
    """Every input-suite parameter: the timestamp bounds and the thresholds."""
    return {**timestamp_bounds(window, config), **thresholds(config)}
