"""The deployment's settings: one JSON Airflow Variable, ``delivery_audit_settings``, checked
against a small schema (:data:`SCHEMA`); a key it does not set takes its documented default.

    AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS='{"data_root": "s3://lake/kafka",
                                          "report_root": "s3://audit-reports/delivery"}'

An unknown key, a value of the wrong type or a Variable that is not a JSON object fails the
``resolve_window`` task at once (no retry) with a message naming the key. The Variable is the
deployment default: a DAG Param (``aws_conn_id``, the backfill's ``grace_minutes``) wins over
it, and so does the audit config file where both say the same thing (``grace_minutes``,
``notifier``).

Input locations are templates rendered per window (``snapshot_dir`` also takes {window_id}):

    {data_root}  the ``data_root`` setting      {repo}  the checkout
    {ds} {ds_nodash}          the window's start date (2026-11-19 / 20261119)
    {end_ds} {end_ds_nodash}  the date of the window's end instant
    {prev_ds} {next_ds}       the day before / after the start date

Any glob the auditor accepts is fine (local paths or s3:// URIs). The contract reads every
source with no lower bound by default (rule 6), so the default templates match every
``dt=`` partition; narrow them with {ds}/{prev_ds}/{next_ds} together with ``lookback_minutes``
in the audit config for large stores.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from delivery_audit.core.window import parse_duration_minutes

#: the checkout (plugins/delivery_audit_airflow/settings.py → repo root)
REPO_ROOT = Path(__file__).resolve().parents[2]

#: the one Airflow Variable (JSON object) the DAGs read
VARIABLE = "delivery_audit_settings"
#: the Airflow Connection for S3 when neither the run's Param nor the Variable names one
DEFAULT_AWS_CONN_ID = "aws_default"
#: the Kafka provider's Connection for the snapshot task when neither Param nor Variable names one
DEFAULT_KAFKA_CONN_ID = "kafka_default"
#: a Kafka topic or consumer group id (the snapshot's topics and groups)
KAFKA_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,248}$"
#: an Airflow connection id (the ``aws_conn_id`` Param and setting)
CONN_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,250}$"
#: the old one-Variable-per-setting names were ``delivery_audit_<key>``
_OLD_PREFIX = "delivery_audit_"

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "number": (int, float), "boolean": (bool,), "object": (dict,),
    "array": (list,), "null": (type(None),),
}


@dataclass(frozen=True)
class Setting:
    default: Any
    types: tuple[str, ...]  # JSON types: string, number, boolean, object, null
    meaning: str


#: key → (default, JSON types, meaning). Template defaults may use {repo} and {data_root}.
SCHEMA: dict[str, Setting] = {
    "data_root": Setting("{repo}/demo/airflow/data", ("string",),
                         "the {data_root} placeholder of the input templates"),
    "sends": Setting("{data_root}/sends/dt=*/*.jsonl*", ("string",),
                     "producer send log glob/template"),
    "broker": Setting("{data_root}/broker/dt=*/*.jsonl*", ("string",),
                      "broker topic dump glob/template"),
    "ledger": Setting("{data_root}/ledger/dt=*/*.jsonl*", ("string",),
                      "consumer ledger glob/template"),
    "events": Setting("{data_root}/events/dt=*/*.jsonl*", ("string", "null"),
                      "consumer-group events glob/template; optional: null, '' or no match → "
                      "not passed"),
    "report_root": Setting("{repo}/demo/airflow/reports", ("string",),
                           "report root: a local folder or s3://bucket/prefix"),
    "config_file": Setting(None, ("string", "null"),
                           "audit config (YAML/JSON: groups, thresholds, notifier, "
                           "grace_minutes); null or '' = the built-in defaults"),
    "grace": Setting("60m", ("string", "number"),
                     "grace after the window end (60m, 2h, or minutes): below the run's "
                     "grace_minutes Param and the audit config's grace_minutes"),
    "notifier": Setting(None, ("object", "null"),
                        "alert notifier, e.g. {\"type\": \"slack\", \"conn_id\": "
                        "\"slack_audit\"} (a provider's notifier and its Connection; sns: "
                        "+ target_arn, smtp: + to) or the engine's {\"type\": \"slack\", "
                        "\"webhook_env\": \"SLACK_WEBHOOK_URL\"}: below the run's notifier "
                        "Param and the audit config's notifier; none = the log notifier"),
    "report_link": Setting("{report_dir}/report.html", ("string",),
                           "the link put in alerts; {report_dir} is the window's folder"),
    "spark_conf": Setting({}, ("object",), "extra spark-submit --conf settings"),
    "backfill_max_days": Setting(7, ("number",),
                                 "the longest window the backfill DAG accepts, in days"),
    "fail_run_on_verdict": Setting(False, ("boolean",),
                                   "true: a fail verdict also fails the alert task (red run)"),
    "wait_for_grace": Setting(True, ("boolean",),
                              "true: wait_for_inputs waits until window end + grace"),
    "aws_conn_id": Setting(DEFAULT_AWS_CONN_ID, ("string",),
                           "Airflow AWS Connection for S3 (sensor, report check, alert and, "
                           "see pass_aws_conn_to_job, the job); the run's aws_conn_id Param "
                           "wins"),
    "pass_aws_conn_to_job": Setting(True, ("boolean",),
                                    "true: the reconcile job gets the Connection's S3 endpoint, "
                                    "region and credentials as AWS_* environment variables; "
                                    "false: the job uses only the worker's own AWS chain"),
    "job": Setting("{repo}/jobs/reconcile.py", ("string",),
                   "the spark-submit application"),
    "snapshot": Setting(False, ("boolean",),
                        "true: a snapshot task reads the broker side from the cluster (the "
                        "Kafka Connection) before reconcile; the run's snapshot Param wins"),
    "snapshot_dir": Setting("{data_root}/snapshot/dt={ds}/{window_id}", ("string",),
                            "where the snapshot task writes the window's broker/ and "
                            "offsets.json (local folder or s3://); {window_id} is the window"),
    "snapshot_topics": Setting([], ("array",),
                               "topics the snapshot reads; the run's snapshot_topics Param "
                               "(else the backfill's topics) wins"),
    "snapshot_groups": Setting([], ("array",),
                               "consumer groups whose committed offsets the snapshot reads; "
                               "the run's snapshot_groups Param (else the backfill's groups) "
                               "wins"),
    "kafka_conn_id": Setting(DEFAULT_KAFKA_CONN_ID, ("string",),
                             "Airflow Kafka Connection (conn type kafka, its extra the client "
                             "config) of the snapshot task; the run's kafka_conn_id Param wins"),
}

class SettingsError(ValueError):
    """The Variable does not fit :data:`SCHEMA`."""


def _type_name(value: Any) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, types) and not (name == "number" and isinstance(value, bool)):
            return name
    return type(value).__name__


def _check(key: str, value: Any) -> None:
    spec = SCHEMA[key]
    got = _type_name(value)
    if got not in spec.types:
        raise SettingsError(f"Variable {VARIABLE}: {key!r} must be "
                            f"{' or '.join(spec.types)}, not {got} "
                            f"({json.dumps(value, default=str)[:80]})")
    if key == "spark_conf":
        for k, v in value.items():
            if _type_name(v) not in ("string", "number", "boolean"):
                raise SettingsError(f"Variable {VARIABLE}: 'spark_conf' value of {k!r} must "
                                    f"be a string, number or boolean, not {_type_name(v)}")
    if key == "backfill_max_days" and not value > 0:
        raise SettingsError(f"Variable {VARIABLE}: 'backfill_max_days' must be > 0, "
                            f"not {value}")
    if key == "grace":
        try:
            if parse_duration_minutes(value) < 0:
                raise ValueError("negative")
        except ValueError as exc:
            raise SettingsError(f"Variable {VARIABLE}: 'grace' {value!r} is not a duration "
                                "(e.g. 60m, 2h, or a number of minutes)") from exc
    if key in ("aws_conn_id", "kafka_conn_id") and not re.fullmatch(CONN_ID_PATTERN, value):
        raise SettingsError(f"Variable {VARIABLE}: {key!r} {value!r} is not a connection "
                            "id (letters, digits, '_', '.', '-')")
    if key in ("snapshot_topics", "snapshot_groups"):
        for item in value:
            if not isinstance(item, str) or not re.fullmatch(KAFKA_NAME_PATTERN, item):
                raise SettingsError(f"Variable {VARIABLE}: {key!r} item {item!r} is not a "
                                    "topic or group name")


def validate(data: Any) -> dict[str, Any]:
    """The Variable's JSON value checked against :data:`SCHEMA` (the keys it sets; the others
    take their defaults in :meth:`Settings.get`)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"Variable {VARIABLE} must be a JSON object of settings, not "
                            f"{_type_name(data)}")
    unknown = sorted(set(data) - set(SCHEMA))
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {close[0]!r}?)"
                             if (close := difflib.get_close_matches(str(k), SCHEMA, 1)) else "")
                 for k in unknown]
        raise SettingsError(f"Variable {VARIABLE}: unknown key {', '.join(hints)}; the keys "
                            f"are {', '.join(SCHEMA)}")
    for key, value in data.items():
        _check(key, value)
    return copy.deepcopy(dict(data))


def parse_variable(text: str | None) -> dict[str, Any]:
    """The Variable's text (None or blank: every default) → the validated keys it sets."""
    if text is None or not str(text).strip():
        return validate({})
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"Variable {VARIABLE} is not JSON: {exc}") from exc
    return validate(data)


def read_variable() -> str | None:
    """The Variable's text (Airflow DB, ``AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS``, a secrets
    backend), or None. ``Variable.get(key, default=<str>)`` would register the default as a
    secret and mask it in every log line, so the default is applied by :func:`validate`."""
    from airflow.sdk import Variable

    value = Variable.get(VARIABLE, default=None)
    return None if value is None else str(value)


def old_variables(environ: Mapping[str, str] | None = None,
                  stored: Callable[[], list[str]] | None = None) -> list[str]:
    """Variables of the old one-per-setting layout still set (``AIRFLOW_VAR_DELIVERY_AUDIT_
    DATA_ROOT`` …): they are no longer read, so a deployment that still sets them must hear
    about it instead of silently auditing the defaults."""
    env = os.environ if environ is None else environ
    old = {_OLD_PREFIX + key for key in SCHEMA}
    found = sorted(f"AIRFLOW_VAR_{name.upper()}" for name in old
                   if f"AIRFLOW_VAR_{name.upper()}" in env)
    try:
        found += sorted(k for k in (stored or _stored_variable_keys)() if k in old)
    except Exception:  # noqa: BLE001 - listing is best effort (older API servers, no DB)
        pass
    return found


def _old_key(name: str) -> str:
    """``AIRFLOW_VAR_DELIVERY_AUDIT_DATA_ROOT`` or ``delivery_audit_data_root`` → data_root."""
    return name.removeprefix("AIRFLOW_VAR_").lower().removeprefix(_OLD_PREFIX)


def _stored_variable_keys() -> list[str]:
    from airflow.sdk import Variable

    return list(Variable.keys(prefix=_OLD_PREFIX))


@dataclass(frozen=True)
class Settings:
    """The validated keys the Variable sets; :meth:`get` gives a key's value or default."""

    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, reader: Callable[[], str | None] = read_variable,
             leftovers: Callable[[], list[str]] = old_variables) -> Settings:
        old = leftovers()
        if old:
            moves = ", ".join(f"{name} → {_old_key(name)!r}" for name in old)
            raise SettingsError(
                f"the one-Variable-per-setting layout is no longer read: move {moves} into the "
                f"JSON Variable {VARIABLE} and delete the old Variables")
        return cls(parse_variable(reader()))

    @classmethod
    def of(cls, **values: Any) -> Settings:
        """Settings from keyword values (validated; the rest default): for tests and scripts."""
        return cls(validate(values))

    @property
    def explicit(self) -> frozenset[str]:
        """The keys the Variable sets (the others are defaults)."""
        return frozenset(self.values)

    def get(self, name: str) -> Any:
        return copy.deepcopy(self.values[name] if name in self.values else SCHEMA[name].default)

    def render(self, name: str, **extra: str) -> str:
        """Render a template setting; unknown placeholders are an error, not silently kept.
        None (an unset optional setting) renders as ''."""
        text = self.get(name)
        if text is None:
            return ""
        names = {"repo": str(REPO_ROOT), **extra}
        if name != "data_root":
            names.setdefault("data_root", self.render("data_root"))
        try:
            return str(text).format(**names).strip()
        except (KeyError, IndexError, ValueError) as exc:
            raise SettingsError(f"Variable {VARIABLE}: {name!r} = {text!r} is a bad template "
                                f"({exc}); placeholders: {sorted(names)}") from exc


def markdown_table() -> str:
    """The settings as a Markdown table (the DAGs' doc_md, docs/airflow.md)."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, spec in SCHEMA.items():
        default = json.dumps(spec.default).replace("|", "\\|")
        rows.append(f"| `{key}` | `{default}` | {spec.meaning.replace('|', '/')} |")
    return "\n".join(rows)


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
