"""The example downstream of the report Asset (dags/delivery_audit_on_report.py): read the
report an Asset event names and open a ticket for a fail verdict, paging when the window
before it failed too.

The events: the run's ``triggering_asset_events`` (a run the scheduler started on the Asset);
a run started by hand or by ``airflow dags test`` has none, so it takes the Asset's latest
event (``inlet_events``, the task's inlet). The verdict before: the event before that one.

The ticket is a JSON file ``<ticket_dir>/<window id>.json`` (window, verdict, reasons, the
narrative's first findings, the report's link, ``page``): the place where a real deployment
calls its ticketing or paging tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from delivery_audit_airflow import uris
from delivery_audit_airflow.settings import REPO_ROOT

DEFAULT_TICKET_DIR = "{repo}/demo/airflow/tickets"


def _extra(event: Any) -> dict[str, Any]:
    extra = getattr(event, "extra", None)
    return dict(extra or {})


def event_extras(context: Any, asset: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(the newest event's extra, the verdict of the Asset's event before it). The
    triggering event is also the Asset's newest, so the one before is the second newest."""
    triggering = context.get("triggering_asset_events") or {}
    events = [e for evs in triggering.values() for e in evs]
    newest = list(context["inlet_events"][asset].ascending(False).limit(2))  # newest first
    if events:
        current = _extra(events[-1])
    else:
        current = _extra(newest[0]) if newest else None
    previous = _extra(newest[1]).get("verdict") if len(newest) == 2 else None
    return current, previous


def read_report(extra: dict[str, Any]) -> dict[str, Any]:
    """The report.json the event names (through the event's AWS Connection for s3://),
    checked to be that window's."""
    report = json.loads(uris.on(extra.get("aws_conn_id")).read_text(extra["report_json"]))
    if (report.get("window") or {}).get("id") != extra.get("window"):
        raise ValueError(f"{extra['report_json']} is for window "
                         f"{(report.get('window') or {}).get('id')}, the event names "
                         f"{extra.get('window')}")
    return report


def handle(extra: dict[str, Any] | None, previous: str | None, ticket_dir: str) -> dict[str, Any]:
    """Read the report; a fail verdict writes the ticket (``page`` when the previous event's
    verdict was fail too). Returns what was done."""
    if extra is None:
        print("no report Asset event yet: nothing to do")
        return {"action": "none"}
    report = read_report(extra)
    verdict = (report.get("verdict") or {}).get("verdict")
    print(f"report {extra['report_json']}: window {extra['window']} verdict {verdict} "
          f"(the window before: {previous})")
    if verdict != "fail":
        return {"action": "none", "window": extra["window"], "verdict": verdict}
    page = previous == "fail"
    ticket = {
        "window": extra["window"], "verdict": verdict, "page": page,
        "reasons": list((report.get("verdict") or {}).get("reasons") or [])[:5],
        "findings": [f.get("title") for f in (report.get("narrative") or [])[:3]
                     if isinstance(f, dict)],
        "anomalies": {k: (v or {}).get("count", 0)
                      for k, v in (report.get("anomalies") or {}).items()
                      if (v or {}).get("count")},
        "report": extra.get("report_html"), "index": extra.get("index"),
    }
    folder = Path(ticket_dir.replace("{repo}", str(REPO_ROOT)))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{extra['window']}.json"
    path.write_text(json.dumps(ticket, indent=2))
    print(("PAGE: two failed windows in a row; " if page else "") + f"ticket {path}")
    return {"action": "page" if page else "ticket", "ticket": str(path), **ticket}
