"""# Kafka delivery audit of any window (backfill)

Triggered by hand: audits **[start, end)** given as Params (ISO-8601; at most
`backfill_max_days` of the Variable, default 7 days), optionally only some `topics` and consumer
`groups`, with its own `grace_minutes` and a `report_prefix` (e.g. `incidents/INC-123`) below
the report root. Same task group as the daily DAG. The Params are checked by JSON schema when
the run is triggered and again (end > start, the maximum length, a safe prefix) by
`resolve_window`.

    airflow dags test delivery_audit_backfill -c '{"start": "2026-11-19T10:00:00Z",
        "end": "2026-11-19T12:00:00Z", "report_prefix": "incidents/INC-1"}'

Param `aws_conn_id` (optional): the AWS Connection for this run. Param `snapshot` (optional,
off by default): read the window's broker side from the cluster first, through the `kafka`
Connection (`kafka_conn_id`), topics `snapshot_topics`, groups `snapshot_groups`.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

_PLUGINS = str(Path(__file__).resolve().parents[1] / "plugins")
if _PLUGINS not in sys.path:
    sys.path.append(_PLUGINS)

from airflow.sdk import DAG, Param  # noqa: E402
from delivery_audit_airflow import (  # noqa: E402
    audit_params,
    audit_task_group,
    dag_doc_md,
    default_args,
)
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
                               description="grace after end (empty: the audit config's "
                                           "grace_minutes, else the Variable's grace, 60m)"),
        "report_prefix": Param("", type="string", pattern=PREFIX_PATTERN, maxLength=200,
                               description="sub-folder below the report root, e.g. "
                                           "incidents/INC-123 (empty: the root itself)"),
        **audit_params(),
    },
    doc_md=dag_doc_md(__doc__),
) as dag:
    audit_task_group()
