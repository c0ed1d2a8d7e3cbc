"""``--derive NAME=SQL`` and ``--where SQL``: derived columns and row filters on the command
line and in batch specs, applied to the :class:`~approxdp.releases.session.PrivateTable` right
after it is built, before any release.

Order: the derived columns first, in the order given (each may use the columns derived before
it), then the filters, which keep the rows where every ``--where`` condition is true (several
are ANDed). A filter may therefore test a derived column (``--derive "net=\\"capital-gain\\" -
\\"capital-loss\\"" --where "net > 0"``). Both are per-row transformations, free in privacy
(:mod:`approxdp.releases.transformations`); the expressions are SQL over one row's columns,
parsed and checked against an allow-list (:mod:`approxdp.engines.expressions`), never pasted
into a query. A derived column has no clamping bounds of its own here: released as the value
column, it takes the command's ``--bounds`` (or a spec query's ``bounds``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from approxdp.errors import ExpressionError, InvalidParameterError

if TYPE_CHECKING:
    from approxdp.releases.transformations import TableTransformations

__all__ = ["Derive", "parse_derives", "row_options", "transform_rows"]

#: A derived column: (name, SQL expression).
Derive = tuple[str, str]

T = TypeVar("T", bound="TableTransformations")

WHERE_HELP = ("Keep only the rows where this SQL condition over the columns is true, e.g. "
              "\"sex = 'Female' AND age > 30\" (repeatable: all must hold). Applied after "
              "--derive, so it may test derived columns. Free in privacy (a per-row filter); "
              "subqueries, file readers and ';' are refused.")
DERIVE_HELP = ("A new column computed from each row, NAME=SQL, e.g. "
               "'net=\"capital-gain\" - \"capital-loss\"' (repeatable, computed in the order "
               "given, before --where). Released as the value column it is clamped to --bounds "
               "like any column: its bounds are stated by you, never read from the data.")


def row_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--where`` and ``--derive`` options (parameters ``wheres`` and ``derive_specs``)."""
    func = click.option("--derive", "derive_specs", multiple=True, metavar="NAME=SQL",
                        help=DERIVE_HELP)(func)
    return click.option("--where", "wheres", multiple=True, metavar="SQL",
                        help=WHERE_HELP)(func)


def parse_derives(specs: Iterable[str]) -> tuple[Derive, ...]:
    """``NAME=SQL`` options as (name, expression) pairs: the name is what comes before the
    first ``=`` (trimmed), the expression what follows it.

    Raises:
        InvalidParameterError: a spec without ``=``, with an empty name or expression, or a
            name given twice.
    """
    out: list[Derive] = []
    for spec in specs:
        name, sep, expression = spec.partition("=")
        name = name.strip()
        if not sep or not name or not expression.strip() or name.endswith(("<", ">", "!")):
            raise InvalidParameterError(
                f"--derive must look like NAME=SQL (a new column's name, then its expression), "
                f"got {spec!r}"
            )
        if any(name == seen for seen, _ in out):
            raise InvalidParameterError(f"--derive gives column {name!r} twice")
        out.append((name, expression.strip()))
    return tuple(out)


def transform_rows(
    table: T, *, derive: Sequence[Derive] | Mapping[str, str] = (), where: Sequence[str] = (),
    derive_label: Callable[[str], str] = lambda name: f"--derive {name}=",
    where_label: Callable[[int], str] = lambda i: "--where",
) -> T:
    """``table`` with the derived columns (in order), then the filters (all ANDed).

    ``derive_label(name)`` and ``where_label(i)`` name an expression in messages (the options,
    or a spec's keys), followed by the expression as written.

    Raises:
        ExpressionError: an expression outside the language (one line naming it).
        DataError: a derived column's name is taken.
    """
    pairs = derive.items() if isinstance(derive, Mapping) else derive
    for name, expression in pairs:
        try:
            table = table.with_column(name, expression)
        except ExpressionError as exc:
            raise _renamed(exc, f"{derive_label(name)}{expression!r}") from None
    for i, condition in enumerate(where):
        try:
            table = table.filter(condition)
        except ExpressionError as exc:
            raise _renamed(exc, f"{where_label(i)} {condition!r}") from None
    return table


def _renamed(exc: ExpressionError, named: str) -> ExpressionError:
    return ExpressionError(f"{named}: {exc.reason}", expression=exc.expression, part=exc.part,
                           reason=exc.reason)
