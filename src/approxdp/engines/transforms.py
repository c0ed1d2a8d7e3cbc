"""Checks shared by the engines' row transformations (filter, derived column, lookup join),
so that DuckDB and Spark refuse the same inputs with the same messages.

The transformations themselves are engine primitives (:meth:`Engine.filter_rows`,
:meth:`Engine.with_expression`, :meth:`Engine.join_lookup`); what they compute is written in
:mod:`approxdp.engines.expressions` (the expression language) and here (the join's rules).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Literal

from approxdp.engines.expressions import RESERVED_PREFIX, RowExpression, ValueType
from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError

__all__ = [
    "JOIN_KINDS",
    "JoinHow",
    "check_derived_name",
    "check_expression_columns",
    "check_join",
]

#: ``"inner"``: private rows without a match are dropped; ``"left"``: kept, with NULLs.
JoinHow = Literal["inner", "left"]
JOIN_KINDS: tuple[str, ...] = ("inner", "left")


def _missing(column: str, names: Sequence[str], where: str) -> DataError:
    close = difflib.get_close_matches(column, list(names), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return DataError(f"column {column!r} not found in {where}; it has columns {list(names)}"
                     f"{hint}")


def check_expression_columns(types: Mapping[str, ValueType], expression: RowExpression) -> None:
    """Raise :class:`DataError` if ``expression`` reads a column the table lacks or whose type
    changed since it was parsed (an expression parsed against another table)."""
    if not isinstance(expression, RowExpression):
        raise ParameterTypeError(
            f"expected a RowExpression (approxdp.engines.expressions.parse_expression), got "
            f"{type(expression).__name__}"
        )
    for column in expression.columns:
        if column not in types:
            raise _missing(column, list(types), "the table")


def check_derived_name(types: Mapping[str, ValueType], name: str) -> str:
    """``name`` for a new column: a non-empty string, not reserved, not already a column
    (compared case-insensitively, as both engines resolve names)."""
    if not isinstance(name, str) or not name.strip():
        raise ParameterTypeError(f"a new column needs a non-empty name, got {name!r}")
    if name.startswith(RESERVED_PREFIX):
        raise InvalidParameterError(
            f"column name {name!r}: names beginning with {RESERVED_PREFIX!r} are reserved for "
            "the engines' own columns"
        )
    clash = [c for c in types if c.lower() == name.lower()]
    if clash:
        raise DataError(f"column {clash[0]!r} already exists; a derived column needs a new name "
                        "(existing columns are never replaced)")
    return name


def check_join(
    left: Mapping[str, ValueType], right: Mapping[str, ValueType],
    on: Sequence[tuple[str, str]], how: str,
) -> tuple[str, ...]:
    """Check a lookup join of ``left`` (the private table) with ``right`` (the lookup) on the
    pairs ``on`` = ((left column, right column), ...); return the lookup columns it adds
    (every right column but the keys, in order).

    Raises:
        DataError: A key is missing on either side, a key pair's types cannot be compared
            (text with numbers...), or an added column has the name of a private column.
        InvalidParameterError: ``how`` is not a join kind, ``on`` is empty or repeats a column.
    """
    if how not in JOIN_KINDS:
        raise InvalidParameterError(f"how must be one of {list(JOIN_KINDS)}, got how={how!r}")
    if not on:
        raise InvalidParameterError("a join needs at least one key column (on=...)")
    lefts, rights = [a for a, _ in on], [b for _, b in on]
    if len(set(lefts)) != len(lefts) or len(set(rights)) != len(rights):
        raise InvalidParameterError(f"on= lists a key column twice: {list(on)}")
    for a, b in on:
        if a not in left:
            raise _missing(a, list(left), "the private table")
        if b not in right:
            raise _missing(b, list(right), "the public table")
        ka, kb = _family(left[a]), _family(right[b])
        if ka != kb or ka == "other":
            raise DataError(
                f"join key {a!r} ({left[a]}) cannot be matched with the public table's {b!r} "
                f"({right[b]}): keys must both be numbers, both text or both true/false"
            )
    added = tuple(c for c in right if c not in rights)
    for c in added:
        if c.startswith(RESERVED_PREFIX):
            raise DataError(f"public table column {c!r}: names beginning with "
                            f"{RESERVED_PREFIX!r} are reserved for the engines' own columns")
        clash = [p for p in left if p.lower() == c.lower()]
        if clash:
            raise DataError(
                f"the public table's column {c!r} has the name of the private table's column "
                f"{clash[0]!r}; rename or drop it in the public table before joining"
            )
    return added


def _family(kind: ValueType) -> str:
    return "number" if kind in ("integer", "float") else kind
