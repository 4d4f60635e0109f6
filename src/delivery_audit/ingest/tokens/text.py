"""Text as the readers take it from Spark's line reader, bytes kept: lines with their
position, the size limit and UTF-8 validation that decide whether a line (a CSV record, a
Parquet text field) is parsed at all, and the text as the quarantine table shows it."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from ... import sqlexpr as S
from ...sqlexpr import X
from .columns import with_position

# A text line (JSON Lines) or CSV record longer than this is quarantined unparsed, with its
# own reason: parsing it (Jackson, VARIANT) would hold several copies of it in memory.
MAX_LINE_BYTES = 8 * 1024 * 1024
# a BOM opens a UTF-8 file; at the start of a line it is where a file began (files joined
# with cat): ignored there as at a file's start. Anywhere else it is a character.
BOM = "\ufeff"


def utf8_problem(text: X, where: str) -> X:
    """Null when ``text`` holds valid UTF-8, else why not, naming the byte offset of the
    first invalid byte (0-based, within ``where``). Spark keeps the bytes it read (its text
    reader, which JSON Lines and CSV go through, and Parquet): they are validated here,
    never decoded lossily (contract rule 4). The offset: the valid prefix before the first
    replacement character ``make_valid_utf8`` puts in, after any U+FFFD of the text itself
    is swapped for another 3-byte character (so it is not mistaken for one)."""
    fixed = S.fn("make_valid_utf8", S.fn("replace", text, S.lit("\ufffd"), S.lit("\u2603")))
    prefix = S.fn("substring", fixed, 1, S.fn("instr", fixed, S.lit("\ufffd")) - 1)
    return S.when(~S.fn("is_valid_utf8", text), S.concat(
        S.lit("not valid UTF-8 (byte offset "), S.fn("octet_length", prefix).cast("string"),
        S.lit(f" of {where})")))


def shown_text(text: X) -> X:
    """Text as the quarantine table shows it: invalid UTF-8 replaced (for display only)."""
    return S.when(S.fn("is_valid_utf8", text), text).otherwise(S.fn("make_valid_utf8", text))


def text_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """Text files as lines with their position, the bytes as read (Hadoop's line reader:
    ``\n``, ``\r\n`` or ``\r`` end a line); ``_text``: the line without a BOM opening it
    (where a file began), ``value``: the line as read."""
    return with_text(with_position(spark.read.text(files)))


def with_text(lines: DataFrame) -> DataFrame:
    """Lines (``_file``, ``_block``, ``_pos``, ``value``: the line as read) with ``_text``:
    the line without a BOM opening it."""
    value = S.col("value")
    text = S.when(S.fn("startswith", value, S.lit(BOM)), S.fn("substr", value, 2)).otherwise(value)
    return S.select(lines, "_file", "_block", "_pos", "value", text.alias("_text"))


def unusable(text: X, what: str) -> X:
    """Why a line or record cannot be parsed at all (over the size limit, not UTF-8; never
    parsed then), or null."""
    size = S.fn("octet_length", text)
    return S.when(size > MAX_LINE_BYTES, S.concat(
        S.lit(f"{what} of "), size.cast("string"),
        S.lit(f" bytes, over the {MAX_LINE_BYTES >> 20} MiB limit"))
    ).otherwise(utf8_problem(text, f"the {what}"))


def shown_line(text: X, err: X) -> X:
    """A line (record) as the quarantine shows it: invalid bytes replaced, one over the size
    limit cut to its first 1,000 characters."""
    return (S.when(err.isNull(), text)
            .when(S.fn("octet_length", text) > MAX_LINE_BYTES,
                  S.concat(S.fn("substring", shown_text(text), 1, 1000), S.lit("…")))
            .otherwise(shown_text(text)))
