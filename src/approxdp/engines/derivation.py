"""Columns derived from one numeric column, row by row: the argument of :meth:`Engine.derive
<approxdp.engines.base.Engine.derive>`, the engines' one primitive for derived columns.

A :class:`Derivation` names a numeric ``column`` and the new columns to compute from it, each
an :class:`Expression` of the row's value ``x`` (the column as float64) and float64 constants.
Rows whose value is NULL or NaN are dropped (±inf stay, and are clamped like any other value
by the expressions that clamp). Every engine writes the same tree in its own language, every
constant as the exact float64 (never a decimal literal), so each output is the same float64
on every engine (``tests/engines/test_conformance.py``).

The releases build their derived columns from these (a quantile tree's bin indices,
:mod:`approxdp.releases.quantiles`; the signed-log bins of private bounds,
:mod:`approxdp.releases.bounds`; a variance's centred value and its square,
:mod:`approxdp.releases.variance`). None of it knows about privacy.

>>> leaf = floor(divide(subtract(clamp(value(), 0.0, 10.0), number(0.0)), number(2.5)))
>>> Derivation("x", (("leaf", integer(leaf)),)).names
('leaf',)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "OPERATIONS",
    "Derivation",
    "Expression",
    "absolute",
    "add",
    "clamp",
    "divide",
    "floor",
    "greatest",
    "integer",
    "least",
    "log10",
    "multiply",
    "number",
    "sign",
    "subtract",
    "value",
]

Operation = Literal["value", "number", "add", "subtract", "multiply", "divide", "least",
                    "greatest", "floor", "abs", "sign", "log10", "integer"]

#: Each operation and its number of arguments. Every result is float64 except ``integer``
#: (int64, the float64 argument truncated; applied to whole numbers, e.g. after ``floor``).
OPERATIONS: dict[str, int] = {
    "value": 0, "number": 0, "add": 2, "subtract": 2, "multiply": 2, "divide": 2, "least": 2,
    "greatest": 2, "floor": 1, "abs": 1, "sign": 1, "log10": 1, "integer": 1,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Expression:
    """One node of an expression tree: ``op`` applied to ``args`` (``value``: the row's x;
    ``number``: the float64 constant ``constant``)."""

    op: Operation
    args: tuple[Expression, ...] = ()
    constant: float = 0.0

    def __post_init__(self) -> None:
        if self.op not in OPERATIONS:
            raise InvalidParameterError(
                f"op must be one of {sorted(OPERATIONS)}, got op={self.op!r}"
            )
        args = tuple(self.args)
        if len(args) != OPERATIONS[self.op] or not all(isinstance(a, Expression) for a in args):
            raise ParameterTypeError(
                f"{self.op} takes {OPERATIONS[self.op]} Expression argument(s), got {args!r}"
            )
        object.__setattr__(self, "args", args)
        if self.op == "number" and not math.isfinite(self.constant):
            raise InvalidParameterError(
                f"a number must be finite, got constant={self.constant!r}"
            )


def value() -> Expression:
    """x, the row's value of the derivation's column (as float64)."""
    return Expression("value")


def number(constant: float) -> Expression:
    """The float64 ``constant`` (finite)."""
    return Expression("number", constant=float(constant))


def add(a: Expression, b: Expression) -> Expression:
    """a + b."""
    return Expression("add", (a, b))


def subtract(a: Expression, b: Expression) -> Expression:
    """a − b."""
    return Expression("subtract", (a, b))


def multiply(a: Expression, b: Expression) -> Expression:
    """a · b."""
    return Expression("multiply", (a, b))


def divide(a: Expression, b: Expression) -> Expression:
    """a / b (b must not be 0)."""
    return Expression("divide", (a, b))


def least(a: Expression, b: Expression) -> Expression:
    """min(a, b)."""
    return Expression("least", (a, b))


def greatest(a: Expression, b: Expression) -> Expression:
    """max(a, b)."""
    return Expression("greatest", (a, b))


def floor(a: Expression) -> Expression:
    """⌊a⌋ (float64)."""
    return Expression("floor", (a,))


def absolute(a: Expression) -> Expression:
    """|a|."""
    return Expression("abs", (a,))


def sign(a: Expression) -> Expression:
    """−1, 0 or 1 (float64)."""
    return Expression("sign", (a,))


def log10(a: Expression) -> Expression:
    """log10(a) (a must be > 0)."""
    return Expression("log10", (a,))


def integer(a: Expression) -> Expression:
    """a as int64 (a whole number, e.g. a ``floor``)."""
    return Expression("integer", (a,))


def clamp(a: Expression, low: float, high: float) -> Expression:
    """min(max(a, low), high)."""
    return least(greatest(a, number(low)), number(high))


@dataclass(frozen=True, slots=True)
class Derivation:
    """New columns computed from the numeric ``column``: ``outputs`` pairs each new column's
    name with its :class:`Expression` of the row's value. Rows whose value is NULL or NaN are
    dropped; the other columns are kept unchanged."""

    column: str
    outputs: tuple[tuple[str, Expression], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ParameterTypeError(f"Derivation.column must be a column name, got "
                                     f"{self.column!r}")
        outputs = tuple((name, expr) for name, expr in self.outputs)
        names = [name for name, _ in outputs]
        if (not outputs or not all(isinstance(n, str) and n for n in names)
                or len({n.lower() for n in names}) != len(names)
                or not all(isinstance(e, Expression) for _, e in outputs)):
            raise InvalidParameterError(
                f"Derivation.outputs must be distinct (name, Expression) pairs, got {names}"
            )
        object.__setattr__(self, "outputs", outputs)

    @property
    def names(self) -> tuple[str, ...]:
        """The new columns' names, in order."""
        return tuple(name for name, _ in self.outputs)
