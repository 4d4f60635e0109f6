"""The anomaly catalogue is the one declaration of each anomaly: docs/anomalies.md is
generated from it, and every function it names exists and decides that anomaly."""

from __future__ import annotations

import inspect
from pathlib import Path

from delivery_audit.anomalies import ANOMALIES, ANOMALY_NAMES, catalogue_markdown
from delivery_audit.detection import Detection

ROOT = Path(__file__).resolve().parents[1]


def test_docs_table_is_generated_from_the_catalogue():
    assert (ROOT / "docs" / "anomalies.md").read_text() == catalogue_markdown(), (
        "docs/anomalies.md is stale: python -m delivery_audit.anomalies > docs/anomalies.md")


def test_every_anomaly_names_the_functions_that_decide_it():
    for spec in ANOMALIES:
        deciders = spec.deciders()
        assert deciders and all(callable(f) for f in deciders), spec.name
        modules = "".join(inspect.getsource(inspect.getmodule(f)) for f in deciders)
        assert f'"{spec.name}"' in modules, f"{spec.name}: not emitted where it is decided"


def test_detection_runs_every_catalogued_rule():
    assert Detection.__dataclass_fields__["rules"].default_factory() == list(ANOMALY_NAMES)
    assert len(set(ANOMALY_NAMES)) == len(ANOMALY_NAMES)
