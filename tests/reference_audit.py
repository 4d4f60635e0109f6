"""A brute-force reference evaluator of the audit contract (§2–§4, rules §8, §9).

Pure Python, written straight from the contract text, independent of the
generator and of the Spark engine: it reads the canonical sources (JSONL or
Parquet part files), quarantines bad rows, and computes the anomaly counts,
causes and per-group delivery states in the truth.json format.  It is meant
for small data (up to ~10^5 rows); use it to cross-check the engine.

    from reference_audit import reference_audit
    result = reference_audit("out", "2024-05-01T00:00:00Z", "2024-05-02T00:00:00Z")
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

ANOMALY_NAMES = (
    "lost_acked", "lost_unacked", "written_despite_failure", "seq_gap", "dup_write", "redelivery",
    "dup_effect", "skipped", "pending", "expired_unconsumed", "write_reorder", "process_reorder",
    "key_partition_split", "concurrent_processing", "retry_after_failure",
    # contract §9: not evaluated here (0), the scenarios checked with it have no transactions
    # and no latency SLA
    "aborted_read", "hanging_transaction", "zombie_write", "late_delivery",
)
# contract §9 (transactions and latency)
TXN_ANOMALY_NAMES = ("aborted_read", "hanging_transaction", "zombie_write", "late_delivery")
ABORTED_READ_CAUSES = ("read_uncommitted", "read_committed", "unknown")
STATES = ("delivered_once", "delivered_duplicate", "lost_acked", "lost_unacked", "skipped",
          "expired_unconsumed", "pending")

# kind: ts | str | key | long | int | nnlong | nnint | bool | enum
FIELDS = {
    "sends": [("send_ts", "ts", True), ("topic", "str", True), ("key", "key", False),
              ("seq", "long", True), ("status", "enum", True), ("partition", "nnint", False),
              ("offset", "nnlong", False), ("ack_ts", "ts", False), ("attempt", "int", False),
              ("producer_id", "str", False), ("idempotent", "bool", False),
              ("error", "str", False), ("transactional_id", "str", False)],
    "broker": [("topic", "str", True), ("partition", "nnint", True), ("offset", "nnlong", True),
               ("key", "key", False), ("seq", "long", False), ("timestamp", "ts", False),
               ("producer_id", "str", False), ("pid", "long", False),
               ("producer_epoch", "int", False), ("batch_sequence", "int", False),
               ("transactional", "bool", False), ("control", "enum", False)],
    "ledger": [("group_id", "str", True), ("member_id", "str", True), ("topic", "str", True),
               ("partition", "nnint", True), ("offset", "nnlong", True), ("key", "key", False),
               ("seq", "long", False), ("started_ts", "ts", True), ("finished_ts", "ts", False),
               ("outcome", "enum", True), ("generation", "int", False),
               ("isolation", "enum", False)],
    "events": [("group_id", "str", True), ("member_id", "str", False), ("ts", "ts", True),
               ("event", "enum", True), ("topic", "str", False), ("partition", "nnint", False),
               ("offset", "nnlong", False), ("generation", "int", False),
               ("detail", "str", False)],
}
ENUMS = {
    "status": ("acked", "failed", "timeout", "aborted"),
    "control": ("commit", "abort"),
    "isolation": ("read_committed", "read_uncommitted"),
    "outcome": ("success", "failure", "skipped"),
    "event": ("assigned", "revoked", "lost", "commit", "commit_failed", "left_group",
              "joined_group"),
}
TIME_COL = {"sends": "send_ts", "broker": "timestamp", "ledger": "started_ts", "events": "ts"}
REBALANCE_EVENTS = ("assigned", "revoked", "lost", "commit_failed")
_DIGITS = re.compile(r"^\d+$")


class Bad(ValueError):
    pass


def _ts(v: Any) -> int:
    """Rule 1: integers / all-digit strings are epoch ms; other strings ISO-8601."""
    if isinstance(v, bool):
        raise Bad("timestamp is a boolean")
    if isinstance(v, int):
        return v
    if isinstance(v, datetime):
        d = v if v.tzinfo else v.replace(tzinfo=UTC)
        return int(round(d.timestamp() * 1000))
    if isinstance(v, str):
        s = v.strip()
        if _DIGITS.match(s):
            return int(s)
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            d = datetime.fromisoformat(s)
        except ValueError as exc:
            raise Bad(f"bad timestamp {v!r}") from exc
        if d.tzinfo is None:
            d = d.replace(tzinfo=UTC)
        return int(round(d.timestamp() * 1000))
    raise Bad(f"bad timestamp {v!r}")


def _int(v: Any) -> int:
    """Rule 2: a JSON integer, an integral float or an all-digit string."""
    if isinstance(v, bool):
        raise Bad("integer is a boolean")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and _DIGITS.match(v.strip()):
        return int(v.strip())
    raise Bad(f"bad integer {v!r}")


def _parse(source: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Bad("not a JSON object")
    row: dict[str, Any] = {}
    for name, kind, required in FIELDS[source]:
        v = raw.get(name)
        if v is None or (isinstance(v, str) and v == "" and kind in ("str", "enum")):
            if required:
                raise Bad(f"missing {name}")
            row[name] = None
            continue
        if kind == "ts":
            row[name] = _ts(v)
        elif kind in ("long", "int", "nnlong", "nnint"):
            x = _int(v)
            if kind.startswith("nn") and x < 0:
                raise Bad(f"negative {name}")
            row[name] = x
        elif kind == "key":
            if isinstance(v, bool):
                raise Bad("key is a boolean")
            if isinstance(v, int):
                row[name] = str(v)
            elif isinstance(v, str):
                row[name] = v
            else:
                raise Bad(f"bad key {v!r}")
        elif kind == "str":
            if not isinstance(v, str):
                raise Bad(f"{name} is not a string")
            row[name] = v
        elif kind == "bool":
            if not isinstance(v, bool):
                raise Bad(f"{name} is not a boolean")
            row[name] = v
        elif kind == "enum":
            if not isinstance(v, str) or v.lower() not in ENUMS[name]:
                raise Bad(f"bad {name} {v!r}")
            row[name] = v.lower()
    if source == "sends" and row["status"] == "acked" and (
            row["partition"] is None or row["offset"] is None):
        raise Bad("acked send without partition/offset")
    if source == "broker":                      # rule 20
        if row["control"] is not None:
            if row["pid"] is None:
                raise Bad("control row without pid")
            row["key"] = row["seq"] = None
        elif row["transactional"] and row["pid"] is None:
            raise Bad("transactional row without pid")
    return row


def _read_rows(root: Path, source: str):
    """Yield (file, line/row number, raw object or a parse error)."""
    d = root / source
    for path in sorted(d.glob("part-*")):
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq
            for i, rec in enumerate(pq.read_table(path).to_pylist(), start=1):
                yield str(path), i, {k: v for k, v in rec.items() if v is not None}
        else:
            with path.open(encoding="utf-8") as fh:
                for i, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        yield str(path), i, json.loads(line)
                    except json.JSONDecodeError as exc:
                        yield str(path), i, Bad(f"not JSON: {exc}")


@dataclass
class Loaded:
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    read: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)


def load(root: Path, read_until: int) -> Loaded:
    out = Loaded()
    for source in FIELDS:
        rows, bad, seen, n = [], [], {}, 0
        names = [f[0] for f in FIELDS[source]]
        for file, line, raw in _read_rows(root, source):
            n += 1
            try:
                if isinstance(raw, Bad):
                    raise raw
                row = _parse(source, raw)
            except Bad as exc:
                bad.append((file, line, str(exc)))
                continue
            # rule 5: exact duplicates; in the dump a repeated coordinate
            sig = ((row["topic"], row["partition"], row["offset"]) if source == "broker"
                   else tuple(row[k] for k in names))
            if sig in seen:
                bad.append((file, line, f"duplicate of line {seen[sig][1]}"))
                continue
            seen[sig] = (file, line)
            t = row[TIME_COL[source]]
            if t is not None and t >= read_until:      # rule 6
                continue
            rows.append(row)
        out.rows[source] = rows
        out.read[source] = n
        out.quarantined[source] = bad
    return out


def _to_ms(x: str | datetime) -> int:
    return _ts(x if isinstance(x, datetime) else str(x))


def reference_audit(root: str | Path, start: str | datetime, end: str | datetime,
                    grace_minutes: float = 60, config: dict[str, Any] | str | Path | None = None
                    ) -> dict[str, Any]:
    root = Path(root)
    if config is None and (root / "config.yaml").exists():
        config = root / "config.yaml"
    if isinstance(config, str | Path):
        config = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    config = config or {}
    dense = bool(config.get("dense_seq", True))
    s_ms, e_ms = _to_ms(start), _to_ms(end)
    read_until = e_ms + int(timedelta(minutes=grace_minutes).total_seconds() * 1000)
    data = load(root, read_until)
    sends, broker, ledger, events = (data.rows[s] for s in ("sends", "broker", "ledger", "events"))

    # -- identities and judging (rule 8) ---------------------------------
    sends_of: dict[tuple, list[dict]] = defaultdict(list)
    for r in sends:
        sends_of[(r["topic"], r["key"], r["seq"])].append(r)
    open_txns = _transactions(broker)
    copies_of: dict[tuple, list[dict]] = defaultdict(list)
    aborted_of: dict[tuple, list[dict]] = defaultdict(list)   # rule 22: not copies
    at: dict[tuple, dict] = {}
    for r in broker:
        at[(r["topic"], r["partition"], r["offset"])] = r
        if r["seq"] is not None:
            ident = (r["topic"], r["key"], r["seq"])
            (aborted_of if r["_outcome"] == "aborted" else copies_of)[ident].append(r)
    judged: set[tuple] = set()
    judged_at: dict[tuple, int] = {}
    for ident in set(sends_of) | set(copies_of) | set(aborted_of):
        if ident in sends_of:
            first = min(r["send_ts"] for r in sends_of[ident])
        else:   # rule 25: aborted copies judge too
            tss = [r["timestamp"] for r in copies_of.get(ident, []) + aborted_of.get(ident, [])
                   if r["timestamp"] is not None]
            if not tss:
                continue
            first = min(tss)
        if s_ms <= first < e_ms:
            judged.add(ident)
            judged_at[ident] = first

    # -- dump ranges (rule 7) ---------------------------------------------
    rng: dict[tuple, list[int]] = {}
    for r in broker:
        k = (r["topic"], r["partition"])
        if k in rng:
            rng[k][0] = min(rng[k][0], r["offset"])
            rng[k][1] = max(rng[k][1], r["offset"] + 1)
        else:
            rng[k] = [r["offset"], r["offset"] + 1]
    for d in config.get("dump_ranges") or []:
        rng[(str(d["topic"]), int(d["partition"]))] = [int(d["log_start_offset"]),
                                                       int(d["end_offset"])]

    anomalies = dict.fromkeys(ANOMALY_NAMES + TXN_ANOMALY_NAMES, 0)
    dup_cause = {"producer_retry": 0, "idempotence_breach": 0, "unknown": 0}
    redel_cause = {"rebalance": 0, "other": 0}
    aborted_cause = dict.fromkeys(ABORTED_READ_CAUSES, 0)

    # -- write side ----------------------------------------------------------
    for ident in judged:
        ss, cc = sends_of.get(ident, []), copies_of.get(ident, [])
        acked = [r for r in ss if r["status"] == "acked"]
        if not cc:
            if not acked:
                anomalies["lost_unacked"] += 1
            elif any(_inside(rng, ident[0], r) for r in acked):
                anomalies["lost_acked"] += 1
        elif ss and all(r["status"] in ("failed", "timeout", "aborted") for r in ss):
            anomalies["written_despite_failure"] += 1
        if len(cc) >= 2:
            n = len(cc) - 1
            anomalies["dup_write"] += n
            if (len(ss) > 1 or any((r["attempt"] or 1) > 1 for r in ss)
                    or any(r["status"] in ("failed", "timeout", "aborted") for r in ss)):
                dup_cause["producer_retry"] += n
            elif any(r["idempotent"] for r in ss):
                dup_cause["idempotence_breach"] += n
            else:
                dup_cause["unknown"] += n
    if dense:
        carried: dict[tuple, set[int]] = defaultdict(set)
        # an aborted copy was sent: it carries its seq (§9 is silent; the generator keeps
        # identities seen only in aborted copies to one seq per key)
        for t, k, s in list(sends_of) + list(copies_of) + list(aborted_of):
            carried[(t, k)].add(s)
        jseqs: dict[tuple, list[int]] = defaultdict(list)
        for t, k, s in judged:
            jseqs[(t, k)].append(s)
        for tk, ss_ in jseqs.items():
            if len(ss_) >= 2:
                lo, hi = min(ss_), max(ss_)
                c = carried[tk]
                anomalies["seq_gap"] += sum(1 for v in range(lo + 1, hi) if v not in c)
    # write_reorder: first copy of each identity per (topic, partition, key)
    firsts: dict[tuple, dict[int, int]] = defaultdict(dict)   # (t,p,k) -> seq -> offset
    for (t, k, s), cc in copies_of.items():
        for r in cc:
            d = firsts[(t, r["partition"], k)]
            d[s] = min(d.get(s, r["offset"]), r["offset"])
    for (t, _p, k), d in firsts.items():
        best = None
        for _off, s in sorted((o, s) for s, o in d.items()):
            if best is not None and s < best and (t, k, s) in judged:
                anomalies["write_reorder"] += 1
            best = s if best is None else max(best, s)
    parts_of_key: dict[tuple, set[int]] = defaultdict(set)
    for r in broker:
        if r["control"] is None and r["_outcome"] != "aborted":
            parts_of_key[(r["topic"], r["key"])].add(r["partition"])
    # zombie_write (rule 24): below the epoch of an earlier row of the same pid
    by_pid: dict[tuple, list[dict]] = defaultdict(list)
    for r in broker:
        if r["pid"] is not None and r["producer_epoch"] is not None:
            by_pid[(r["topic"], r["partition"], r["pid"])].append(r)
    for rs in by_pid.values():
        best = None
        for r in sorted(rs, key=lambda r: r["offset"]):
            if (r["transactional"] and r["control"] is None and best is not None
                    and r["producer_epoch"] < best and r["seq"] is not None
                    and (r["topic"], r["key"], r["seq"]) in judged):
                anomalies["zombie_write"] += 1
            best = r["producer_epoch"] if best is None else max(best, r["producer_epoch"])
    # hanging_transaction (rules 24, 25)
    timeout = int(config.get("transaction_timeout_ms", 60_000))
    last_ts: dict[tuple, int] = {}
    for r in broker:
        if r["timestamp"] is not None:
            k = (r["topic"], r["partition"])
            last_ts[k] = max(last_ts.get(k, r["timestamp"]), r["timestamp"])
    for t, p, first in open_txns:
        ft = first["timestamp"]
        if ft is not None and s_ms <= ft < e_ms and last_ts[(t, p)] - ft > timeout:
            anomalies["hanging_transaction"] += 1
    anomalies["key_partition_split"] = sum(1 for v in parts_of_key.values() if len(v) > 1)

    # -- groups (rule 9) -----------------------------------------------------
    cfg_groups = config.get("groups") or {}
    if cfg_groups:
        gids = list(cfg_groups)
    else:
        gids = sorted({r["group_id"] for r in ledger} | {r["group_id"] for r in events})
    topics_of = {g: set((cfg_groups.get(g) or {}).get("topics") or []) for g in gids}
    for r in ledger:
        if r["group_id"] in topics_of:
            topics_of[r["group_id"]].add(r["topic"])

    # ledger resolution (rule 10)
    for r in ledger:
        b = at.get((r["topic"], r["partition"], r["offset"]))
        if r["seq"] is None:
            r["_id"] = None if b is None or b["seq"] is None else (r["topic"], b["key"], b["seq"])
        else:
            r["_id"] = (r["topic"], r["key"], r["seq"])
        # rule 22: a row at an aborted offset counts for aborted_read, went past and overlaps
        r["_aborted"] = b is not None and b["_outcome"] == "aborted"
        r["_aborted_id"] = r["_id"] if r["_aborted"] else None
        if r["_aborted"]:
            r["_id"] = None
    led_by_g: dict[str, list[dict]] = defaultdict(list)
    for r in ledger:
        led_by_g[r["group_id"]].append(r)
    ev_by_g: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        ev_by_g[e["group_id"]].append(e)

    groups_out = {}
    for g in gids:
        topics = topics_of[g]
        rows = [r for r in led_by_g.get(g, []) if r["topic"] in topics]
        evs = ev_by_g.get(g, [])
        succ: dict[tuple, list[dict]] = defaultdict(list)
        gcfg = cfg_groups.get(g) or {}
        for r in rows:
            if r["outcome"] == "success" and r["_id"] is not None:
                succ[r["_id"]].append(r)
            if r["outcome"] == "success" and r["_aborted"] and r["_aborted_id"] in judged:
                anomalies["aborted_read"] += 1
                aborted_cause[r["isolation"] or gcfg.get("isolation.level") or "unknown"] += 1
        sla = gcfg.get("latency_sla_ms", config.get("latency_sla_ms"))
        max_attempted: dict[tuple, int] = {}
        skipped_at: set[tuple] = set()
        for r in rows:
            k = (r["topic"], r["partition"])
            max_attempted[k] = max(max_attempted.get(k, -1), r["offset"])
            if r["outcome"] == "skipped":
                skipped_at.add((r["topic"], r["partition"], r["offset"]))
        max_commit: dict[tuple, int] = {}
        for e in evs:
            if e["event"] == "commit" and e["topic"] is not None and e["partition"] is not None \
                    and e["offset"] is not None:
                k = (e["topic"], e["partition"])
                max_commit[k] = max(max_commit.get(k, -1), e["offset"])

        def went_past(t: str, p: int, o: int, max_attempted=max_attempted,
                      max_commit=max_commit, skipped_at=skipped_at) -> bool:
            """Rule 12: attempted a higher offset, committed beyond o, or skipped o."""
            return (max_attempted.get((t, p), -1) > o or max_commit.get((t, p), -1) > o
                    or (t, p, o) in skipped_at)

        states = dict.fromkeys(STATES, 0)
        gj = 0
        for ident in judged:
            if ident[0] not in topics:
                continue
            gj += 1
            k = len(succ.get(ident, []))
            cc = copies_of.get(ident, [])
            if k and sla is not None and \
                    min(r["started_ts"] for r in succ[ident]) - judged_at[ident] > int(sla):
                anomalies["late_delivery"] += 1
            if k >= 2:
                st = "delivered_duplicate"
                anomalies["dup_effect"] += k - 1
            elif k == 1:
                st = "delivered_once"
            elif cc:
                st = "skipped" if all(went_past(r["topic"], r["partition"], r["offset"])
                                      for r in cc) else "pending"
                if st == "pending":
                    anomalies["pending"] += 1   # the anomaly: "in the broker", not yet processed
            else:
                acked = [r for r in sends_of.get(ident, []) if r["status"] == "acked"]
                if not acked:
                    st = "lost_unacked"
                elif any(_inside(rng, ident[0], r) for r in acked):
                    st = "lost_acked"
                elif any(_below(rng, ident[0], r) for r in acked):
                    st = "expired_unconsumed"
                else:
                    st = "pending"
            states[st] += 1
        # a judged message with no copy whose acked offset is at/after the dump's end is in
        # state pending ("not provably lost") but is not the pending anomaly ("in the broker")
        for name in ("skipped", "expired_unconsumed"):
            anomalies[name] += states[name]
        groups_out[g] = {"judged": gj, "states": states}

        # redelivery (rule 15) and retry_after_failure (rule 18), per record
        per_rec: dict[tuple, list[dict]] = defaultdict(list)
        for r in rows:
            if not r["_aborted"]:
                per_rec[(r["topic"], r["partition"], r["offset"])].append(r)
        reb = [e for e in evs if e["event"] in REBALANCE_EVENTS]
        for (t, p, _o), rs in per_rec.items():
            rs.sort(key=lambda r: (r["started_ts"], _f(r)))
            ident = next((r["_id"] for r in rs if r["_id"] is not None), None)
            if ident not in judged:
                continue
            for a, _b in zip(rs, rs[1:], strict=False):
                if a["outcome"] == "failure":
                    anomalies["retry_after_failure"] += 1
            ok = [r for r in rs if r["outcome"] == "success"]
            for a, b in zip(ok, ok[1:], strict=False):
                anomalies["redelivery"] += 1
                cause = "other"
                if a["member_id"] != b["member_id"]:
                    cause = "rebalance"
                else:
                    for e in reb:
                        applies = e["topic"] is None or e["partition"] is None or (
                            e["topic"] == t and e["partition"] == p)
                        if applies and a["started_ts"] <= e["ts"] <= b["started_ts"]:
                            cause = "rebalance"
                            break
                redel_cause[cause] += 1

        # process_reorder (rule 16): first successful processing per identity
        by_key: dict[tuple, list[tuple]] = defaultdict(list)
        for ident, rs in succ.items():
            r = min(rs, key=lambda r: (r["started_ts"], r["offset"]))
            by_key[(ident[0], ident[1])].append((r["started_ts"], r["offset"], r["partition"],
                                                 ident))
        for lst in by_key.values():
            best: dict[int, int] = {}
            for _, off, p, ident in sorted(lst, key=lambda x: (x[0], x[1])):
                if p in best and off < best[p] and ident in judged:
                    anomalies["process_reorder"] += 1
                best[p] = max(best.get(p, off), off)

        # concurrent_processing (rule 17)
        per_part: dict[tuple, list[dict]] = defaultdict(list)
        for r in rows:
            per_part[(r["topic"], r["partition"])].append(r)
        for rs in per_part.values():
            rs.sort(key=lambda r: r["started_ts"])
            hit = [False] * len(rs)
            for i, a in enumerate(rs):
                fa = _f(a)
                for j in range(i + 1, len(rs)):
                    b = rs[j]
                    if b["started_ts"] >= fa:
                        break
                    if a["member_id"] != b["member_id"] and a["started_ts"] < _f(b) \
                            and b["started_ts"] < fa:
                        hit[i] = hit[j] = True
            anomalies["concurrent_processing"] += sum(
                1 for h, r in zip(hit, rs, strict=True) if h and r["_id"] in judged)

    return {
        "judged": len(judged),
        "anomalies": anomalies,
        "by_cause": {"dup_write": dup_cause, "redelivery": redel_cause,
                     "aborted_read": aborted_cause},
        "groups": groups_out,
        "rows_read": data.read,
        "quarantined": {s: len(v) for s, v in data.quarantined.items()},
    }


def _f(r: dict) -> int:
    """An attempt without finished_ts has zero length (rule 17)."""
    return r["finished_ts"] if r["finished_ts"] is not None else r["started_ts"]


def _inside(rng: dict, topic: str, send: dict) -> bool:
    k = (topic, send["partition"])
    return k in rng and rng[k][0] <= send["offset"] < rng[k][1]


def _below(rng: dict, topic: str, send: dict) -> bool:
    k = (topic, send["partition"])
    return k in rng and send["offset"] < rng[k][0]


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """The part of a result (or of a truth.json) that truth.json states; the §9 anomalies
    and causes when any is non-zero (the truth of a scenario without transactions leaves them
    to the engine's catalogue)."""
    out = {k: result[k] for k in ("judged", "anomalies", "by_cause", "groups")}
    anomalies, by_cause = dict(out["anomalies"]), dict(out["by_cause"])
    if not any(anomalies.get(n) for n in TXN_ANOMALY_NAMES) and \
            not any((by_cause.get("aborted_read") or {}).values()):
        for n in TXN_ANOMALY_NAMES:
            anomalies.pop(n, None)
        by_cause.pop("aborted_read", None)
    return {**out, "anomalies": anomalies, "by_cause": by_cause}


def _transactions(broker: list[dict]) -> list[tuple[str, int, dict]]:
    """Rule 21: each row's ``_outcome``; returns every open transaction's first row."""
    by_pid: dict[tuple, list[dict]] = defaultdict(list)
    for r in broker:
        r["_outcome"] = "committed"
        if r["pid"] is not None and (r["transactional"] or r["control"] is not None):
            by_pid[(r["topic"], r["partition"], r["pid"])].append(r)
    out = []
    for (t, p, _pid), rs in by_pid.items():
        waiting: list[dict] = []
        for r in sorted(rs, key=lambda r: r["offset"]):
            if r["control"] is not None:
                for d in waiting:
                    d["_outcome"] = "committed" if r["control"] == "commit" else "aborted"
                waiting = []
            elif r["transactional"]:
                waiting.append(r)
        for d in waiting:
            d["_outcome"] = "open"
        if waiting:
            out.append((t, p, waiting[0]))
    return out


if __name__ == "__main__":   # python tests/reference_audit.py OUT_DIR START END
    import sys
    res = reference_audit(sys.argv[1], sys.argv[2], sys.argv[3])
    print(json.dumps(res, indent=2))
