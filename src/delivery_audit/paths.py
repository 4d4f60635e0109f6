"""Validation of the places the auditor writes to: report roots, prefixes, window folders.

Every check raises :class:`PathError` (a ``ValueError``) with a message that says what is
allowed. The rules:

* no control or invisible format characters anywhere (NUL, newlines, tabs, DEL, C1 controls,
  bidi overrides, zero-width characters, line/paragraph separators);
* no ``..`` path segment, ever (nor ``.`` in S3 keys and prefixes): a report root may be
  absolute (``/srv/reports``), but nothing may climb out of it;
* a report root is a local path, ``file:///absolute/path`` or ``s3://bucket/prefix`` (also
  ``s3a://``); any other scheme is refused. An S3 bucket follows S3's naming rules; an S3
  prefix has no empty segment (``s3://b//etc``) and only ``A-Z a-z 0-9 . _ = + -``;
* a report prefix (below the root, e.g. a backfill's ``incidents/INC-123``) is 1–5
  ``/``-separated segments of ``A-Z a-z 0-9 . _ -`` that start with a letter or digit, at most
  200 characters: never absolute, never ``..``;
* a window id is ``YYYYMMDDTHHMMSSZ_YYYYMMDDTHHMMSSZ`` and a window folder
  ``dt=YYYY-MM-DD/<window id>``.
"""

from __future__ import annotations

import re
import unicodedata

PREFIX_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
PREFIX_RE = re.compile(rf"{PREFIX_SEGMENT}(?:/{PREFIX_SEGMENT}){{0,4}}")
PREFIX_MAX = 200
WINDOW_ID_RE = re.compile(r"\d{8}T\d{6}Z_\d{8}T\d{6}Z")
RELATIVE_DIR_RE = re.compile(r"dt=\d{4}-\d{2}-\d{2}/" + WINDOW_ID_RE.pattern)
S3_BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
S3_SEGMENT_RE = re.compile(r"[A-Za-z0-9._=+-]+")
ROOT_MAX = 1024
SCHEMES = ("s3", "s3a", "file")


class PathError(ValueError):
    """A location the auditor must not write to."""


def odd_characters(text: str) -> list[str]:
    """The control/format/separator characters in text, as escapes (e.g. ['\\x00'])."""
    return sorted({repr(c)[1:-1] if c.isascii() else f"U+{ord(c):04X}" for c in text
                   if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})


def check_plain_text(text: str, what: str) -> str:
    """Refuse control and invisible format characters."""
    bad = odd_characters(text)
    if bad:
        raise PathError(f"{what} contains control or invisible characters ({', '.join(bad)})")
    return text


def _no_dot_segments(segments: list[str], what: str, text: str) -> None:
    if any(s in (".", "..") for s in segments):
        raise PathError(f"{what} {text!r} contains a '.' or '..' segment: path traversal is "
                        "not allowed")


def check_prefix(prefix: str, what: str = "report prefix") -> str:
    """A relative prefix below a report root ('' allowed: the root itself)."""
    check_plain_text(prefix, what)
    if prefix == "":
        return prefix
    if len(prefix) > PREFIX_MAX or not PREFIX_RE.fullmatch(prefix):
        raise PathError(f"{what} {prefix!r} is not allowed: use letters, digits, '.', '_', '-' "
                        f"in up to 5 '/'-separated segments that start with a letter or digit, "
                        f"at most {PREFIX_MAX} characters (no '..', no leading '/')")
    _no_dot_segments(prefix.split("/"), what, prefix)  # unreachable by the pattern; kept
    return prefix


def check_window_id(window_id: str) -> str:
    if not isinstance(window_id, str) or not WINDOW_ID_RE.fullmatch(window_id):
        raise PathError(f"window id {window_id!r} is not YYYYMMDDTHHMMSSZ_YYYYMMDDTHHMMSSZ")
    return window_id


def check_relative_dir(relative_dir: str) -> str:
    """A window's folder below the report root: dt=YYYY-MM-DD/<window id>."""
    if not isinstance(relative_dir, str) or not RELATIVE_DIR_RE.fullmatch(relative_dir):
        raise PathError(f"window folder {relative_dir!r} is not dt=YYYY-MM-DD/<window id>")
    return relative_dir


def _check_s3(root: str, rest: str, what: str) -> str:
    bucket, _, prefix = rest.partition("/")
    if not S3_BUCKET_RE.fullmatch(bucket) or ".." in bucket:
        raise PathError(f"{what} {root!r}: {bucket!r} is not a valid S3 bucket name")
    prefix = prefix[:-1] if prefix.endswith("/") else prefix
    if prefix:
        segments = prefix.split("/")
        _no_dot_segments(segments, what, root)
        if any(s == "" for s in segments):
            raise PathError(f"{what} {root!r} has an empty segment ('//'): not allowed")
        bad = [s for s in segments if not S3_SEGMENT_RE.fullmatch(s)]
        if bad:
            raise PathError(f"{what} {root!r}: segment {bad[0]!r} has characters other "
                            "than letters, digits, '.', '_', '=', '+', '-'")
    return root


def check_report_root(root: str, what: str = "report root") -> str:
    """A report root (``--out``): local path, file:///path, s3://bucket[/prefix]."""
    if not isinstance(root, str) or not root.strip():
        raise PathError(f"{what} is empty")
    check_plain_text(root, what)
    if len(root) > ROOT_MAX:
        raise PathError(f"{what} is longer than {ROOT_MAX} characters")
    if "://" in root:
        scheme, rest = root.split("://", 1)
        if scheme.lower() not in SCHEMES:
            raise PathError(f"{what} {root!r}: scheme {scheme!r} is not supported "
                            "(a local directory, file:///path or s3://bucket/prefix)")
        if scheme.lower() in ("s3", "s3a"):
            return _check_s3(root, rest, what)
        if not rest.startswith("/"):
            raise PathError(f"{what} {root!r}: a file:// root must be absolute "
                            "(file:///path)")
        path = rest
    else:
        path = root
    if ".." in path.split("/"):  # '.' is harmless locally ("./reports")
        raise PathError(f"{what} {root!r} contains a '..' segment: path traversal is "
                        "not allowed (give the directory without '..', e.g. absolute)")
    return root
