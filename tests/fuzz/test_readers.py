"""Every canonical reader (JSON Lines, CSV, Parquet) on hostile rows, in one Spark run.

In CI (``make test``: FUZZ_EXAMPLES 4, derandomized, so the same examples every run) a run
has four examples per reader, one per source, whose plans draw every mutation kind of the
reader: the test checks it, so a change that narrows what CI draws fails here."""

from __future__ import annotations

from hypothesis import given

from delivery_audit.schemas import SOURCES
from fuzz.csv_rows import CSV_MUTATIONS, write_csv_example
from fuzz.jsonl_rows import JSONL_MUTATIONS, write_jsonl_example
from fuzz.parquet_rows import PARQUET_MUTATIONS, write_parquet_example
from fuzz.rows import DRAWN, FUZZ_EXAMPLES, many, many_settings, run_examples


@many_settings()
@given(jsonl=many(files=2, flags=2, salt=1), csv_=many(files=3, flags=2, salt=2),
       parquet=many(files=3, salt=3))
def test_hostile_rows_of_every_reader(spark, tmp_path_factory, jsonl, csv_, parquet):
    """JSON Lines, CSV and Parquet examples in one file set, ingested at once (a source's
    files may mix formats): one Spark run for all three readers. Duplicates across files
    point at the other file: only same-file copies are checked."""
    DRAWN.clear()
    run_examples(spark, tmp_path_factory.mktemp("fuzz-readers"),
                 [(write_jsonl_example, *e) for e in jsonl]
                 + [(write_csv_example, *e) for e in csv_]
                 + [(write_parquet_example, *e) for e in parquet])
    if FUZZ_EXAMPLES >= len(SOURCES):  # what a run draws: every source and kind per reader
        for examples, kinds in ((jsonl, JSONL_MUTATIONS), (csv_, CSV_MUTATIONS),
                                (parquet, PARQUET_MUTATIONS)):
            assert {e[0] for e in examples} == set(SOURCES)
            assert DRAWN[tuple(kinds)] == set(kinds), sorted(set(kinds) - DRAWN[tuple(kinds)])
