"""Reports as Assets: every published window is an event of the report root's Asset.

``check_report`` (the task that confirms a window's publication) has the report root's Asset
as its outlet and sets the event's extra: the window, the verdict, the anomaly counts, and
where the report is (``report_dir``, ``report_json``, ``index``, ``aws_conn_id``), so a DAG
scheduled on the Asset (dags/delivery_audit_on_report.py) reads the report the event names.

**Which URI, at parse time.** Airflow needs a DAG's Assets when it parses the file, before any
run, and a DAG file must not read the metadata DB or S3 then. So the Asset's URI is the
``report_root`` of the Variable *as the environment gives it*
(``AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS``, the way the demo, the tests and docker compose set
it: reading an environment variable is not I/O), else the built-in default
(``{repo}/demo/airflow/reports``); a local folder becomes a ``file://`` URI. A deployment that
keeps the Variable only in the metadata DB or a secrets backend sets the environment variable
``DELIVERY_AUDIT_REPORT_ASSET`` to the report root's URI instead (it wins over both). When a
run publishes elsewhere (a backfill's ``report_prefix``, a root the parse could not see), the
event still goes to the DAG's Asset and its extra's ``report_dir`` says where the report is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from delivery_audit_airflow.settings import REPO_ROOT, SCHEMA, VARIABLE

#: overrides the Asset's URI (a Variable kept in the DB is not read at parse time)
ASSET_ENV = "DELIVERY_AUDIT_REPORT_ASSET"


def as_uri(root: str) -> str:
    """A report root as an Asset URI: ``s3://…`` as it is, a local folder as ``file://``."""
    root = root.strip().rstrip("/") or "/"
    if "://" in root:
        return root
    return Path(root).expanduser().absolute().as_uri()


def report_root_at_parse(environ: dict[str, str] | None = None) -> str:
    """The report root the parse can see: DELIVERY_AUDIT_REPORT_ASSET, else the environment's
    Variable's ``report_root``, else the default. Never raises (a bad Variable fails
    ``resolve_window`` with its own message, not the parse)."""
    env = os.environ if environ is None else environ
    if env.get(ASSET_ENV):
        return env[ASSET_ENV]
    root = SCHEMA["report_root"].default
    try:
        value = json.loads(env.get(f"AIRFLOW_VAR_{VARIABLE.upper()}") or "{}")
        if isinstance(value, dict) and isinstance(value.get("report_root"), str):
            root = value["report_root"]
    except ValueError:
        pass
    return root.replace("{repo}", str(REPO_ROOT))


def report_asset(environ: dict[str, str] | None = None):
    """The report root's Asset (``from airflow.sdk import Asset``), named by its URI: an
    Asset's name is unique in a deployment, so one fixed name for every report root would
    leave the Asset of a changed (or a second) root inactive."""
    from airflow.sdk import Asset

    return Asset(uri=as_uri(report_root_at_parse(environ)))


def event_extra(plan: dict[str, Any], summary: dict[str, Any],
                index: str | None) -> dict[str, Any]:
    """The Asset event's extra for a checked window (JSON, no secret)."""
    return {
        "window": plan["window"]["id"],
        "start": plan["window"]["start"],
        "end": plan["window"]["end"],
        "verdict": summary["verdict"],
        "reasons": list(summary.get("reasons") or [])[:5],
        "anomalies": dict(summary.get("anomalies") or {}),
        "report_root": plan["out"],
        "report_dir": plan["report_dir"],
        "report_json": summary["report_json"],
        "report_html": summary["report_html"],
        "index": index,
        "aws_conn_id": plan.get("aws_conn_id"),
    }


def emit(outlet_events: Any, outlets: list, plan: dict[str, Any], summary: dict[str, Any],
         index: str | None) -> dict[str, Any] | None:
    """Set the extra on the event of each of the task's Asset ``outlets`` (no outlet_events:
    a direct call, no event)."""
    if outlet_events is None:
        return None
    extra = event_extra(plan, summary, index)
    for asset in outlets:
        outlet_events[asset].extra = extra
        # Airflow stores a bare bucket's s3://bucket as s3://bucket/: the same root
        if as_uri(plan["out"]).rstrip("/") != asset.uri.rstrip("/"):
            print(f"report root {plan['out']} is not the Asset's URI {asset.uri}: the event's "
                  "report_dir names where this report is")
        print(f"Asset event {asset.uri}: window {extra['window']} verdict {extra['verdict']} "
              f"anomalies {extra['anomalies']}")
    return extra
