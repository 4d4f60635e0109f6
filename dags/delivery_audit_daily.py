"""Daily Kafka delivery audit: judges [data_interval_start, data_interval_end) = one UTC day.

The run for logical date D audits the day before D (``airflow dags test delivery_audit_daily
2026-11-20`` audits 2026-11-19). Tasks and configuration: plugins/delivery_audit_airflow and
docs/airflow.md. This file only builds the DAG: nothing heavy is imported at parse time.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

_PLUGINS = str(Path(__file__).resolve().parents[1] / "plugins")
if _PLUGINS not in sys.path:  # Airflow adds plugins_folder itself; this covers other layouts
    sys.path.append(_PLUGINS)

from airflow.sdk import DAG, CronDataIntervalTimetable  # noqa: E402
from delivery_audit_airflow import audit_task_group, default_args  # noqa: E402

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
    doc_md=__doc__,
) as dag:
    audit_task_group()
