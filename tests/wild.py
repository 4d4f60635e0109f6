"""The corpus of real logs from the wild (tests/data/wild/, issue 15): each sample is a file
copied verbatim from a public source, beside a ``<sample>.expected.json`` that says where it
comes from and what the adapter must make of it, worked out by hand:

.. code-block:: json

    {
      "sample": "spring-rebalance.log",           # the file beside this one
      "source_url": "https://github.com/…",       # where the text was copied from
      "note": "what it is, where in the page",
      "versions": "Kafka 2.8 / Spring Kafka 2.7",
      "side": "client" | "coordinator" | "tool",
      "format": "client-log",                     # an adapter (or "auto")
      "source": "events",
      "options": {"date": "2024-01-16"},          # the audit config's `adapters:`
      "rows": [{"event": "revoked", "topic": "t", "partition": 0}],
      "errors": [{"line": 7, "reason_contains": "set adapters.group"}],
      "skipped": {"unrelated_log_line": 3}        # optional; exact when given
    }

``rows`` lists every row the adapter writes, in order, each compared on the fields it
gives (timestamps as epoch ms). ``errors`` lists every error row. Whatever the sample,
every line is accounted for: recognised + skipped (with a kind) + error = lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WILD = Path(__file__).parent / "data" / "wild"


@dataclass(frozen=True)
class Sample:
    meta_path: Path
    meta: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.path.relative_to(WILD))

    @property
    def path(self) -> Path:
        return self.meta_path.parent / self.meta["sample"]


def samples() -> list[Sample]:
    return [Sample(p, json.loads(p.read_text(encoding="utf-8")))
            for p in sorted(WILD.rglob("*.expected.json"))]


def readme_table() -> str:
    """The README's table of samples, made from their expected files."""
    lines = ["| sample | format → source | versions | side | source |",
             "|---|---|---|---|---|"]
    for s in samples():
        m = s.meta
        lines.append(f"| `{s.id}` | {m['format']} → {m['source']} | {m.get('versions', '')} "
                     f"| {m.get('side', '')} | {m['source_url']} |")
    return "\n".join(lines) + "\n"
