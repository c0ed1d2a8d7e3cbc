"""The package's shape: imports flow one way, without cycles, and optional dependencies load
lazily.

The layering: numerics → profiles/calibration → mechanisms → accounting → releases/engines →
plots/experiments → reports → the front ends (CLI, web). Every import of approxdp inside the
package — at module level, inside a function or under ``TYPE_CHECKING``, written ``import
approxdp.X``, ``from approxdp.X import y`` or ``from approxdp import X`` — must point to the
same layer or a lower one. Within a layer, parts must not import each other both ways (plots
draw the data of experiments, never the reverse), and no two files may import each other,
directly or through others (a file cycle).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import approxdp

PACKAGE = Path(approxdp.__file__).resolve().parent

#: Rank of each top-level part of the package; a part may import parts of lower or equal rank.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_version": 0,
    "_validation": 1,
    "_numerics": 1,
    "data": 2,
    "engines": 2,  # engines know nothing about privacy
    "events": 3,
    "profiles": 4,
    "calibration": 5,
    "mechanisms": 6,
    "accounting": 7,
    "releases": 8,
    "integrations": 8,  # drop-in accountants for dp_accounting and Opacus
    "plots": 9,  # figures of the experiments' data
    "experiments": 9,
    "reproduction": 10,  # experiments + plots + the report
    "reports": 11,  # what the front ends show (JSON-shaped reports), shared by cli and web
    "cli": 12,  # front end: the command line (its serve command starts the web front end)
    "web": 12,  # front end: the browser UI of approxdp serve; imports no command line module
    "__init__": 13,
    "__main__": 13,
}


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


MODULES: dict[str, Path] = {_module_name(p): p for p in _modules()}


def _imported_modules(tree: ast.AST) -> Iterator[str]:
    """Every approxdp module a file imports, resolved to a file of the package: ``from a.b
    import c`` gives ``a.b.c`` when that is a module, else ``a.b`` (whose ``__init__`` runs)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "approxdp":
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield sub if sub in MODULES else node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "approxdp":
                    yield alias.name


def _module_part(module: str) -> str:
    bits = module.split(".")
    return bits[1] if len(bits) > 1 else "__init__"


def _file_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {m for m in _imported_modules(tree) if m in MODULES and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_part_has_a_layer() -> None:
    unknown = {_part(p) for p in _modules()} - set(LAYERS)
    assert not unknown, f"add these parts of the package to LAYERS: {sorted(unknown)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_downward(path: Path) -> None:
    here = _part(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    upward = sorted(
        {
            part
            for part in map(_module_part, _imported_modules(tree))
            if part != here and LAYERS.get(part, -1) > LAYERS[here]
        }
    )
    assert not upward, f"{here} (layer {LAYERS[here]}) imports higher layers: {upward}"


def test_no_cycles_between_parts() -> None:
    """Parts of one layer import each other one way only (e.g. plots → experiments)."""
    graph: dict[str, set[str]] = {}
    for name, targets in _file_graph().items():
        here = _module_part(name)
        graph.setdefault(here, set()).update(
            part for part in map(_module_part, targets) if part != here
        )
    assert not _cycles(graph), f"parts that import each other: {_cycles(graph)}"


def test_no_cycles_between_files() -> None:
    """No file imports itself through others (a package's ``__init__`` counts as a file), with
    no exceptions."""
    graph = _file_graph()
    assert not _cycles(graph), f"files that import each other: {_cycles(graph)}"


def test_the_browser_ui_imports_no_command_line() -> None:
    """The two front ends share :mod:`approxdp.reports`, never each other's modules: the web
    UI imports nothing of ``approxdp.cli`` (the ``serve`` command starts the web UI)."""
    graph = _file_graph()
    leaks = sorted(f"{name} -> {target}" for name, targets in graph.items()
                   if _module_part(name) == "web" for target in targets
                   if _module_part(target) == "cli")
    assert not leaks, f"the web UI imports the command line: {leaks}"


#: The libraries only the engines may import (they translate every error of theirs).
ENGINE_LIBRARIES = ("duckdb", "pyspark", "py4j")


@pytest.mark.parametrize("part", ["cli", "web", "reports", "releases"])
def test_only_engines_import_an_engine_library(part: str) -> None:
    """Front ends (and the releases above the engines) never import DuckDB or Spark: the
    engines turn every error of theirs into approxdp's errors."""
    found = []
    for path in _modules():
        if _part(path) != part:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(PACKAGE)}: {n}" for n in names
                      if n.split(".")[0] in ENGINE_LIBRARIES]
    assert not found, f"engine libraries imported outside the engines: {found}"


def test_the_cycle_checks_see_a_cycle() -> None:
    """The checks above are not vacuous: a two-file and a three-file loop are found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    tree = ast.parse("from approxdp import plots\nfrom approxdp.errors import DataError\n"
                     "def f():\n    import approxdp.reproduction.html\n")
    assert list(_imported_modules(tree)) == [
        "approxdp.plots", "approxdp.errors", "approxdp.reproduction.html"
    ]


def test_import_approxdp_is_light() -> None:
    heavy = ("duckdb", "pyspark", "matplotlib", "pandas", "polars", "click", "rich")
    code = (
        "import sys, approxdp\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"'import approxdp' imports {out}: load it lazily"


def test_every_public_name_resolves() -> None:
    missing = [name for name in approxdp.__all__ if not hasattr(approxdp, name)]
    assert not missing
    assert len(set(approxdp.__all__)) == len(approxdp.__all__)


def test_the_package_docstring_maps_every_public_name() -> None:
    """``approxdp``'s docstring is a sectioned map of its API: every exported name is in it,
    and every name it lists in a section is exported."""
    import re

    doc = approxdp.__doc__ or ""
    missing = [n for n in approxdp.__all__ if n != "__version__" and n not in doc]
    assert not missing, f"add to approxdp's docstring: {missing}"
    listed = {name for block in re.findall(r"\n    (.+(?:\n    .+)*)", doc)
              for name in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*[a-z_A-Z0-9])\b", block)
              if name not in ("the", "and", "of", "its", "kinds", "budget", "splitting",
                              "composition", "conversions", "PLD", "RDP", "DP", "SGD",
                              "query", "specs")}
    unknown = sorted(n for n in listed if not hasattr(approxdp, n))
    assert not unknown, f"approxdp's docstring lists names it does not export: {unknown}"
