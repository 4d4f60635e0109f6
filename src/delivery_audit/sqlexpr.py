"""Column expressions built as Spark SQL text in Python, sent to Spark in one call.

In a classic session every ``F.when``/``F.col``/``==`` … is a py4j round trip to the JVM.
The ingestion rules build thousands of them per source (12 fields × dozens of operators ×
fast path, strict path, VARIANT kinds): profiled on a small day, 116k py4j calls and ~10 s
per audit went to building the typing plans alone. Here the same expressions are plain
Python objects holding SQL text; a projection is one ``selectExpr`` call, parsed by Spark.

The API mirrors the subset of ``pyspark.sql.functions``/``Column`` the rules use, with the
same semantics (the text is what the functions stand for), so a rule reads the same
whichever it is built with::

    from delivery_audit import sqlexpr as S
    kind = S.col("seq__k")
    S.when(kind == "int", S.col("seq__s").try_cast("long")).alias("seq__v")

Every operand is parenthesised; string literals are escaped for Spark's default parser
(``spark.sql.parser.escapedStringLiterals`` false: backslashes and quotes escaped).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

__all__ = ["X", "col", "lit", "when", "coalesce", "concat", "concat_ws", "fn", "raw",
           "select", "struct", "map_literal", "over", "column"]


def _quote_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return str(v)
        if -(2**63) < v < 2**63:
            return f"{v}L"
        raise ValueError(f"integer literal out of the long range: {v}")
    if isinstance(v, float):
        return f"CAST({_quote_string(repr(v))} AS DOUBLE)"
    if isinstance(v, str):
        return _quote_string(v)
    raise TypeError(f"no SQL literal for {type(v).__name__}")


def _type_sql(t: str | T.DataType) -> str:
    return t.simpleString() if isinstance(t, T.DataType) else t


def _x(v: Any) -> X:
    return v if isinstance(v, X) else X(_literal(v))


def _ident(name: str) -> str:
    """A column name, or a dotted struct path, as quoted identifiers."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))


class X:
    """An expression as SQL text."""

    __slots__ = ("sql",)
    __hash__ = None  # type: ignore[assignment]  # == builds an expression

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def __repr__(self) -> str:
        return f"X({self.sql})"

    def _op(self, op: str, other: Any) -> X:
        return X(f"({self.sql} {op} {_x(other).sql})")

    def _rop(self, op: str, other: Any) -> X:
        return X(f"({_x(other).sql} {op} {self.sql})")

    def __eq__(self, other: Any) -> X:  # type: ignore[override]
        return self._op("=", other)

    def __ne__(self, other: Any) -> X:  # type: ignore[override]
        return self._op("!=", other)

    def __lt__(self, other: Any) -> X:
        return self._op("<", other)

    def __le__(self, other: Any) -> X:
        return self._op("<=", other)

    def __gt__(self, other: Any) -> X:
        return self._op(">", other)

    def __ge__(self, other: Any) -> X:
        return self._op(">=", other)

    def __and__(self, other: Any) -> X:
        return self._op("AND", other)

    def __or__(self, other: Any) -> X:
        return self._op("OR", other)

    def __invert__(self) -> X:
        return X(f"(NOT {self.sql})")

    def __add__(self, other: Any) -> X:
        return self._op("+", other)

    def __radd__(self, other: Any) -> X:
        return self._rop("+", other)

    def __sub__(self, other: Any) -> X:
        return self._op("-", other)

    def __rsub__(self, other: Any) -> X:
        return self._rop("-", other)

    def __bool__(self) -> bool:
        raise TypeError("an SQL expression has no truth value: use &, |, ~")

    def isNull(self) -> X:  # noqa: N802 - Column's name
        return X(f"({self.sql} IS NULL)")

    def isNotNull(self) -> X:  # noqa: N802 - Column's name
        return X(f"({self.sql} IS NOT NULL)")

    def isin(self, *values: Any) -> X:
        if len(values) == 1 and isinstance(values[0], list | tuple | set):
            values = tuple(values[0])
        return X(f"({self.sql} IN ({', '.join(_x(v).sql for v in values)}))")

    def rlike(self, pattern: str) -> X:
        return X(f"({self.sql} RLIKE {_literal(pattern)})")

    def startswith(self, prefix: str) -> X:
        return X(f"startswith({self.sql}, {_literal(prefix)})")

    def between(self, low: Any, high: Any) -> X:
        return X(f"({self.sql} BETWEEN {_x(low).sql} AND {_x(high).sql})")

    def cast(self, t: str | T.DataType) -> X:
        return X(f"CAST({self.sql} AS {_type_sql(t)})")

    def try_cast(self, t: str | T.DataType) -> X:
        return X(f"TRY_CAST({self.sql} AS {_type_sql(t)})")

    def alias(self, name: str) -> X:
        return X(f"{self.sql} AS {_ident(name)}")


class Case(X):
    """``when(...).when(...).otherwise(...)``: a CASE expression."""

    __slots__ = ("branches", "default")

    def __init__(self, branches: list[tuple[X, X]], default: X | None = None) -> None:
        self.branches, self.default = branches, default
        whens = " ".join(f"WHEN {c.sql} THEN {v.sql}" for c, v in branches)
        tail = f" ELSE {default.sql}" if default is not None else ""
        super().__init__(f"(CASE {whens}{tail} END)")

    def when(self, condition: Any, value: Any) -> Case:
        if self.default is not None:
            raise ValueError("when() after otherwise()")
        return Case([*self.branches, (_x(condition), _x(value))])

    def otherwise(self, value: Any) -> Case:
        return Case(self.branches, _x(value))


def col(name: str) -> X:
    return X(_ident(name))


def lit(value: Any) -> X:
    return X(_literal(value))


def raw(sql: str) -> X:
    """SQL text as it is (``F.expr``)."""
    return X(f"({sql})")


def when(condition: Any, value: Any) -> Case:
    return Case([(_x(condition), _x(value))])


def fn(name: str, *args: Any) -> X:
    """A call of a Spark SQL function: ``fn("lower", x)``."""
    return X(f"{name}({', '.join(_x(a).sql for a in args)})")


def coalesce(*args: Any) -> X:
    return fn("coalesce", *args)


def concat(*args: Any) -> X:
    return fn("concat", *args)


def concat_ws(sep: str, *args: Any) -> X:
    return fn("concat_ws", sep, *args)


def struct(**fields: Any) -> X:
    """``named_struct`` of these fields (expressions, column names are not taken)."""
    parts: list[Any] = []
    for name, value in fields.items():
        parts += [lit(name), _x(value)]
    return fn("named_struct", *parts)


def map_literal(items: list[tuple[Any, Any]], map_type: str) -> X:
    """A map literal of ``map_type`` (DDL, e.g. ``map<string,bigint>``) from (key, value)
    pairs of literals or expressions; an empty map is a typed null (lookups give null)."""
    if not items:
        return X(f"CAST(NULL AS {map_type})")
    args = [x for k, v in items for x in (_x(k), _x(v))]
    return fn("map", *args).cast(map_type)


def over(expr: X | str, partition: list[str], order: list[str] | None = None,
         frame: str | None = None) -> X:
    """A window function call: ``expr OVER (PARTITION BY … ORDER BY … frame)``; ``frame``
    e.g. ``"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"``."""
    text = expr.sql if isinstance(expr, X) else expr
    spec = "PARTITION BY " + ", ".join(_ident(c) for c in partition)
    if order:
        spec += " ORDER BY " + ", ".join(_ident(c) for c in order)
    if frame:
        spec += " " + frame
    return X(f"({text} OVER ({spec}))")


WHOLE = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
UPTO = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"


def select(df: DataFrame, *items: str | X) -> DataFrame:
    """``df.select(...)`` in one call: names (``"*"`` included) or expressions."""
    return df.selectExpr(*[i.sql if isinstance(i, X) else ("*" if i == "*" else _ident(i))
                           for i in items])


def column(x: X) -> Column:
    """The expression as a Column, for a DataFrame method that takes only Columns (a join
    condition, an aggregate): one call, like :func:`select`."""
    return F.expr(x.sql)
