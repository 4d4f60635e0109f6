"""generate_scenario: plan the faults, stream the base traffic, write the fault rows and truth."""

from __future__ import annotations

import bisect
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from delivery_audit.core.timefmt import iso_z_ms

from .base import BaseEngine
from .model import Sim
from .scenarios import DEFAULT_RATES, SCENARIO_TABLE, SCENARIOS
from .writer import SCHEMAS, Writer, check_strings, table_from_rows, write_config

CHUNK_SIZE = 1_000_000


def _iso(ms: int) -> str:
    return iso_z_ms(ms)


def _initial_assignment(sim: Sim) -> None:
    t = sim.pre_start - 90_000
    for gi, g in enumerate(sim.groups):
        for m, member in enumerate(g.members):
            sim.rows["events"].append(dict(group_id=g.group_id, member_id=member, ts=t,
                                           event="joined_group", _gi=gi, _gen_at=t))
            for ti, p in sim.member_partitions(gi, m):
                sim.rows["events"].append(dict(
                    group_id=g.group_id, member_id=member, ts=t + 30_000, event="assigned",
                    topic=sim.topics[ti].name, partition=p, _gi=gi, _gen_at=t + 30_000))


def _resolve(sim: Sim, eng: BaseEngine) -> dict[str, list[dict[str, Any]]]:
    """Fill offsets (by rid), ledger keys and generations of the explicit fault rows."""
    R = sim.recs
    bumps = {gi: sorted(v) for gi, v in sim.gen_bumps.items()}

    def gen(gi: int, at: int) -> int:
        return 1 + bisect.bisect_right(bumps.get(gi, []), at)

    def off(rid: int) -> int:
        o = int(eng.rid_offset[rid])
        if o < 0:
            raise AssertionError(f"record {rid} never merged")
        return o

    out: dict[str, list[dict[str, Any]]] = {"sends": [], "ledger": [], "events": []}
    for row in sim.rows["sends"]:
        r = dict(row)
        rid = r.pop("_rid", None)
        if rid is not None:
            r["partition"] = R.p[rid]
            r["offset"] = off(rid)
        out["sends"].append(r)
    for row in sim.rows["ledger"]:
        r = dict(row)
        rid, gi = r.pop("_rid"), r.pop("_gi")
        r["topic"] = sim.topics[R.ti[rid]].name
        r["partition"] = R.p[rid]
        r["offset"] = off(rid)
        if sim.groups[gi].ledger_keys:
            r["key"], r["seq"] = R.key[rid], R.seq[rid]
        r["generation"] = gen(gi, r.pop("_gen_at"))
        out["ledger"].append(r)
    for row in sim.rows["events"]:
        r = dict(row)
        rid, plus = r.pop("_rid", None), r.pop("_plus", 0)
        if rid is not None:
            r["offset"] = off(rid) + plus
        r["generation"] = gen(r.pop("_gi"), r.pop("_gen_at"))
        out["events"].append(r)
    for rows in out.values():
        check_strings(rows)
    return out


def _verify(sim: Sim, eng: BaseEngine) -> None:
    """Every injected record was consumed exactly as its episode's truth assumes."""
    R = sim.recs
    for rid in range(len(R)):
        for gi in range(len(sim.groups)):
            want = R.expect[rid].get(gi, 0)
            got = int(eng.vis[rid, gi])
            if got != want:
                raise AssertionError(
                    f"record {rid} ({sim.topics[R.ti[rid]].name}/{R.p[rid]} key={R.key[rid]}) "
                    f"seen {got}x by {sim.groups[gi].group_id}, expected {want}")


def generate_scenario(scenario: str, messages: int, seed: int, start: datetime, out: Path,
                      fmt: str = "jsonl", rates: dict[str, float] | None = None,
                      chunk_size: int = CHUNK_SIZE) -> dict:
    """Write one scenario's four sources, config.yaml and truth.json under out/; return the truth.

    ``messages`` is the number of judged messages (identities first sent inside
    the window [start, start + 1 day)); a few more are sent just before the
    window and after its end.
    """
    if scenario not in SCENARIO_TABLE:
        raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware (UTC)")
    if messages < 100:
        raise ValueError("messages must be at least 100")
    unknown = set(rates or {}) - set(DEFAULT_RATES)
    if unknown:
        raise ValueError(f"unknown rate names: {', '.join(sorted(unknown))}")
    start = start.astimezone(UTC)
    start_ms = int(start.timestamp() * 1000)
    sc = SCENARIO_TABLE[scenario]
    all_rates = {**DEFAULT_RATES, **sc.rates, **(rates or {})}
    sim = Sim(list(sc.topics), list(sc.groups), start_ms, seed, messages, all_rates,
              frozenset(rates or {}))
    sim.txn_config = dict(sc.config)
    sc.plan(sim)
    _initial_assignment(sim)
    n_fault = sim.truth.judged
    n_window = messages - n_fault
    if n_window < 10:
        raise ValueError(f"messages={messages} is too small for scenario {scenario!r}: "
                         f"its faults alone need {n_fault} messages")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for src in SCHEMAS:
        d = out / src
        if d.is_dir():
            for f in d.glob("part-*"):
                f.unlink()
    writer = Writer(out, fmt, txn=sc.transactional)
    eng = BaseEngine(sim, writer, n_window, chunk_size)
    eng.run()
    rows = _resolve(sim, eng)
    for src, rs in rows.items():
        if rs:
            writer.write(src, "faults", table_from_rows(src, rs, txn=sc.transactional))
    _verify(sim, eng)
    write_config(out, sim, sc.config)
    truth = sim.truth.as_dict(transactional=sc.transactional)
    result = {
        "scenario": scenario,
        "seed": seed,
        "messages": messages,
        "window": {"start": _iso(sim.start), "end": _iso(sim.end), "grace_minutes": 60},
        **truth,
        "injected": {
            **{k: dict(sorted(v.items())) for k, v in sorted(sim.truth.injected.items())},
            "base": {
                "window_messages": n_window, "before_window": eng.n_pre,
                "after_window": eng.n_post, "without_send_log": eng.unlogged_count,
            },
            "log_duplicates": dict(eng.log_dups),
            "rows": dict(writer.rows_written),
            "format": fmt,
            "story": sc.story,
        },
    }
    if result["judged"] != messages:
        raise AssertionError(f"judged {result['judged']} != messages {messages}")
    (out / "truth.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result
