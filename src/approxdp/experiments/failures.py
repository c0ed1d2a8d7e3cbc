"""Where the classical formulas fail: Zhao et al. Fig. 1 (DP), Fig. 3 (pDP) and Remark 2's G(δ).

For a classical σ = F(δ)Δ/ε (Dwork-2006: F = √(2 ln(2/δ)); Dwork-2014: F = √(2 ln(1.25/δ))),
the mechanism is (ε, δ)-DP iff its exact profile δ_DP(ε; σ, Δ) <= δ (Zhao et al. Thm 2), and
(ε, δ)-pDP iff P[|L| > ε] <= δ (Thm 6). Paper Thm 1: for every δ there is G(δ) above which it
fails. We compute the failing set on a grid (no assumption that it is an interval) and G(δ)
with :func:`approxdp.calibration.classical_failure_threshold`.

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Thm 2, Remark 2, Fig. 1 and 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from approxdp.calibration import classical_failure_threshold
from approxdp.experiments.methods import noise_amounts, pdp_private

__all__ = [
    "CLASSICAL",
    "PUBLISHED_G",
    "FailureRegion",
    "ThresholdRow",
    "failure_region",
    "failure_thresholds",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Notion = Literal["dp", "pdp"]

CLASSICAL: tuple[str, str] = ("dwork-roth-2014", "dwork-2006")

#: Paper Remark 2: G*(δ) (Dwork-2014) and G#(δ) (Dwork-2006) as published, for DP.
PUBLISHED_G: dict[str, dict[float, float]] = {
    "dwork-roth-2014": {1e-3: 7.47, 1e-4: 8.00, 1e-5: 8.43, 1e-6: 8.79},
    "dwork-2006": {1e-3: 8.51, 1e-4: 8.99, 1e-5: 9.39, 1e-6: 9.73},
}


@dataclass(frozen=True, slots=True, eq=False)
class FailureRegion:
    """The (ε, δ) grid points where a classical σ is not private (Zhao et al. Fig. 1 or 3).

    Attributes:
        method: ``"dwork-roth-2014"`` or ``"dwork-2006"``.
        notion: ``"dp"`` (Fig. 1) or ``"pdp"`` (Fig. 3).
        deltas: the δ axis (log-spaced), shape (n_d,).
        epsilons: the ε axis, shape (n_e,).
        fails: True where the method's σ is not (ε, δ)-private, shape (n_e, n_d).
        curve_deltas: δ values at which G(δ) was computed.
        curve: G(δ) there: the least ε at which the method fails.
    """

    method: str
    notion: Notion
    deltas: FloatArray
    epsilons: FloatArray
    fails: BoolArray
    curve_deltas: FloatArray
    curve: FloatArray


def _check_classical(method: str, notion: str) -> None:
    from approxdp.errors import UnknownMethodError

    if method not in CLASSICAL:
        raise UnknownMethodError(
            f"method must be one of {', '.join(CLASSICAL)}, got method={method!r}"
        )
    if notion not in ("dp", "pdp"):
        raise UnknownMethodError(f"notion must be 'dp' or 'pdp', got notion={notion!r}")


def failure_region(
    method: str = "dwork-roth-2014",
    notion: Notion = "dp",
    *,
    epsilon_max: float = 20.0,
    delta_min: float = 1e-12,
    resolution: int = 160,
    curve_points: int = 40,
) -> FailureRegion:
    """Grid of where ``method``'s σ fails (ε, δ)-DP (``notion="dp"``) or -pDP, and G(δ).

    Args:
        method: ``"dwork-roth-2014"`` (Zhao et al. Eq. 2) or ``"dwork-2006"`` (Eq. 1).
        notion: ``"dp"`` (Zhao et al. Fig. 1) or ``"pdp"`` (Zhao et al. Fig. 3).
        epsilon_max: top of the ε axis (linear from 0).
        delta_min: left end of the δ axis (log-spaced up to 0.99).
        resolution: grid points per axis.
        curve_points: δ values at which G(δ) is computed (up to δ = 0.45).
    """
    _check_classical(method, notion)
    deltas = np.logspace(math.log10(delta_min), math.log10(0.99), resolution)
    epsilons = np.linspace(epsilon_max / resolution, epsilon_max, resolution)
    E, D = np.meshgrid(epsilons, deltas, indexing="ij")
    sigma, private = noise_amounts(method, E, D)
    if notion == "pdp":
        private = pdp_private(E, D, sigma)
    curve_deltas = np.logspace(math.log10(delta_min), math.log10(0.45), curve_points)
    curve = np.asarray(classical_failure_threshold(curve_deltas, method=method, notion=notion))
    return FailureRegion(method, notion, deltas, epsilons, ~private, curve_deltas, curve)


@dataclass(frozen=True, slots=True)
class ThresholdRow:
    """G(δ) of one classical formula under one notion, with the paper's value if it has one.

    Attributes:
        method, notion, delta: what was computed.
        exact: the least ε at which the formula is not private (to ~1e-12).
        published: the value of Zhao et al. Remark 2 (DP only), or None.
    """

    method: str
    notion: Notion
    delta: float
    exact: float
    published: float | None

    @property
    def claim_holds(self) -> bool | None:
        """Is the paper's "fails for every ε > G" true with its G? (None: no published G.)

        The failing set is [G_exact, ∞) for δ < 1/2 (Zhao et al. Thm 1 and our grid), so the claim
        holds iff the published G is at least the exact one.
        """
        if self.published is None:
            return None
        return self.published >= self.exact


def failure_thresholds(
    deltas: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-15),
) -> list[ThresholdRow]:
    """G(δ) for Dwork-2014 and Dwork-2006 under DP and pDP, beside Zhao et al.'s Remark 2."""
    rows = []
    for method in CLASSICAL:
        for notion in ("dp", "pdp"):
            g = np.atleast_1d(classical_failure_threshold(np.array(deltas), method, notion))
            for d, value in zip(deltas, g, strict=True):
                published = PUBLISHED_G[method].get(d) if notion == "dp" else None
                rows.append(ThresholdRow(method, notion, d, float(value), published))
    return rows
