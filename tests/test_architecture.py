"""docs/architecture.md stays true to the code where that can be checked: every path it
names exists, every package and top-level module of the engine is named in it, and its
flow lists the stages the engine times, each once (report.json's ``run.stages``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "delivery_audit"
DOC = ROOT / "docs" / "architecture.md"
# what the doc may name that is not in this repository, or is published rather than kept
ELSEWHERE = {"../shared/spec/audit-contract.md", "_manifest.json", "index.json",
             "evidence/evidence.parquet"}

_TOKEN = re.compile(r"`([^`\s]+)`")
_PATHLIKE = re.compile(r"^[\w.*/-]+$")


def _section(title: str, text: str | None = None) -> str:
    text = DOC.read_text() if text is None else text
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def named_paths(text: str | None = None) -> list[tuple[tuple[str, ...], str]]:
    """(the folders the line names, path) for every backticked path in the doc: a token
    ending in ``.py``, ``.j2``, ``.json``, ``.md`` or ``/``, or holding a ``/``. A bare file
    name is looked for in the folders its line names (``storage/`` (``local.py``, …))."""
    out = []
    for line in (DOC.read_text() if text is None else text).splitlines():
        tokens = [t for t in _TOKEN.findall(line)
                  if "://" not in t and _PATHLIKE.match(t) and t not in ELSEWHERE
                  and (t.endswith((".py", ".j2", ".json", ".md", "/")) or "/" in t)]
        folders = tuple(dict.fromkeys(t if t.endswith("/") else t.rpartition("/")[0] + "/"
                                      for t in tokens if "/" in t))
        out += [(folders, t) for t in tokens]
    return out


def _exists(folders: tuple[str, ...], token: str) -> bool:
    bases = [*(b / f for f in folders for b in (SRC, ROOT)), SRC, ROOT, ROOT / "src",
             ROOT / "tests"]
    for base in bases:
        if any(base.glob(token)) if "*" in token else (base / token).exists():
            return True
    return False


def test_every_path_the_doc_names_exists():
    missing = sorted({t for c, t in named_paths() if not _exists(c, t)})
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"


def _engine_parts() -> list[str]:
    """Every package (any depth, as ``a/`` or ``a/b/``) and top-level module of the engine."""
    packages = [f"{p.parent.relative_to(SRC).as_posix()}/" for p in SRC.rglob("__init__.py")
                if p.parent != SRC]
    modules = [p.name for p in SRC.glob("*.py") if p.name != "__init__.py"]
    return sorted(packages) + sorted(modules)


def test_every_package_and_top_level_module_is_named():
    tokens = set(_TOKEN.findall(DOC.read_text()))
    unnamed = [p for p in _engine_parts() if not any(
        t == p or (p.endswith("/") and t.startswith(p)) for t in tokens)]
    assert not unnamed, f"docs/architecture.md does not name: {unnamed}"


def flow_stages(text: str | None = None) -> list[str]:
    """The flow's numbered stages, in the doc's order (``N. **`name`**``), numbered 1…n."""
    found = re.findall(r"^(\d+)\. \*\*`(\w+)`\*\*", _section("The flow", text), flags=re.M)
    assert [int(n) for n, _ in found] == list(range(1, len(found) + 1)), found
    return [name for _, name in found]


def code_stages() -> set[str]:
    """The stage names the engine times: every ``stage("…")`` in src/delivery_audit."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        names.update(re.findall(r"\bstage\(\s*[\"'](\w+)[\"']", path.read_text()))
    return names


def test_the_flow_lists_the_stages_the_engine_times():
    doc, code = flow_stages(), code_stages()
    assert len(doc) == len(set(doc)), f"a stage listed twice: {doc}"
    assert code, "no stage(...) found in src: the pattern no longer matches the code"
    assert set(doc) == code, (f"only in the doc: {sorted(set(doc) - code)}; "
                              f"only in the code: {sorted(code - set(doc))}")


def test_the_checks_catch_a_wrong_doc():
    """The checks see a doc that names a missing module or lists a stage twice."""
    wrong = ("## The flow\n\n1. **`ingest`** — `ingest/nothing_here.py`, `ingest/files.py`\n"
             "2. **`ingest`** — again\n\n## Who owns what\n")
    assert flow_stages(wrong) == ["ingest", "ingest"]
    assert [t for c, t in named_paths(wrong) if not _exists(c, t)] == ["ingest/nothing_here.py"]
