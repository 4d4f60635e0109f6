"""Fault-scenario generator: a simulated Kafka pipeline and the exact expected audit result.

    from delivery_audit_sim.generator import generate_scenario, SCENARIOS
    truth = generate_scenario("mixed", 2000, 7, start, Path("out"))

writes ``out/{sends,broker,ledger,events}/part-*.{jsonl,parquet}``,
``out/config.yaml`` and ``out/truth.json`` (also returned).  The truth is
computed by construction; see docs/scenarios.md.
"""

from __future__ import annotations

from .core import generate_scenario
from .scenarios import DEFAULT_RATES, SCENARIOS

__all__ = ["DEFAULT_RATES", "SCENARIOS", "generate_scenario"]
