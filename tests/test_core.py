"""The light core (delivery_audit.core, and delivery_audit.window on top of it) loads
nothing beyond the standard library: the Airflow plugin imports it, and DAG parsing must
stay light."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

from delivery_audit.core.s3uri import split_s3
from delivery_audit.core.timefmt import iso_z, iso_z_ms

HEAVY = ("pyspark", "great_expectations", "boto3", "botocore", "pandas", "pyarrow", "yaml",
         "airflow", "jinja2", "typer")


def test_the_core_imports_only_the_standard_library():
    code = ("import sys, json\n"
            "import delivery_audit.core.globs, delivery_audit.core.timefmt\n"
            "import delivery_audit.core.s3uri, delivery_audit.core.manifest\n"
            "import delivery_audit.core.process, delivery_audit.window\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(json.loads(out))
    assert "delivery_audit" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_iso_z_and_s3_split():
    assert iso_z(datetime(2026, 11, 19, 1, tzinfo=timezone(timedelta(hours=2)))) == \
        "2026-11-18T23:00:00Z"
    assert iso_z(datetime(2026, 11, 19)) == "2026-11-19T00:00:00Z"  # naive: UTC
    assert iso_z_ms(0) == "1970-01-01T00:00:00Z"
    assert iso_z(datetime(2026, 11, 19, 0, 0, 0, 5000, tzinfo=UTC)) == \
        "2026-11-19T00:00:00.005000Z"
    assert split_s3("s3://bucket/a/b.jsonl") == ("bucket", "a/b.jsonl")
    assert split_s3("s3://bucket") == ("bucket", "")
