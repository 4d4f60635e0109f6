"""No import loops (issue 31): the import graph of the engine (src/delivery_audit) and of
the simulator (sim/src/delivery_audit_sim) has no cycle between packages nor between files.

The graph is read with ast from every module, imports inside functions included (a loop
hidden in a function is a loop all the same), relative imports resolved. Nodes:

* files: every module (a package's ``__init__.py`` is the package's node);
* packages: each first-level subpackage (``delivery_audit.ingest`` with all its modules)
  and each top-level module (``delivery_audit.audit``) is one node; the root package
  ``delivery_audit`` (its ``__init__.py``) is one too.

``from . import x`` where ``x`` is a module is an edge to ``x`` alone (not to the package's
``__init__``); importing a submodule's implicit parent packages is not counted, since a
package's ``__init__`` that imports its own modules would otherwise loop with each of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = {
    "delivery_audit": ROOT / "src" / "delivery_audit",
    "delivery_audit_sim": ROOT / "sim" / "src" / "delivery_audit_sim",
}


def modules(top: str) -> dict[str, Path]:
    """Every module of the package ``top``: dotted name → file."""
    base = TREES[top]
    found: dict[str, Path] = {}
    for path in sorted(base.rglob("*.py")):
        parts = [top, *path.relative_to(base).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, module: str, is_package: bool, level: int) -> str:
    """The absolute name of ``from <level dots><name> import …`` written in ``module``."""
    if not level:
        return name
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def file_graph(top: str) -> dict[str, set[str]]:
    """module → the modules of ``top`` it imports (anywhere in its text)."""
    mods = modules(top)
    graph: dict[str, set[str]] = {m: set() for m in mods}

    def known(name: str) -> str | None:
        # the module itself, or its nearest existing parent (``a.b.C`` names a class of a.b)
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", mod, is_package, node.level)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in mods else base)
            for target in targets:
                if target == top or target.startswith(top + "."):
                    hit = known(target)
                    if hit and hit != mod:
                        graph[mod].add(hit)
    return graph


def package_of(module: str) -> str:
    """The package node of a module: ``top.X`` for ``top.X`` and everything under it."""
    return ".".join(module.split(".")[:2])


def package_graph(top: str) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, targets in file_graph(top).items():
        node = package_of(mod)
        graph.setdefault(node, set())
        for target in targets:
            if package_of(target) != node:
                graph[node].add(package_of(target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _path(graph: dict[str, set[str]], component: list[str]) -> str:
    """One loop inside a component, spelled out for the failure message."""
    members = set(component)
    start = component[0]
    trail, seen, node = [start], {start}, start
    while True:
        node = sorted(graph[node] & members)[0]
        trail.append(node)
        if node in seen:
            return " → ".join(trail[trail.index(node):])
        seen.add(node)


def _report(graph: dict[str, set[str]], found: list[list[str]]) -> str:
    return "; ".join(_path(graph, c) for c in found)


def test_the_graph_sees_function_level_and_relative_imports():
    """The graph is the one the tests below judge: it has the edges it must have."""
    files = file_graph("delivery_audit")
    assert "delivery_audit.ingest.files" in files["delivery_audit.ingest"]  # from .files import
    assert "delivery_audit.adapters.writer" in files["delivery_audit.adapters"]
    assert "delivery_audit.core.globs" in files["delivery_audit.ingest.files"] or any(
        t.startswith("delivery_audit.core") for t in files["delivery_audit.ingest.files"])
    # a loop written on purpose is found, and spelled out
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(loop) == [["a", "b", "c"]]
    assert _report(loop, cycles(loop)) == "a → b → c → a"


@pytest.mark.parametrize("top", sorted(TREES))
def test_no_cycle_between_packages(top):
    graph = package_graph(top)
    found = cycles(graph)
    assert not found, f"import cycles between packages of {top}: {_report(graph, found)}"


def test_no_cycle_between_files_of_the_engine():
    graph = file_graph("delivery_audit")
    found = cycles(graph)
    assert not found, f"import cycles between files: {_report(graph, found)}"


def test_no_cycle_between_files_of_the_simulator():
    graph = file_graph("delivery_audit_sim")
    found = cycles(graph)
    assert not found, f"import cycles between files: {_report(graph, found)}"


def test_the_engine_imports_no_simulator():
    """The engine never imports the simulator (it adds its commands by entry point)."""
    hits = []
    for mod, path in modules("delivery_audit").items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            hits += [f"{mod}: {n}" for n in names if n.split(".")[0] == "delivery_audit_sim"]
    assert not hits
