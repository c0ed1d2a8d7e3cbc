"""Validation of user-facing numeric parameters.

Each checker takes the parameter's *name* so that the error can say which argument was wrong,
what it was, and what is allowed. Scalars come back as ``float`` and array-likes as float64
``numpy`` arrays; nothing is clamped or silently replaced. Booleans and strings are rejected
with :class:`~approxdp.errors.ParameterTypeError` rather than being coerced to numbers.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = ["as_float_array", "check_interval", "check_probability", "is_scalar", "plain_floats"]

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


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:g}" if x == 0 or 1e-4 <= abs(x) < 1e6 else f"{x:.6g}"
