"""The ``--py-files`` zip of the ``delivery_audit`` package, with the GX suites it ships."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

#: The package-data folder the GX suites ship in (``delivery_audit/expectations/*.json``): in
#: the source tree a link to the top-level ``expectations/`` (their one copy), in a wheel and
#: in the ``--py-files`` zip the files themselves; quality.suites reads them from there.
SUITES_DIR = "expectations"
ZIP_NAME = "delivery_audit.zip"


def package_dir() -> Path:
    """The folder of the ``delivery_audit`` package this process imports."""
    return Path(__file__).resolve().parents[1]


def package_zip(dest_dir: Path | str, package: Path | None = None) -> Path:
    """Zip the package (sources and package data, links followed, no caches) into
    ``dest_dir/delivery_audit.zip`` for ``spark-submit --py-files``; returns its path.
    Raises FileNotFoundError when the package has no suites to ship (a source tree whose
    ``delivery_audit/expectations`` link is missing or broken)."""
    package = Path(package) if package is not None else package_dir()
    if not (package / SUITES_DIR / "results.json").is_file():
        raise FileNotFoundError(
            f"no GX suites in {package / SUITES_DIR} (in a source tree it links to the "
            "top-level expectations/ folder): the zip would not carry them")
    dest = Path(dest_dir) / ZIP_NAME
    dest.parent.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for root, dirs, names in os.walk(package, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [Path(root) / n for n in sorted(names) if not n.endswith(".pyc")]
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in files:
            zf.write(f, Path(package.name) / f.relative_to(package))
    return dest
