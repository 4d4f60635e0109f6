"""Lineage of the audit (reconcile) task as OpenLineage datasets, for the OpenLineage
provider (apache-airflow-providers-openlineage), which calls the operator's
``get_openlineage_facets_on_start`` / ``_on_complete`` (AuditSparkSubmitOperator). Off unless
configured, as the provider is: without an ``[openlineage]`` transport nothing is emitted.

* inputs: the run's sources (sends, broker, ledger and, when given, events), each its
  pattern as the plan has it: ``s3://bucket/key…`` → namespace ``s3://bucket``, name the key
  pattern; a local path → namespace ``file``, name the absolute path (OpenLineage's naming);
* outputs: the window's report folder, and its anomaly table (``<report folder>/anomalies``,
  Parquet);
* on complete, read from the published ``report.json``: a ``dataQualityAssertions`` facet on
  both outputs (``verdict == pass``, and ``<anomaly> == 0`` for every anomaly type, its count
  as the actual value) and an ``outputStatistics`` facet on the anomaly table (the anomalies'
  total as its row count).

The provider and openlineage-python are imported only here, when the listener asks.
"""

from __future__ import annotations

import json
from typing import Any

from delivery_audit_airflow import uris

SOURCES = ("sends", "broker", "ledger", "events")


def dataset_name(uri: str) -> tuple[str, str]:
    """(namespace, name) of a location by OpenLineage's naming: S3 ``s3://bucket`` + key;
    a local path ``file`` + the absolute path."""
    if uri.startswith(("s3://", "s3a://", "s3n://")):
        bucket, _, key = uri.split("://", 1)[1].partition("/")
        return f"s3://{bucket}", key or "/"
    return "file", str(uris.local_path(uri).absolute())


def inputs_of(plan: dict[str, Any]) -> list[str]:
    return [plan["sources"][s] for s in SOURCES if (plan.get("sources") or {}).get(s)]


def outputs_of(plan: dict[str, Any]) -> list[str]:
    report_dir = plan["report_dir"].rstrip("/")
    return [report_dir, f"{report_dir}/anomalies"]


def quality_assertions(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict and every anomaly count as data-quality assertions."""
    verdict = (report.get("verdict") or {}).get("verdict", "unknown")
    rows = [{"assertion": "verdict == pass", "success": verdict == "pass", "name": "verdict",
             "expected": "pass", "actual": str(verdict)}]
    for name, entry in sorted((report.get("anomalies") or {}).items()):
        count = int((entry or {}).get("count") or 0)
        rows.append({"assertion": f"{name} == 0", "success": count == 0, "name": name,
                     "severity": (entry or {}).get("severity"), "expected": "0",
                     "actual": str(count)})
    return rows


def operator_lineage(plan: dict[str, Any] | None, report: dict[str, Any] | None = None):
    """The provider's OperatorLineage for the plan (None: no plan, no lineage); with the
    published ``report``, the data-quality facets."""
    from airflow.providers.common.compat.openlineage.facet import (
        InputDataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage
    from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq

    if not plan:
        return OperatorLineage()
    inputs = [InputDataset(*dataset_name(u)) for u in inputs_of(plan)]
    facets: dict[str, Any] = {}
    output_facets: dict[str, Any] = {}
    if report is not None:
        facets["dataQualityAssertions"] = dq.DataQualityAssertionsDatasetFacet(
            assertions=[dq.Assertion(**{k: v for k, v in a.items() if v is not None})
                        for a in quality_assertions(report)])
        total = sum(int((e or {}).get("count") or 0)
                    for e in (report.get("anomalies") or {}).values())
        output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(rowCount=total)
    folder, table = outputs_of(plan)
    outputs = [OutputDataset(*dataset_name(folder), facets=dict(facets)),
               OutputDataset(*dataset_name(table), facets=dict(facets),
                             outputFacets=output_facets)]
    return OperatorLineage(inputs=inputs, outputs=outputs)


def plan_of(rendered: Any) -> dict[str, Any] | None:
    """The plan from the operator's rendered ``plan_json`` field (None when not rendered)."""
    if isinstance(rendered, dict):
        return rendered
    try:
        value = json.loads(rendered) if rendered else None
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
