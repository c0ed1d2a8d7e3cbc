"""Laplace versus Gaussian noise at ε = 1 (the notes' histogram, with equal sample sizes).

The notes (Near & Abuah, https://programming-dp.com/ch6.html) draw 100 Laplace(1/ε) values against
100,000 Gaussian values with the classical σ = √(2 ln(1.25/δ))/ε and write δ = 10e-5 (which is 1e-4,
not the 1e-5 of their text). We draw the same number from each, add the exactly calibrated Gaussian
(DP-OPT), and give the exact tail probabilities next to the empirical ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp._validation import check_parameter
from approxdp.experiments.methods import noise_amounts
from approxdp.experiments.sampling import check_reps
from approxdp.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = ["NoiseSamples", "noise_samples"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class NoiseSamples:
    """Samples of the noise of three mechanisms for one sensitivity-1 query.

    Attributes:
        epsilon, delta: privacy parameters (δ for the Gaussians).
        laplace_scale: b = 1/ε.
        sigma_classical: Dwork-2014 σ = √(2 ln(1.25/δ))/ε (the notes' formula).
        sigma_optimal: DP-OPT σ (Zhao et al. Thm 2).
        laplace, classical, optimal: the samples (same size).
        thresholds: t at which tail probabilities are given.
        tails: exact P[|noise| > t], shape (3, len(thresholds)) in the order above.
        classical_private: whether the Dwork-2014 σ is (ε, δ)-DP here (Zhao et al. Fig. 1); if
            not, its samples show what the formula adds, not a mechanism approxdp offers.
    """

    epsilon: float
    delta: float
    laplace_scale: float
    sigma_classical: float
    sigma_optimal: float
    laplace: FloatArray
    classical: FloatArray
    optimal: FloatArray
    thresholds: tuple[float, ...]
    tails: FloatArray
    classical_private: bool = True


def noise_samples(
    epsilon: float = 1.0, delta: float = 1e-5, *, size: int = 100_000, seed: int = 0
) -> NoiseSamples:
    """Draw ``size`` noise values from Laplace, Dwork-2014 Gaussian and DP-OPT Gaussian.

    Args:
        epsilon: ε > 0 (the notes: 1).
        delta: δ in (0, 1) for the Gaussians (the notes' text: 1e-5).
        size: samples per mechanism.
        seed: seed of the simulation path (``rng=np.random.default_rng(seed)``).
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    n = check_reps(size, "size")
    lap = LaplaceMechanism(eps, 1.0)
    optimal = GaussianMechanism(eps, dlt, 1.0)
    zeros = np.zeros(n)
    rng = np.random.default_rng(seed)
    sigma_classical, private = noise_amounts("dwork-roth-2014", eps, dlt)
    lap_noise = np.asarray(lap.release(zeros, rng=rng))
    if bool(private):
        classical = GaussianMechanism(eps, dlt, 1.0, method="dwork-roth-2014")
        classical_noise = np.asarray(classical.release(zeros, rng=rng))
    else:  # not (ε, δ)-DP here: no mechanism will release it; draw what the formula adds
        classical_noise = rng.normal(0.0, float(sigma_classical), size=n)
    optimal_noise = np.asarray(optimal.release(zeros, rng=rng))
    thresholds = (1.0, 2.0, 5.0, 10.0)
    t = np.asarray(thresholds)
    tails = np.stack([
        np.exp(-t / lap.scale),
        special.erfc(t / (float(sigma_classical) * math.sqrt(2.0))),
        special.erfc(t / (optimal.sigma * math.sqrt(2.0))),
    ])
    return NoiseSamples(eps, dlt, lap.scale, float(sigma_classical), optimal.sigma, lap_noise,
                        classical_noise, optimal_noise, thresholds, tails, bool(private))
