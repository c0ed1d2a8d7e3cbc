"""The labelled result of every accounting function: an (ε, δ) pair that says what it is.

A composition theorem gives an *upper bound* on the privacy of the composed mechanism; the
exact Gaussian composition (Zhao et al. Lemma 15) and the optimal composition of Kairouz, Oh and
Viswanath (2017) give the *exact* value (the latter exact over the class of all (ε, δ)-DP
mechanisms); Near & Abuah's simplified advanced composition is an *approximation* that can
underestimate ε outside its validity range. Nothing in approxdp returns an approximation
unless asked for by name.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError

__all__ = ["KINDS", "Guarantee", "Kind"]

Kind: TypeAlias = Literal["exact", "upper bound", "approximation"]
KINDS: tuple[Kind, ...] = ("exact", "upper bound", "approximation")

FloatOrArray: TypeAlias = float | npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Guarantee:
    """A privacy guarantee (ε, δ) with its provenance.

    Unpacks like the tuple ``(epsilon, delta)``: ``eps, delta = advanced_composition(...)``.

    Attributes:
        epsilon: ε of the guarantee (float, or an array for vectorized calls).
        delta: δ of the guarantee, same shape as ``epsilon``.
        kind: ``"exact"``, ``"upper bound"`` or ``"approximation"`` (may underestimate ε).
        rule: the theorem that produced the numbers, with its source.
        bracket: for accountants that certify both sides (the PLD accountant): a
            (lower, upper) pair that surely contains the true value of the quantity that was
            solved for (ε when δ was given, δ when ε was given), each end an array of the
            targets' shape for vectorized calls; None otherwise.
    """

    epsilon: FloatOrArray
    delta: FloatOrArray
    kind: Kind
    rule: str
    bracket: tuple[FloatOrArray, FloatOrArray] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidParameterError(f"kind must be one of {KINDS}, got kind={self.kind!r}")

    def __iter__(self) -> Iterator[FloatOrArray]:
        yield self.epsilon
        yield self.delta

    def as_tuple(self) -> tuple[FloatOrArray, FloatOrArray]:
        """The bare ``(epsilon, delta)`` pair."""
        return (self.epsilon, self.delta)


def to_output(value: npt.NDArray[np.float64]) -> FloatOrArray:
    """0-d arrays become Python floats; other arrays are returned as float64 arrays."""
    arr = np.asarray(value, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


def round_up(value: float, ulps: int = 4) -> float:
    """``value`` moved ``ulps`` floating-point steps towards +inf (private-side rounding)."""
    out = value
    for _ in range(ulps):
        out = math.nextafter(out, math.inf)
    return out
