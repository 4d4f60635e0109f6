"""The token frame's columns as every reader builds them: a field's kind and value
columns, the scan's position columns, column names quoted; and what the readers share
(their union, their input error)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ... import sqlexpr as S
from ...errors import InputError
from ...schemas import Field
from ...sqlexpr import X

INTEGER_KINDS = ("long", "nonneg_long", "int", "nonneg_int")
# the typed value column of each native kind; every other kind travels as text (``__s``)
VALUE_COLUMNS = {"int": "__i", "timestamp": "__t", "bool": "__b"}
_VALUE_TYPES = {"__i": "bigint", "__t": "timestamp", "__b": "boolean", "__s": "string"}


def quoted(name: str) -> str:
    """A column name as a Spark identifier (names may hold dots or backticks)."""
    return "`" + name.replace("`", "``") + "`"


def _data_columns(df: DataFrame) -> list[str]:
    """The file's own columns, without those whose names start with "_": they could
    collide with the token frame's columns (``_file``, ``_pos`` …) or hide Spark's
    ``_metadata`` column; no canonical field starts with "_"."""
    return [c for c in df.columns if not c.startswith("_")]


def with_position(df: DataFrame) -> DataFrame:
    """Keep the data columns and add _file/_block/_pos right above the scan, before
    anything can reorder rows. ``metadataColumn`` reaches the file metadata even when
    the file has a column named ``_metadata``."""
    meta = df.metadataColumn("_metadata")
    return df.select(
        *[quoted(c) for c in _data_columns(df)],
        meta.getField("file_path").alias("_file"),
        meta.getField("file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_pos"),
    )


def token_columns(f: Field, kind: X, values: dict[str, X],
                  columns: tuple[str, ...] | None = None) -> list[X]:
    """A field's token columns: its kind and its value columns (``values`` by suffix,
    ``"__s"`` for text). Only the value columns given (or named in ``columns``, null
    where not given) exist: the fast path tests the kinds whose columns it finds."""
    names = columns if columns is not None else tuple(values)
    return [kind.alias(f"{f.name}__k"),
            *[(values[x] if x in values else S.lit(None)).cast(_VALUE_TYPES[x])
              .alias(f"{f.name}{x}") for x in _VALUE_TYPES if x in names]]


def text_columns(f: Field, columns: list[str]) -> dict[str, X]:
    """A field's value columns present in a token frame, by suffix."""
    return {x: S.col(f"{f.name}{x}") for x in _VALUE_TYPES if f"{f.name}{x}" in columns}


def known_kind(value: X, kind: str) -> X:
    return S.when(value.isNull(), S.lit("null")).otherwise(S.lit(kind))


def union_all(frames: list[DataFrame]) -> DataFrame:
    """Frames of the same columns, by name, as one."""
    out = frames[0]
    for other in frames[1:]:
        out = out.unionByName(other)
    return out


def input_error(message: str) -> Exception:
    return InputError(message)
