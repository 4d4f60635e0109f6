"""Reading an adapter's input: a file's lines (gzip allowed, invalid UTF-8 an error row,
never decoded lossily), a JSON object of a line, and the values of a verifiable
client's record (integer, key, sequence number).

Adapters stream their input line by line; memory stays bounded by one line (plus, for
the client-log adapter, a small window of recently emitted events)."""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from typing import Any

from .options import SeqRule, extract_seq
from .writer import RowWriter

_ESCAPED = re.compile("[\udc80-\udcff]")  # an invalid byte, as surrogateescape reads it


def open_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without the line break) of a local file, gzip allowed.
    A UTF-8 byte order mark opening the file is not text (as in Spark's line reader).

    A line that is not valid UTF-8 is never decoded lossily (contract rule 4): it becomes
    an error row of ``w`` ("not valid UTF-8 (byte offset N of the line)", the line shown
    with the bad bytes replaced) and is not yielded."""
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
    with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape",
                          newline=None) as fh:
        for n, line in enumerate(fh, start=1):
            w.lines = n
            line = line.rstrip("\r\n")
            bad = _ESCAPED.search(line)
            if bad is not None:
                offset = len(line[:bad.start()].encode("utf-8", "surrogateescape"))
                shown = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                w.error(n, f"not valid UTF-8 (byte offset {offset} of the line)", shown)
                continue
            yield n, line


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object(line: str) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON object from a line, or the reason it is not one (strict JSON: no NaN or
    Infinity, which json.loads would take and json.dumps write back as invalid JSON)."""
    try:
        obj = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg}"
    except ValueError as exc:  # NaN, or a number of more than 4,300 digits
        return None, f"not valid JSON: {str(exc).splitlines()[0][:120]}"
    except RecursionError:
        return None, "not valid JSON: nested too deeply"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    return obj, None


def as_int(value: Any) -> int | None:
    """An integer from a JSON value (int, integral float or digit string), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def key_text(value: Any) -> tuple[str | None, bool]:
    """(key as the contract's string, ok): null, a string, or an integer's text."""
    if value is None or isinstance(value, str):
        return value, True
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), True
    return None, False


def record_key_seq(obj: dict[str, Any], rule: SeqRule) -> tuple[str | None, int | None,
                                                                 str | None]:
    """(key, seq, error) of a verifiable client's record line: the key as key_text has it
    and the seq extracted from the value; ``error`` is set when the key is not a string."""
    key, ok = key_text(obj.get("key"))
    if not ok:
        return None, None, "key is not a string"
    value = obj.get("value")
    return key, extract_seq(None if value is None else str(value), rule), None
