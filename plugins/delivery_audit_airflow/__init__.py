"""Airflow glue for the Kafka delivery auditor.

A plain package on the plugins folder (Airflow puts ``plugins_folder`` on ``sys.path``; the DAG
files add it too). It is not an AirflowPlugin: ``plugins/.airflowignore`` keeps the plugin manager
from importing its modules as top-level plugin files. Importing it is cheap — nothing here pulls
in pyspark, boto3, the Amazon provider or the auditor's engine at DAG parse time.
"""

from delivery_audit_airflow.group import (
    audit_params,
    audit_task_group,
    dag_doc_md,
    default_args,
)
from delivery_audit_airflow.settings import SCHEMA, VARIABLE, markdown_table

__all__ = ["SCHEMA", "VARIABLE", "audit_params", "audit_task_group", "dag_doc_md",
           "default_args", "markdown_table"]
