"""TEACHING EXAMPLES ONLY — mechanisms that are (ε, δ)-DP and still disastrous.

They show why δ must be far below 1/n (D. Wang's notes, Lemma 5.2; Near & Abuah's "catastrophe
mechanism", https://programming-dp.com/ch6.html): the
(ε, δ) definition lets a mechanism publish real records with probability δ. **Never use
either function for a real release.** They exist to be studied, tested and plotted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from approxdp.errors import ParameterTypeError
from approxdp.mechanisms.base import check_delta

__all__ = ["catastrophe", "name_and_shame"]

T = TypeVar("T")


def _generator(rng: np.random.Generator | None) -> np.random.Generator:
    if rng is None:
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise ParameterTypeError(f"rng must be None or a numpy.random.Generator, got {rng!r}")
    return rng


def name_and_shame(
    records: Sequence[T], delta: float, rng: np.random.Generator | None = None
) -> list[T]:
    """"Name and shame": publish each record independently with probability δ.

    It is (0, δ)-DP (D. Wang's notes, Lemma 5.2: changing one record changes the output
    distribution only on the event that that record is published, of probability δ), yet with
    δ ≥ 1/n it publishes about δn complete records in the clear. NEVER use it for a real
    release: it is in the library only to show that (ε, δ)-DP with a large δ permits
    publishing raw data.
    """
    d = check_delta(delta)
    gen = _generator(rng)
    keep = gen.random(len(records)) < d
    return [r for r, k in zip(records, keep, strict=True) if k]


def catastrophe(
    data: Sequence[T], delta: float, rng: np.random.Generator | None = None
) -> list[T] | None:
    """The "catastrophe mechanism": publish the whole data set with probability δ, else None.

    (0, δ)-DP — any event's probability changes by at most δ between neighbours — and with
    probability δ it reveals everyone (the notes). NEVER use it for a real release: it shows
    that δ bounds the probability of total disclosure, which is why δ must be tiny.
    """
    d = check_delta(delta)
    gen = _generator(rng)
    return list(data) if gen.random() < d else None
