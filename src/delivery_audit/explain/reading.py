"""What explain reads of a published report folder, local or ``s3://``: report.json and
the ``anomalies/`` and ``evidence/`` tables (as pyarrow tables, timestamps in UTC), and
:func:`rows`, the filter every later step reads them through."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.manifest import MANIFEST, Manifest
from ..core.s3uri import split_s3
from ..storage.retry import MISSING_CODES, error_code, with_retry
from ..storage.s3 import make_s3_client


class ExplainError(ValueError):
    """The report cannot be read, or the question is malformed."""


@dataclass
class Published:
    """What explain reads of a published report folder."""

    location: str
    report: dict[str, Any]
    anomalies: Any  # pyarrow.Table
    evidence: Any | None  # pyarrow.Table; None: published before the evidence table


def _table(blobs: list[bytes]) -> Any:
    # pyarrow where it is used (~0.7 s measured): importing explain costs nothing until a
    # report is read
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(pa.BufferReader(b)) for b in blobs]
    return _utc(pa.concat_tables(tables, promote_options="permissive")) if tables else None


def _utc(table: Any) -> Any:
    """Every timestamp column as microseconds in UTC (Spark writes INT96: naive, ns)."""
    import pyarrow as pa  # lazily, as in _table

    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(
                pa.timestamp("us", tz="UTC")))
    return table


def load(location: str) -> Published:
    """The report folder at ``location``: a local directory or ``s3://bucket/prefix``."""
    if location.startswith(("s3://", "s3a://")):
        return _load_s3(location)
    folder = Path(location)
    if not (folder / "report.json").is_file():
        raise ExplainError(f"{location} is not a report folder (no report.json)")

    def parts(name: str) -> list[bytes]:
        return [p.read_bytes() for p in sorted((folder / name).glob("*.parquet"))]

    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return Published(location, report, _table(parts("anomalies")), _table(parts("evidence")))


def _load_s3(uri: str) -> Published:
    bucket, prefix = split_s3(uri)
    prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
    client = make_s3_client()

    def get(key: str) -> bytes:
        return with_retry(f"get s3://{bucket}/{key}", lambda: client.get_object(
            Bucket=bucket, Key=key)["Body"].read())

    try:
        manifest = Manifest.parse(get(prefix + MANIFEST))
    except Exception as exc:  # noqa: BLE001 - botocore's error classes are dynamic
        if error_code(exc) in MISSING_CODES:
            raise ExplainError(f"no published report at {uri} (no {MANIFEST})") from None
        raise
    blobs: dict[str, bytes] = {}
    for f in manifest.files:
        if f.path == "report.json" or f.path.split("/")[0] in ("anomalies", "evidence") \
                and f.path.endswith(".parquet"):
            data = get(prefix + f.path)
            if hashlib.sha256(data).hexdigest() != f.sha256:
                raise ExplainError(f"{uri}/{f.path} differs from its manifest entry: the "
                                   "report is being replaced; try again")
            blobs[f.path] = data
    if "report.json" not in blobs:
        raise ExplainError(f"no report.json in the manifest of {uri}")

    def parts(name: str) -> list[bytes]:
        return [b for p, b in sorted(blobs.items()) if p.startswith(name + "/")]

    return Published(uri, json.loads(blobs["report.json"]), _table(parts("anomalies")),
                     _table(parts("evidence")))


def rows(table: Any, **equal: Any) -> list[dict[str, Any]]:
    """The rows of a pyarrow table whose columns equal the given values (None: no filter)."""
    import pyarrow.compute as pc  # lazily, as in _table

    if table is None:
        return []
    mask = None
    for name, value in equal.items():
        if value is None:
            continue
        m = pc.fill_null(pc.equal(table[name], value), False)
        mask = m if mask is None else pc.and_(mask, m)
    return (table if mask is None else table.filter(mask)).to_pylist()
