"""Every canonical reader (JSON Lines, CSV, Parquet) on hostile rows, in one Spark run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fuzz.csv_rows import write_csv_example
from fuzz.jsonl_rows import write_jsonl_example
from fuzz.parquet_rows import write_parquet_example
from fuzz.rows import SEED, SOURCE, many, many_settings, run_examples


@many_settings()
@given(jsonl=many(st.tuples(SOURCE, SEED, st.integers(1, 2), st.booleans(), st.booleans())),
       csv_=many(st.tuples(SOURCE, SEED, st.integers(1, 3), st.booleans(), st.booleans())),
       parquet=many(st.tuples(SOURCE, SEED, st.integers(1, 3))))
def test_hostile_rows_of_every_reader(spark, tmp_path_factory, jsonl, csv_, parquet):
    """JSON Lines, CSV and Parquet examples in one file set, ingested at once (a source's
    files may mix formats): one Spark run for all three readers. Duplicates across files
    point at the other file: only same-file copies are checked."""
    run_examples(spark, tmp_path_factory.mktemp("fuzz-readers"),
                 [(write_jsonl_example, *e) for e in jsonl]
                 + [(write_csv_example, *e) for e in csv_]
                 + [(write_parquet_example, *e) for e in parquet])
