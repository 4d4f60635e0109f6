"""report.json's figures: the small tables detection collects (anomaly units, states, judged
identities) and the sections built from them; report/assemble.py puts the report together
(schema documented in docs/report-schema.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..anomalies import ABORTED_READ_CAUSES, ANOMALIES, DUP_WRITE_CAUSES, REDELIVERY_CAUSES, STATES
from ..core.timefmt import iso_z_ms

SCHEMA_VERSION = "1.0"


def sum_units() -> Column:
    """The sum of ``units`` as DECIMAL(38,0): one seq_gap row may hold up to 2^63 − 1
    units, so a long sum of several could overflow."""
    return F.sum(F.col("units").cast("decimal(38,0)"))


def anomaly_count_table(anomalies: DataFrame) -> DataFrame:
    """Units per (anomaly, group, topic, cause): a small table."""
    return anomalies.groupBy("anomaly", "group_id", "topic", "cause").agg(
        sum_units().alias("units"))


def state_count_table(states: DataFrame) -> DataFrame:
    """Delivery states per (group, topic, state)."""
    return states.groupBy("group_id", "topic", "state").agg(F.count(F.lit(1)).alias("n"))


def judged_count_table(identities: DataFrame) -> DataFrame:
    """Judged identities per topic."""
    return identities.filter(F.col("judged")).groupBy("topic").agg(
        F.count(F.lit(1)).alias("n"))


def state_rows(states: list, judged_by_topic: dict[str, int],
               topics_of: dict[str, Any]) -> list[dict[str, Any]]:
    """States per (group, topic, state) from detection's ``states`` rows (every state but
    delivered_once, which is the rest of the topic's judged identities, added here)."""
    rows = [dict(r) for r in states]
    others: dict[tuple[str, str], int] = {}
    for r in rows:
        others[(r["group_id"], r["topic"])] = others.get((r["group_id"], r["topic"]), 0) \
            + int(r["n"])
    for g, topics in topics_of.items():
        for t in topics:
            once = judged_by_topic.get(t, 0) - others.get((g, t), 0)
            if once:
                rows.append({"group_id": g, "topic": t, "state": "delivered_once", "n": once})
    return rows


def build_anomalies(counts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in ANOMALIES:
        entry: dict[str, Any] = {
            "count": 0, "severity": spec.severity, "unit": spec.unit,
            "per_group": spec.per_group, "by_topic": {},
        }
        if spec.per_group:
            entry["by_group"] = {}
        if spec.name == "dup_write":
            entry["by_cause"] = dict.fromkeys(DUP_WRITE_CAUSES, 0)
        if spec.name == "redelivery":
            entry["by_cause"] = dict.fromkeys(REDELIVERY_CAUSES, 0)
        if spec.name == "aborted_read":
            entry["by_cause"] = dict.fromkeys(ABORTED_READ_CAUSES, 0)
        out[spec.name] = entry
    for row in counts:
        entry = out[row["anomaly"]]
        units = int(row["units"])
        entry["count"] += units
        if row["topic"] is not None:
            entry["by_topic"][row["topic"]] = entry["by_topic"].get(row["topic"], 0) + units
        if "by_group" in entry and row["group_id"] is not None:
            g = row["group_id"]
            entry["by_group"][g] = entry["by_group"].get(g, 0) + units
        if "by_cause" in entry and row["cause"] is not None:
            entry["by_cause"][row["cause"]] = entry["by_cause"].get(row["cause"], 0) + units
    return out


def build_groups(group_ids: list[str], group_topics: dict[str, list[str]],
                 judged_by_topic: dict[str, int], states: list[dict[str, Any]],
                 anomalies: dict[str, Any]) -> dict[str, Any]:
    per_group: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STATES, 0))
    per_group_topic: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for row in states:
        per_group[row["group_id"]][row["state"]] += int(row["n"])
        by_topic = per_group_topic[row["group_id"]].setdefault(row["topic"],
                                                               dict.fromkeys(STATES, 0))
        by_topic[row["state"]] += int(row["n"])
    groups: dict[str, Any] = {}
    for g in group_ids:
        topics = sorted(group_topics.get(g, []))
        judged = sum(judged_by_topic.get(t, 0) for t in topics)
        st = dict(per_group[g])
        groups[g] = {
            "topics": topics,
            "judged": judged,
            "states": st,
            "states_by_topic": per_group_topic.get(g, {}),
            "balance_ok": sum(st.values()) == judged,
            "anomalies": {name: a["by_group"].get(g, 0) for name, a in anomalies.items()
                          if "by_group" in a},
        }
    return groups


MAX_OPEN_LISTED = 100  # open transactions listed per partition (the rest counted)


def _iso_ms(ms: int | None) -> str | None:
    return None if ms is None else iso_z_ms(ms)


def build_transactions(rows: list[dict[str, Any]], timeout_ms: int,
                       window_ms: tuple[int, int]) -> list[dict[str, Any]]:
    """report.json's ``transactions``: per (topic, partition) with transactional or control
    rows, transactions and records per outcome, the last stable offset the open ones pin
    and the oldest one's age at the partition's last record timestamp (contract §9).
    ``rows``: detection's ``__txn`` facts; ``window_ms``: [start, end) in epoch ms (a
    hanging transaction is judged by its first record's timestamp)."""
    out = []
    for r in sorted(rows, key=lambda r: (r["topic"], r["partition"])):
        opened = []
        for o in r.get("open") or []:
            age, first = o.get("age_ms"), o.get("first_ms")
            hanging = (age is not None and first is not None and age > timeout_ms
                       and window_ms[0] <= first < window_ms[1])
            opened.append({"pid": o["pid"], "producer_epoch": o.get("epoch"),
                           "first_offset": o["first_offset"], "last_offset": o["last_offset"],
                           "records": o["records"], "first_ts": _iso_ms(first),
                           "age_ms": age, "last_stable_offset": o["first_offset"],
                           "hanging": hanging})
        ages = [o["age_ms"] for o in opened if o["age_ms"] is not None]
        out.append({
            "topic": r["topic"], "partition": r["partition"],
            **{k: {"transactions": int(r.get(f"{k}_txns") or 0),
                   "records": int(r.get(f"{k}_records") or 0)}
               for k in ("committed", "aborted", "open")},
            "last_record_ts": _iso_ms(r.get("last_ms")),
            "last_stable_offset": min((o["first_offset"] for o in opened), default=None),
            "oldest_open_age_ms": max(ages, default=None),
            "hanging_transactions": sum(1 for o in opened if o["hanging"]),
            "open_transactions": opened[:MAX_OPEN_LISTED],
        })
    return out


def build_latency_sla(group_ids: list[str], sla_ms: dict[str, int | None],
                      anomalies: dict[str, Any]) -> dict[str, Any]:
    """report.json's ``latency_sla``: per judged group its ``sla_ms`` (null: none
    configured, late_delivery not judged) and ``late`` (late_delivery's count)."""
    late = (anomalies.get("late_delivery") or {}).get("by_group") or {}
    return {g: {"sla_ms": sla_ms.get(g), "late": int(late.get(g, 0))} for g in group_ids}
