"""How every command talks back: Rich tables on stdout, ``--json`` for machines, one-line errors.

Conventions (every command, including ones registered later, follows them):

- A command builds a plain ``dict`` (its documented JSON shape, see ``docs/cli.md``) and hands
  it to :func:`emit` with a function that renders the same data as Rich tables. ``--json``
  prints the dict instead, with NaN and infinities written as ``null``.
- A command signals bad input by raising an :class:`~approxdp.errors.ApproxDPError` subclass;
  the group (:mod:`approxdp.cli.app`) turns it into ONE line ``error: <message>`` on stderr
  and an exit code from :data:`EXIT_CODES`. Nothing prints a traceback unless ``--debug``.
- Work that can take more than a second runs inside :func:`progress`, a transient Rich
  progress bar on stderr (shown only when stderr is a terminal).
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from approxdp._validation import PARAMETER_RANGES
from approxdp.reports.formatting import JSON_SCHEMA_VERSION, fmt, fmt_values, jsonable

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BUDGET_EXCEEDED",
    "EXIT_CODES",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_LEDGER_BROKEN",
    "EXIT_PORT_IN_USE",
    "JSON_SCHEMA_VERSION",
    "Interrupted",
    "Number",
    "cli_wording",
    "emit",
    "error_line",
    "fmt",
    "fmt_values",
    "interruptible",
    "json_option",
    "jsonable",
    "new_table",
    "plain_text",
    "progress",
    "safe_text",
    "stderr_console",
    "stdout_console",
]

#: Exit status for input the command cannot use (bad numbers, unknown names, missing files,
#: Click usage errors, any :class:`~approxdp.errors.ApproxDPError`).
EXIT_BAD_INPUT = 2
#: Exit status when a spend is refused because it would exceed the privacy budget.
EXIT_BUDGET_EXCEEDED = 3
#: Exit status for a bug (an exception approxdp did not expect); rerun with ``--debug``.
EXIT_INTERNAL = 1
#: Exit status of ``serve`` when its port is taken by another program.
EXIT_PORT_IN_USE = 4
#: Exit status of ``ledger verify`` when the ledger or a receipt does not check out.
EXIT_LEDGER_BROKEN = 5
#: Exit status after Ctrl+C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
EXIT_CODES: Mapping[str, int] = {
    "ok": 0,
    "internal error": EXIT_INTERNAL,
    "bad input": EXIT_BAD_INPUT,
    "budget exceeded": EXIT_BUDGET_EXCEEDED,
    "port in use": EXIT_PORT_IN_USE,
    "ledger verification failed": EXIT_LEDGER_BROKEN,
    "interrupted": EXIT_INTERRUPTED,
}

#: Unicode's bidirectional overrides and isolates (they reorder what a terminal shows).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def plain_text(value: object) -> str:
    """``str(value)`` with every control character — escape sequences, carriage returns,
    newlines, bells, bidirectional overrides — written as a visible ``\\xNN``/``\\uNNNN``
    escape, so text from a label, a file or the data cannot move the cursor, clear the screen
    or disguise itself on a terminal."""
    out = []
    for ch in str(value):
        if unicodedata.category(ch) == "Cc" or ch in _BIDI:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def safe_text(value: object) -> str:
    """:func:`plain_text` with Rich markup escaped too: what every label, note, key, file name
    or other string that is not the program's own is passed through before Rich prints it
    (``[red]`` in a label prints as ``[red]``, not as a colour)."""
    return escape(plain_text(value))

_DEFAULT_WIDTH = 120  # when stdout is not a terminal (pipes, tests) and COLUMNS is unset


class Number(click.FloatRange):
    """A float option in a range, checked by Click before the command runs, so a bad value is
    reported under the option's own name ("Invalid value for '-d' / '--delta': 1.5 is not in
    the range 0<x<1"), never the library's parameter name; its range shows in ``--help``. NaN
    is refused too (Click's FloatRange lets it through)."""

    @classmethod
    def of(cls, kind: str) -> Number:
        """The option type of a kind of parameter, with its range from the one table
        :data:`approxdp._validation.PARAMETER_RANGES` (the API checks the same range)."""
        r = PARAMETER_RANGES[kind]

        def end(x: float) -> float:  # whole numbers as Click shows them: 0<x<1, not 0.0<x<1.0
            return int(x) if math.isfinite(x) and x.is_integer() else x

        return cls(end(r.low), end(r.high), min_open=r.low_open, max_open=r.high_open)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


#: The library's Python spellings, and what a command-line user types instead.
_CLI_WORDING: tuple[tuple[str, str], ...] = (
    (r"\boutside_domain\s*=\s*'(drop|error)'", r"--outside-domain \1"),
    (r"\bcasts=\{'([^']+)': 'double'\}", r"--cast \1=double"),
    (r"\bcast_errors='(drop|error)'", r"--cast-errors \1"),
    (r"\bdomain\['([^']+)'\]", r"--domain \1=..."),
    (r"\bmax_rows_per_partition\b", "--max-rows-per-partition"),
    (r"\bmax_partitions\b", "--max-partitions"),
    (r"\bprivacy_unit\b", "--privacy-unit"),
    (r"\boutside_domain\b", "--outside-domain"),
    (r"\bneighbouring='([a-z-]+)'", r"--neighbouring \1"),
    (r"\bmethod='([a-z0-9-]+)'", r"--method \1"),
    (r"\bout_dir\b", "--out"),
    (r"\ballow_seeded_ledger=True\b", "--allow-seeded-ledger"),
    (r"\bbudget=\(epsilon, delta\)", "no --ledger"),
    (r"\bseed=(\d+)", r"--seed \1"),
    (r"\b(rdp|basic)_share=\(epsilon, delta\)", r"--\1-share EPSILON DELTA"),
    (r"\b(rdp|basic)_share=\(([^,()]+), ([^,()]+)\)", r"--\1-share \2 \3"),
    (r"\brdp_orders=\[\.\.\.\]", "--rdp-orders A,B,..."),
    (r"\b(rdp|basic)_share=", r"--\1-share "),
    (r"\b(rdp|basic)_share\b", r"--\1-share"),
    (r"\bsub_budgets=\{name: \(epsilon, delta\)\}+", "--sub-budget NAME=EPSILON,DELTA"),
    (r"\bsub_budgets\['([^']+)'\]", r"--sub-budget \1"),
    (r"\bsub_budgets\b", "--sub-budget"),
    (r"\brdp_orders=", "--rdp-orders "),
    (r"\brdp_orders\b", "--rdp-orders"),
    (r"\bpass rows=", "pass --rows N"),
    (r"\brows=", "--rows "),
    (r"\bhalf_width=", "--half-width "),
    (r"\brmse=", "--rmse "),
)


def cli_wording(message: str) -> str:
    """``message`` with the library's Python spellings (``outside_domain='drop'``,
    ``casts={'x': 'double'}``, ``max_partitions``) replaced by the options a command-line user
    types (``--outside-domain drop``, ``--cast x=double``, ``--max-partitions``)."""
    for pattern, replacement in _CLI_WORDING:
        message = re.sub(pattern, replacement, message)
    return message


class Interrupted(Exception):  # noqa: N818 - what happened, not an error of the input
    """Ctrl+C stopped a command; the message says whether anything was spent. The group
    prints it as one line and exits with :data:`EXIT_INTERRUPTED`."""


@contextmanager
def interruptible(spends: Callable[[], int]) -> Iterator[None]:
    """Turn Ctrl+C inside the block into :class:`Interrupted`, saying whether a spend was
    recorded meanwhile (``spends()`` counts the ledger's spends, before and after)."""
    before = spends()
    try:
        yield
    except KeyboardInterrupt:
        after = spends()
        if after == before:
            raise Interrupted("interrupted; nothing spent") from None
        raise Interrupted(
            f"interrupted after {after - before} spend(s) were recorded (the ledger shows "
            "them); the release was not shown or written"
        ) from None


def stdout_console() -> Console:
    """A Rich console on stdout; 120 columns wide when not writing to a terminal."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _DEFAULT_WIDTH
    return console


def stderr_console() -> Console:
    """A Rich console on stderr (progress bars)."""
    return Console(stderr=True, highlight=False)


def new_table(title: str, caption: str | None = None) -> Table:
    """A Rich table whose title is not squeezed to the width of narrow columns."""
    return Table(
        title=title, caption=caption, min_width=min(len(title) + 4, 100),
        title_justify="left", caption_justify="left",
    )


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--json`` flag shared by every command (parameter name ``as_json``)."""
    return click.option(
        "--json", "as_json", is_flag=True,
        help="Print the result as JSON (shape documented in docs/cli.md) instead of tables.",
    )(func)


def emit(data: Mapping[str, Any], as_json: bool, render: Callable[[Console], None]) -> None:
    """Print ``data`` as JSON (``as_json``) or let ``render`` draw it on a stdout console."""
    if as_json:
        click.echo(json.dumps(jsonable(data), indent=2, allow_nan=False))
    else:
        render(stdout_console())


def error_line(message: str, prefix: str = "error") -> None:
    """Print ``<prefix>: <message>`` as exactly one line on stderr."""
    text = plain_text(" ".join(str(message).split())) or "unknown error"
    click.echo(f"{prefix}: {text}", err=True)


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[Callable[[float], None]]:
    """A transient progress bar on stderr; yields ``advance(amount)``.

    With ``total=None`` the bar pulses (work of unknown length) and shows the elapsed time.
    Nothing is drawn when stderr is not a terminal, so pipes and ``--json`` stay clean.
    """
    console = stderr_console()
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with bar:
        task = bar.add_task(description, total=total)

        def advance(amount: float) -> None:
            bar.advance(task, amount)

        yield advance
