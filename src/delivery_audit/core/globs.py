"""Which files an input pattern means: one glob semantics for the job and Airflow's sensor,
local paths and S3 keys alike. Standard library only (the Airflow plugin imports it).

* ``*`` and ``?`` stay within one path segment; ``**`` as a whole segment spans any number
  of directories (none included); ``[abc]``, ``[a-z]`` and ``[!abc]`` are character
  classes; ``{a,b}`` are alternatives (nested allowed), as in Hadoop's and the shell's globs.
* A wildcard never matches a name that starts with ``.`` unless the pattern's segment does
  (the POSIX rule: hidden files stay hidden).
* A pattern without wildcards names a file, or a folder (an S3 prefix): then every file
  below it, except names starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc`` files).
* A local pattern's doubled slashes (``data//ledger-*.jsonl``, as a shell variable ending
  in ``/`` makes it) are one, as for the shell and the OS; in an S3 key a doubled slash is
  part of the key and stays literal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

_WILD = re.compile(r"[*?\[]")
_HIDDEN = (".", "_")
_SLASHES = re.compile(r"/{2,}")


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}f`` → ``abf``, ``acdf``, ``acef``; a brace without a partner is literal."""
    depth, start = 0, -1
    for i, c in enumerate(pattern):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                body, options, level, last = pattern[start + 1:i], [], 0, 0
                for j, d in enumerate(body):
                    level += (d == "{") - (d == "}")
                    if d == "," and level == 0:
                        options.append(body[last:j])
                        last = j + 1
                options.append(body[last:])
                head, tail = pattern[:start], pattern[i + 1:]
                return [x for o in options for x in expand_braces(head + o + tail)]
    return [pattern]


def has_wildcard(pattern: str) -> bool:
    return _WILD.search(pattern) is not None


def _segment(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and seg.find("]", i + 2) != -1:  # a class ("]" first is a member)
            j = seg.find("]", i + 2)
            body = seg[i + 1:j].replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    hidden_guard = r"(?!\.)" if seg[:1] in ("*", "?", "[") else ""
    return hidden_guard + "".join(out)


def to_regex(pattern: str) -> re.Pattern[str]:
    """One brace-free pattern as a regex over whole '/'-separated paths."""
    segs = pattern.split("/")
    rx = ""
    for k, seg in enumerate(segs):
        last = k == len(segs) - 1
        if seg == "**":
            rx += r"(?:(?!\.)[^/]+(?:/(?!\.)[^/]+)*)?" if last else r"(?:(?!\.)[^/]+/)*"
        else:
            rx += _segment(seg) + ("" if last else "/")
    return re.compile(rx)


def literal_prefix(pattern: str) -> str:
    """The part of a pattern before its first wildcard or brace: where to list from."""
    m = re.search(r"[*?\[{]", pattern)
    return pattern if m is None else pattern[:m.start()]


def select(pattern: str, candidates: Iterable[str]) -> list[str]:
    """The candidates (file paths or S3 keys, each once) the pattern means, sorted."""
    candidates = list(candidates)
    chosen: set[str] = set()
    for p in expand_braces(pattern):
        if not has_wildcard(p):
            folder = p.rstrip("/") + "/"
            chosen.update(c for c in candidates if c == p or (
                c.startswith(folder) and not c.rsplit("/", 1)[-1].startswith(_HIDDEN)))
        else:
            rx = to_regex(p)
            chosen.update(c for c in candidates if rx.fullmatch(c))
    return sorted(chosen)


def local_files(pattern: str) -> list[str]:
    """The local files a pattern means (``~`` expanded, ``//`` read as ``/``)."""
    pattern = _SLASHES.sub("/", os.path.expanduser(pattern))
    prefix = literal_prefix(pattern)
    if prefix == pattern:  # no wildcard, no brace: a file, or a folder to walk
        return [pattern] if os.path.isfile(pattern) else select(pattern, _walk(pattern, None))
    # below the folder the pattern starts in, no deeper than its segments reach (any
    # depth with **)
    top = os.path.dirname(prefix)
    depth = None if "**" in pattern else max(
        p.count("/") for p in expand_braces(pattern[len(top):].lstrip("/")))
    return select(pattern, _walk(top, depth))


def _walk(top: str, depth: int | None) -> Iterable[str]:
    """Files below ``top`` (``""``: the working folder, paths relative to it), descending at
    most ``depth`` folders (None: all)."""
    root = top or "."
    if not os.path.isdir(root):
        return
    base = root.rstrip("/").count("/")
    for folder, dirs, files in os.walk(root):
        if depth is not None and folder.rstrip("/").count("/") - base >= depth:
            dirs.clear()
        for name in files:
            path = os.path.join(folder, name)
            yield path[2:] if not top and path.startswith("./") else path


def s3_keys(key_pattern: str, list_keys: Callable[[str], Iterable[str]]) -> list[str]:
    """The keys of one bucket a key pattern means; ``list_keys(prefix)`` lists the bucket's
    keys under a prefix (folder markers, keys ending in '/', are not files)."""
    prefix = literal_prefix(key_pattern)
    keys = [k for k in list_keys(prefix) if not k.endswith("/")]
    return select(key_pattern, keys)
