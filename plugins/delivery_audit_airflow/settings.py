"""Configuration from Airflow Variables, with defaults that work in a local checkout.

Every setting is one Variable (so ``AIRFLOW_VAR_<NAME>`` environment variables work). Input
locations are templates rendered per window:

    {data_root}  the ``delivery_audit_data_root`` Variable
    {ds} {ds_nodash}          the window's start date (2026-11-19 / 20261119)
    {end_ds} {end_ds_nodash}  the date of the window's end instant
    {prev_ds} {next_ds}       the day before / after the start date

Any glob the auditor accepts is fine (local paths or s3:// URIs). The contract reads every
source with no lower bound by default (rule 6), so the default templates match every
``dt=`` partition; narrow them with {ds}/{prev_ds}/{next_ds} together with ``lookback_minutes``
in the audit config for large stores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

#: the checkout (plugins/delivery_audit_airflow/settings.py → repo root)
REPO_ROOT = Path(__file__).resolve().parents[2]

PREFIX = "delivery_audit_"

#: Variable name (without prefix) → (default, meaning). Defaults may use {repo}.
VARIABLES: dict[str, tuple[str, str]] = {
    "job": ("{repo}/jobs/reconcile.py", "the spark-submit application (jobs/reconcile.py)"),
    "data_root": ("{repo}/demo/airflow/data", "root the input templates are relative to"),
    "sends": ("{data_root}/sends/dt=*/*.jsonl*", "producer send log glob/template"),
    "broker": ("{data_root}/broker/dt=*/*.jsonl*", "broker topic dump glob/template"),
    "ledger": ("{data_root}/ledger/dt=*/*.jsonl*", "consumer ledger glob/template"),
    "events": ("{data_root}/events/dt=*/*.jsonl*",
               "consumer-group events glob/template; optional: '' or no match → not passed"),
    "report_root": ("{repo}/demo/airflow/reports", "report root (local dir or s3://bucket/prefix)"),
    "config_file": ("", "audit config (YAML/JSON: groups, thresholds, notifier); '' = defaults"),
    "grace": ("60m", "grace period after the window end (e.g. 60m, 2h)"),
    "notifier": ("", "JSON notifier settings, e.g. {\"type\": \"log\"}; '' = the config's"),
    "report_link": ("{report_dir}/report.html",
                    "link put in alerts; {report_dir} is the window's output folder"),
    "spark_conf": ("{}", "JSON object of extra spark-submit --conf settings"),
    "backfill_max_days": ("7", "largest window the backfill DAG accepts, in days"),
    "fail_run_on_verdict": ("false",
                            "true: a 'fail' verdict also fails the alert task (red DAG run)"),
    "wait_for_grace": ("true",
                       "true: wait_for_inputs waits until window end + grace has passed"),
}

def _truthy(text: str) -> bool:
    return str(text).strip().lower() in ("1", "true", "yes", "on")


def get_variable(name: str) -> str:
    """One setting: the Variable if set (Airflow DB, env, secrets backend), else the default.

    ``Variable.get(key, default=<str>)`` would register the default as a secret and mask it in
    every log line, so the default is applied here instead.
    """
    from airflow.sdk import Variable

    value = Variable.get(PREFIX + name, default=None)
    if value is None:
        value = VARIABLES[name][0]
    return str(value)


@dataclass(frozen=True)
class Settings:
    values: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, getter=get_variable) -> Settings:
        return cls({name: getter(name) for name in VARIABLES})

    def raw(self, name: str) -> str:
        return self.values.get(name, VARIABLES[name][0])

    def render(self, name: str, **extra: str) -> str:
        """Render a template setting; unknown placeholders are an error, not silently kept."""
        text = self.raw(name)
        names = {"repo": str(REPO_ROOT), **extra}
        if name != "data_root":
            names.setdefault("data_root", self.render("data_root"))
        try:
            return text.format(**names).strip()
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"Variable {PREFIX}{name}={text!r}: bad template ({exc}); "
                             f"placeholders: {sorted(names)}") from exc

    def json(self, name: str) -> Any:
        text = self.raw(name).strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Variable {PREFIX}{name} is not JSON: {exc}") from exc

    def flag(self, name: str) -> bool:
        return _truthy(self.raw(name))


#: the pseudonymisation secret (audit config ``pseudonymise: true``): the worker's environment
#: variable wins, else the password of this Connection (Airflow masks it in task logs)
PSEUDONYM_KEY_ENV = "DELIVERY_AUDIT_PSEUDONYM_KEY"
PSEUDONYM_CONN_ID = "delivery_audit_pseudonym"


def _connection_password(conn_id: str) -> str | None:
    from airflow.sdk import Connection

    try:
        conn = Connection.get(conn_id)
    except Exception:  # noqa: BLE001 - AirflowNotFoundException and backend errors alike
        return None
    return getattr(conn, "password", None) or None


def pseudonym_key_env(environ: dict[str, str] | None = None,
                      password_getter=_connection_password) -> dict[str, str]:
    """``{DELIVERY_AUDIT_PSEUDONYM_KEY: secret}`` for the reconcile job's environment, or {}.

    Pass it as the spark-submit ``env_vars`` at execute time, never through the plan (XCom is
    readable in the UI). With neither source a pseudonymising audit fails with a message that
    names the variable; an audit without pseudonymisation ignores it.
    """
    import os

    env = os.environ if environ is None else environ
    value = env.get(PSEUDONYM_KEY_ENV) or password_getter(PSEUDONYM_CONN_ID)
    return {PSEUDONYM_KEY_ENV: value} if value else {}


def date_placeholders(start: datetime, end: datetime) -> dict[str, str]:
    day = start.date()
    return {
        "ds": day.isoformat(),
        "ds_nodash": day.strftime("%Y%m%d"),
        "end_ds": end.date().isoformat(),
        "end_ds_nodash": end.strftime("%Y%m%d"),
        "prev_ds": (day - timedelta(days=1)).isoformat(),
        "next_ds": (day + timedelta(days=1)).isoformat(),
    }
