"""Manually triggered audit of any window [start, end) (at most delivery_audit_backfill_max_days,
default 7). Runs the same task group as the daily DAG. Params are checked by JSON schema at
trigger time and again (end > start, maximum length, safe report_prefix) by resolve_window.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

_PLUGINS = str(Path(__file__).resolve().parents[1] / "plugins")
if _PLUGINS not in sys.path:
    sys.path.append(_PLUGINS)

from airflow.sdk import DAG, Param  # noqa: E402
from delivery_audit_airflow import audit_task_group, default_args  # noqa: E402
from delivery_audit_airflow.plan import ISO_PATTERN, NAME_PATTERN, PREFIX_PATTERN  # noqa: E402

with DAG(
    dag_id="delivery_audit_backfill",
    description="Audit an arbitrary window [start, end) on demand",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=4,
    dagrun_timeout=timedelta(hours=20),
    default_args=default_args(),
    tags=["delivery-audit", "kafka", "data-quality", "backfill"],
    params={
        "start": Param(type="string", pattern=ISO_PATTERN, title="Window start",
                       description="ISO-8601, e.g. 2026-11-19T00:00:00Z (inclusive)"),
        "end": Param(type="string", pattern=ISO_PATTERN, title="Window end",
                     description="ISO-8601, exclusive; after start, at most the configured "
                                 "maximum (default 7 days) later"),
        "topics": Param([], type="array", items={"type": "string", "pattern": NAME_PATTERN},
                        description="only these topics (empty: all)"),
        "groups": Param([], type="array", items={"type": "string", "pattern": NAME_PATTERN},
                        description="only these consumer groups (empty: all)"),
        "grace_minutes": Param(None, type=["null", "integer"], minimum=0, maximum=10080,
                               description="grace after end (empty: Variable, default 60)"),
        "report_prefix": Param("", type="string", pattern=PREFIX_PATTERN, maxLength=200,
                               description="sub-folder below the report root, e.g. "
                                           "incidents/INC-123 (empty: the root itself)"),
    },
    doc_md=__doc__,
) as dag:
    audit_task_group()
