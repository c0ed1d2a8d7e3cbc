"""What ``approxdp release`` reads from its command line: ``--bounds LOW HIGH`` or ``--bounds
private``, ``--cast`` specs, and the release kinds' input problems in the command's words.

The kinds themselves, and which inputs each takes, come from the registry
(:data:`~approxdp.releases.kinds.RELEASE_KINDS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from approxdp.cli.output import Number
from approxdp.errors import InvalidParameterError
from approxdp.releases.kinds import RELEASE_KINDS, InputProblem

__all__ = ["BoundsOption", "cli_problem", "parse_casts"]

#: What the command says for each input problem of a kind (``{kind}``: its name).
_PROBLEMS = {
    ("columns", "unexpected"): "{kind} takes no COLUMNS",
    ("columns", "one"): "{kind} needs exactly one value COLUMN, got {n}: {columns}",
    ("columns", "many"): "{kind} needs at least one COLUMN to count over",
    ("bounds", "missing"): "{kind} needs --bounds LOW HIGH (or --bounds private): values are "
                           "clamped to them, and privacy parameters never come from the data",
    ("bounds", "unexpected"): "{kind} takes no --bounds",
    ("by", "unexpected"): "{kind} takes no --by",
    ("domain", "unexpected"): "{kind} takes no --domain",
    ("qs", "unexpected"): "--q is for {qs_kinds} only",
    ("tree", "unexpected"): "--bins and --branching are for {tree_kinds} only",
}


def cli_problem(problem: InputProblem, columns: Sequence[str]) -> InvalidParameterError:
    """The error ``approxdp release`` reports for ``problem``."""
    kind = RELEASE_KINDS[problem.kind]
    text = _PROBLEMS[problem.input, problem.problem].format(
        kind=kind.name, n=len(columns), columns=list(columns),
        qs_kinds=", ".join(k.name for k in RELEASE_KINDS.values() if k.qs),
        tree_kinds=", ".join(k.name for k in RELEASE_KINDS.values() if k.tree))
    return InvalidParameterError(text + (f"; {kind.hint}" if kind.hint else ""))


def parse_casts(specs: Sequence[str]) -> dict[str, str]:
    """``COLUMN=double`` options as {column: type}."""
    casts: dict[str, str] = {}
    for spec in specs:
        column, sep, kind = spec.partition("=")
        if not sep or not column or kind.lower() != "double":
            raise InvalidParameterError(
                f"--cast must look like COLUMN=double (the only conversion), got {spec!r}"
            )
        casts[column] = "double"
    return casts


_FINITE = Number.of("finite")


class _BoundsType(click.ParamType[Any, Any]):
    """``LOW HIGH`` (finite numbers) or ``private``."""

    name = "bounds"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if value is None or value == "private" or (isinstance(value, tuple) and (
                len(value) == 2 and all(isinstance(v, float) for v in value))):
            return value
        if isinstance(value, tuple) and value == ("private",):
            return "private"
        out = [_FINITE.convert(text, param, ctx)
               for text in (value if isinstance(value, tuple) else (value,))]
        if len(out) != 2:
            self.fail("give two numbers LOW HIGH, or 'private'", param, ctx)
        return (out[0], out[1])


class BoundsOption(click.Option):
    """``--bounds LOW HIGH`` (two values) or ``--bounds private`` (one): the option takes a
    second value from the command line unless the first is ``private``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("type", _BoundsType())
        kwargs.setdefault("metavar", "LOW HIGH|private")
        super().__init__(*args, **kwargs)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        """Register the option, then let it take its second value itself (Click's parser
        takes a fixed number of values per option)."""
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:  # pragma: no cover - every name was just registered
                continue
            original = option.process

            def process(value: Any, state: Any, original: Any = original) -> None:
                if value == "private":
                    original(("private",), state)
                    return
                if not state.rargs or str(state.rargs[0]).startswith("--"):
                    raise click.BadOptionUsage(
                        self.opts[0], "--bounds needs two values LOW HIGH, or 'private'", ctx)
                original((value, state.rargs.pop(0)), state)

            option.process = process
