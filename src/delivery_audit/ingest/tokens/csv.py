"""CSV (RFC 4180) into the token frame: files grouped by header, lines joined into
records where a quoted field spans lines, each record parsed by Spark's ``from_csv``."""

from __future__ import annotations

import csv
import gzip
import zlib
from collections import defaultdict

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...schemas import FIELDS
from ...sqlexpr import X
from .columns import input_error, known_kind, token_columns, union_all
from .text import shown_line, text_lines, unusable


def _csv_header(path: str) -> tuple[str, ...]:
    """A CSV file's column names: its first record, read as RFC 4180 (a BOM at the start
    dropped; invalid bytes in a name replaced: no canonical name holds them)."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
            return tuple(next(csv.reader(fh), []))
    except (OSError, EOFError, zlib.error, csv.Error) as exc:
        raise input_error(f"{path}: cannot be read: {exc}") from exc


def _csv_groups(files: list[str]) -> dict[tuple[str, ...], list[str]]:
    """Group CSV files by their header, so each group is read with its own columns."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path in files:
        groups[_csv_header(path)].append(path)
    return groups


# A quote that opens or closes a quoted field (RFC 4180): at a line's start or end, or next
# to a comma (each quote counted once: "," is a closing and an opening quote), once doubled
# quotes ("" inside a quoted field) are removed. A line with an odd number of them ends
# inside a quoted field: the record goes on on the next line. A quote inside an unquoted
# field (ab"c, not RFC 4180 but common) is not one of them.
_FIELD_QUOTE = r'(?<=^|,)"|"(?=,|$)'


def _csv_records(lines: DataFrame) -> DataFrame:
    """Lines of CSV files → records (RFC 4180: a quoted field may hold line breaks), with
    the physical line each starts at (``_line_no``, 1-based) and its number in the file
    (``_rec``, the header is 1). One shuffle and one sort: lines are ordered per file by
    the windows, and a record's lines are contiguous in that order (no second exchange)."""
    structural = S.fn("regexp_count",
                      S.fn("regexp_replace", S.col("_text"), S.lit('""'), S.lit("")),
                      S.lit(_FIELD_QUOTE))
    odd = S.fn("pmod", structural, S.lit(2))
    order = ["_block", "_pos"]
    numbered = S.select(
        lines, "_file", *order, "_text",
        S.over("row_number()", ["_file"], order).alias("_n"),
        S.coalesce(S.over(f"sum({odd.sql})", ["_file"], order, S.BEFORE), S.lit(0))
        .alias("_open"))
    # the same order as above: Spark sorts the lines once for both windows
    starts = S.select(numbered, "*", S.over(
        "sum(CASE WHEN pmod(_open, 2) = 1 THEN 0 ELSE 1 END)", ["_file"], order, S.UPTO)
        .alias("_rec"))
    return (starts.groupBy("_file", "_rec").agg(
        F.min("_n").alias("_line_no"), F.count(F.lit(1)).alias("_lines"),
        F.expr("array_join(transform(sort_array(collect_list(struct(_n, _text))), "
               "x -> x._text), '\n')").alias("_text")))


# univocity's default (20,480) fails the whole task on one record with more cells; such a
# record is a bad row ("cells do not match the header"), not a bad file
_CSV_MAX_COLUMNS = 1_000_000


def read_csv(spark: SparkSession, files: list[str], source: str) -> DataFrame:
    """CSV as RFC 4180 (contract §2): a header row, fields quoted with ``"`` when they hold
    commas, quotes or line breaks, a quote inside a quoted field doubled, any line ending;
    an empty cell is null. Every value is text of kind string.

    Lines are read as bytes (:func:`text_lines`: UTF-8 validated, never decoded lossily),
    joined into records where a quoted field spans lines (:func:`_csv_records`), and each
    record parsed by Spark's ``from_csv``. A record's row number is the line it starts at,
    as for JSON Lines; the header and blank lines are not rows. A record whose cells do not
    match the header is quarantined (RFC 4180: every record has the header's fields)."""
    frames = []
    for header, group in _csv_groups(files).items():
        names = [n for n in header if header.count(n) == 1]  # a repeated name: ambiguous
        cell = {n: f"_c{i}" for i, n in enumerate(header) if n in names}
        ddl = ", ".join([f"_c{i} STRING" for i in range(len(header))] + ["_corrupt STRING"])
        options = ("map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt', "
                   f"'quote', '\"', 'escape', '\"', 'maxColumns', '{_CSV_MAX_COLUMNS}', "
                   "'ignoreLeadingWhiteSpace', 'false', 'ignoreTrailingWhiteSpace', 'false')")
        records = _csv_records(text_lines(spark, group))
        records = S.select(records, "*", unusable(S.col("_text"), "record").alias("_lerr"))
        blank = (S.col("_rec") == 1) | (
            (S.col("_lines") == 1) & S.col("_lerr").isNull() & S.col("_text").rlike(r"^[ \t]*$"))
        parsed = S.select(
            records, "_file", "_line_no", "_text", "_lerr", blank.alias("_blank"),
            S.raw(f"from_csv(CASE WHEN _lerr IS NULL AND NOT ({blank.sql}) THEN _text END, "
                  f"{S.lit(ddl).sql}, {options})").alias("_r"))
        lerr = S.col("_lerr")
        err = (S.when(S.col("_blank"), S.lit(None))
               .when(lerr.isNotNull(), lerr)
               .when(S.col("_r._corrupt").isNotNull(),
                     S.lit(f"cells do not match the header's {len(header)} columns")))
        cols: list[X] = []
        for f in FIELDS[source]:
            # (canonical names are ASCII: no invalid bytes in them)
            v = S.col(f"_r.{cell[f.name]}") if f.name in cell else S.lit(None).cast("string")
            cols += token_columns(f, known_kind(v, "string"), {"__s": v})
        frames.append(S.select(
            parsed, "_file", S.lit(-1).cast("bigint").alias("_block"),
            (S.col("_line_no") - 1).cast("bigint").alias("_pos"), "_blank",
            shown_line(S.col("_text"), lerr).alias("_raw"),
            err.cast("string").alias("_err"), *cols,
        ))
    return union_all(frames)
