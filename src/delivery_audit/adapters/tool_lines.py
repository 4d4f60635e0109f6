"""The lines of a verifiable client's output as people paste them: JSON objects, among
which a terminal's ``^C`` (alone, or glued to the next line), an elided stretch (``...``)
and the tool's own log4j lines on stderr (``[2023-02-20 00:13:10,167] WARN …``) are
skipped with their own kind, never read as rows nor as errors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .lines import json_object, open_lines
from .writer import RowWriter

_LOG4J = re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\] "
                    r"(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL) ")
# "...", "…", "[...]", "(snip)", and the same after a comment sign ("# ...", "// ...")
_ELIDED = re.compile(r"^(?:#|//)?\s*(?:\.{3,}|…+|\[\.\.\.\]|\(\.\.\.\)|\(snip\)|<snip>)$",
                     re.IGNORECASE)


def is_log4j(text: str) -> bool:
    """A log4j line of the tool itself (``[2023-02-20 00:13:10,167] WARN …``)."""
    return bool(_LOG4J.match(text))


def is_elided(text: str) -> bool:
    """A line that stands for lines left out of a paste (``...``, ``…``, ``(snip)``,
    ``# ...``)."""
    return bool(_ELIDED.match(text.strip()))


def tool_json_lines(path: str, w: RowWriter) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, text, object) of each JSON-object line of a verifiable client's output.

    Skipped: blank lines, a lone ``^C`` (kind ``interrupt``; glued to a JSON object, it is
    dropped from it), ``...`` (``elided``), log4j lines (``tool_log_line``). Any other line
    that is not a JSON object is an error row."""
    for n, line in open_lines(path, w):
        text = line.strip()
        if text.startswith("^C"):
            text = text[2:].strip()
            if not text:
                w.skip(n, "interrupt")
                continue
        if not text:
            w.skip(n, "blank")
            continue
        if is_elided(text):
            w.skip(n, "elided")
            continue
        if _LOG4J.match(text):
            w.skip(n, "tool_log_line")
            continue
        obj, why = json_object(text)
        if obj is None:
            w.error(n, why or "not a JSON object", line)
            continue
        yield n, line, obj
