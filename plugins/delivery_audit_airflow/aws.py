"""S3 the provider way: an ``S3Hook`` on an Airflow AWS Connection for the orchestration tasks,
and what the reconcile job gets of that Connection.

Which Connection: the run's ``aws_conn_id`` Param, else the ``aws_conn_id`` key of the
Variable delivery_audit_settings, else ``aws_default`` (resolved once, into the plan).
A Connection that does not exist is not an error: the hook then uses the worker's standard AWS
chain, as the job does.

The job (jobs/reconcile.py, plain boto3) never reads Airflow Connections. So that it reads and
publishes where the sensor looked, the reconcile task passes it the Connection's S3 endpoint
(``extra.endpoint_url`` or ``extra.service_config.s3.endpoint_url``), region and, when the
Connection itself holds them (login/password, extra keys, a role or a profile), the session's
credentials, as ``AWS_*`` environment variables of spark-submit (:func:`job_env`). Nothing of
it goes through XCom or the rendered template fields. Other extras (``config_kwargs``,
``verify``) do not carry over.

The Amazon provider is imported inside :func:`s3_hook` only, at task time: it pulls in boto3
and botocore, which DAG parsing must not load.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=8)
def s3_hook(aws_conn_id: str) -> Any:
    """One ``S3Hook`` per Connection and process (its client is cached by the hook)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    return S3Hook(aws_conn_id=aws_conn_id)


def job_env(aws_conn_id: str) -> tuple[dict[str, str], str]:
    """The ``AWS_*`` environment for the reconcile job from the Connection, and what it holds
    in words without secrets (for the task log). ``{}`` when the Connection does not exist."""
    hook = s3_hook(aws_conn_id)
    cfg = hook.conn_config
    if cfg.conn_type is None:  # not found: the hook "switches to empty", the default chain
        return {}, (f"no Connection {aws_conn_id!r}: the job uses the worker's own AWS "
                    "credential chain, as the hook does")
    env: dict[str, str] = {}
    said = []
    endpoint = cfg.get_service_endpoint_url("s3")
    if endpoint:
        env["AWS_ENDPOINT_URL_S3"] = endpoint
        said.append(f"endpoint {endpoint}")
    if cfg.region_name:
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = cfg.region_name
        said.append(f"region {cfg.region_name}")
    if cfg.aws_access_key_id or cfg.role_arn or cfg.profile_name:
        creds = hook.get_credentials()  # also masks the secret and the token in task logs
        env["AWS_ACCESS_KEY_ID"] = creds.access_key
        env["AWS_SECRET_ACCESS_KEY"] = creds.secret_key
        # an inherited session token must not be paired with these keys ('' is no token)
        env["AWS_SESSION_TOKEN"] = env["AWS_SECURITY_TOKEN"] = creds.token or ""
        said.append("credentials" + (" (temporary)" if creds.token else ""))
    else:
        said.append("no credentials of its own (the job uses the worker's AWS chain)")
    return env, f"Connection {aws_conn_id!r}: " + ", ".join(said)
