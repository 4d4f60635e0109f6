"""Scenario catalogue: topology, default rates and the fault plan of each scenario.

Rates are instances per message (e.g. 0.002 = 2 per 1,000 messages), except
``storms`` (episodes per run), ``unlogged`` (share of base messages without a
send log) and ``log_duplicates`` (share of log rows written twice).
Each fault family has a minimum count in the scenarios that feature it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from . import faults_broker as fb
from . import faults_consumer as fc
from . import faults_producer as fp
from . import faults_rebalance as fr
from . import faults_txn as ft
from .model import HOUR, MIN, GroupSpec, Sim, TopicSpec

ORDERS = TopicSpec("orders", 6, 0.55, "cust", producers=3, idempotent=True)
PAYMENTS = TopicSpec("payments", 4, 0.25, "acct", producers=2, idempotent=False)
FANS = TopicSpec("fans-push", 10, 0.20, "fan", producers=2, idempotent=False)

BILLING = GroupSpec(
    "billing", ("billing-1", "billing-2"), ("orders", "payments"),
    {"max.poll.records": 500, "max.poll.interval.ms": 300_000, "session.timeout.ms": 45_000,
     "heartbeat.interval.ms": 3_000, "enable.auto.commit": False},
    ledger_keys=True, proc_ms=(2, 30), lag_ms=(5, 250))
SHIPPING = GroupSpec(
    "shipping", ("shipping-1",), ("orders",),
    {"max.poll.records": 200, "max.poll.interval.ms": 300_000, "session.timeout.ms": 10_000,
     "heartbeat.interval.ms": 3_000, "enable.auto.commit": True},
    ledger_keys=False, proc_ms=(1, 15), lag_ms=(5, 400))
FANS_GROUP = GroupSpec(
    "fans-push-service", ("consumer-1", "consumer-2"), ("fans-push",),
    {"max.poll.records": 500, "max.poll.interval.ms": 300_000, "session.timeout.ms": 10_000,
     "heartbeat.interval.ms": 3_000, "enable.auto.commit": True},
    ledger_keys=True, proc_ms=(10, 60), lag_ms=(5, 300))

DEFAULT_RATES: dict[str, float] = {
    # producer side
    "producer_retry": 0.002, "write_reorder": 0.001, "idempotence_breach": 0.0003,
    "unknown_dup": 0.0003, "key_split": 0.0002,
    # broker side
    "failover": 0.0001,
    # consumer side
    "skip_crash": 0.0001, "poison": 0.0001, "retry_success": 0.0004, "batch_retry": 0.0001,
    "process_reorder": 0.0002, "gc_pause": 0.00003,
    # transactions (exactly-once only)
    "txn_committed": 0.004, "txn_interleaved": 0.0005, "txn_abort_resend": 0.001,
    "txn_abort_lost": 0.0005, "zombie": 0.0003,
    # episodes per run / shares
    "storms": 1, "unlogged": 0.0, "log_duplicates": 0.0,
}


@dataclass(frozen=True)
class Scenario:
    name: str
    topics: tuple[TopicSpec, ...]
    groups: tuple[GroupSpec, ...]
    plan: Callable[[Sim], None]
    rates: dict[str, float]
    story: str
    transactional: bool = False      # writes the §9 fields (transactional, control, ...)
    config: dict[str, Any] = field(default_factory=dict)   # top-level config.yaml settings


def _window(sim: Sim) -> tuple[int, int]:
    return sim.start + 30 * MIN, sim.end - 2 * HOUR


def _many(sim: Sim, name: str, minimum: int, fn: Callable[[], object]) -> None:
    for _ in range(sim.count(name, minimum)):
        sim.place(fn)


def _many_per_topic(sim: Sim, name: str, minimum: int, tis: list[int], fn) -> None:
    """Like _many, but the topic is drawn once per instance (retries keep it), so crowded
    topics are not under-represented."""
    for _ in range(sim.count(name, minimum)):
        ti = int(sim.rng.choice(tis))
        sim.place(lambda ti=ti: fn([ti]))


def _plan_producer(sim: Sim, minimum: int, dup_topics: list[int], idem_topics: list[int]) -> None:
    lo, hi = _window(sim)
    _many_per_topic(sim, "producer_retry", 2 * minimum, dup_topics,
                    lambda t: fp.retry_dup(sim, t, lo, hi))
    _many_per_topic(sim, "write_reorder", 2 * minimum, dup_topics,
                    lambda t: fp.reorder(sim, t, lo, hi))
    _many_per_topic(sim, "idempotence_breach", minimum, idem_topics,
                    lambda t: fp.idempotent_dup(sim, t, lo, hi))
    _many_per_topic(sim, "unknown_dup", minimum, dup_topics,
                    lambda t: fp.unknown_dup(sim, t, lo, hi))


def _plan_splits(sim: Sim, minimum: int, ti: int) -> None:
    t_inc = sim.start + 12 * HOUR
    _many(sim, "key_split", minimum, lambda: fp.key_split(sim, ti, t_inc))


def _plan_consumer_slots(sim: Sim, minimum: int, billing: int, shipping: int) -> None:
    lo, hi = _window(sim)
    _many(sim, "gc_pause", minimum, lambda: fc.gc_pause(sim, shipping, lo, hi))
    _many(sim, "skip_crash", minimum, lambda: fc.skip_crash(sim, billing, lo, hi))
    _many(sim, "poison", minimum, lambda: fc.poison(sim, billing, lo, hi))
    _many(sim, "retry_success", minimum, lambda: fc.retry_success(sim, billing, lo, hi))
    _many(sim, "retry_success", minimum, lambda: fc.retry_success(sim, shipping, lo, hi))
    _many(sim, "batch_retry", minimum, lambda: fc.batch_retry(sim, billing, lo, hi))
    _many(sim, "process_reorder", minimum, lambda: fc.mt_reorder(sim, billing, lo, hi))


def storm_burst(messages: int, divisor: int) -> int:
    return max(30, min(300, messages // divisor))


def _plan_storms(sim: Sim, gi: int, ti: int, divisor: int) -> None:
    burst = storm_burst(sim.messages, divisor)
    n = int(sim.rates.get("storms", 1))
    lo, hi = sim.start + HOUR, sim.end - 3 * HOUR
    for k in range(n):
        sim.place(lambda k=k: fr.storm(sim, gi, ti, burst, 1 - k % 2, lo, hi))


# ---------------------------------------------------------------- plans
def plan_clean(sim: Sim) -> None:
    sim.place(lambda: fc.late_catchup(sim, sim.gi["shipping"], sim.ti["orders"]))


def plan_storm(sim: Sim) -> None:
    _plan_storms(sim, sim.gi["fans-push-service"], sim.ti["fans-push"], 8)


def plan_producer_retry(sim: Sim) -> None:
    o, p = sim.ti["orders"], sim.ti["payments"]
    _plan_producer(sim, 2, [o, p], [o])


def plan_broker_loss(sim: Sim) -> None:
    lo, hi = _window(sim)
    _many(sim, "failover", 2, lambda: fb.failover(sim, [sim.ti["payments"]], lo, hi))


def plan_consumer_loss(sim: Sim) -> None:
    b, s = sim.gi["billing"], sim.gi["shipping"]
    sim.place(lambda: fc.expired(sim, b, sim.ti["payments"]))
    sim.place(lambda: fc.stall_pending(sim, s, sim.ti["orders"]))
    _plan_consumer_slots(sim, 1, b, s)
    _plan_splits(sim, 2, sim.ti["orders"])


def plan_mixed(sim: Sim) -> None:
    o, p, f = sim.ti["orders"], sim.ti["payments"], sim.ti["fans-push"]
    b, s, fg = sim.gi["billing"], sim.gi["shipping"], sim.gi["fans-push-service"]
    _plan_storms(sim, fg, f, 20)
    sim.place(lambda: fc.expired(sim, b, p))
    sim.place(lambda: fc.stall_pending(sim, s, o))
    sim.place(lambda: fc.late_catchup(sim, b))
    _plan_consumer_slots(sim, 1, b, s)
    lo, hi = _window(sim)
    _many(sim, "failover", 1, lambda: fb.failover(sim, [p], lo, hi))
    _plan_producer(sim, 1, [o, p, f], [o])
    _plan_splits(sim, 1, o)
    sim.place(lambda: fp.null_key_stream(sim, p, lo, hi))
    for h in (3, 9, 15):
        sim.place(lambda h=h: fp.healthcheck(sim, o, 0, sim.start + h * HOUR,
                                             sim.start + (h + 3) * HOUR))


def _plan_open_transactions(sim: Sim, ti: int) -> None:
    """The two slots kept to the end go first: nothing may follow them in their partitions."""
    ph, po = (int(x) for x in sim.rng.choice(sim.topics[ti].partitions, size=2, replace=False))
    sim.place(lambda: ft.hanging(sim, ti, ph, sim.start + 14 * HOUR, sim.start + 18 * HOUR))
    sim.place(lambda: ft.recent_open(sim, ti, po))


def _plan_transactions(sim: Sim, ti: int, minimum: dict[str, int]) -> None:
    lo, hi = _window(sim)
    for k in range(sim.count("txn_committed", minimum["txn_committed"])):  # one in ten long
        sim.place(lambda k=k: ft.committed(sim, ti, lo, hi, long_=k % 10 == 0))
    _many(sim, "txn_interleaved", minimum["txn_interleaved"],
          lambda: ft.interleaved(sim, ti, lo, hi))
    _many(sim, "txn_abort_resend", minimum["txn_abort_resend"],
          lambda: ft.abort_resend(sim, ti, lo, hi))
    for k in range(sim.count("txn_abort_lost", 3)):       # the third one keeps no send log
        sim.place(lambda k=k: ft.abort_lost(sim, ti, lo, hi, logless=k % 3 == 2))
    _many(sim, "zombie", minimum["zombie"], lambda: ft.zombie(sim, ti, lo, hi))


def plan_exactly_once(sim: Sim) -> None:
    ti = sim.ti["transfers"]
    _plan_open_transactions(sim, ti)
    _plan_transactions(sim, ti, {"txn_committed": 5, "txn_interleaved": 2,
                                 "txn_abort_resend": 3, "zombie": 2})


def plan_mixed_eos(sim: Sim) -> None:
    """mixed, then transactions on transfers (read_committed by billing, read_uncommitted by
    audit-export, the default isolation by shipping), and one abort whose records reach the
    read_committed group as well."""
    ti = sim.ti["transfers"]
    _plan_open_transactions(sim, ti)
    plan_mixed(sim)
    _plan_transactions(sim, ti, {"txn_committed": 2, "txn_interleaved": 1,
                                 "txn_abort_resend": 1, "zombie": 1})
    lo, hi = _window(sim)
    sim.place(lambda: ft.abort_resend(sim, ti, lo, hi, leaky=True))


TRANSFERS = TopicSpec("transfers", 8, 0.0, "xfer", producers=1, idempotent=True)
SETTLEMENT = GroupSpec(
    "settlement", ("settlement-1", "settlement-2"), ("payments", "transfers"),
    {"max.poll.records": 500, "max.poll.interval.ms": 300_000, "session.timeout.ms": 45_000,
     "heartbeat.interval.ms": 3_000, "enable.auto.commit": False,
     "isolation.level": "read_committed", "latency_sla_ms": 60_000},
    ledger_keys=True, proc_ms=(2, 30), lag_ms=(5, 250))
AUDIT_EXPORT = GroupSpec(
    "audit-export", ("audit-export-1",), ("transfers",),
    {"max.poll.records": 500, "max.poll.interval.ms": 300_000, "session.timeout.ms": 45_000,
     "heartbeat.interval.ms": 3_000, "enable.auto.commit": True,
     "isolation.level": "read_uncommitted", "latency_sla_ms": 30_000},
    ledger_keys=False, proc_ms=(1, 15), lag_ms=(5, 300))


def _mixed_topics() -> tuple[TopicSpec, ...]:
    return (replace(ORDERS, weight=0.5), replace(PAYMENTS, weight=0.3, unlogged=True),
            replace(FANS, weight=0.2))


SCENARIO_TABLE: dict[str, Scenario] = {
    "clean": Scenario(
        "clean", (replace(ORDERS, weight=0.65), replace(PAYMENTS, weight=0.35)),
        (BILLING, SHIPPING), plan_clean, {},
        "No faults. One partition is consumed late, inside the grace period."),
    "rebalance-storm": Scenario(
        "rebalance-storm", (replace(FANS, weight=1.0),), (FANS_GROUP,), plan_storm,
        {"storms": 2},
        "Fan-push bursts processed at ~1.5 s per record exceed max.poll.interval.ms."),
    "producer-retry": Scenario(
        "producer-retry", (replace(ORDERS, weight=0.6), replace(PAYMENTS, weight=0.4)),
        (BILLING, SHIPPING), plan_producer_retry, {},
        "Non-idempotent retries with 5 in-flight requests; an idempotent epoch bump; "
        "an invisible internal retry."),
    "broker-loss": Scenario(
        "broker-loss", (replace(PAYMENTS, weight=0.6), replace(ORDERS, weight=0.4)),
        (BILLING, SHIPPING), plan_broker_loss, {},
        "acks=1 producers across leader failovers."),
    "consumer-loss": Scenario(
        "consumer-loss", (replace(ORDERS, weight=0.6), replace(PAYMENTS, weight=0.4)),
        (BILLING, SHIPPING), plan_consumer_loss, {},
        "Commit-before-process crashes, poison records, lag at the end, retention, "
        "multithreaded reordering, a partition-count increase, retries, redeliveries."),
    "mixed": Scenario(
        "mixed", _mixed_topics(), (BILLING, SHIPPING, FANS_GROUP), plan_mixed,
        {"storms": 1, "log_duplicates": 0.0005, "unlogged": 0.03},
        "Everything at once over three topics and three groups."),
    "exactly-once": Scenario(
        "exactly-once", (replace(PAYMENTS, weight=1.0), TRANSFERS), (SETTLEMENT, AUDIT_EXPORT),
        plan_exactly_once, {},
        "Transactional producers on transfers: commits, aborts with and without re-send, a "
        "fenced zombie's late write, a hanging and a recent open transaction; a read_committed "
        "and a read_uncommitted group with latency SLAs.",
        transactional=True, config={"transaction_timeout_ms": 120_000}),
    "mixed-eos": Scenario(
        "mixed-eos", _mixed_topics() + (TRANSFERS,),
        (replace(BILLING, topics=("orders", "payments", "transfers"),
                 settings={**BILLING.settings, "isolation.level": "read_committed"}),
         replace(SHIPPING, topics=("orders", "transfers")), FANS_GROUP,
         replace(AUDIT_EXPORT, settings={
             k: v for k, v in AUDIT_EXPORT.settings.items() if k != "latency_sla_ms"})),
        plan_mixed_eos, {"storms": 1, "log_duplicates": 0.0005, "unlogged": 0.03},
        "mixed, with the exactly-once scenario's transactions on a fourth topic (billing reads "
        "it read_committed, audit-export read_uncommitted, shipping with the default "
        "isolation); no latency SLA.",
        transactional=True, config={"transaction_timeout_ms": 120_000}),
}

SCENARIOS: tuple[str, ...] = tuple(SCENARIO_TABLE)
