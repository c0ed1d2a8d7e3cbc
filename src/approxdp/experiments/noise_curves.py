"""σ versus δ for every mechanism (Zhao et al. Fig. 2) and exact privacy profiles δ(ε).

Fig. 2 plots the noise amounts of pDP-OPT, DP-OPT, Dwork-2006, Dwork-2014 and Mechanisms 1–4
against δ for ε ∈ {0.1, 1, 5, 10, 15, 20}, Δ = 1. We add, for each point, whether the σ is
really (ε, δ)-DP by the exact profile (Zhao et al. Thm 2): the classical curves cross below DP-OPT
exactly where they stop being private (Fig. 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_parameter
from approxdp.experiments.methods import FIGURE_METHODS, check_methods, noise_amounts
from approxdp.profiles import gaussian_delta, gaussian_pdp_delta

__all__ = [
    "FIG2_EPSILONS",
    "PrivacyProfiles",
    "SigmaCurves",
    "privacy_profiles",
    "sigma_versus_delta",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: The six panels of Zhao et al. Fig. 2.
FIG2_EPSILONS: tuple[float, ...] = (0.1, 1.0, 5.0, 10.0, 15.0, 20.0)


@dataclass(frozen=True, slots=True, eq=False)
class SigmaCurves:
    """Noise amounts σ/Δ per ε, method and δ (Zhao et al. Fig. 2).

    Attributes:
        epsilons: one panel per ε.
        methods: library method names (labels in :data:`~approxdp.experiments.methods.LABELS`).
        deltas: the δ axis.
        sigma: σ/Δ, shape (len(epsilons), len(methods), len(deltas)); NaN where undefined.
        private: True where that σ is (ε, δ)-DP (exact profile), same shape.
    """

    epsilons: tuple[float, ...]
    methods: tuple[str, ...]
    deltas: FloatArray
    sigma: FloatArray
    private: BoolArray


def sigma_versus_delta(
    epsilons: tuple[float, ...] = FIG2_EPSILONS,
    methods: tuple[str, ...] = FIGURE_METHODS,
    *,
    delta_min: float = 1e-10,
    delta_max: float = 0.1,
    points: int = 60,
) -> SigmaCurves:
    """σ/Δ of each method against δ, for each ε (Zhao et al. Fig. 2).

    Args:
        epsilons: the ε of each panel (> 0).
        methods: calibration method names.
        delta_min: the smallest δ (log-spaced grid), inside (0, 1).
        delta_max: the largest δ, in (delta_min, 1).
        points: number of δ values.
    """
    eps = tuple(float(e) for e in check_parameter("epsilons", epsilons,
                                                  "epsilon_positive").ravel())
    methods = check_methods(methods)
    check_parameter("delta_min", delta_min, "delta")
    check_interval("delta_max", delta_max, delta_min, 1.0, low_open=True, high_open=True)
    deltas = np.logspace(math.log10(delta_min), math.log10(delta_max), int(points))
    sigma = np.empty((len(eps), len(methods), deltas.size))
    private = np.empty(sigma.shape, dtype=bool)
    for i, e in enumerate(eps):
        for j, m in enumerate(methods):
            sigma[i, j], private[i, j] = noise_amounts(m, e, deltas)
    return SigmaCurves(eps, methods, deltas, sigma, private)


@dataclass(frozen=True, slots=True, eq=False)
class PrivacyProfiles:
    """Exact δ(ε) of the Gaussian mechanism for several σ (Δ = sensitivity).

    Attributes:
        sigmas: the noise levels.
        sensitivity: Δ.
        epsilons: the ε axis.
        dp: δ_DP(ε; σ, Δ) (Zhao et al. Thm 2), shape (len(sigmas), len(epsilons)).
        pdp: δ_pDP(ε; σ, Δ) = P[|L| > ε] (Zhao et al. Thm 6), same shape.
    """

    sigmas: tuple[float, ...]
    sensitivity: float
    epsilons: FloatArray
    dp: FloatArray
    pdp: FloatArray


def privacy_profiles(
    sigmas: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0),
    *,
    sensitivity: float = 1.0,
    epsilon_max: float = 10.0,
    points: int = 200,
) -> PrivacyProfiles:
    """δ_DP(ε) and δ_pDP(ε) of the Gaussian mechanism for each σ in ``sigmas``."""
    sig = tuple(float(s) for s in check_parameter("sigmas", sigmas, "sigma_finite").ravel())
    check_parameter("epsilon_max", epsilon_max, "epsilon_positive")
    sens = float(check_parameter("sensitivity", sensitivity, "sensitivity_positive"))
    eps = np.linspace(0.0, epsilon_max, int(points))
    dp = np.stack([gaussian_delta(eps, s, sens) for s in sig])
    pdp = np.stack([gaussian_pdp_delta(eps, s, sens) for s in sig])
    return PrivacyProfiles(sig, sens, eps, dp, pdp)
