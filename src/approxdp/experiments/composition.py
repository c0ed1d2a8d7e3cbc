"""Composition as k grows (the notes' plot, improved) and the notes' averaging attack.

The notes (Near & Abuah, https://programming-dp.com/ch6.html) compare sequential composition (kε)
with the simplified advanced composition 2ε√(2k ln(1/δ)) for ε = 1 and conclude that the latter wins
above k ≈ 70. We add the full advanced composition of Dwork & Roth 2014 (Thm 3.20), the optimal
composition of Kairouz et al. 2017 (exact over all ε-DP mechanisms) and the exact composition of
Gaussian releases (Zhao et al. Lemma 15), all from :mod:`approxdp.accounting`, and mark where the
simplified form is not a valid bound.

The averaging attack (notes, "Advanced Composition"): ask the same sensitivity-1 query k times
and average the noisy answers; the error falls as 1/√k while the privacy cost grows with k
under every rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_parameter
from approxdp.accounting import (
    advanced_composition,
    compose_gaussian,
    optimal_composition,
    simplified_advanced_composition,
)
from approxdp.calibration import calibrate_gaussian
from approxdp.experiments.sampling import check_reps, first_k, steps_grid
from approxdp.mechanisms import GaussianMechanism, LaplaceMechanism
from approxdp.profiles import gaussian_epsilon

__all__ = [
    "AveragingAttack",
    "CompositionCurves",
    "averaging_attack",
    "composition_curves",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, eq=False)
class CompositionCurves:
    """Total ε of k composed steps under each rule, at total δ = ``delta`` (basic: δ = 0).

    Attributes:
        epsilon: per-step ε (pure ε-DP steps for basic/advanced/simplified/optimal).
        delta: the total δ at which ε is reported (δ' of the advanced theorems).
        ks: numbers of steps.
        basic: kε (Dwork & Roth 2014, Thm 3.16).
        advanced: √(2k ln(1/δ))ε + kε(e^ε − 1) (Dwork & Roth 2014, Thm 3.20).
        simplified: the notes' 2ε√(2k ln(1/δ)).
        simplified_valid: True where the simplified form is an upper bound (else it
            underestimates; see :func:`approxdp.accounting.simplified_advanced_composition`).
        optimal: least ε of Kairouz et al. 2017 (exact over all ε-DP mechanisms).
        gaussian_sigma: σ of one Gaussian step that is exactly (ε, δ)-DP (DP-OPT).
        gaussian: exact ε at δ of k such Gaussian steps (Zhao et al. Lemma 15).
        simplified_below_basic_from: least k from which the notes' form is below kε.
        simplified_below_optimal_from: least k (up to max(ks)) from which the notes' form is
            below the exact optimum, i.e. understates the privacy loss; None if it never is.
    """

    epsilon: float
    delta: float
    ks: IntArray
    basic: FloatArray
    advanced: FloatArray
    simplified: FloatArray
    simplified_valid: BoolArray
    optimal: FloatArray
    gaussian_sigma: float
    gaussian: FloatArray
    simplified_below_basic_from: int | None = None
    simplified_below_optimal_from: int | None = None


def composition_curves(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    *,
    ks: npt.ArrayLike | None = None,
    k_max: int = 10_000,
) -> CompositionCurves:
    """Total privacy of k steps under basic, advanced, simplified, optimal, exact Gaussian.

    Args:
        epsilon: per-step ε > 0 (the notes use 1).
        delta: total δ in (0, 1) (the notes' text says 1e-5; their code has 10e-5 = 1e-4).
        ks: the step counts; default every k up to 100, then log-spaced up to ``k_max``.
        k_max: largest k of the default grid.
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    steps = steps_grid(k_max) if ks is None else np.unique(np.asarray(ks, dtype=np.int64))
    if steps.size == 0 or steps[0] < 1:
        from approxdp.errors import InvalidParameterError

        raise InvalidParameterError(f"ks must be integers >= 1, got ks={ks!r}")
    basic = steps * eps
    advanced = np.array([advanced_composition(eps, 0.0, int(k), dlt).epsilon for k in steps])
    simp = [simplified_advanced_composition(eps, int(k), dlt) for k in steps]
    simplified = np.array([g.epsilon for g in simp], dtype=np.float64)
    valid = np.array([g.kind == "upper bound" for g in simp])
    optimal = np.array([optimal_composition(eps, 0.0, int(k), dlt).epsilon for k in steps])
    sigma = float(calibrate_gaussian(eps, dlt))
    # σ* of k composed steps (Zhao et al. Lemma 15), then one vectorized inversion ε(σ*, δ).
    sigma_star = np.array([compose_gaussian(np.full(int(k), sigma)).sigma for k in steps])
    gaussian = np.asarray(gaussian_epsilon(sigma_star, dlt), dtype=np.float64)
    k_top = int(steps[-1])

    def notes(k: int) -> float:
        return float(simplified_advanced_composition(eps, k, dlt).epsilon)

    below_basic = first_k(lambda k: notes(k) < k * eps, k_top)
    below_optimal = first_k(
        lambda k: notes(k) < float(optimal_composition(eps, 0.0, k, dlt).epsilon), k_top
    )
    return CompositionCurves(eps, dlt, steps, basic.astype(np.float64), advanced, simplified,
                             valid, optimal, sigma, gaussian, below_basic, below_optimal)


@dataclass(frozen=True, slots=True, eq=False)
class AveragingAttack:
    """The notes' averaging attack: the mean of k noisy answers to one sensitivity-1 query.

    Attributes:
        epsilon: per-answer ε.
        delta: δ of each Gaussian answer and of the reported totals.
        ks: numbers of answers averaged.
        reps: simulated attacks per k.
        laplace_rmse: measured root-mean-square error of the average of k Laplace(1/ε)
            answers; theory √2/(ε√k).
        gaussian_rmse: the same for Gaussian answers with σ of DP-OPT at (ε, δ); theory σ/√k.
        laplace_theory, gaussian_theory: those theoretical values.
        cost: the total ε under each rule (from :func:`composition_curves` at the same ks).
    """

    epsilon: float
    delta: float
    ks: IntArray
    reps: int
    laplace_rmse: FloatArray
    gaussian_rmse: FloatArray
    laplace_theory: FloatArray
    gaussian_theory: FloatArray
    cost: CompositionCurves


def averaging_attack(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    *,
    ks: npt.ArrayLike | None = None,
    reps: int = 400,
    true_value: float = 10.0,
    seed: int = 0,
) -> AveragingAttack:
    """Simulate the averaging attack and price it under every composition rule.

    Noise comes from the mechanisms' seeded simulation path
    (``rng=np.random.default_rng(seed)``): each row of a (reps, k) release is one attack of
    k independent answers.

    Args:
        epsilon: per-answer ε > 0 (the notes: 1).
        delta: δ in (0, 1) for the Gaussian answers and the totals.
        ks: numbers of answers; default 1 … 1000 log-spaced, with the notes' k = 500.
        reps: attacks simulated per k (the RMSE's relative standard error is ~1/√(2 reps)).
        true_value: the query's true answer (the notes: 10).
        seed: seed of the simulation.
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    n = check_reps(reps)
    if ks is None:
        steps = np.unique(np.concatenate([np.round(np.geomspace(1, 1000, 16)), [500]]))
        steps = steps.astype(np.int64)
    else:
        steps = np.unique(np.asarray(ks, dtype=np.int64))
    lap = LaplaceMechanism(eps, 1.0)
    gauss = GaussianMechanism(eps, dlt, 1.0)
    lap_rmse = np.empty(steps.size)
    gauss_rmse = np.empty(steps.size)
    for i, k in enumerate(steps):
        truth = np.full((n, int(k)), float(true_value))
        rng = np.random.default_rng([seed, i])
        est = np.asarray(lap.release(truth, rng=rng)).mean(axis=1)
        lap_rmse[i] = math.sqrt(float(np.mean((est - true_value) ** 2)))
        est = np.asarray(gauss.release(truth, rng=rng)).mean(axis=1)
        gauss_rmse[i] = math.sqrt(float(np.mean((est - true_value) ** 2)))
    root_k = np.sqrt(steps.astype(np.float64))
    return AveragingAttack(
        eps, dlt, steps, n, lap_rmse, gauss_rmse, math.sqrt(2.0) / (eps * root_k),
        gauss.sigma / root_k, composition_curves(eps, dlt, ks=steps),
    )
