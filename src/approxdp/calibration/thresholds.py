"""Where the classical Gaussian formulas stop being private (Zhao et al. Remark 2, Fig. 1 and 3).

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Remark 2, Fig. 1 and 3.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_parameter, is_scalar
from approxdp.calibration.methods import CALIBRATION_METHODS
from approxdp.errors import UnknownMethodError
from approxdp.profiles.gaussian import log_profile_eu

__all__ = ["classical_failure_threshold"]

_CLASSICAL = ("dwork-2006", "dwork-roth-2014", "wang-lecture")
# Scan grid for the first failing ε: fine enough that the failing set, an interval [G, ∞) for
# δ < 1/2, cannot be missed; the crossing is then refined by bisection.
_GRID = np.logspace(-8, 7, 3001)


def _gap(method: str, eps: np.ndarray, delta: float, notion: str) -> np.ndarray:
    """log profile(ε, σ_method(ε)) - log δ (> 0 where the method fails)."""
    sigma = CALIBRATION_METHODS[method].sigma_unit(eps, np.full_like(eps, delta))
    return log_profile_eu(eps, 1.0 / sigma, notion) - math.log(delta)  # type: ignore[arg-type]


def classical_failure_threshold(
    delta: npt.ArrayLike, method: str = "dwork-roth-2014", notion: str = "dp"
) -> Any:
    """The ε above which a classical σ stops being (ε, δ)-DP: the paper's G*(δ) (Remark 2).

    Returns the smallest ε at which ``method``'s σ(ε, δ) has a privacy profile above δ (found
    on a log grid from 1e-8 to 1e7, then refined by 200 bisection steps and reported at the
    private end), or ``inf`` if it never fails there. The paper rounds these values up: the
    exact thresholds for ``dwork-roth-2014`` at δ = 1e-3 ... 1e-6 are 7.4635, 7.9910, 8.4198,
    8.7821 (paper: 7.47, 8.00, 8.43, 8.79).

    Args:
        delta: δ in (0, 1); scalar or array.
        method: ``"dwork-roth-2014"``, ``"dwork-2006"`` or ``"wang-lecture"``.
        notion: ``"dp"`` or ``"pdp"`` (where it fails (ε, δ)-pDP, Zhao et al. Fig. 3).

    Example:
        >>> round(classical_failure_threshold(1e-5), 4)
        8.4198
    """
    if method not in _CLASSICAL:
        raise UnknownMethodError(
            f"method must be one of {', '.join(_CLASSICAL)}, got method={method!r}"
        )
    if notion not in ("dp", "pdp"):
        raise UnknownMethodError(f"notion must be 'dp' or 'pdp', got notion={notion!r}")
    arr = check_parameter("delta", delta)
    out = np.empty(arr.size)
    for i, d in enumerate(arr.ravel()):
        gaps = _gap(method, _GRID, float(d), notion)
        failing = np.flatnonzero(gaps > 0)
        if failing.size == 0:
            out[i] = math.inf
            continue
        j = int(failing[0])
        if j == 0:
            out[i] = 0.0
            continue
        lo, hi = float(_GRID[j - 1]), float(_GRID[j])
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if _gap(method, np.array([mid]), float(d), notion)[0] > 0:
                hi = mid
            else:
                lo = mid
        out[i] = lo
    return float(out[0]) if is_scalar(delta) else out.reshape(arr.shape)
