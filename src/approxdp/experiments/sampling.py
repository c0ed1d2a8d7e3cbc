"""Small shared pieces of the simulations: validated repetition counts and step grids."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = ["check_reps", "first_k", "steps_grid"]


def check_reps(reps: object, name: str = "reps") -> int:
    """A number of repetitions: an integer >= 1 (typed error otherwise)."""
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)):
        raise ParameterTypeError(f"{name} must be an integer >= 1, got {reps!r}")
    if reps < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {name}={reps}")
    return int(reps)


def steps_grid(k_max: int, dense_up_to: int = 100, points: int = 60) -> npt.NDArray[np.int64]:
    """Every k from 1 to min(dense_up_to, k_max), then ``points`` log-spaced k up to k_max.

    The powers of ten up to ``k_max`` are always included (the report quotes them).
    """
    k_max = check_reps(k_max, "k_max")
    dense = np.arange(1, min(dense_up_to, k_max) + 1)
    if k_max <= dense_up_to:
        return dense.astype(np.int64)
    sparse = np.round(np.geomspace(dense_up_to, k_max, points))
    decades = 10.0 ** np.arange(0, int(np.log10(k_max)) + 1)
    return np.unique(np.concatenate([dense, sparse, decades, [k_max]])).astype(np.int64)


def first_k(condition: Callable[[int], bool], k_max: int) -> int | None:
    """Least k in [1, k_max] with ``condition(k)``, by bisection (None if not even at k_max).

    For conditions that stay true once true (a ratio that falls with k), as in the crossovers
    of the composition and max-error experiments.
    """
    if not condition(k_max):
        return None
    if condition(1):
        return 1
    lo, hi = 1, k_max  # condition(lo) is False, condition(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if condition(mid):
            hi = mid
        else:
            lo = mid
    return hi
