"""The run's verdict (pass / warn / fail) from the report's figures and the config's thresholds.

Rules, in this order (the worst outcome wins):

* ``balance_ok`` false (overall or for a group) → fail: the states do not add up.
* The results validation (GX's results suite, quality/results.py) failed → fail (named as a
  reason when no rule above failed: the suite re-checks those rules too).
* A critical anomaly with a count > 0 → fail, unless ``allow_critical`` is set.
* Thresholds ``{"warn": n, "fail": n}`` trigger when a count is **greater** than n.
  ``topic_thresholds[topic][anomaly]`` judges that topic's units
  (``anomalies.<name>.by_topic.<topic>``); ``thresholds[anomaly]`` judges the units of the
  topics that have no topic threshold of their own for that anomaly (with no topic thresholds
  that is the whole count). So a topic threshold can relax or tighten one topic without the
  global rule counting the same units again.
* Units with no threshold: critical (when allowed) and high → warn; medium and info → pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from delivery_audit.anomalies import ANOMALY_NAMES, BY_NAME
from delivery_audit.config import AuditConfig

_LEVELS = ("warn", "fail")
_RANK = {"pass": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class ThresholdCheck:
    """One count judged against one threshold (or the default rule when both are None)."""

    anomaly: str
    scope: str  # "*" for the global threshold / default rule, else the topic
    count: int
    warn: int | None
    fail: int | None

    @property
    def explicit(self) -> bool:
        return self.warn is not None or self.fail is not None


def validate_thresholds(config: AuditConfig) -> None:
    """Raise ValueError for a threshold naming an unknown anomaly or level, or a bad limit."""
    problems: list[str] = []

    def check(where: str, spec: Any) -> None:
        if not isinstance(spec, dict):
            problems.append(f"{where}: expected a mapping of warn/fail limits")
            return
        for level, limit in spec.items():
            if level not in _LEVELS:
                problems.append(f"{where}: unknown level {level!r} (use warn or fail)")
            elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                problems.append(f"{where}.{level}: limit must be a non-negative integer")

    for name, spec in (config.thresholds or {}).items():
        if name not in BY_NAME:
            problems.append(f"thresholds.{name}: unknown anomaly")
        else:
            check(f"thresholds.{name}", spec)
    for topic, per in (config.topic_thresholds or {}).items():
        if not isinstance(per, dict):
            problems.append(f"topic_thresholds.{topic}: expected a mapping of anomalies")
            continue
        for name, spec in per.items():
            if name not in BY_NAME:
                problems.append(f"topic_thresholds.{topic}.{name}: unknown anomaly")
            else:
                check(f"topic_thresholds.{topic}.{name}", spec)
    if problems:
        raise ValueError("invalid thresholds: " + "; ".join(problems))


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def threshold_checks(report: dict, config: AuditConfig) -> Iterator[ThresholdCheck]:
    """Every (anomaly, scope) count that the thresholds (or the default rule) judge."""
    anomalies = report.get("anomalies") or {}
    topic_thresholds = config.topic_thresholds or {}
    for name in _anomaly_order(anomalies):
        entry = anomalies.get(name) or {}
        total = _count(entry.get("count"))
        by_topic = entry.get("by_topic") or {}
        covered = 0
        for topic in sorted(topic_thresholds):
            spec = (topic_thresholds.get(topic) or {}).get(name)
            if not spec:
                continue
            n = _count(by_topic.get(topic))
            covered += n
            yield ThresholdCheck(name, topic, n, spec.get("warn"), spec.get("fail"))
        spec = (config.thresholds or {}).get(name) or {}
        yield ThresholdCheck(name, "*", max(total - covered, 0), spec.get("warn"),
                             spec.get("fail"))


def _anomaly_order(anomalies: dict) -> list[str]:
    known = [n for n in ANOMALY_NAMES if n in anomalies]
    return known + sorted(n for n in anomalies if n not in BY_NAME)


def _severity(report: dict, name: str) -> str:
    entry = (report.get("anomalies") or {}).get(name) or {}
    if entry.get("severity"):
        return str(entry["severity"])
    spec = BY_NAME.get(name)
    return spec.severity if spec else "info"


def decide(report: dict, config: AuditConfig,
           results_validation: dict | None = None) -> dict:
    """{"verdict": "pass"|"warn"|"fail", "reasons": [...]} (fail reasons first): the one
    place the verdict is decided. ``results_validation``: the results suite's outcome
    (``{"success": …, "failed": […]}``; default: the report's own ``results_validation``);
    a failed one fails the run, whatever the figures say (its reason is given when nothing
    else failed)."""
    validate_thresholds(config)
    found: list[tuple[str, str]] = []  # (level, reason)

    if report.get("balance_ok") is False:
        found.append(("fail", "delivery states do not add up to the judged messages"))
    for gid, group in sorted((report.get("groups") or {}).items()):
        if isinstance(group, dict) and group.get("balance_ok") is False:
            states = sum(_count(v) for v in (group.get("states") or {}).values())
            found.append(("fail", f"group {gid}: delivery states sum to {states}, "
                                  f"judged {_count(group.get('judged'))}"))

    anomalies = report.get("anomalies") or {}
    for name in _anomaly_order(anomalies):
        count = _count((anomalies.get(name) or {}).get("count"))
        if _severity(report, name) == "critical" and count > 0 and not config.allow_critical:
            found.append(("fail", f"{name} = {count} (critical; allow_critical is off)"))

    for check in threshold_checks(report, config):
        where = check.anomaly if check.scope == "*" else f"{check.anomaly} on topic {check.scope}"
        if check.scope == "*" and check.count != _count((anomalies.get(check.anomaly) or {})
                                                        .get("count")):
            where += " (topics without their own threshold)"
        if check.explicit:
            if check.fail is not None and check.count > check.fail:
                found.append(("fail", f"{where} = {check.count} > fail threshold {check.fail}"))
            elif check.warn is not None and check.count > check.warn:
                found.append(("warn", f"{where} = {check.count} > warn threshold {check.warn}"))
            continue
        severity = _severity(report, check.anomaly)
        if check.count > 0 and severity in ("critical", "high"):
            if severity == "critical" and not config.allow_critical:
                continue  # already a fail above
            found.append(("warn", f"{where} = {check.count} ({severity})"))

    results = report.get("results_validation") if results_validation is None \
        else results_validation
    # the results suite also fails on what failed above (critical counts, fail thresholds,
    # broken balance): its failure is a reason of its own only when nothing else failed
    if isinstance(results, dict) and results.get("success") is False \
            and not any(level == "fail" for level, _ in found):
        found.append(("fail", "results validation failed"))

    verdict = "pass"
    for level, _ in found:
        if _RANK[level] > _RANK[verdict]:
            verdict = level
    reasons = [r for lvl, r in found if lvl == "fail"] + [r for lvl, r in found if lvl == "warn"]
    return {"verdict": verdict, "reasons": reasons}
