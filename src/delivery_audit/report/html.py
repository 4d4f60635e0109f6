"""The self-contained HTML report: one file, inline CSS, inline SVG charts drawn server-side.

No JavaScript and nothing fetched at view time. The template is rendered with autoescape on,
so every value from the data (keys, member ids, topics, error texts) is HTML-escaped; the
chart geometry is computed as plain numbers (html_charts.py) and the template writes the SVG
elements. This module renders the page: it gathers the view models of html_charts.py,
html_tables.py and html_transactions.py into the template (templates/report.html.j2).
"""

from __future__ import annotations

from importlib import resources

from jinja2 import Environment, FunctionLoader, StrictUndefined

from ..anomalies import SEVERITIES, STATES
from .html_charts import heatmap_chart, latency_bars, offset_strips, state_bars, timeline_chart
from .html_style import SEVERITY_COLOURS, STATE_COLOURS, ms_text, num_text
from .html_tables import (
    anomaly_rows,
    group_anomalies,
    group_rows,
    rebalance_rows,
    remediation_section,
    topic_matrix,
)
from .html_transactions import latency_sla_rows, transaction_rows, txn_evidence_tables

TEMPLATE = "report.html.j2"


def _load_template(name: str) -> str:
    return resources.files("delivery_audit").joinpath("templates", name).read_text("utf-8")


def _env() -> Environment:
    env = Environment(loader=FunctionLoader(_load_template), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = num_text
    env.filters["ms"] = ms_text
    return env


def render_html(report: dict, insights: dict | None = None) -> str:
    """The report as one self-contained HTML document."""
    insights = insights or {}
    verdict = report.get("verdict") or {}
    if not isinstance(verdict, dict):
        verdict = {"verdict": str(verdict), "reasons": []}
    rows = anomaly_rows(report)
    groups = group_rows(report)
    narrative = report.get("narrative") if isinstance(report.get("narrative"), list) else None
    txn_evidence = txn_evidence_tables(insights)
    ctx = {
        "report": report,
        "run": report.get("run") or {},
        "window": report.get("window") or {},
        "verdict": verdict.get("verdict") or "unknown",
        "reasons": verdict.get("reasons") or [],
        "inputs": report.get("inputs") or {},
        "anomaly_rows": rows,
        "severities": SEVERITIES,
        "severity_colours": SEVERITY_COLOURS,
        "state_names": STATES,
        "state_colours": STATE_COLOURS,
        "topic_matrix": topic_matrix(report, rows),
        "groups": groups,
        "group_anomalies": group_anomalies(groups),
        "state_bars": state_bars(report),
        "rebalances": rebalance_rows(report),
        "timeline": timeline_chart(insights, narrative=narrative),
        "offsets": offset_strips(insights),
        "remediation": remediation_section(report),
        "heatmap": heatmap_chart(insights),
        "latency": latency_bars(insights),
        "latency_by_group": (insights.get("latency") or {}).get("end_to_end_ms_by_group") or {},
        "transactions": transaction_rows(report),
        "latency_sla": latency_sla_rows(report, insights),
        "txn_evidence": txn_evidence,
        # the Transactions section: the report has transactions, or transaction anomalies
        "txn_section": bool(report.get("transactions")) or any(
            a["name"] != "late_delivery" for a in txn_evidence),
        "top_keys": insights.get("top_keys") or [],
        "outputs": report.get("outputs") or {},
        "judged": report.get("judged"),
        "balance_ok": report.get("balance_ok"),
    }
    return _env().get_template(TEMPLATE).render(**ctx)
