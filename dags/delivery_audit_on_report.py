"""# On a new delivery-audit report (example downstream of the report Asset)

Scheduled on the report root's Asset (its URI, e.g. `s3://audit-reports/delivery`): every
window the daily or backfill DAG publishes and checks is an Asset event whose extra names the
window, the verdict,
the anomaly counts and the report. This DAG reads the report the event names and, on a
**fail** verdict, writes a ticket (`<ticket_dir>/<window id>.json`); when the window before
failed too, the ticket says `"page": true`. A run started by hand (or `airflow dags test`)
takes the Asset's latest event.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

_PLUGINS = str(Path(__file__).resolve().parents[1] / "plugins")
if _PLUGINS not in sys.path:
    sys.path.append(_PLUGINS)

from airflow.sdk import DAG, Param, get_current_context, task  # noqa: E402
from delivery_audit_airflow.assets import report_asset  # noqa: E402
from delivery_audit_airflow.downstream import DEFAULT_TICKET_DIR  # noqa: E402

REPORTS = report_asset()

with DAG(
    dag_id="delivery_audit_on_report",
    description="Reads each published audit report; tickets a fail, pages on two in a row",
    schedule=[REPORTS],
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["delivery-audit", "kafka", "data-quality", "downstream"],
    params={"ticket_dir": Param(DEFAULT_TICKET_DIR, type="string",
                                description="where tickets are written ({repo}: the checkout)")},
    doc_md=__doc__,
) as dag:

    @task(task_id="read_report", inlets=[REPORTS], retries=2)
    def read_report() -> dict:
        from delivery_audit_airflow.downstream import event_extras, handle

        ctx = get_current_context()
        current, previous = event_extras(ctx, REPORTS)
        return handle(current, previous, str(ctx["params"]["ticket_dir"]))

    read_report()
