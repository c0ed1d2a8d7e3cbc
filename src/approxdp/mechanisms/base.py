"""Shared argument handling of the mechanisms: parameter checks and the choice of noise path.

Three noise paths exist; :func:`choose_path` picks one from ``rng`` and ``secure``:

``"secure"``      (default: ``rng=None``) exact integer noise from the OS CSPRNG.
``"seeded"``      ``rng=np.random.Generator``: the mechanism's simulation path driven by that
                  generator (float noise for Gaussian/Laplace, the exact sampler fed with the
                  generator's bits for integer mechanisms). Output marked as a simulation.
``"unseeded"``    ``secure=False`` without ``rng``: the same with a fresh ``default_rng()``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from approxdp._validation import as_float_array, check_interval, check_parameter
from approxdp.calibration.discrete_gaussian import check_dimension
from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "check_alpha",
    "check_delta",
    "check_dimension",
    "check_epsilon",
    "check_sensitivity",
    "choose_path",
    "prepare_value",
]

Path = Literal["secure", "seeded", "unseeded"]


def check_epsilon(epsilon: Any) -> float:
    """ε in (0, ∞), as a float."""
    return float(check_parameter("epsilon", epsilon, "epsilon_positive"))


def check_delta(delta: Any, *, high: float = 1.0, high_open: bool = True) -> float:
    """δ in (0, high), as a float."""
    if high == 1.0 and high_open:
        return float(check_parameter("delta", delta))
    return float(check_interval("delta", delta, 0.0, high, low_open=True, high_open=high_open))


def check_sensitivity(sensitivity: Any) -> float:
    """Δ in (0, ∞), as a float (Δ = 0 needs no mechanism)."""
    return float(
        check_parameter("sensitivity", sensitivity, "sensitivity_positive")
    )


def check_alpha(alpha: Any) -> float:
    """Miss probability α of a confidence interval, in (0, 1)."""
    return float(check_parameter("alpha", alpha, "probability"))


def choose_path(
    rng: np.random.Generator | None, secure: bool | None
) -> tuple[Path, np.random.Generator | None]:
    """Resolve ``rng``/``secure`` into a noise path and, for simulation paths, a Generator.

    Raises:
        ParameterTypeError: ``rng`` is neither None nor a Generator, or ``secure`` not a bool.
        InvalidParameterError: ``secure=True`` together with a seeded ``rng``.
    """
    if secure is not None and not isinstance(secure, bool):
        raise ParameterTypeError(f"secure must be True, False or None, got {secure!r}")
    if rng is None:
        if secure is False:
            return "unseeded", np.random.default_rng()
        return "secure", None
    if not isinstance(rng, np.random.Generator):
        raise ParameterTypeError(
            f"rng must be None (OS CSPRNG) or a numpy.random.Generator, got "
            f"{type(rng).__name__} {rng!r}; for a reproducible simulation pass "
            "rng=numpy.random.default_rng(seed)"
        )
    if secure is True:
        raise InvalidParameterError(
            "secure=True cannot be combined with a numpy Generator rng (got secure=True and "
            "rng=Generator); drop rng to use the OS CSPRNG"
        )
    return "seeded", rng


def prepare_value(value: Any) -> tuple[npt.NDArray[np.float64], bool]:
    """The query answer as a float64 array and whether it was a scalar."""
    arr = as_float_array("value", value)
    # One pass without a temporary: a NaN or infinite entry makes the sum non-finite (a finite
    # sum that overflows only sends us to the exact check).
    if not math.isfinite(float(np.sum(arr))):
        bad = ~np.isfinite(arr)
        if bool(np.any(bad)):
            raise InvalidParameterError(
                f"value must be finite, got value={float(arr[bad].flat[0])!r} in the input"
            )
    return arr, arr.ndim == 0
