"""The documentation's examples run, and its generated reference covers the whole CLI.

Every fenced ```` ```python ```` block of the narrative pages (``docs/*.md``,
``docs/guide/*.md``) is executed: blocks written as an interactive session (``>>>``) run as
doctests, so their printed values must match what the library computes now; other Python
blocks are executed as scripts. The blocks of one page share a namespace, in page order, and
run in a temporary working directory (examples create ledger files). A page whose examples
break when the API changes fails here, by name and line.

The API pages are generated from docstrings, so the docstrings' examples are run too, and the
two build-time helpers in ``docs/hooks/`` (the reference-table hook and the Griffe extension)
are tested directly.

The docs build itself (``mkdocs build --strict``) is a step of ``scripts/test.py``.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NARRATIVE = sorted([*DOCS.glob("*.md"), *DOCS.glob("guide/*.md")])
PACKAGE = ROOT / "src" / "approxdp"
#: Modules whose docstrings show examples (found without importing anything).
EXAMPLE_MODULES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for path in PACKAGE.rglob("*.py")
    if ">>>" in path.read_text(encoding="utf-8")
)
# ```python ... ``` at the start of a line; the info string may carry more words.
_FENCE = re.compile(r"^```python[^\n]*\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def python_blocks(text: str) -> Iterator[tuple[int, str]]:
    """(line number, source) of each ```python block of a Markdown text."""
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start("body")) + 1
        yield line, match.group("body")


def test_the_narrative_pages_have_examples() -> None:
    """Guards the glob and the fence pattern: a test that finds nothing would pass silently."""
    names = {p.relative_to(DOCS).as_posix() for p in NARRATIVE}
    assert {"index.md", "guide/calibration.md", "guide/releases.md"} <= names
    counted = {p.name: len(list(python_blocks(p.read_text(encoding="utf-8")))) for p in NARRATIVE}
    assert counted["index.md"] >= 3 and counted["calibration.md"] >= 3, counted


def test_only_cluster_examples_are_not_run() -> None:
    skipped = [
        (p.name, line) for p in NARRATIVE
        for line, src in python_blocks(p.read_text(encoding="utf-8")) if src.startswith(NOT_RUN)
    ]
    assert {name for name, _ in skipped} <= {"spark.md"}, skipped
    assert len(skipped) == 2, skipped


def test_examples_that_need_optional_libraries_say_which() -> None:
    assert needed_modules("# needs opacus, torch: run when installed\nimport torch\n") == [
        "opacus", "torch"]
    assert needed_modules("# needs jax_privacy: else compiled\n") == ["jax_privacy"]
    assert needed_modules(NOT_RUN + "\n") == []  # "a cluster" is no module name
    assert needed_modules("import torch  # needs torch: no\n") == []
    dpsgd = (DOCS / "guide" / "dpsgd.md").read_text(encoding="utf-8")
    marked = [needed_modules(src) for _, src in python_blocks(dpsgd) if needed_modules(src)]
    assert marked == [["opacus", "torch"], ["jax_privacy"]]


def test_fence_pattern_finds_blocks_and_lines() -> None:
    text = "# t\n\n```python\n>>> 1 + 1\n2\n```\n\n```bash\nls\n```\n```python title\nx = 1\n```\n"
    assert list(python_blocks(text)) == [(4, ">>> 1 + 1\n2\n"), (12, "x = 1\n")]


#: First line of an example that needs real infrastructure (a cluster); shown, not run.
NOT_RUN = "# needs a cluster: not run by the docs tests"
#: First line of an example that needs optional libraries ("# needs opacus, torch: ..."): run
#: where all of them are installed, else only compiled.
_NEEDS = re.compile(r"^# needs ([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*):")


def needed_modules(source: str) -> list[str]:
    """The modules an example's first line says it needs (none without the marker)."""
    match = _NEEDS.match(source)
    return match.group(1).split(", ") if match else []


def _run_block(source: str, globs: dict[str, Any], name: str, path: Path, line: int) -> None:
    needs = needed_modules(source)
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if source.startswith(NOT_RUN) or missing:
        compile(source, f"{path}:{line}", "exec")  # still valid Python
        return
    if ">>>" not in source:
        exec(compile(source, f"{path}:{line}", "exec"), globs)
        return
    test = doctest.DocTestParser().get_doctest(source, globs, name, str(path), line - 1)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    report: list[str] = []
    runner.run(test, out=report.append, clear_globs=False)
    globs.update(test.globs)  # the DocTest ran on a copy: carry its names to the next block
    if runner.failures:
        pytest.fail(f"{path.relative_to(ROOT)} (block at line {line}):\n" + "".join(report),
                    pytrace=False)


@pytest.mark.parametrize("page", NARRATIVE, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if page.name == "spark.md":  # its example runs on the tests' local Spark session
        request.getfixturevalue("spark_session")
    monkeypatch.chdir(tmp_path)
    globs: dict[str, Any] = {"__name__": "__docs__"}
    for line, source in python_blocks(page.read_text(encoding="utf-8")):
        _run_block(source, globs, f"{page.stem}:{line}", page, line)
    for value in globs.values():  # close ledgers the examples opened, before tmp_path goes
        close = getattr(value, "close", None)
        if callable(close) and type(value).__module__.startswith("approxdp"):
            close()


def test_example_modules_are_found() -> None:
    assert "approxdp.profiles.gaussian" in EXAMPLE_MODULES
    assert "approxdp.data" in EXAMPLE_MODULES


@pytest.mark.parametrize("name", EXAMPLE_MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    report: list[str] = []
    tests = [t for t in doctest.DocTestFinder().find(module, name) if t.examples]
    assert tests, f"{name} has '>>>' in its source but no docstring example was found"
    for test in tests:
        runner.run(test, out=report.append)
    if runner.failures:
        pytest.fail("".join(report), pytrace=False)


# -- the build-time reference tables (docs/hooks/reference_tables.py) ------------------------


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_tables", DOCS / "hooks" / "reference_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("reference_tables", module)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_covers_every_command_and_option() -> None:
    from approxdp.cli.app import cli

    text = _hook().cli_reference(cli)
    assert len(cli.commands) == 12
    for name, command in cli.commands.items():
        assert f"### `approxdp {name}`" in text
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.opts[-1] in text, (name, param.opts)
    # A pipe inside a Markdown table cell must never split it.
    for row in (r for r in text.splitlines() if r.startswith("| <code>")):
        assert row.count("|") == 3, row


def test_cli_page_lists_every_command_once() -> None:
    """docs/cli.md's hand-written table names the twelve commands (the hook warns otherwise)."""
    hook = _hook()
    from approxdp.cli.app import cli

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert hook.MARKER in page
    listed = hook._TABLE_COMMAND.findall(hook.strip_blocks(page).split(hook.MARKER, 1)[0])
    assert sorted(set(listed)) == sorted(cli.commands)


def test_command_table_check_warns_on_drift(caplog: pytest.LogCaptureFixture) -> None:
    hook = _hook()
    table = "| `calibrate -e` | x |\n| `frobnicate` | y |\n"
    with caplog.at_level("WARNING", logger="mkdocs.hooks.reference_tables"):
        hook.check_command_table(table, ["calibrate", "ledger"], "cli.md")
    messages = [r.getMessage() for r in caplog.records]
    assert any("'approxdp ledger'" in m and "does not describe" in m for m in messages)
    assert any("'approxdp frobnicate'" in m and "does not exist" in m for m in messages)


def test_plot_and_reproduce_tables_list_the_registries() -> None:
    from approxdp.plots import PLOTS
    from approxdp.reproduction import FIGURE_FILES

    hook = _hook()
    plots, files = hook.plot_list(), hook.reproduce_files()
    assert all(f"| `{name}` |" in plots for name in PLOTS)
    assert all(f"| `{name}` |" in files for name in FIGURE_FILES)


def test_committed_reference_tables_match_the_generator() -> None:
    """Every generated block is committed in its page (a raw page read on a code host showed
    only the markers), and is what the code generates now; regenerate with
    ``.venv/bin/python docs/hooks/reference_tables.py``."""
    hook = _hook()
    assert hook.update_pages(DOCS, write=False) == []
    cli_page = (DOCS / "cli.md").read_text(encoding="utf-8")
    for page, needle in (("cli.md", "### `approxdp release`"), ("cli.md", "| `fig1` |"),
                         ("reproduction.md", "| `report.md` |"),
                         ("guide/calibration.md", "| `optimal` |")):
        text = (DOCS / page).read_text(encoding="utf-8")
        assert needle in text, (page, needle)
    assert "| <code>--budget EPSILON DELTA</code> |" in cli_page


def test_stale_reference_tables_fail_the_build(caplog: pytest.LogCaptureFixture) -> None:
    hook = _hook()
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    edited = page.replace("Show a ledger file's budget", "Show a ledger's budget", 1)
    bare = page.split(hook.MARKER, 1)[0] + hook.MARKER + "\n"  # a marker with no text
    assert hook.stale_blocks(page) == []
    assert hook.stale_blocks(edited) == [hook.MARKER]
    assert hook.stale_blocks(bare) == [hook.MARKER]
    assert hook.render_blocks(edited) == page == hook.render_blocks(page)
    assert hook.render_blocks(bare).rstrip() == page.split(hook.end_marker(hook.MARKER))[0] + (
        hook.end_marker(hook.MARKER))

    class _File:
        src_uri = "cli.md"

    class _Page:
        file = _File()

    with caplog.at_level("WARNING", logger="mkdocs.hooks.reference_tables"):
        assert hook.on_page_markdown(edited, _Page(), {}, None) == page
    assert any("out of date" in r.getMessage() for r in caplog.records)


# -- the Griffe extension (docs/hooks/griffe_sphinx.py) --------------------------------------


def test_griffe_extension_links_roles_and_reads_doc_comments() -> None:
    griffe = pytest.importorskip("griffe")  # installed with the docs extra
    extensions = griffe.load_extensions(str(DOCS / "hooks" / "griffe_sphinx.py"))
    package = griffe.load("approxdp", search_paths=[str(PACKAGE.parent)], extensions=extensions)
    engines = package["engines.ENGINES"].docstring.value  # a `#:` comment, with a role
    assert engines.startswith("Engine names accepted by <autoref")
    assert 'identifier="approxdp.engines.engine_for" optional><code>engine_for</code>' in engines
    # `~` keeps the last component as the title; the target is the full path.
    table = package["releases.session.PrivateTable"].docstring.value
    assert (
        '<autoref identifier="approxdp.accounting.PrivacyAccountant" optional>'
        "<code>PrivacyAccountant</code></autoref>"
    ) in table
    leftover = [
        path for path, obj in _walk(package) if obj.docstring and ":class:`" in obj.docstring.value
    ]
    assert not leftover, leftover


def _walk(obj: Any) -> Iterator[tuple[str, Any]]:
    yield obj.path, obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)
