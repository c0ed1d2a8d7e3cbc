"""Validation of user-facing numeric parameters.

Each checker takes the parameter's *name* so that the error can say which argument was wrong,
what it was, and what is allowed. Scalars come back as ``float`` and array-likes as float64
``numpy`` arrays; nothing is clamped or silently replaced. Booleans and strings are rejected
with :class:`~approxdp.errors.ParameterTypeError` rather than being coerced to numbers.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "PARAMETER_RANGES",
    "ParameterRange",
    "as_float_array",
    "check_interval",
    "check_parameter",
    "check_probability",
    "is_scalar",
    "plain_floats",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def is_scalar(value: Any) -> bool:
    """True for a Python or NumPy number (or a 0-d array)."""
    return isinstance(value, numbers.Number) or (isinstance(value, np.ndarray) and value.ndim == 0)


def plain_floats(*values: Any) -> tuple[float, ...] | None:
    """The values as Python floats if every one is a float (NumPy floats included) or a Python
    int (not a bool), else None. Scalar fast paths use this, then check ranges themselves and
    hand anything unusual (NaN, out of range) to the validating array path."""
    out = []
    for v in values:
        if isinstance(v, float) or type(v) is int:
            out.append(float(v))
        else:
            return None
    return tuple(out)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def as_float_array(name: str, value: Any) -> FloatArray:
    """Convert ``value`` to a float64 array, rejecting non-numeric input with a typed error."""
    if value is None:
        raise ParameterTypeError(f"{name} must be a number or an array of numbers, got None")
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise ParameterTypeError(
            f"{name} must be a number or an array of numbers, got {type(value).__name__} "
            f"{_describe(value)}"
        )
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a real number, got {_describe(value)}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and exotic objects
        raise ParameterTypeError(
            f"{name} must be a number or an array of numbers, got {_describe(value)}"
        ) from exc
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise ParameterTypeError(
            f"{name} must be a number or an array of real numbers, got dtype {arr.dtype} "
            f"({_describe(value)})"
        )
    return np.asarray(arr, dtype=np.float64)


def _first_bad(arr: FloatArray, bad: npt.NDArray[np.bool_]) -> float:
    return float(arr[bad].flat[0])


def check_interval(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> FloatArray:
    """Check that every element of ``value`` lies in the interval from ``low`` to ``high``.

    NaN is always rejected. Infinite endpoints are allowed only if the interval includes them
    (``high=math.inf, high_open=False`` admits ``inf``).
    """
    if type(value) is float and (value > low if low_open else value >= low) and (
        value < high if high_open else value <= high
    ):  # (a plain float in range — NaN is not — needs no array operations: the same value)
        return np.asarray(value, dtype=np.float64)
    arr = as_float_array(name, value)
    ok = ~np.isnan(arr)
    ok &= (arr > low) if low_open else (arr >= low)
    ok &= (arr < high) if high_open else (arr <= high)
    if not bool(np.all(ok)):
        bad_value = _first_bad(arr, ~ok)
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        n_bad = int(np.count_nonzero(~ok))
        where = "" if arr.ndim == 0 else f" (at {n_bad} of {arr.size} elements)"
        raise InvalidParameterError(
            f"{name} must be in {left}{_fmt(low)}, {_fmt(high)}{right}, "
            f"got {name}={_fmt(bad_value)}{where}"
        )
    return arr


def check_probability(name: str, value: Any, *, allow_zero: bool = False) -> FloatArray:
    """δ-like parameters: in (0, 1) (or [0, 1) with ``allow_zero``)."""
    return check_interval(name, value, 0.0, 1.0, low_open=not allow_zero, high_open=True)


@dataclass(frozen=True, slots=True)
class ParameterRange:
    """The values a kind of parameter may take, and why these: ``[low, high]`` with each end
    open or closed (:func:`check_interval`'s message shows it as ``[0, inf)``...)."""

    low: float
    high: float
    low_open: bool
    high_open: bool
    why: str

    def check(self, name: str, value: Any) -> FloatArray:
        """``value`` as floats, or :class:`InvalidParameterError` naming ``name``."""
        return check_interval(name, value, self.low, self.high, low_open=self.low_open,
                              high_open=self.high_open)

    def __str__(self) -> str:
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"{left}{_fmt(self.low)}, {_fmt(self.high)}{right}"


_INF = math.inf

#: Every kind of parameter the library checks, with its range and why it is that range —
#: the one table every check reads (:func:`check_parameter`), so ε (or δ, σ, q...) is refused
#: with the same range wherever it means the same thing. Where the same letter has two ranges,
#: the entries say why (ε of a profile may be ∞; ε spent by a release may not be 0).
PARAMETER_RANGES: MappingProxyType[str, ParameterRange] = MappingProxyType({
    "epsilon": ParameterRange(
        0.0, _INF, False, True,
        "a privacy loss or target: finite, and ε = 0 is (0, δ)-DP"),
    "epsilon_unbounded": ParameterRange(
        0.0, _INF, False, False,
        "where ε = ∞ means something: a profile δ(ε) is read there (δ(∞) = 0), or a loss "
        "composed with an unbounded step is ∞"),
    "epsilon_positive": ParameterRange(
        0.0, _INF, True, True,
        "an ε that must be positive and finite: the budget a release or a split spends, a "
        "grid's largest ε (no noise of finite scale gives ε = 0)"),
    "epsilon_figure": ParameterRange(
        0.0, 1e6, True, False,
        "an experiment's ε: past 10^6 every σ underflows to the smallest floats"),
    "sigma_figure": ParameterRange(
        0.0, 1e12, True, False,
        "a figure's σ: beyond 10^12 every profile of a unit sensitivity is 1 to plotting "
        "precision"),
    "delta": ParameterRange(
        0.0, 1.0, True, True,
        "a failure probability: δ = 0 needs infinite Gaussian noise, δ ≥ 1 promises nothing"),
    "delta_cost": ParameterRange(
        0.0, 1.0, False, True,
        "the δ of a step known by its (ε, δ) guarantee: 0 for pure DP"),
    "sigma": ParameterRange(
        0.0, _INF, True, False,
        "a noise scale: σ = ∞ releases nothing and has profile 0"),
    "sigma_finite": ParameterRange(
        0.0, _INF, True, True,
        "a noise scale to sample from or to scale a count by"),
    "sensitivity": ParameterRange(
        0.0, _INF, False, True,
        "an ℓ2 or ℓ1 sensitivity: Δ = 0 has nothing to hide"),
    "sensitivity_positive": ParameterRange(
        0.0, _INF, True, True,
        "a sensitivity that scales the noise of a mechanism: Δ = 0 would need none"),
    "sample_rate": ParameterRange(
        0.0, 1.0, True, False,
        "a sampling rate: q = 0 samples nothing, q = 1 keeps every record"),
    "level": ParameterRange(
        0.0, 1.0, True, True,
        "a confidence level"),
    "probability": ParameterRange(
        0.0, 1.0, True, True,
        "a probability strictly between 0 and 1 (a share, a failure rate)"),
    "quantile": ParameterRange(
        0.0, 1.0, False, False,
        "a quantile q: 0 is the minimum, 1 the maximum"),
    "scale": ParameterRange(
        0.0, _INF, True, False,
        "a Laplace scale: b = ∞ releases nothing"),
    "positive": ParameterRange(
        0.0, _INF, True, True,
        "a positive finite number (a weight, a rate, a target accuracy)"),
    "rho": ParameterRange(
        0.0, _INF, False, True,
        "a zCDP ρ: finite, ρ = 0 is perfectly private"),
    "finite": ParameterRange(
        -_INF, _INF, True, True,
        "a clamping bound: any finite number"),
})


def check_parameter(name: str, value: Any, kind: str | None = None) -> FloatArray:
    """``value`` checked against the range of ``kind`` (default: ``name``) in
    :data:`PARAMETER_RANGES`; the error names ``name``, its value and the range.

    >>> float(check_parameter("epsilon", 1.5))
    1.5
    >>> check_parameter("epsilon", -1)
    Traceback (most recent call last):
    ...
    approxdp.errors.InvalidParameterError: epsilon must be in [0, inf), got epsilon=-1
    """
    return PARAMETER_RANGES[kind or name].check(name, value)


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}" if x == 0 or 1e-4 <= abs(x) < 1e6 else f"{x:.6g}"
