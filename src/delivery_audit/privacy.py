"""Pseudonymisation (``pseudonymise: true`` in the audit config).

Message keys, member ids and producer ids are replaced, right after ingestion and before any
detection, by a keyed pseudonym: ``k_`` / ``m_`` / ``p_`` + the first 32 hex characters (128
bits) of HMAC-SHA256(secret, UTF-8 value). Topics and group ids stay readable: operators act
on them. Because the pseudonym is a deterministic, practically injective function of the
value, every join, equality and count of the audit is unchanged (a 128-bit truncation makes a
collision negligible even over billions of distinct values); only what is *shown* changes,
and it is stable across runs that use the same secret (yesterday's ``k_…`` is today's).

The secret comes from the environment variable ``DELIVERY_AUDIT_PSEUDONYM_KEY`` (at least 16
characters). Without it a pseudonymising audit does not start.

Spark has no HMAC function, so HMAC is built from ``sha2`` as RFC 2104 defines it:
``H((K' ^ opad) || unhex(H((K' ^ ipad) || m)))`` with K' the secret padded to SHA-256's block
(64 bytes). The two padded blocks are computed on the driver and joined to the rows as a
one-row broadcast DataFrame instead of being written into the expression as literals: a
literal would print in every query plan (explain output, error messages, event logs, the
Spark UI), and the padded blocks give the secret back by a XOR.

Free text: an events row's ``detail`` has the row's own member id replaced by its pseudonym.
A quarantined row's ``raw`` text (the whole input line) is withheld (replaced by a note); its
file, row number and reason stay, so the row can still be found in the source by whoever may
read it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .spark import local_frame

KEY_ENV = "DELIVERY_AUDIT_PSEUDONYM_KEY"
MIN_KEY_CHARS = 16
HEX_CHARS = 32  # 128 bits of the HMAC
BLOCK_BYTES = 64  # SHA-256's block size

#: source → column → pseudonym prefix
PSEUDONYMISED: dict[str, dict[str, str]] = {
    "sends": {"key": "k_", "producer_id": "p_"},
    "broker": {"key": "k_", "producer_id": "p_"},
    "ledger": {"key": "k_", "member_id": "m_"},
    "events": {"member_id": "m_"},
}
#: source → (free-text column, the identifier column whose value is replaced inside it)
FREE_TEXT: dict[str, tuple[str, str]] = {"events": ("detail", "member_id")}
RAW_WITHHELD = "(withheld: pseudonymise is on; find the row by file and row)"

_IPAD, _OPAD = "_hmac_ipad", "_hmac_opad"


class PseudonymKeyError(ValueError):
    """Pseudonymisation is on but there is no usable secret."""


def pseudonym_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The secret from ``DELIVERY_AUDIT_PSEUDONYM_KEY``; a clear error when it is unusable."""
    env = os.environ if environ is None else environ
    value = env.get(KEY_ENV) or ""
    if not value.strip():
        raise PseudonymKeyError(
            f"pseudonymise is on but {KEY_ENV} is not set: set it to a secret of at least "
            f"{MIN_KEY_CHARS} characters (the same secret keeps pseudonyms stable across runs)")
    if len(value) < MIN_KEY_CHARS:
        raise PseudonymKeyError(f"{KEY_ENV} is too short: use at least {MIN_KEY_CHARS} "
                                "characters")
    return value.encode("utf-8")


def hmac_pads(key: bytes) -> tuple[bytes, bytes]:
    """(K' ^ ipad, K' ^ opad) of RFC 2104 for SHA-256."""
    if len(key) > BLOCK_BYTES:
        key = hashlib.sha256(key).digest()
    padded = key.ljust(BLOCK_BYTES, b"\0")
    return bytes(b ^ 0x36 for b in padded), bytes(b ^ 0x5C for b in padded)


def pseudonym(value: str | None, key: bytes, prefix: str) -> str | None:
    """The pseudonym of one value, in Python (the reference for the Spark expression)."""
    if value is None:
        return None
    digest = hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()
    return prefix + digest[:HEX_CHARS]


def hmac_sha256_hex(value: Column, ipad: Column, opad: Column) -> Column:
    """HMAC-SHA256 of a string column as lower-case hex, from built-in functions only."""
    inner = F.unhex(F.sha2(F.concat(ipad, F.encode(value, "UTF-8")), 256))
    return F.sha2(F.concat(opad, inner), 256)


def pseudonym_column(value: Column, prefix: str, ipad: Column, opad: Column) -> Column:
    """``prefix`` + 32 hex characters of the HMAC; null stays null."""
    digest = F.substring(hmac_sha256_hex(value, ipad, opad), 1, HEX_CHARS)
    return F.when(value.isNull(), F.lit(None).cast("string")).otherwise(
        F.concat(F.lit(prefix), digest))


def _with_pads(df: DataFrame, key: bytes) -> DataFrame:
    spark: SparkSession = df.sparkSession
    ipad, opad = hmac_pads(key)
    pads = local_frame(spark, [(bytes(ipad), bytes(opad))], f"{_IPAD} binary, {_OPAD} binary")
    return df.crossJoin(F.broadcast(pads))


def pseudonymise_frame(df: DataFrame, source: str, key: bytes) -> DataFrame:
    """The same rows and columns (same order) with the source's identifiers pseudonymised."""
    targets = {c: p for c, p in PSEUDONYMISED.get(source, {}).items() if c in df.columns}
    text = FREE_TEXT.get(source)
    if not targets:
        return df
    ipad, opad = F.col(_IPAD), F.col(_OPAD)
    cols = []
    for c in df.columns:
        if c in targets:
            cols.append(pseudonym_column(F.col(c), targets[c], ipad, opad).alias(c))
        elif text and c == text[0] and text[1] in targets:
            ident = F.col(text[1])
            replaced = F.replace(F.col(c), ident,
                                 pseudonym_column(ident, targets[text[1]], ipad, opad))
            cols.append(F.when(ident.isNull() | (ident == ""), F.col(c))
                        .otherwise(replaced).alias(c))
        else:
            cols.append(F.col(c))
    return _with_pads(df, key).select(*cols)


def pseudonymise_frames(frames: dict[str, DataFrame], key: bytes) -> dict[str, DataFrame]:
    """Every source's valid rows with keys, member ids and producer ids pseudonymised."""
    return {s: pseudonymise_frame(df, s, key) for s, df in frames.items()}


def withhold_raw(quarantine: DataFrame) -> DataFrame:
    """Quarantined rows without their raw text (it holds whole input rows, identifiers
    included); source, file, row and reason stay."""
    if "raw" not in quarantine.columns:
        return quarantine
    return quarantine.withColumn(
        "raw", F.when(F.col("raw").isNull(), F.lit(None).cast("string"))
        .otherwise(F.lit(RAW_WITHHELD)))
