"""Resolve input globs to files: local paths, or s3:// URIs staged through boto3."""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from ..adapters import ADAPTERS, AUTO
from ..core.globs import local_files, s3_keys
from ..core.s3uri import key_lister, split_s3
from ..errors import InputError
from ..fields import SOURCES
from .pruning import Bounds, keep

FORMATS = ("jsonl", "csv", "parquet")
# Real-world formats (contract §6), converted to canonical JSON Lines by adapters/ first:
# format name -> the sources it can feed, from the one registry (adapters.ADAPTERS); with
# ``auto`` each file's adapter is sniffed from its content (adapters/sniff.py), checked per file.
ADAPTER_FORMATS: dict[str, tuple[str, ...]] = {
    **{fmt: module.SOURCES for fmt, module in ADAPTERS.items()},
    AUTO: SOURCES,
}


@dataclass(frozen=True)
class ResolvedInput:
    source: str
    fmt: str
    files: tuple[str, ...]  # local paths (staged copies for s3)
    origins: tuple[str, ...]  # what the user named (s3 URIs or local paths), same order
    bytes: int
    pruned: int = 0  # files matched but skipped: their date/hour partition is out of bounds


def detect_format(path: str) -> str:
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".parquet") or name.endswith(".pq"):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    return "jsonl"


MIXED = "mixed"  # a source whose files are of several canonical formats


def file_format(fmt: str, path: str) -> str:
    """The format one file of a source is read in."""
    return detect_format(path) if fmt == MIXED else fmt


def _check_magic(path: str, fmt: str) -> None:
    """Fail early, naming the file, when a file is not what its name says."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if fmt == "parquet":
                size = os.path.getsize(path)
                if size < 12:
                    raise InputError(f"{path}: not a Parquet file (only {size} bytes)")
                fh.seek(-4, os.SEEK_END)
                tail = fh.read(4)
                if head != b"PAR1" or tail != b"PAR1":
                    raise InputError(f"{path}: not a Parquet file (bad magic bytes; "
                                     "truncated or another format)")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror}") from exc
    gz = path.lower().endswith(".gz")
    if gz and head[:2] != b"\x1f\x8b":
        raise InputError(f"{path}: named .gz but is not gzip data")
    if fmt == "parquet":
        _check_parquet_footer(path)
        return
    if gz and fmt in FORMATS:  # Spark reads it; adapters report a bad stream themselves
        _check_gzip_stream(path)
    _check_text(path, fmt, head, gz)


_SAMPLE = 64 * 1024


def _check_parquet_footer(path: str) -> None:
    """Magic bytes at both ends are not enough (a file cut and patched, a corrupt footer):
    the footer must parse, else Spark fails later with a stack trace."""
    try:
        pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises several types for a bad footer
        raise InputError(f"{path}: not a readable Parquet file (corrupt or truncated "
                         f"footer: {str(exc).splitlines()[0][:200]})") from exc


def _check_gzip_stream(path: str) -> None:
    """Decompress the whole file (bounded memory): a truncated or corrupt gzip stream
    fails here with its name, not mid-job. Costs one streaming pass over the file."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: corrupt or truncated gzip data "
                         f"({type(exc).__name__}: {exc})") from exc


def _check_text(path: str, fmt: str, head: bytes, gz: bool) -> None:
    """A text input (JSON Lines, CSV, a tool's output) that is plainly something else:
    gzip data without the .gz name, a Parquet file, UTF-16, or binary data. A few bad
    bytes are bad rows (quarantined); a file mostly made of them is not text at all."""
    if not gz and head[:2] == b"\x1f\x8b" and fmt != "text":  # adapters detect gzip
        raise InputError(f"{path}: gzip data in a file not named .gz (name it .gz)")
    try:
        opener = gzip.open if gz or head[:2] == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            sample = fh.read(_SAMPLE)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: corrupt or truncated gzip data "
                         f"({type(exc).__name__}: {exc})") from exc
    what = "the text" if not gz else "the decompressed text"
    if sample[:4] == b"PAR1":
        raise InputError(f"{path}: a Parquet file, not {fmt} (name it .parquet)")
    if sample[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError(f"{path}: UTF-16 text; inputs must be UTF-8")
    if len(sample) == _SAMPLE:  # do not judge a character cut at the sample's end
        sample = sample[:-4]
    if not sample:
        return
    decoded = sample.decode("utf-8", errors="replace")
    bad = decoded.count("\ufffd") + sum(
        1 for c in decoded if c < " " and c not in "\t\n\r\f\x1b")
    if bad > 16 and bad > len(decoded) // 10:
        raise InputError(f"{path}: not UTF-8 text ({bad} of the first {len(decoded)} "
                         f"characters of {what} are binary or invalid UTF-8)")


def _expand_local(pattern: str) -> list[str]:
    """The local files a pattern means (delivery_audit.globs: the sensor's semantics too)."""
    return local_files(pattern)


def local_size(patterns: list[str]) -> int | None:
    """The bytes of the local files the patterns match (before the window's pruning), or
    None when a pattern names S3 (its size is not known without listing it)."""
    total = 0
    for pattern in patterns:
        if "://" in pattern:
            return None
        total += sum(os.path.getsize(f) for f in _expand_local(pattern))
    return total


def _expand_s3(pattern: str, stage_dir: Path, s3_client=None,
               bounds: Bounds | None = None) -> tuple[list[tuple[str, str]], int]:
    import boto3  # only when an input is on S3: boto3 costs ~0.3 s to import (-X importtime)

    client = s3_client or boto3.client("s3")
    bucket, key_pattern = split_s3(pattern)
    out: list[tuple[str, str]] = []
    pruned = 0
    try:
        for key in s3_keys(key_pattern, key_lister(client, bucket)):
            if not keep(key, bounds):
                pruned += 1
                continue
            local = stage_dir / bucket / key
            local.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(bucket, key, str(local))
            out.append((f"s3://{bucket}/{key}", str(local)))
    except Exception as exc:  # botocore errors carry no secrets in their text
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{pattern}: cannot list or download: {type(exc).__name__}: {exc}") \
            from exc
    return sorted(out), pruned


def resolve(source: str, patterns: list[str] | str | None, fmt: str | None = None,
            required: bool = True, stage_dir: Path | None = None,
            s3_client=None, bounds: Bounds | None = None) -> ResolvedInput | None:
    """Expand the patterns of one source to files; None for an absent optional source.

    With ``bounds``, files whose date/hour partition lies outside them are skipped
    (counted in ``pruned``; S3 objects are then not even downloaded)."""
    if isinstance(patterns, str):
        patterns = [patterns]
    patterns = [p for p in (patterns or []) if p]
    if not patterns:
        if required:
            raise InputError(f"no input given for {source}")
        return None
    origins: list[str] = []
    files: list[str] = []
    pruned = 0
    for pattern in patterns:
        if pattern.startswith("s3://"):
            stage = stage_dir or Path(tempfile.mkdtemp(prefix="delivery-audit-stage-"))
            pairs, skipped = _expand_s3(pattern, stage, s3_client, bounds)
            origins += [o for o, _ in pairs]
            files += [f for _, f in pairs]
        elif pattern.startswith("s3a://") or pattern.startswith("s3n://"):
            raise InputError(f"{pattern}: use s3:// URIs")
        else:
            found = _expand_local(pattern)
            kept = [f for f in found if keep(f, bounds)]
            skipped = len(found) - len(kept)
            origins += kept
            # absolute: a Spark Connect server resolves a relative path against its own cwd
            files += [os.path.abspath(f) for f in kept]
        pruned += skipped
        if not files and not pruned:
            raise InputError(f"no files match {pattern!r} for {source}")
    if not files:  # every matching file is outside the bounds: an empty source
        return ResolvedInput(source, fmt or "jsonl", (), (), 0, pruned)
    formats = {fmt or detect_format(f) for f in files}
    # files named .jsonl, .csv and .parquet may feed one source together (each is read by
    # its own reader); a --format names one format for all of them
    chosen = MIXED if len(formats) > 1 else formats.pop()
    if chosen in ADAPTER_FORMATS and source not in ADAPTER_FORMATS[chosen]:
        raise InputError(f"{source}: format {chosen!r} does not carry {source} "
                         f"(it feeds {', '.join(ADAPTER_FORMATS[chosen])})")
    if chosen not in (*FORMATS, MIXED) and chosen not in ADAPTER_FORMATS:
        known = ", ".join([*FORMATS, *ADAPTER_FORMATS])
        raise InputError(f"{source}: unknown format {chosen!r} (one of {known})")
    for f, origin in zip(files, origins, strict=True):
        try:
            _check_magic(f, file_format(chosen, f) if chosen in (*FORMATS, MIXED) else "text")
        except InputError as exc:  # name the file as the user did (s3://…), not its copy
            text = str(exc)
            if f == origin or not text.startswith(f):
                raise
            raise InputError(origin + text[len(f):]) from exc
    size = sum(os.path.getsize(f) for f in files)
    return ResolvedInput(source, chosen, tuple(files), tuple(origins), size, pruned)
