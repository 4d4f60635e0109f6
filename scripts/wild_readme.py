"""Rewrites tests/data/wild/README.md's table of samples from their expected files
(``python scripts/wild_readme.py``); a test keeps the two equal."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.wild import WILD, readme_table  # noqa: E402

HEAD = """# Real samples from the wild

Every file here is text copied verbatim from a public source (Kafka's own repository and
docs, public GitHub issues and pull requests, public READMEs and Q&A pages), cut at most to
whole lines in their order. Beside each sample, `<sample>.expected.json` says where it comes
from and what the adapter must make of it: the rows and error rows, worked out by hand from
the audit contract (tests/wild.py describes the format; tests/test_wild_samples.py checks
them, and that every line is recognised, skipped with a kind, or an error row).

Add a sample: copy the text, write its expected file, then `python scripts/wild_readme.py`.

"""


def main() -> None:
    (WILD / "README.md").write_text(HEAD + readme_table(), encoding="utf-8")


if __name__ == "__main__":
    main()
