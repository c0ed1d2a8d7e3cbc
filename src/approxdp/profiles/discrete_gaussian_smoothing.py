"""The discrete Gaussian is (almost exactly) a post-processed continuous Gaussian.

This is how we bound the privacy of *vector* discrete Gaussian noise, and how we prove that the
secure lattice release of :class:`~approxdp.mechanisms.GaussianMechanism` is accounted
correctly by a :class:`~approxdp.events.GaussianEvent`.

Smoothing lemma. Fix 0 < b < σ and t = √(σ² − b²). Let K be the Markov kernel that maps a real
x to a draw of N_Z(x, b²) (the discrete Gaussian on Z centred at x, P[y] ∝ e^(−(y−x)²/(2b²))).
K commutes with integer shifts, so K(N(m, t²)) is the distribution P̃ shifted by m, where
P̃ = K(N(0, t²)). Writing P̃(y) = ∫ φ_t(x) e^(−(y−x)²/(2b²)) / Z_b(x) dx and using
∫ φ_t(x) e^(−(y−x)²/(2b²)) dx = (b/σ) e^(−y²/(2σ²)), the ratio P̃(y)/P(y) for
P = N_Z(0, σ²) lies between the extreme values of Z_σ·b/(σ·Z_b(x)). By Poisson summation
Z_b(x) = b√(2π)(1 + 2Σ_{k≥1} e^(−2π²b²k²) cos 2πkx), so with θ_b = 2Σ_{k≥1} e^(−2π²b²k²)

    e^(−ζ₁) ≤ P(y)/P̃(y) ≤ e^(ζ₁),     ζ₁ = ln((1 + θ_b)/(1 − θ_b))  (≈ 4e^(−2π²b²)),

for every integer y (the same bound for the shifted pair). For d independent coordinates the
bound is ζ = d·ζ₁. Hence for integer shift vectors m with ‖m‖₂ ≤ Δ and every ε ∈ R,

    H_ε(P^d ‖ P^d + m) ≤ e^ζ H_{ε−2ζ}(P̃^d ‖ P̃^d + m) ≤ e^ζ δ_G(ε − 2ζ; μ = Δ/t),

where H_ε is the hockey-stick divergence and δ_G(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) the
profile of the Gaussian mechanism with noise multiplier 1/μ (Balle & Wang 2018 Thm 8): the pair
(P̃^d, P̃^d + m) is the post-processing by K^d of (N(0, t²I), N(m, t²I)), and that profile grows
with ‖m‖₂. Two facts about δ_G remove the ε-shift and the factor e^ζ:

* ∂δ_G/∂μ = φ(ε/μ − μ/2) and |∂δ_G/∂ε| = e^ε Φ(−ε/μ − μ/2) = R(a)·∂δ_G/∂μ with the Mills ratio
  R(a) ≤ √(π/2) at a = ε/μ + μ/2 ≥ 0, so δ_G(ε − 2ζ; μ) ≤ δ_G(ε; μ + √(2π)ζ) when μ² ≥ 4ζ;
* ∂ ln δ_G/∂μ = φ(x)/δ_G ≥ φ(x)/Φ(−x) ≥ min(√(2/π), φ(μ/2)) for x = ε/μ − μ/2 ≥ −μ/2, so
  e^ζ δ_G(ε; μ_a) ≤ δ_G(ε; μ_e) whenever (μ_e − μ_a)·min(√(2/π), φ(μ_e/2)) ≥ ζ.

So the vector discrete Gaussian is (ε, e^ζ δ_G(ε; Δ/t + √(2π)ζ))-DP for every ε ≥ 0
(:func:`smoothed_log_delta`), and when the last inequality holds with μ_a = Δ/t + √(2π)ζ, the
pair is dominated, for every ε (negative ε follow from H_ε = 1 − e^ε + e^ε H_{−ε} of the
reversed pair), by the Gaussian pair with μ_e — the tradeoff-function sense of Dong, Roth and
Su (2022) — so it composes like that Gaussian (:func:`dominated_by_gaussian`). The price is
replacing σ by t: a relative σ increase of about b²/(2σ²), with b ≈ 1-2.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from approxdp.profiles.gaussian import gaussian_log_delta

__all__ = [
    "SmoothingBound",
    "dominated_by_gaussian",
    "smoothed_log_delta",
    "smoothing_bound",
    "smoothing_log_zeta",
    "smoothing_widths",
]

_ROUND_UP = 1.0 + 1e-12  # covers float error in the few operations on ζ and μ
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
# ζ = d·ζ₁(b) targets 10^-k: the candidate smoothing widths tried by the bounds below.
_ZETA_EXPONENTS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 60, 80)


def smoothing_log_zeta(b: float) -> float:
    """Upper bound on ln ζ₁(b), ζ₁ = ln((1 + θ_b)/(1 − θ_b)) ≤ 2θ_b/(1 − θ_b), in log space.

    Args:
        b: smoothing width, b ≥ 0.45 (so that θ_b < 1/2).
    """
    k = np.arange(1, 12, dtype=np.float64)
    log_theta = math.log(2.0) + float(np.logaddexp.reduce(-2.0 * math.pi**2 * b * b * k * k))
    theta = math.exp(log_theta)
    if theta >= 0.5:
        raise ValueError(f"smoothing width b={b!r} is too small (theta={theta:g} >= 1/2)")
    return math.log(2.0) + log_theta - math.log1p(-theta) + math.log(_ROUND_UP)


def smoothing_widths(dimension: int) -> list[float]:
    """Candidate widths b with d·ζ₁(b) ≈ 10^-k for the exponents k of ``_ZETA_EXPONENTS``."""
    base = math.log(4.0 * dimension)
    return [
        math.sqrt((base + k * math.log(10.0)) / (2.0 * math.pi**2)) for k in _ZETA_EXPONENTS
    ]


@dataclass(frozen=True, slots=True)
class SmoothingBound:
    """The Gaussian that bounds N_Z(0, σ²)^d under integer shifts of ℓ2-norm ≤ Δ.

    Attributes:
        b: the smoothing width used.
        t: √(σ² − b²), the continuous noise of the bounding Gaussian (rounded down).
        log_zeta: ln ζ, ζ = d·ζ₁(b) (rounded up).
        mu: μ_a = Δ/t + √(2π)ζ (rounded up): δ(ε) ≤ e^ζ δ_G(ε; μ_a) for every ε ≥ 0.
    """

    b: float
    t: float
    log_zeta: float
    mu: float

    @property
    def zeta(self) -> float:
        """ζ (0.0 if it underflows; use :attr:`log_zeta` for exact comparisons)."""
        return math.exp(self.log_zeta)


def smoothing_bound(
    sigma: float, sensitivity: float, dimension: int, b: float
) -> SmoothingBound | None:
    """The bound of the module docstring at width ``b``; None when it does not apply
    (b ≥ σ, or μ² < 4ζ so that the ε-shift cannot be folded into μ)."""
    if not 0.45 <= b < sigma:
        return None
    t = math.sqrt((sigma - b) * (sigma + b)) * (1.0 - 1e-15)
    log_zeta = math.log(dimension) + smoothing_log_zeta(b)
    mu_r = sensitivity / t
    extra = _SQRT_2PI * math.exp(log_zeta)
    mu = (mu_r + extra) * _ROUND_UP
    if mu == mu_r:  # extra below one ulp: still round up
        mu = math.nextafter(mu_r, math.inf)
    if 2.0 * math.log(mu_r) < math.log(4.0) + log_zeta:
        return None
    return SmoothingBound(b=b, t=t, log_zeta=log_zeta, mu=mu)


def smoothed_log_delta(epsilon: float, sigma: float, sensitivity: float, dimension: int) -> float:
    """ln of an upper bound on δ(ε) of d-dimensional N_Z(0, σ²) noise for integer shifts of
    ℓ2-norm ≤ Δ: the least ζ + ln δ_G(ε; μ_a) over the candidate widths (module docstring).

    Returns 0.0 (δ ≤ 1, no information) when no width applies (σ below about 0.6).
    """
    best = 0.0
    for b in smoothing_widths(dimension):
        bound = smoothing_bound(sigma, sensitivity, dimension, b)
        if bound is None:
            continue
        best = min(best, bound.zeta + float(gaussian_log_delta(epsilon, 1.0, bound.mu)))
    return best


def dominated_by_gaussian(
    sigma: float, sensitivity: float, dimension: int, mu: float
) -> SmoothingBound | None:
    """A certificate that N_Z(0, σ²)^d under integer shifts of ℓ2-norm ≤ Δ is dominated by the
    Gaussian pair N(0, 1) vs N(μ, 1) (module docstring), or None if none of the candidate
    widths gives one.

    The certificate holds when (μ − μ_a)·min(√(2/π), φ(μ/2)) ≥ ζ for the width's μ_a, ζ.
    """
    if not (mu > 0 and math.isfinite(mu)):
        return None
    # log of slope = min(√(2/π), φ(μ/2)), in logs: φ(μ/2) underflows to 0 for μ above ~77
    log_slope = min(math.log(_SQRT_2_OVER_PI), -mu * mu / 8.0 - math.log(_SQRT_2PI))
    for b in smoothing_widths(dimension):
        bound = smoothing_bound(sigma, sensitivity, dimension, b)
        if bound is None or bound.mu >= mu:
            continue
        # (μ − μ_a)·slope ≥ ζ, compared in logs with a relative margin on the left side.
        if math.log(mu - bound.mu) + log_slope - 1e-9 >= bound.log_zeta:
            return bound
    return None
