"""The snapshot task: the broker side of the window read from the cluster itself, through the
Kafka provider's Connection (conn type ``kafka``; its extra is the client config, e.g.
``{"bootstrap.servers": "b-1:9096", "security.protocol": "SASL_SSL", "sasl.mechanism":
"SCRAM-SHA-512", "sasl.username": "audit", "sasl.password": "…"}``).

* The Connection is read with the provider's ``KafkaAdminClientHook``; its AdminClient
  checks that every topic exists before anything is read (a missing topic fails the task at
  once, no retry).
* The read is the engine's ``delivery_audit.snapshot.take_snapshot`` (Fetch over the Kafka
  protocol: data rows with their producer ids, transaction markers as control rows, and
  ``offsets.json``), up to the window's end + grace, from the log start or, with the audit
  config's ``lookback_minutes``, from the window's start minus it (the plan's
  ``snapshot.from``/``to``: what the job reads of the broker side, contract rule 6).
* It is staged and then replaces the plan's ``snapshot.dir`` as a whole (local folder or
  ``s3://`` through the plan's AWS Connection), so a rerun of the window writes the same
  folder again. ``offsets.json`` is written last.
* Secrets never leave the Connection: the log names the client config's keys, and the values
  only of keys that are no secret (security.protocol, sasl.mechanism, client.id); nothing of it
  goes into XCom.

The engine, the provider's hooks and confluent-kafka are imported inside the functions only:
DAG parsing stays light.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from delivery_audit.core.timefmt import instant
from delivery_audit_airflow import uris

#: keys of a Connection's extra shown with their values in the log; every other key is named
#: only ("sasl.password=***")
SHOWN_KEYS = ("security.protocol", "sasl.mechanism", "sasl.mechanisms", "client.id",
              "ssl.endpoint.identification.algorithm")
#: consumer settings of a provider Connection (its placeholder has group.id) that a snapshot
#: does not use: it joins no group, commits nothing and reads every batch, markers included
CONSUMER_KEYS = ("group.id", "group.instance.id", "auto.offset.reset", "enable.auto.commit",
                 "isolation.level", "enable.partition.eof")
PREFLIGHT_TIMEOUT_S = 30.0


class SnapshotConfigError(ValueError):
    """The Kafka Connection cannot serve a snapshot (wrong type, no bootstrap.servers, a
    topic missing): the task fails without retrying."""


def client_config(conn_id: str) -> tuple[str, dict[str, str], list[str]]:
    """(bootstrap servers, the rest of the client config as strings, notes on what was left
    out) from the ``kafka`` Connection ``conn_id``, read through the provider's hook."""
    from airflow.providers.apache.kafka.hooks.base import CALLBACK_CONFIG_KEYS
    from airflow.providers.apache.kafka.hooks.client import KafkaAdminClientHook

    conn = KafkaAdminClientHook(kafka_config_id=conn_id).get_connection(conn_id)
    if conn.conn_type != "kafka":
        raise SnapshotConfigError(f"Connection {conn_id!r} is of type {conn.conn_type!r}; the "
                                  "snapshot needs a 'kafka' Connection (its extra: the client "
                                  "config)")
    extra = dict(conn.extra_dejson or {})
    bootstrap = str(extra.pop("bootstrap.servers", "") or "").strip()
    if not bootstrap:
        raise SnapshotConfigError(f"Connection {conn_id!r}: its extra has no bootstrap.servers")
    config: dict[str, str] = {}
    notes: list[str] = []
    for key, value in extra.items():
        if key in CALLBACK_CONFIG_KEYS or callable(value):
            notes.append(f"{key} (a callback: the snapshot's client takes no callbacks)")
        elif key in CONSUMER_KEYS:
            notes.append(f"{key} (the snapshot joins no group and reads every batch)")
        elif isinstance(value, (dict, list)) or value is None:
            notes.append(f"{key} (not a client setting: {type(value).__name__})")
        else:
            config[str(key)] = (str(value).lower() if isinstance(value, bool) else str(value))
    return bootstrap, config, notes


def describe_config(config: Mapping[str, str]) -> str:
    """The client config for the log: the values of :data:`SHOWN_KEYS`, every other key as
    ``key=***`` (a password, a token, a key file's passphrase are never printed)."""
    if not config:
        return "no client settings (PLAINTEXT)"
    return ", ".join(f"{k}={config[k]}" if k in SHOWN_KEYS else f"{k}=***"
                     for k in sorted(config))


def check_topics(conn_id: str, topics: list[str], timeout: float = PREFLIGHT_TIMEOUT_S,
                 log: Callable[[str], None] = print) -> dict[str, int] | None:
    """topic → partition count, through the provider's AdminClient on the Connection (the
    provider builds its config: resolved callbacks, MSK IAM / Google tokens); a topic the
    cluster does not have is a :class:`SnapshotConfigError`. None when the provider's client
    cannot be built from this config (a setting only the snapshot's client knows, such as
    sasl.oauthbearer.token.provider): the snapshot then checks the topics itself."""
    from airflow.providers.apache.kafka.hooks.client import KafkaAdminClientHook
    from confluent_kafka import KafkaException

    try:
        admin = KafkaAdminClientHook(kafka_config_id=conn_id).get_conn
    except (KafkaException, ValueError, TypeError) as exc:  # names a key, never a value
        log(f"topic check skipped: the provider's client cannot use Connection {conn_id!r} "
            f"({type(exc).__name__}: {str(exc)[:200]})")
        return None
    metadata = admin.list_topics(timeout=timeout)
    missing = [t for t in topics if t not in metadata.topics
               or metadata.topics[t].error is not None]
    if missing:
        raise SnapshotConfigError(f"topic(s) {', '.join(missing)} not on the cluster of "
                                  f"Connection {conn_id!r}")
    return {t: len(metadata.topics[t].partitions) for t in topics}


def replace_folder(staged: Path, target: str, files: uris.Files) -> list[str]:
    """Put the staged snapshot at ``target`` in place of what was there (a rerun of the window
    replaces it as a whole), ``offsets.json`` last; returns the relative paths written."""
    names = sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file())
    names.sort(key=lambda n: n == "offsets.json")  # the offsets file last
    if uris.is_s3(target):
        files.replace_prefix(staged, target, names)
        return names
    final = uris.local_path(target)
    final.parent.mkdir(parents=True, exist_ok=True)
    if staged.parent != final.parent:  # a rename needs the same folder (file system)
        sibling = final.parent / f".{final.name}.staging-{uuid.uuid4().hex[:8]}"
        shutil.copytree(staged, sibling)
        staged = sibling
    old = final.parent / f".{final.name}.old-{uuid.uuid4().hex[:8]}"
    if final.exists():
        final.rename(old)
    staged.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return names


def _staging_root(target: str) -> str | None:
    """Where to stage: next to a local target (one rename publishes it), else a temp folder."""
    if uris.is_s3(target):
        return None
    final = uris.local_path(target)
    final.parent.mkdir(parents=True, exist_ok=True)
    return str(final.parent)


def run_snapshot(plan: dict[str, Any], log: Callable[[str], None] = print,
                 take: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Take the plan's snapshot and publish it at ``plan["snapshot"]["dir"]``; a summary for
    XCom (counts and locations, no client config)."""
    from delivery_audit.snapshot import SnapshotRequest, take_snapshot

    snap = plan["snapshot"]
    conn_id = snap["kafka_conn_id"]
    bootstrap, config, notes = client_config(conn_id)
    partitions = check_topics(conn_id, list(snap["topics"]), log=log)
    topics = (", ".join(f"{t} ({n} partitions)" for t, n in partitions.items())
              if partitions else ", ".join(snap["topics"]))
    log(f"snapshot of {topics}"
        f" through Connection {conn_id!r} (from the {snap['kafka_conn_from']}): bootstrap "
        f"{bootstrap}, {describe_config(config)}; groups "
        f"{', '.join(snap['groups']) or 'none'}; from "
        f"{snap.get('from') or 'the log start'} to {snap['to']} → "
        f"{snap['dir']}")
    for note in notes:
        log(f"not passed to the snapshot's client: {note}")
    target = snap["dir"]
    staging = tempfile.mkdtemp(prefix=".delivery-audit-snapshot-", dir=_staging_root(target))
    try:
        out = Path(staging) / "snapshot"
        request = SnapshotRequest(bootstrap_servers=bootstrap, topics=tuple(snap["topics"]),
                                  out=str(out), groups=tuple(snap["groups"]),
                                  client_config=config, start=instant(snap.get("from")),
                                  end=instant(snap["to"]))
        result = (take or take_snapshot)(request)
        written = replace_folder(out, target, uris.on(plan.get("aws_conn_id")))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    broker = [n for n in written if n.startswith("broker/")]
    log(f"snapshot: {result.records} records and {result.controls} transaction markers in "
        f"{len(broker)} partition file(s) under {target}/broker/; offsets "
        f"{snap['offsets']}")
    return {"dir": target, "records": int(result.records), "controls": int(result.controls),
            "broker_files": broker, "offsets": snap["offsets"]}


__all__ = ["SnapshotConfigError", "check_topics", "client_config", "describe_config",
           "replace_folder", "run_snapshot"]
