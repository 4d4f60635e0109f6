"""A kcat ``-f`` format string → the patterns of the lines it prints, as kcat 1.7 parses it
(``fmt_parse`` in kcat's format.c): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k``
key, ``%K`` key length (-1 for a null key), ``%s`` payload, ``%S`` payload length (-1 for
null), ``%T`` timestamp (ms), ``%h`` headers (``n=v,n2=v2``, a null value ``NULL``), ``%%``
a percent sign, and literal text in which ``\\n \\r \\t``, ``\\xHH`` and ``\\NNN`` are
escapes (any other ``\\c`` is ``c``). ``%R`` (a binary length) prints bytes, not text, and
is refused.

A format with line breaks inside (kcat's README prints a record over five lines) gives one
pattern per line of a record. Whitespace in the literal text matches any run of spaces and
tabs (pasted output turns tabs into spaces and loses trailing ones). Free-text fields
(``%k``, ``%h``) match as little as they can and the payload (``%s``) as much as it can:
a key with the separator inside is split wrongly, which ``%K`` in the format catches."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError

FIELDS = {"t": "topic", "p": "partition", "o": "offset", "k": "key", "K": "key_len",
          "s": "payload", "S": "payload_len", "T": "timestamp", "h": "headers"}
_NUMBER = r"-?[0-9]+"
_PATTERNS = {"topic": r"[A-Za-z0-9._-]+", "partition": _NUMBER, "offset": _NUMBER,
             "key_len": _NUMBER, "payload_len": _NUMBER, "timestamp": _NUMBER,
             "key": r".*?", "headers": r".*?", "payload": r".*"}
_BREAK = re.compile(r"\r\n|\r|\n")
_SPACE = re.compile(r"[ \t]+")


@dataclass(frozen=True)
class LinePattern:
    regex: re.Pattern[str]
    fields: tuple[str, ...]  # the fields this line carries, in order


@dataclass(frozen=True)
class Format:
    text: str  # as given
    lines: tuple[LinePattern, ...]  # one per line of a record

    @property
    def fields(self) -> set[str]:
        return {f for line in self.lines for f in line.fields}


def unescape(text: str) -> str:
    """kcat's escapes in literal text (fmt_add): \\t \\n \\r, \\xHH, \\NNN (C's strtoul
    with base 0: 0NN octal, 0xNN hex, else decimal), any other \\c is c."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        i += 1
        c = text[i]
        simple = {"t": "\t", "n": "\n", "r": "\r"}
        if c in simple:
            out.append(simple[c])
            i += 1
            continue
        if c == "x":
            m = re.match(r"[0-9A-Fa-f]+", text[i + 1:])
            if m:
                out.append(chr(int(m.group(0), 16) & 0xFF))
                i += 1 + len(m.group(0))
            else:
                out.append("\0")  # strtoul read nothing: kcat writes a NUL
                i += 1
            continue
        m = re.match(r"0[xX][0-9A-Fa-f]+|0[0-7]*|[1-9][0-9]*", text[i:])
        if m:
            digits = m.group(0)
            base = 16 if digits[:2].lower() == "0x" else 8 if digits.startswith("0") else 10
            out.append(chr(int(digits, base) & 0xFF))
            i += len(digits)
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _tokens(fmt: str) -> list[tuple[str, str]]:
    """("lit", text) and ("field", name) pieces, literal text unescaped."""
    out: list[tuple[str, str]] = []
    rest = fmt
    while rest:
        at = rest.find("%")
        if at < 0:
            out.append(("lit", unescape(rest)))
            break
        if at:
            out.append(("lit", unescape(rest[:at])))
        code = rest[at + 1:at + 2]
        if code == "%":
            out.append(("lit", "%"))
        elif code in FIELDS:
            out.append(("field", FIELDS[code]))
        elif not code:
            raise InputError(f"kcat format '{fmt}': ends with a lone %")
        else:
            raise InputError(f"kcat format '{fmt}': %{code} is not a text field kcat prints "
                             f"(one of {', '.join('%' + c for c in FIELDS)})")
        rest = rest[at + 2:]
    return out


def _literal(text: str, first: bool, last: bool) -> str:
    parts = []
    for i, piece in enumerate(_SPACE.split(text)):
        if i:
            parts.append(r"[ \t]+")
        parts.append(re.escape(piece))
    pattern = "".join(parts)
    if last:  # trailing blanks may be lost in a paste
        pattern = re.sub(r"(?:\[ \\t\]\+)+$", r"[ \\t]*", pattern)
    if first:
        pattern = re.sub(r"^(?:\[ \\t\]\+)+", r"[ \\t]*", pattern)
    return pattern


def parse_format(fmt: str) -> Format:
    """The line patterns of a kcat ``-f`` format (InputError naming what is wrong)."""
    tokens = _tokens(fmt)
    lines: list[list[tuple[str, str]]] = [[]]
    for kind, value in tokens:
        if kind == "field":
            lines[-1].append((kind, value))
            continue
        pieces = _BREAK.split(value)
        for j, piece in enumerate(pieces):
            if j:
                lines.append([])
            if piece:
                lines[-1].append(("lit", piece))
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the record's closing line break
    patterns: list[LinePattern] = []
    for line in lines:
        regex: list[str] = []
        names: list[str] = []
        for i, (kind, value) in enumerate(line):
            if kind == "lit":
                regex.append(_literal(value, i == 0, i == len(line) - 1))
            elif value in names:  # a field printed twice: the same text again
                regex.append(f"(?P={value})")
            else:
                names.append(value)
                regex.append(f"(?P<{value}>{_PATTERNS[value]})")
        patterns.append(LinePattern(re.compile("".join(regex) or r"[ \t]*"), tuple(names)))
    parsed = Format(fmt, tuple(patterns))
    if "offset" not in parsed.fields:
        raise InputError(f"kcat format '{fmt}' has no %o: a record without its offset "
                         "cannot be placed (print it with -f '… %o …')")
    return parsed


__all__ = ["FIELDS", "Format", "LinePattern", "parse_format", "unescape"]
