"""MkDocs hook: reference tables generated from the code, committed in the pages, checked.

Each table sits in a page between a pair of markers (HTML comments alone on their lines), with
the generated text committed between them, so the raw Markdown reads complete on a code host::

    <!-- approxdp:cli-reference -->
    ... generated ...
    <!-- /approxdp:cli-reference -->

When a page is built the block is regenerated, and a block whose committed text differs from
what the code now generates is a warning (an error under ``mkdocs build --strict``, which
``scripts/test.py`` runs; ``tests/test_docs.py`` checks the same). Regenerate every page with
``.venv/bin/python docs/hooks/reference_tables.py`` (``--check`` only reports stale pages).
The blocks:

- ``<!-- approxdp:cli-reference -->``: one section per command of
  :data:`approxdp.cli.app.cli` (usage line, description and options table, taken from Click
  itself). The hook also warns (an error under ``mkdocs build --strict``) when the page's
  hand-written command table, above the marker, misses a command of the group or names one
  that no longer exists.
- ``<!-- approxdp:plot-list -->``: the plots ``approxdp plot NAME`` draws
  (:data:`approxdp.plots.PLOTS`).
- ``<!-- approxdp:reproduce-files -->``: the figure files ``approxdp reproduce`` writes
  (:data:`approxdp.reproduction.FIGURE_FILES`).
- ``<!-- approxdp:calibration-methods -->``: the Gaussian calibration methods, their
  formulas, sources and validity (:data:`approxdp.calibration.CALIBRATION_METHODS`).
- ``<!-- approxdp:accounting-rules -->``: the accounting rules, what each certifies, whether
  it is a valid privacy filter, the theorems, and the tools that offer it
  (:data:`approxdp.accounting.registry.ACCOUNTING_RULES`).
- ``<!-- approxdp:release-kinds -->``: the kinds of release, what each takes, its
  sensitivity and engine work (:data:`approxdp.releases.kinds.RELEASE_KINDS`).

It also generates ``css/pygments.css``, the colours of the code blocks (highlighted at build
time by Pygments, so no highlighter is loaded from the web), and adds it to the pages.

Registered in ``mkdocs.yml`` under ``hooks:``; it uses only Click and the standard library.
"""

from __future__ import annotations

import html
import inspect
import logging
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

MARKER = "<!-- approxdp:cli-reference -->"
PLOT_MARKER = "<!-- approxdp:plot-list -->"
FILES_MARKER = "<!-- approxdp:reproduce-files -->"
METHODS_MARKER = "<!-- approxdp:calibration-methods -->"
RULES_MARKER = "<!-- approxdp:accounting-rules -->"
KINDS_MARKER = "<!-- approxdp:release-kinds -->"
PROG = "approxdp"
#: Columns the generated usage lines are wrapped at (not the terminal's: the text is committed).
WIDTH = 100
DOCS = Path(__file__).resolve().parent.parent

log = logging.getLogger("mkdocs.hooks.reference_tables")

# A hand-written table row naming a command: "| `calibrate -e ε ...` | ..." (first cell).
_TABLE_COMMAND = re.compile(r"^\|\s*`([a-z][a-z-]*)\b", re.MULTILINE)


def _cell(text: str) -> str:
    """Plain text made safe for a Markdown table cell (no pipes, no raw HTML)."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "&#124;")


def _code_cell(text: str) -> str:
    """Text shown as code inside a table cell (a ``|`` in a code span would split the cell)."""
    return f"<code>{_cell(text)}</code>"


def _inline(text: str) -> str:
    """A paragraph of help text as Markdown: ``Example: CMD`` becomes a code span."""
    text = " ".join(text.split())
    match = re.match(r"^(Examples?:)\s+(approxdp .*)$", text)
    if match:
        return f"{match.group(1)} `{match.group(2)}`"
    return html.escape(text, quote=False).replace("*", r"\*").replace("_", r"\_")


def _description(command: click.Command) -> list[str]:
    """The command's help text as Markdown blocks.

    Click's ``\\b`` marker (keep line breaks) is dropped; within a paragraph, runs of
    unindented lines are prose and runs of indented lines (examples) become code blocks.
    """
    text = inspect.cleandoc(command.help or "").split("\f", 1)[0]
    blocks: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln for ln in para.splitlines() if ln.strip() not in ("", "\b")]
        runs: list[tuple[bool, list[str]]] = []
        for line in lines:
            indented = line[:1].isspace()
            if runs and runs[-1][0] == indented:
                runs[-1][1].append(line)
            else:
                runs.append((indented, [line]))
        for indented, run in runs:
            if indented:
                blocks.append("```text\n" + textwrap.dedent("\n".join(run)) + "\n```")
            else:
                blocks.append(_inline(" ".join(run)))
    return blocks


def _options_table(command: click.Command, ctx: click.Context) -> list[str]:
    """The options as a Markdown table (arguments are in the usage line and the text)."""
    rows = []
    for param in command.get_params(ctx):
        record = None if isinstance(param, click.Argument) else param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        rows.append(f"| {_code_cell(names)} | {_cell(help_text)} |")
    if not rows:
        return []
    return ["\n".join(["| option | meaning |", "|---|---|", *rows])]


def command_section(name: str, command: click.Command, root: click.Context) -> str:
    """The Markdown section for one command: heading, usage, description, options (and one
    section for each subcommand of a group)."""
    ctx = click.Context(command, info_name=name, parent=root, terminal_width=WIDTH,
                        **command.context_settings)
    usage = command.get_usage(ctx).strip()
    parts = [
        f"### `{ctx.command_path}`",
        "```text\n" + usage + "\n```",
        *_description(command),
        *_options_table(command, ctx),
    ]
    if isinstance(command, click.Group):  # its subcommands follow, each with its own section
        parts += [command_section(sub, subcommand, ctx)
                  for sub, subcommand in command.commands.items() if not subcommand.hidden]
    return "\n\n".join(parts)


def cli_reference(group: click.Group | None = None) -> str:
    """The generated reference: global options, then one section per command of ``group``."""
    if group is None:
        from approxdp.cli.app import cli

        group = cli
    root = click.Context(group, info_name=PROG, terminal_width=WIDTH, **group.context_settings)
    parts = [
        "These sections are generated from the command-line code when the documentation is "
        f"built (the same text as `{PROG} COMMAND --help`).",
        "### Global options",
        "```text\n" + group.get_usage(root).strip() + "\n```",
        *_options_table(group, root),
    ]
    for name, command in group.commands.items():  # in the order they were registered
        if not command.hidden:
            parts.append(command_section(name, command, root))
    return "\n\n".join(parts) + "\n"


def check_command_table(markdown: str, commands: list[str], page: str) -> None:
    """Warn when the hand-written command table and the Click group disagree."""
    listed = set(_TABLE_COMMAND.findall(markdown))
    for missing in sorted(set(commands) - listed):
        log.warning("%s: the command table does not describe 'approxdp %s'", page, missing)
    for extra in sorted(listed - set(commands)):
        log.warning("%s: the command table lists 'approxdp %s', which does not exist", page, extra)


def plot_list() -> str:
    """The plots of ``approxdp plot`` as a Markdown table."""
    from approxdp.plots import PLOTS
    from approxdp.plots.registry import option_flag

    rows = [
        f"| `{spec.name}` | {_cell(spec.title)} | "
        f"{' '.join(f'`{option_flag(o)}`' for o in spec.options) or '-'} |"
        for spec in PLOTS.values()
    ]
    return "\n".join(["| name | shows | options |", "|---|---|---|", *rows]) + "\n"


def reproduce_files() -> str:
    """The figure files of ``approxdp reproduce`` as a Markdown table."""
    from approxdp.reproduction import FIGURE_FILES

    rows = [f"| `{name}` | {_cell(what)} |" for name, what in FIGURE_FILES.items()]
    rows += [
        "| `report.md` | every table and number, with the findings first |",
        "| `report.html` | the same report as one HTML page (figures linked beside it) |",
    ]
    return "\n".join(["| file | content |", "|---|---|", *rows]) + "\n"


def calibration_methods() -> str:
    """The calibration methods as a Markdown table."""
    from approxdp.calibration import CALIBRATION_METHODS

    rows = [
        f"| `{m.name}` | {m.notion.upper() if m.notion == 'dp' else 'pDP'} | "
        f"{_cell(m.formula)} | {_cell(m.validity)} | {_cell(m.source)} |"
        for m in CALIBRATION_METHODS.values()
    ]
    head = "| method | targets | σ | private for | source |"
    return "\n".join([head, "|---|---|---|---|---|", *rows]) + "\n"


def accounting_rules() -> str:
    """The accounting rules registry as a Markdown table."""
    from approxdp.accounting.registry import ACCOUNTING_RULES

    def tools(rule: Any) -> str:
        return ", ".join(
            t if rule.name_in(t) == rule.name else f"{t} (as `{rule.name_in(t)}`)"
            for t in rule.tools
        )

    rows = [
        f"| `{r.name}` | {r.certifies} | {_cell(r.what)} | {_cell(r.source)} | "
        f"{'**yes**' if r.filter_valid else 'no'} | {_cell(r.adaptivity_source)} | {tools(r)} |"
        for r in ACCOUNTING_RULES
    ]
    head = "| rule | certifies | what | source | valid filter? | why | offered by |"
    return "\n".join([head, "|---|---|---|---|---|---|---|", *rows]) + "\n"
def release_kinds() -> str:
    """The kinds of release as a Markdown table."""
    from approxdp.releases.kinds import RELEASE_KINDS

    def takes(kind: Any) -> str:
        parts = {"none": [], "one": ["COLUMN"], "many": ["COLUMNS"]}[kind.columns]
        parts += (["bounds (or private)"] if kind.bounds else []) + (
            ["by"] if kind.groups else []) + (["domain"] if kind.domain else []) + (
            ["qs"] if kind.qs else []) + (["bins, branching"] if kind.tree else [])
        return ", ".join(parts) or "—"

    rows = [
        f"| `{k.name}` | {_cell(k.summary)} | {_cell(takes(k))} | {_cell(k.sensitivity)} | "
        f"{_cell(k.engine)} |"
        for k in RELEASE_KINDS.values()
    ]
    head = "| kind | releases | takes | sensitivity | engine work |"
    return "\n".join([head, "|---|---|---|---|---|", *rows]) + "\n"


PYGMENTS_CSS = "css/pygments.css"


def on_config(config: Any, **kwargs: Any) -> Any:
    """MkDocs event: link the generated stylesheet from every page."""
    if PYGMENTS_CSS not in config["extra_css"]:
        config["extra_css"].append(PYGMENTS_CSS)
    return config


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    """MkDocs event: add the Pygments stylesheet as a generated file."""
    from mkdocs.structure.files import File
    from pygments.formatters import HtmlFormatter

    css = HtmlFormatter(style="default").get_style_defs(".highlight")
    files.append(File.generated(config, PYGMENTS_CSS, content=css))
    return files


def _generators() -> dict[str, Callable[[], str]]:
    """Each block's name (its start marker) and the function that generates its text."""

    def cli_text() -> str:
        from approxdp.cli.app import cli

        return cli_reference(cli)

    return {MARKER: cli_text, PLOT_MARKER: plot_list, FILES_MARKER: reproduce_files,
            METHODS_MARKER: calibration_methods, RULES_MARKER: accounting_rules,
            KINDS_MARKER: release_kinds}


def end_marker(start: str) -> str:
    """``<!-- approxdp:NAME -->`` → ``<!-- /approxdp:NAME -->``."""
    return start.replace("<!-- approxdp:", "<!-- /approxdp:", 1)


def _block_pattern(start: str) -> re.Pattern[str]:
    """A start marker alone on its line, up to its end marker (or none: a bare marker)."""
    end = re.escape(end_marker(start))
    return re.compile(rf"^{re.escape(start)}[ \t]*$(?:\n.*?^{end}[ \t]*$)?",
                      re.MULTILINE | re.DOTALL)


def render_blocks(markdown: str, generated: dict[str, str] | None = None) -> str:
    """``markdown`` with every block's text replaced by what the code generates now."""
    texts = generated if generated is not None else {
        start: make() for start, make in _generators().items() if start in markdown
    }
    for start, text in texts.items():
        block = f"{start}\n{text.rstrip()}\n{end_marker(start)}"
        markdown = _block_pattern(start).sub(lambda _m, b=block: b, markdown)
    return markdown


def strip_blocks(markdown: str) -> str:
    """``markdown`` without the generated text of its blocks (the hand-written part only)."""
    for start in _generators():
        markdown = _block_pattern(start).sub(start, markdown)
    return markdown


def stale_blocks(markdown: str, fresh: str | None = None) -> list[str]:
    """The start markers of the blocks whose committed text differs from the generated one
    (or that have no end marker, i.e. no committed text); ``fresh``: ``render_blocks``'s
    output for ``markdown``, if already computed."""
    fresh = render_blocks(markdown) if fresh is None else fresh
    stale = []
    for start in _generators():
        pattern = _block_pattern(start)
        committed = [m.group(0) for m in pattern.finditer(markdown)]
        if committed != [m.group(0) for m in pattern.finditer(fresh)]:
            stale.append(start)
    return stale


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    """MkDocs event: regenerate each block on the page; warn where the committed one is stale
    (an error under ``--strict``) and where the command table misses a command."""
    if MARKER in markdown:
        from approxdp.cli.app import cli

        hand_written = strip_blocks(markdown).split(MARKER, 1)[0]
        check_command_table(hand_written, list(cli.commands), page.file.src_uri)
    fresh = render_blocks(markdown)
    for start in stale_blocks(markdown, fresh):
        log.warning(
            "%s: the generated block %s is out of date; run "
            "'.venv/bin/python docs/hooks/reference_tables.py' and commit the page",
            page.file.src_uri, start,
        )
    return fresh


def update_pages(docs: Path = DOCS, *, write: bool = True) -> list[Path]:
    """Regenerate the blocks of every page under ``docs`` (or, with ``write=False``, only
    find the pages whose blocks are stale). Returns the pages that were (or would be) changed."""
    changed = []
    for path in sorted(docs.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if "<!-- approxdp:" not in text:
            continue
        fresh = render_blocks(text)
        if fresh != text:
            changed.append(path)
            if write:
                path.write_text(fresh, encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    """``python docs/hooks/reference_tables.py [--check]``: regenerate (or check) the pages."""
    check = "--check" in argv
    changed = update_pages(write=not check)
    for path in changed:
        print(f"{'stale' if check else 'updated'}: {path.relative_to(DOCS.parent)}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
