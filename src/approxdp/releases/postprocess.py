"""Opt-in post-processing of released counts: non-negative values, whole numbers.

A noisy count can be negative or fractional. Anything computed from the released values alone
costs no privacy (post-processing: Dwork & Roth 2014, Prop. 2.1), so these are free — but
they change the numbers (a clamped count is biased upwards near zero), so approxdp never
applies them by itself: call :meth:`~approxdp.releases.ReleaseResult.non_negative` on a count
or histogram, and the result says what was done in its notes and ``explain()``.

- ``"clamp"``: each value becomes max(value, 0).
- ``"round"``: clamp, then round to whole numbers *consistently*: the rounded cells add up to
  the rounded total of the clamped cells (largest-remainder rounding: every cell is rounded
  down, and the cells with the largest remainders are rounded up until the total matches), so
  a table and its margin stay consistent. Each value moves by less than 1.

Intervals stay honest: the true count is a non-negative (whole) number, so an interval that
holds it still holds it after clamping its ends at 0 (and, for ``"round"``, after rounding its
low end up and its high end down to whole numbers).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError

__all__ = ["NON_NEGATIVE", "NON_NEGATIVE_KINDS", "non_negative_counts"]

FloatArray = npt.NDArray[np.float64]

#: The post-processings :meth:`ReleaseResult.non_negative` knows.
NON_NEGATIVE = ("clamp", "round")
#: Kinds of release whose values are counts.
NON_NEGATIVE_KINDS = ("count", "histogram")


def non_negative_counts(
    values: FloatArray, ci_low: FloatArray, ci_high: FloatArray,
    how: Literal["clamp", "round"],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(values, ci_low, ci_high) clamped at 0 and, for ``how="round"``, rounded consistently
    (see the module docstring).

    >>> v, lo, hi = non_negative_counts(np.array([-1.2, 2.6, 3.3]), np.array([-5.0, -2.0, 0.5]),
    ...                                 np.array([3.0, 6.5, 7.2]), "round")
    >>> v.tolist(), lo.tolist(), hi.tolist()
    ([0.0, 3.0, 3.0], [0.0, 0.0, 1.0], [3.0, 6.0, 7.0])
    """
    if how not in NON_NEGATIVE:
        raise InvalidParameterError(f"how must be one of {list(NON_NEGATIVE)}, got how={how!r}")
    v = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    lo = np.maximum(np.asarray(ci_low, dtype=np.float64), 0.0)
    hi = np.maximum(np.asarray(ci_high, dtype=np.float64), 0.0)
    if how == "clamp":
        return v, lo, hi
    floor = np.floor(v)
    short = round(float(v.sum())) - int(floor.sum())
    order = np.argsort(-(v - floor), kind="stable")  # largest remainders first
    floor[order[:max(short, 0)]] += 1.0
    return floor, np.ceil(lo), np.maximum(np.floor(hi), np.ceil(lo))
