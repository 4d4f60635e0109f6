"""The anomaly catalogue is the one declaration of each anomaly: docs/anomalies.md is
generated from it, and every function it names exists and, together, they lead from the
rule's inputs to the anomaly row (the last-named module emits the anomaly's name)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

from delivery_audit.anomalies import ANOMALIES, ANOMALY_NAMES, AnomalySpec, catalogue_markdown
from delivery_audit.detection import Detection

ROOT = Path(__file__).resolve().parents[1]


def deciders(spec: AnomalySpec) -> list[Callable]:
    """The functions ``spec.decided_by`` names ("module:function" below delivery_audit), in
    order; an AssertionError naming the reference that does not resolve."""
    out = []
    for ref in spec.decided_by:
        module, _, name = ref.partition(":")
        try:
            found = getattr(importlib.import_module(f"delivery_audit.{module}"), name)
        except (ImportError, AttributeError) as exc:
            raise AssertionError(f"{spec.name}: {ref} does not resolve ({exc})") from exc
        out.append(found)
    return out


def test_docs_table_is_generated_from_the_catalogue():
    assert (ROOT / "docs" / "anomalies.md").read_text() == catalogue_markdown(), (
        "docs/anomalies.md is stale: python -m delivery_audit.anomalies > docs/anomalies.md")


@pytest.mark.parametrize("spec", ANOMALIES, ids=lambda s: s.name)
def test_every_anomaly_names_the_functions_that_decide_it(spec):
    found = deciders(spec)
    assert found and all(inspect.isfunction(f) for f in found), spec.name
    assert len(set(spec.decided_by)) == len(spec.decided_by), f"{spec.name}: named twice"
    # each function is defined where the catalogue says (not merely re-exported there)
    for ref, f in zip(spec.decided_by, found, strict=True):
        assert f.__module__ == "delivery_audit." + ref.partition(":")[0], ref
    # the anomaly row is built in one of the named functions
    assert any(f'"{spec.name}"' in inspect.getsource(f) for f in found), (
        f"{spec.name}: no named function emits it")


def test_the_rule_chains_start_where_their_inputs_are_computed():
    """The cases the review found short (issue 31): skipped names the states' CASE, the
    state anomalies and where rule 12's ``past`` comes from; aborted_read names where the
    ledger row's ``aborted`` flag is set."""
    by = {a.name: a.decided_by for a in ANOMALIES}
    assert {"detection.delivery_states:state", "detection.delivery_states:_state_anomalies",
            "detection.keyed.routed_rows:pair_rows", "detection.keyed.identity_facts:_reach_bits",
            "detection.keyed.leaves:ledger_rows"} <= set(by["skipped"])
    assert {"detection.keyed.routed_rows:ledger_joined",
            "detection.keyed.routed_rows:ledger_out"} <= set(by["aborted_read"])
    source = inspect.getsource(deciders(ANOMALIES[ANOMALY_NAMES.index("aborted_read")])[1])
    assert '.alias("aborted")' in source


def test_detection_runs_every_catalogued_rule():
    assert Detection.__dataclass_fields__["rules"].default_factory() == list(ANOMALY_NAMES)
    assert len(set(ANOMALY_NAMES)) == len(ANOMALY_NAMES)
