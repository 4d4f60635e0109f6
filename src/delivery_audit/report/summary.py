"""report.json: the audit's machine-readable result (schema documented in docs/report-schema.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..anomalies import ANOMALIES, DUP_WRITE_CAUSES, REDELIVERY_CAUSES, STATES

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


def build_report(*, window: dict[str, Any], run: dict[str, Any], inputs: dict[str, Any],
                 judged_by_topic: dict[str, int], anomaly_rows: list[dict[str, Any]],
                 state_rows: list[dict[str, Any]], group_ids: list[str],
                 group_topics: dict[str, list[str]], config_summary: dict[str, Any]
                 ) -> dict[str, Any]:
    anomalies = build_anomalies(anomaly_rows)
    groups = build_groups(group_ids, group_topics, judged_by_topic, state_rows, anomalies)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "window": window,
        "config": config_summary,
        "inputs": inputs,
        "judged": sum(judged_by_topic.values()),
        "judged_by_topic": dict(sorted(judged_by_topic.items())),
        "anomalies": anomalies,
        "groups": groups,
        "balance_ok": all(g["balance_ok"] for g in groups.values()),
    }
