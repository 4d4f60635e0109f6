"""Files that are not what their name says, unreadable adapter input, Parquet schemas that
disagree between files."""

from __future__ import annotations

import gzip
import io
import random

import pytest

from delivery_audit.adapters import convert
from delivery_audit.config import AuditConfig
from delivery_audit.ingest import InputError, ingest, resolve
from fuzz.rows import ADAPTER_CONFIG, WINDOW

# ------------------------------------------------------------------------- unreadable files


def _parquet_bytes() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"topic": ["o"] * 50, "partition": list(range(50)),
                             "offset": list(range(50))}), buf)
    return buf.getvalue()


def _unreadable_files() -> dict[str, tuple[bytes, str]]:
    """name → (content, a phrase the error must contain)."""
    jsonl = b'{"topic": "o", "partition": 0, "offset": 1}\n' * 2000
    pq_bytes = _parquet_bytes()
    return {
        "notgzip.jsonl.gz": (b"plain text, not gzip\n", "not gzip"),
        "truncated.jsonl.gz": (gzip.compress(jsonl)[:300], "truncated gzip"),
        "corrupt.csv.gz": (gzip.compress(b"topic,partition,offset\n" + b"o,0,1\n" * 500)[:40]
                           + b"\x00" * 64 + gzip.compress(b"x")[40:], "gzip"),
        "truncated.parquet": (pq_bytes[: len(pq_bytes) // 2], "not a Parquet file"),
        "cut-in-the-middle.parquet": (pq_bytes[:8] + pq_bytes[len(pq_bytes) // 2:],
                                      "Parquet"),
        "json.parquet": (b'{"topic": "o"}\n' * 20, "not a Parquet file"),
        "tiny.parquet": (b"PAR1", "not a Parquet file"),
        "garbage.jsonl": (random.Random(1).randbytes(5000), "not UTF-8 text"),
        "garbage.csv": (random.Random(2).randbytes(5000), "not UTF-8 text"),
        "gzip-named-plain.jsonl": (gzip.compress(jsonl), "name it .gz"),
        "parquet-named.jsonl": (pq_bytes, "Parquet"),
        "utf16.jsonl": ('{"topic": "o"}\n'.encode("utf-16"), "UTF-16"),
        "utf16-no-bom.csv": ("topic,partition\no,1\n".encode("utf-16-le"), "not UTF-8 text"),
    }


@pytest.mark.parametrize("name", sorted(_unreadable_files()))
def test_a_file_that_is_not_what_its_name_says_fails_naming_it(tmp_path, name):
    """Caught when the inputs are resolved (no Spark job): an InputError naming the file."""
    content, phrase = _unreadable_files()[name]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        resolve("broker", [str(path)])
    assert name in str(err.value) and phrase in str(err.value), str(err.value)
    assert "\tat " not in str(err.value) and "Py4J" not in str(err.value)


def test_unreadable_adapter_input_fails_naming_it(tmp_path):
    """A truncated gzip'd tool output is read by the adapter, not Spark: same message."""
    path = tmp_path / "dump.log.gz"
    path.write_bytes(gzip.compress(b"| offset: 0 CreateTime: 1 keySize: -1 payload: 1\n"
                                   * 3000)[:200])
    with pytest.raises(InputError) as err:
        convert("kafka-dump-log", "broker", [str(path)], ["s3://b/dump.log.gz"],
                tmp_path / "out", ADAPTER_CONFIG)
    assert "s3://b/dump.log.gz" in str(err.value)


def test_parquet_files_with_conflicting_column_types_are_read_each_by_its_own(
        spark, tmp_path):
    """partition int32 in one file, string in another, a `_metadata` column in a third:
    no schema-merge failure, each value typed by its file's column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"topic": ["o"], "partition": pa.array([1], pa.int32()),
                             "offset": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"topic": ["o"], "partition": ["2"], "offset": [2]}),
                   tmp_path / "b.parquet")
    pq.write_table(pa.table({"topic": ["o", "o"], "partition": [3.0, float("nan")],
                             "offset": [3, 4], "_metadata": ["x", "y"], "_file": ["f", "g"]}),
                   tmp_path / "c.parquet")
    result = ingest(spark, resolve("broker", [str(tmp_path / "*.parquet")]), WINDOW,
                    AuditConfig())
    assert result.counts["rows_read"] == 4 and result.counts["rows_quarantined"] == 1
    assert sorted(r["partition"] for r in result.valid.collect()) == [1, 2, 3]
    (bad,) = result.quarantine.collect()
    assert bad["file"].endswith("c.parquet") and bad["row"] == 2
    assert bad["reason"] == "field 'partition': not an integer 'NaN'"
