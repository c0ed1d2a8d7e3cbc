"""pDP-OPT by Halley's method in log σ, on arrays and on floats.

The least σ with P[|L| > ε] <= δ (Zhao et al. Thm 6, Eq. 13a: 2δ = erfc(d) + erfc(√(d² + ε))) solves
log 2δ_pDP(σ) = log 2δ. Its root d lies in (inverfc(2δ), inverfc(δ)) (Zhao et al. Appendix M), so
Mechanism 3's σ (d = inverfc(δ), Eq. 14) is above the optimum and serves as the start. Exact
Halley steps in t = log σ follow (derivatives in closed form,
:func:`~approxdp.profiles._gaussian_terms.pdp_log2delta_log_sigma_derivatives`), each evaluated
at the float σ by the σ-parametrised profile's formulas, with the same aim (the evaluation
margin below δ), verification and acceptance as DP-OPT
(:mod:`approxdp.calibration._optimal_halley`). Where δ > 1/2 the equation is solved for
2(1 - δ), with the complement computed directly. Points that do not settle go to the bracketed
search of :mod:`approxdp.calibration.optimal`.

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Thm 6, Eq. 13a, 14, Appendix M.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special
from scipy.special import cython_special

from approxdp._numerics import ARRAY_OPS, SCALAR_OPS, FloatArray
from approxdp.calibration._optimal_halley import (
    halley_from_derivatives,
    iterate_by_side,
    iterate_by_side_scalar,
)
from approxdp.calibration.closed_forms import sigma_from_parameter
from approxdp.profiles import _gaussian_terms as terms

__all__ = ["sigma_pdp_halley", "sigma_pdp_halley_scalar"]

_STEPS = 16


def _step(value: Any, a: Any, b: Any, h: Any, eps: Any, target: Any, comp: bool) -> Any:
    """Halley step toward ``target`` from log 2δ (or, where ``comp``, log 2(1 - δ)) = ``value``
    (arrays or floats; ``h`` is unused: the pDP derivatives need ε instead)."""
    ops = ARRAY_OPS if isinstance(value, np.ndarray) else SCALAR_OPS
    diff = ops.exp(value + a * a)
    lt, ltt = terms.pdp_log2delta_log_sigma_derivatives(a, b, eps, -diff if comp else diff, ops.exp)
    return halley_from_derivatives(value - target, lt, ltt, ops)


def sigma_pdp_halley(
    eps: FloatArray, delta: FloatArray
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """pDP-OPT σ/Δ for flat arrays of ε > 0 and δ in (0, 1), and the mask of settled points."""
    sigma = np.empty_like(eps)
    done = np.zeros(eps.shape, dtype=bool)
    iterate_by_side(
        eps, delta, np.ones(eps.shape, dtype=bool), (terms.pdp_log2delta, terms.pdp_log2comp),
        _step,
        # Mechanism 3, above the optimum
        lambda e, d, grp: sigma_from_parameter(special.erfcinv(d), e),
        _STEPS, sigma, done,
    )
    return sigma, done


def sigma_pdp_halley_scalar(eps: float, delta: float) -> float | None:
    """:func:`sigma_pdp_halley` for one point (Python floats); None if it did not settle."""
    try:
        return iterate_by_side_scalar(
            eps, delta, (terms.pdp_log2delta_scalar, terms.pdp_log2comp_scalar),
            _step,
            # Mechanism 3, above the optimum
            sigma_from_parameter(float(cython_special.erfcinv(delta)), eps, SCALAR_OPS), _STEPS,
        )
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
