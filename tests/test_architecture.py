"""The package's shape: imports flow one way, and optional dependencies load lazily.

STYLE.md ("Layout we aim for", point 10): numerics → profiles/calibration → mechanisms →
accounting → releases/engines → CLI/plots. Every ``import approxdp.X`` inside the package, at
module level or inside a function, must point to the same layer or a lower one.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import approxdp

PACKAGE = Path(approxdp.__file__).resolve().parent

#: Rank of each top-level part of the package; a part may import parts of lower or equal rank.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_validation": 1,
    "_numerics": 1,
    "data": 2,
    "engines": 2,  # engines know nothing about privacy (STYLE point 8)
    "events": 3,
    "profiles": 4,
    "calibration": 5,
    "mechanisms": 6,
    "accounting": 7,
    "releases": 8,
    "plots": 9,
    "experiments": 9,
    "cli": 10,
    "__init__": 11,
    "__main__": 11,
}


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imported_parts(tree: ast.AST) -> set[str]:
    parts: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            bits = name.split(".")
            if bits[0] == "approxdp" and len(bits) > 1:
                parts.add(bits[1])
    return parts


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_part_has_a_layer() -> None:
    unknown = {_part(p) for p in _modules()} - set(LAYERS)
    assert not unknown, f"add these parts of the package to LAYERS: {sorted(unknown)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_downward(path: Path) -> None:
    here = _part(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    upward = sorted(
        part
        for part in _imported_parts(tree)
        if part != here and LAYERS.get(part, -1) > LAYERS[here]
    )
    assert not upward, f"{here} (layer {LAYERS[here]}) imports higher layers: {upward}"


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
