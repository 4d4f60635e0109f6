"""The advice (the package docstring's **advice**): each judged setting against the group's
p99 processing time, with the arithmetic written out."""

from __future__ import annotations

import math
from typing import Any

from .settings import Settings
from .units import num


def advice(s: Settings, p99: int | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    mpr, interval = s["max.poll.records"], s["max.poll.interval.ms"]
    session, heartbeat = s["session.timeout.ms"], s["heartbeat.interval.ms"]
    src = s.origin
    if p99 is None:
        out.append({"setting": "max.poll.records", "current": mpr, "advised": None,
                    "ok": None, "reason": "no processing times (finished_ts) in the ledger: "
                                          "cannot size the batch"})
    else:
        per = max(p99, 1)
        batch = mpr * per
        half = interval / 2
        safe = math.floor(interval / 2 / per)
        arithmetic = (f"p99 per-record processing {num(p99)} ms × max.poll.records {num(mpr)}"
                      f"{' (Kafka default)' if src['max.poll.records'] != 'config' else ''} = "
                      f"{num(batch)} ms ({num(batch / 1000)} s) per batch")
        limit = (f"max.poll.interval.ms {num(interval)} ({num(interval / 1000)} s)"
                 f"{' (Kafka default)' if src['max.poll.interval.ms'] != 'config' else ''}")
        if safe < 1:
            need = 2 * per
            out.append({"setting": "max.poll.interval.ms", "current": interval,
                        "advised": need, "ok": False,
                        "reason": f"{arithmetic}; even one record (p99 {num(p99)} ms) takes "
                                  f"more than half of {limit}: raise max.poll.interval.ms to at "
                                  f"least 2 × {num(p99)} = {num(need)} ms and poll one record "
                                  f"at a time (or move the work off the poll thread)"})
            out.append({"setting": "max.poll.records", "current": mpr, "advised": 1,
                        "ok": False, "reason": "with the interval raised as advised"})
        elif batch > half:
            verdict = "far above" if batch > interval else "above half of"
            out.append({"setting": "max.poll.records", "current": mpr, "advised": safe,
                        "ok": False,
                        "reason": f"{arithmetic}, {verdict} {limit}; to keep a batch under half "
                                  f"the interval: floor({num(interval)} / 2 / {num(p99)}) = "
                                  f"{num(safe)} records (≤ {num(safe * per)} ms per batch)"})
        else:
            out.append({"setting": "max.poll.records", "current": mpr, "advised": mpr,
                        "ok": True,
                        "reason": f"{arithmetic}, under half of {limit} ({num(half)} ms); the "
                                  f"largest safe value is floor({num(interval)} / 2 / "
                                  f"{num(p99)}) = {num(safe)}"})
    third = session // 3
    ok = heartbeat <= session / 3
    out.append({"setting": "heartbeat.interval.ms", "current": heartbeat,
                "advised": heartbeat if ok else third, "ok": ok,
                "reason": f"heartbeat.interval.ms {num(heartbeat)} "
                          f"{'≤' if ok else '>'} session.timeout.ms {num(session)} / 3 = "
                          f"{num(session / 3)}"
                          + ("" if ok else f": lower it to {num(third)} ms")})
    return out

