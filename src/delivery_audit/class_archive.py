"""The driver JVM's class-data-sharing archive (AppCDS): a cold audit's JVM maps the
classes an audit loads from one file instead of reading, parsing and verifying them from
Spark's ~250 jars one at a time.

Measured (idle 2-core machine, interleaved, docs/plan-redesign.md, sixth session): a new
session's start 5.3–5.5 → 2.7–3.4 s, its first job 2.7–3.0 → 1.5–1.9 s; a cold 20k-message
`delivery-audit run` 48.4–54.2 → 45.4–49.2 s.

The archive belongs to one JVM and one class path (the virtual environment's PySpark jars):
it lives in the environment (``<sys.prefix>/share/delivery-audit/``), named by a key of
both, and is built once by ``scripts/class_archive.py`` (``make class-archive``, not part
of ``make setup``) from a small audit. A driver JVM that Python starts uses it when it is
there (get_spark); without it, or when ``DELIVERY_AUDIT_CLASS_ARCHIVE=0``, nothing
changes. A JVM given an archive of another class path ignores it (its CDS log lines are
off); a truncated one would stop the JVM, so the archive is only ever renamed into place
whole, after the JVM that wrote it exited.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

OFF = "DELIVERY_AUDIT_CLASS_ARCHIVE"  # "0": never use the archive


def _jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


def archive_path() -> Path:
    """Where this environment's archive is (or would be): keyed by the java binary (its
    path and modification time: a JDK updated in place is another key) and the jars of
    the class path it was built on (names, sizes, modification times: a reinstall too)."""
    jars, java = _jars(), _java()
    listing = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                     for p in jars.glob("*.jar"))
    stamp = os.stat(java).st_mtime_ns if os.path.exists(java) else 0
    key = hashlib.sha256(repr((java, stamp, str(jars), listing)).encode()).hexdigest()[:16]
    return Path(sys.prefix) / "share" / "delivery-audit" / f"spark-classes-{key}.jsa"


def java_options() -> str:
    """The driver JVM's options that use the archive, or "" (none built, or turned off)."""
    path = archive_path()
    if os.environ.get(OFF) == "0" or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off"


def dump_options(path: Path) -> str:
    """The options of the JVM that writes the archive to ``path`` when it exits."""
    return f"-XX:ArchiveClassesAtExit={path} -Xlog:cds=off -Xlog:cds+dynamic=off"
