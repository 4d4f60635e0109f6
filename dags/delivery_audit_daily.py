"""# Daily Kafka delivery audit

Audits one UTC day per run: **[data_interval_start, data_interval_end)**, 24 h from midnight
UTC. The run for logical date D audits the day before D (`airflow dags test
delivery_audit_daily 2026-11-20` audits 2026-11-19); catchup fills missed days. It proves, from
the producers', brokers' and consumers' logs, whether every acknowledged message was delivered
once and in order, and reports loss, duplication and reordering with their causes.

Param `aws_conn_id` (optional): the AWS Connection for this run. Param `snapshot` (optional,
off by default): read the window's broker side from the cluster first, through the `kafka`
Connection (`kafka_conn_id`), topics `snapshot_topics`, groups `snapshot_groups`.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

_PLUGINS = str(Path(__file__).resolve().parents[1] / "plugins")
if _PLUGINS not in sys.path:  # Airflow adds plugins_folder itself; this covers other layouts
    sys.path.append(_PLUGINS)

from airflow.sdk import DAG, CronDataIntervalTimetable  # noqa: E402
from delivery_audit_airflow import (  # noqa: E402
    audit_params,
    audit_task_group,
    dag_doc_md,
    default_args,
)

# This file only builds the DAG: nothing heavy is imported at parse time.
with DAG(
    dag_id="delivery_audit_daily",
    description="Daily audit of Kafka delivery guarantees (one UTC day per run)",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 11, 1),
    catchup=True,
    max_active_runs=2,
    dagrun_timeout=timedelta(hours=20),
    default_args=default_args(),
    tags=["delivery-audit", "kafka", "data-quality", "daily"],
    params=audit_params(),
    doc_md=dag_doc_md(__doc__),
) as dag:
    audit_task_group()
