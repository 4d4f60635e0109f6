"""Structure of docker-compose.yml (no Docker engine here: `docker compose config` is in the
docs). Checks the services, healthchecks, volumes, loopback-only ports and the wiring."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "plugins") not in sys.path:
    sys.path.append(str(REPO / "plugins"))
AIRFLOW = ["airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"]
LONG_RUNNING = AIRFLOW + ["postgres", "minio", "spark-master", "spark-worker"]


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())  # merge keys resolved


def test_services(compose):
    services = compose["services"]
    assert set(LONG_RUNNING + ["airflow-init", "minio-init"]) <= set(services)
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["minio"]["image"].startswith("minio/minio")


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_healthchecks(compose, name):
    hc = compose["services"][name]["healthcheck"]
    assert hc["test"][0] in ("CMD", "CMD-SHELL") and hc.get("interval")


@pytest.mark.parametrize("name", AIRFLOW + ["airflow-init"])
def test_airflow_services(compose, name):
    from delivery_audit_airflow.settings import validate

    svc = compose["services"][name]
    env = svc["environment"]
    assert svc["image"] == compose["services"]["spark-worker"]["image"]  # one shared image
    assert ".:/opt/delivery-audit" in svc["volumes"]
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/delivery-audit/dags"
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/delivery-audit/plugins"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
    assert "spark://spark-master:7077" in env["AIRFLOW_CONN_SPARK_DEFAULT"]
    # S3 (MinIO) through the aws_default Connection, not AWS_* variables
    assert not [k for k in env if k.startswith("AWS_")]
    aws = json.loads(env["AIRFLOW_CONN_AWS_DEFAULT"])
    assert aws["conn_type"] == "aws" and aws["extra"]["endpoint_url"] == "http://minio:9000"
    assert aws["login"] and aws["password"]
    # the settings: one JSON Variable, valid against the plugin's schema
    settings = json.loads(env["AIRFLOW_VAR_DELIVERY_AUDIT_SETTINGS"])
    assert validate(settings) == settings
    assert settings["report_root"].startswith("s3://")
    assert settings["data_root"].startswith("s3://")
    assert settings["spark_conf"]["spark.driver.host"] == "airflow-scheduler"
    assert not [k for k in env if k.startswith("AIRFLOW_VAR_") and not k.endswith("_SETTINGS")]
    if name != "airflow-init":
        assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert svc["depends_on"]["airflow-init"]["condition"] == \
            "service_completed_successfully"


def test_commands(compose):
    s = compose["services"]
    assert s["airflow-apiserver"]["command"] == "api-server"
    assert s["airflow-scheduler"]["command"] == "scheduler"
    assert s["airflow-dag-processor"]["command"] == "dag-processor"
    assert s["airflow-triggerer"]["command"] == "triggerer"
    assert "db migrate" in " ".join(s["airflow-init"]["command"])
    assert "spark-master:7077" in " ".join(s["spark-worker"]["command"])


def test_named_volumes_declared(compose):
    declared = set(compose["volumes"])
    for svc in compose["services"].values():
        for vol in svc.get("volumes", []):
            source = vol.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in declared


def test_ports_bind_loopback_only(compose):
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_dockerfile_exists(compose):
    build = compose["services"]["airflow-scheduler"]["build"]
    assert (REPO / build["context"] / build["dockerfile"]).is_file()
