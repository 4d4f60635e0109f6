"""The input suites: each source's metric row and per-topic volumes, validated by GX."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from delivery_audit.core.timefmt import iso_z_ms
from delivery_audit.core.window import AuditWindow

from .metrics import NULL_COUNTED, TIMESTAMP_COLUMNS, metric_names
from .runner import validate_tables
from .suites import INPUT_SUITES, load_suite_dict, suite_parameters

log = logging.getLogger("delivery_audit.quality")

VOLUME_SOURCES: tuple[str, ...] = ("sends", "broker", "ledger")


def _share(part: Any, whole: Any) -> float | None:
    """part / whole, or None when either is unknown or whole is 0."""
    if part is None or not whole:
        return None
    return float(part) / float(whole)


def _iso_ms(ms: Any) -> str | None:
    if ms is None:
        return None
    return iso_z_ms(ms)


def source_facts(source: str, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The one-row table a source's suite checks: the metric row, the ingestion figures and
    the shares derived from them (None where the figures are unknown; GX skips nulls)."""
    m = dict(metrics)
    rows = m.get("rows") if m.get("rows") is not None else m.get("rows_valid")
    facts: dict[str, Any] = {"source": source}
    facts.update({n: m.get(n) for n in metric_names(source) if not n.endswith("_ms")})
    facts["rows_read"] = m.get("rows_read")
    facts["rows_valid"] = m.get("rows_valid", rows)
    facts["rows_quarantined"] = m.get("rows_quarantined")
    facts["duplicates_quarantined"] = m.get("duplicates_quarantined")
    facts["quarantined_share"] = _share(m.get("rows_quarantined"), m.get("rows_read"))
    facts["duplicate_share"] = _share(m.get("duplicates_quarantined"), m.get("rows_read"))
    for c in NULL_COUNTED.get(source, ()):
        facts[f"{c}_null_share"] = _share(m.get(f"{c}_nulls"), rows)
    for c in TIMESTAMP_COLUMNS[source]:
        facts[f"{c}_earliest"] = _iso_ms(m.get(f"{c}_earliest_ms"))
        facts[f"{c}_latest"] = _iso_ms(m.get(f"{c}_latest_ms"))
    return facts


def expected_topics(config: Any, topics: Iterable[str] | None = None) -> list[str]:
    """Topics the config names for its groups (``groups.<id>.topics``), within ``topics``
    (the audited topics) when given."""
    named = {t for g in (getattr(config, "groups", None) or ()) for t in g.topics}
    if topics:
        named &= set(topics)
    return sorted(named)


def topic_facts(source: str, metrics: Mapping[str, Any],
                topics: list[str]) -> list[dict[str, Any]]:
    """One row per expected topic: its valid rows in this source (None if by_topic is
    unknown: nothing to judge). Only sends, broker and ledger are judged per topic."""
    if source not in VOLUME_SOURCES:
        return []
    by_topic = metrics.get("by_topic")
    return [{"topic": t, "topic_rows_valid":
             int(by_topic.get(t) or 0) if isinstance(by_topic, Mapping) else None}
            for t in topics]


def validate_inputs(metrics: Mapping[str, Any], window: AuditWindow, config: Any = None,
                    sources: tuple[str, ...] = INPUT_SUITES, *,
                    topics: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run each input source's suite on its metrics (no Spark job).

    ``metrics[source]``: the collected ``metric_aggregates`` row plus ``rows_read``,
    ``rows_valid``, ``rows_quarantined``, ``duplicates_quarantined`` and ``by_topic``
    ({topic: valid rows}); a figure left out leaves the expectations on it unjudged (plain
    frames: ``input_metrics`` computes their metrics in one Spark action). ``topics``: the audited
    topics, if the audit is restricted to some (expected topics outside them are not judged).

    Returns {source: {"success", "failed": [summaries], "statistics", "seconds",
    "parameters"}}; a source absent from metrics is reported as skipped (success true,
    "skipped": reason).
    """
    params = suite_parameters(window, config)
    wanted = expected_topics(config, topics)
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        m = metrics.get(source)
        if m is None:
            out[source] = {"success": True, "failed": [], "statistics": {}, "seconds": 0.0,
                           "skipped": "no metrics for this source"}
            continue
        tables = {"metrics": ([source_facts(source, m)], ["source"]),
                  "by_topic": (topic_facts(source, m, wanted), ["topic"])}
        out[source] = validate_tables(source, load_suite_dict(source, config), tables, params)
        log.info("GX suite %s: success=%s in %.3fs", source, out[source]["success"],
                 out[source]["seconds"])
    return out
