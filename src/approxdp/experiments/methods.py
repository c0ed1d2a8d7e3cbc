"""The Gaussian calibrations the paper compares, their labels, and σ even where not private.

The paper's figures draw the classical formulas (Dwork-2006, Dwork-2014) also where they are
*not* (ε, δ)-DP — that is the point of Fig. 1–3. :func:`noise_amounts` therefore asks
:func:`approxdp.calibration.calibrate_gaussian` for σ with ``allow_non_private=True`` and
returns, next to σ, whether the exact profile (Zhao et al. Thm 2) really is at most δ there
(:func:`~approxdp.calibration.exact_verdict`, the verdict of ``approxdp calibrate`` too).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.calibration import CALIBRATION_METHODS, calibrate_gaussian, exact_verdict
from approxdp.errors import NotPrivateWarning, UnknownMethodError

__all__ = [
    "DP_METHODS",
    "FIGURE_METHODS",
    "LABELS",
    "PDP_METHODS",
    "check_methods",
    "noise_amounts",
    "pdp_private",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: The eight mechanisms of Zhao et al.'s Fig. 2 (and of Fig. 4, 5), in the legend's order.
FIGURE_METHODS: tuple[str, ...] = (
    "pdp-optimal",
    "optimal",
    "dwork-2006",
    "dwork-roth-2014",
    "zhao-m1",
    "zhao-m2",
    "zhao-m3",
    "zhao-m4",
)
#: Methods that target (ε, δ)-DP and those that target (ε, δ)-pDP (which implies DP).
DP_METHODS: tuple[str, ...] = ("optimal", "zhao-m1", "zhao-m2", "dwork-roth-2014", "dwork-2006")
PDP_METHODS: tuple[str, ...] = ("pdp-optimal", "zhao-m3", "zhao-m4")

#: The paper's names for the library's method strings.
LABELS: dict[str, str] = {
    "optimal": "DP-OPT",
    "pdp-optimal": "pDP-OPT",
    "dwork-2006": "Dwork-2006",
    "dwork-roth-2014": "Dwork-2014",
    "zhao-m1": "Mechanism 1",
    "zhao-m2": "Mechanism 2",
    "zhao-m3": "Mechanism 3",
    "zhao-m4": "Mechanism 4",
    "wang-lecture": "Wang lecture",
    "zcdp": "zCDP",
}


def check_methods(methods: Any) -> tuple[str, ...]:
    """Validate a sequence of calibration method names (typed error naming the bad one)."""
    if isinstance(methods, str):
        methods = (methods,)
    out = tuple(methods)
    for m in out:
        if m not in CALIBRATION_METHODS:
            raise UnknownMethodError(
                f"unknown method={m!r}; choose from {', '.join(CALIBRATION_METHODS)}"
            )
    if not out:
        raise UnknownMethodError("methods must name at least one calibration method")
    return out


def noise_amounts(
    method: str, epsilon: npt.ArrayLike, delta: npt.ArrayLike, sensitivity: float = 1.0
) -> tuple[FloatArray, BoolArray]:
    """σ of ``method`` at (ε, δ) — also where it is not private — and whether it is DP there.

    Args:
        method: a name of :data:`approxdp.calibration.CALIBRATION_METHODS`.
        epsilon: ε > 0 (broadcast with ``delta``).
        delta: δ in (0, 1).
        sensitivity: ℓ2-sensitivity Δ.

    Returns:
        ``(sigma, private)`` arrays of the broadcast shape. σ is NaN where the method is not
        defined (Mechanism 2 for δ >= 1/2, Zhao et al. Thm 5); ``private`` is True where the exact
        DP profile δ_DP(ε; σ, Δ) (Zhao et al. Thm 2) is at most δ.
    """
    check_methods((method,))
    eps, dlt = np.broadcast_arrays(
        np.asarray(epsilon, dtype=np.float64), np.asarray(delta, dtype=np.float64)
    )
    sigma = np.full(eps.shape, np.nan)
    defined = dlt < CALIBRATION_METHODS[method].delta_below
    if np.any(defined):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            sigma[defined] = calibrate_gaussian(
                eps[defined], dlt[defined], sensitivity, method=method, allow_non_private=True
            )
    _, private = exact_verdict(eps, dlt, sigma, sensitivity)
    return sigma, private


def pdp_private(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: float = 1.0
) -> BoolArray:
    """True where σ gives (ε, δ)-pDP: P[|L| > ε] <= δ (Zhao et al. Def. 2, Thm 6)."""
    return exact_verdict(epsilon, delta, sigma, sensitivity, "pdp")[1]
