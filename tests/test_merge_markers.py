"""No tracked text file carries the markers a conflicted ``git merge`` leaves behind.

A merge whose conflict was committed unresolved leaves ``<<<<<<<``/``=======``/``>>>>>>>``
lines; in Markdown they render as text and ``mkdocs build --strict`` does not flag them, so a
docs page could ship them. This scans every file git tracks (binary files skipped).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def conflict_lines(text: str) -> list[int]:
    """1-based line numbers of merge-conflict markers in ``text``."""
    return [text.count("\n", 0, m.start()) + 1 for m in MARKER.finditer(text)]


def test_marker_pattern_finds_a_conflict() -> None:
    text = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> main\nd\n"
    assert conflict_lines(text) == [2, 4, 6]
    assert conflict_lines("a heading\n=======\n"[:-1] + " x\n") == []
    assert conflict_lines("x <<<<<<< y\n") == []


def test_no_tracked_file_has_conflict_markers() -> None:
    found = []
    for path in _tracked():
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        lines = conflict_lines(data.decode("utf-8", errors="replace"))
        if lines:
            found.append(f"{path.relative_to(ROOT)}: lines {lines}")
    assert not found, "merge-conflict markers committed:\n" + "\n".join(found)
