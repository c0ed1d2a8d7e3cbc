"""Expected maximum error of k counting queries: Laplace (ℓ1) versus Gaussian (ℓ2).

Wu's notes, §2.2.3: k counting queries have Δ₁ = k and Δ₂ = √k. Laplace noise of scale
Δ₁/ε per answer gives E max_j |error_j| = O(k log k / ε) (Eq. 36); Gaussian noise of σ ∝ Δ₂
gives O(√(k log k log(1/δ)) / ε) (Eq. 37) — better once k log k ≳ log(1/δ).

We measure both by simulation and put them beside
- the exact expectations: for Laplace, |Lap(b)| ~ Exp(b), so E max = b H_k (H_k the harmonic
  number); for Gaussian, E max = σ ∫₀^∞ (1 − erf(t/√2)^k) dt;
- explicit versions of the lecture's bounds: b H_k ≤ (k/ε)(1 + ln k) for Eq. 36, and
  E max |N(0, σ²)| ≤ σ √(2 ln(2k)) with the lecture's σ = √(2 ln(2/δ)) √k / ε (Eq. 29,
  which is Dwork-2006) for Eq. 37, i.e. 2√(k ln(2k) ln(2/δ)) / ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import integrate, special

from approxdp._validation import check_parameter
from approxdp.calibration import calibrate_gaussian
from approxdp.errors import NotPrivateError
from approxdp.experiments.sampling import check_reps, first_k
from approxdp.mechanisms import GaussianMechanism, LaplaceMechanism

__all__ = ["MaxErrorResult", "expected_max_abs_normal", "max_error_experiment"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class MaxErrorResult:
    """E max_j |a_j − f_j| over k counting queries, measured and in theory.

    Attributes:
        epsilon, delta: the privacy parameters (δ for the Gaussian only).
        ks: numbers of queries.
        reps: simulated releases per k.
        laplace_measured: mean over releases of the maximum error, Laplace(k/ε) noise.
        laplace_exact: (k/ε) H_k.
        laplace_bound: (k/ε)(1 + ln k) (Wu's notes, Eq. 36 with its constant).
        gaussian_methods: calibrations simulated (``"optimal"``, ``"dwork-2006"``).
        gaussian_measured: shape (len(gaussian_methods), len(ks)); NaN where the method is
            not (ε, δ)-DP (Dwork-2006 at large ε) and therefore not run.
        gaussian_exact: σ ∫(1 − erf(t/√2)^k) dt per method, same shape.
        gaussian_bound: 2√(k ln(2k) ln(2/δ))/ε (Wu's notes, Eq. 37 with its constants).
        crossover_measured: smallest k of the grid from which DP-OPT Gaussian beats Laplace.
        crossover_exact: the same from the exact expectations, over every integer k.
        crossover_bound: the same for the two bounds.
        crossover_heuristic: least k with k ln k >= ln(1/δ) (the lecture's rule of thumb).
    """

    epsilon: float
    delta: float
    ks: IntArray
    reps: int
    laplace_measured: FloatArray
    laplace_exact: FloatArray
    laplace_bound: FloatArray
    gaussian_methods: tuple[str, ...]
    gaussian_measured: FloatArray
    gaussian_exact: FloatArray
    gaussian_bound: FloatArray
    crossover_measured: int | None
    crossover_exact: int | None
    crossover_bound: int | None
    crossover_heuristic: int


def expected_max_abs_normal(k: int) -> float:
    """E max_{j≤k} |Z_j| for iid standard normal Z_j: ∫₀^∞ 1 − erf(t/√2)^k dt."""

    def tail(t: float) -> float:
        # 1 - (1 - erfc)^k without cancellation
        return -math.expm1(k * math.log1p(-float(special.erfc(t / math.sqrt(2.0)))))

    upper = math.sqrt(2.0 * math.log(2.0 * k)) + 12.0
    value, _ = integrate.quad(tail, 0.0, upper, limit=200)
    return float(value)


def _harmonic(k: int) -> float:
    return float(special.digamma(k + 1.0) + np.euler_gamma)


def _first_from(ks: npt.ArrayLike, better: npt.ArrayLike) -> int | None:
    """Smallest k from which ``better`` holds for the rest of the grid."""
    k_arr = np.asarray(ks)
    b = np.asarray(better, dtype=bool)
    if not bool(b[-1]):
        return None
    bad = np.flatnonzero(~b)
    return int(k_arr[0] if bad.size == 0 else k_arr[bad[-1] + 1])


def max_error_experiment(
    epsilon: float = 1.0,
    delta: float = 1e-5,
    *,
    ks: npt.ArrayLike | None = None,
    reps: int = 200,
    seed: int = 0,
) -> MaxErrorResult:
    """Simulate k counting queries released with Laplace and Gaussian noise; compare with theory.

    Args:
        epsilon: ε > 0 of the whole release of k answers.
        delta: δ in (0, 1) of the Gaussian release.
        ks: query counts (default 1 … 10⁴, log-spaced).
        reps: releases simulated per k (seeded simulation path of the mechanisms).
        seed: simulation seed.
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    n = check_reps(reps)
    steps = (np.unique(np.round(np.geomspace(1, 10_000, 25))) if ks is None
             else np.unique(np.asarray(ks))).astype(np.int64)
    methods = ("optimal", "dwork-2006")
    lap_meas = np.empty(steps.size)
    g_meas = np.empty((len(methods), steps.size))
    g_exact = np.empty_like(g_meas)
    for i, k in enumerate(steps):
        zeros = np.zeros((n, int(k)))
        rng = np.random.default_rng([seed, i])
        lap = LaplaceMechanism(eps, float(k))  # Δ₁ = k
        lap_meas[i] = float(np.abs(np.asarray(lap.release(zeros, rng=rng))).max(axis=1).mean())
        e_max = expected_max_abs_normal(int(k))
        for j, m in enumerate(methods):
            try:
                mech = GaussianMechanism(eps, dlt, math.sqrt(float(k)), method=m)  # Δ₂ = √k
            except NotPrivateError:
                g_meas[j, i] = g_exact[j, i] = math.nan  # e.g. Dwork-2006 at large ε
                continue
            noisy = np.asarray(mech.release(zeros, rng=np.random.default_rng([seed, i, j + 1])))
            g_meas[j, i] = float(np.abs(noisy).max(axis=1).mean())
            g_exact[j, i] = mech.sigma * e_max
    kf = steps.astype(np.float64)
    lap_exact = kf / eps * np.array([_harmonic(int(k)) for k in steps])
    lap_bound = kf / eps * (1.0 + np.log(kf))
    g_bound = 2.0 * np.sqrt(kf * np.log(2.0 * kf) * math.log(2.0 / dlt)) / eps
    return MaxErrorResult(
        eps, dlt, steps, n, lap_meas, lap_exact, lap_bound, methods, g_meas, g_exact, g_bound,
        _first_from(steps, g_meas[0] < lap_meas),
        _crossover_exact(eps, dlt),
        _crossover_bounds(eps, dlt),
        _heuristic(dlt),
    )


def _crossover_exact(eps: float, dlt: float, k_max: int = 100_000) -> int | None:
    """Least k from which DP-OPT's exact E max is below Laplace's (the ratio falls in k)."""
    sigma1 = float(calibrate_gaussian(eps, dlt))
    return first_k(
        lambda k: sigma1 * math.sqrt(k) * expected_max_abs_normal(k) < k / eps * _harmonic(k),
        k_max,
    )


def _crossover_bounds(eps: float, dlt: float, k_max: int = 10_000_000) -> int | None:
    """Least k from which the Eq. 37 bound is below the Eq. 36 bound (the ratio falls in k)."""
    log_term = math.log(2.0 / dlt)
    return first_k(
        lambda k: 2.0 * math.sqrt(k * math.log(2.0 * k) * log_term) < k * (1.0 + math.log(k)),
        k_max,
    )


def _heuristic(dlt: float) -> int:
    target = math.log(1.0 / dlt)
    k = 2
    while k * math.log(k) < target:
        k += 1
    return k
