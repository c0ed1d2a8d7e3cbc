"""Exact δ(ε) of one and two Poisson-subsampled Gaussian steps (sensitivity 1, noise σ, rate
q), in float64 log space without cancellation: the references the T = 1, 2 tests of the PLD
accountant compare its certified answers with.

One step (q < 1), the hockey-stick divergence of the two neighbouring pairs
(remove: P = (1 − q)N(0, σ²) + qN(1, σ²) against Q = N(0, σ²); add: Q against P), by the
subsampling identities of Balle, Barthe, Gaboardi 2018 (https://arxiv.org/abs/1807.01647,
Thm. 8 and 10; both directions as in Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567):

- remove: δ(ε) = 1 − e^ε for e^ε ≤ 1 − q, else q·δ_G(ε'), e^ε' = 1 + (e^ε − 1)/q;
- add: δ(ε) = 0 for e^ε ≥ 1/(1 − q), else c·δ_G(ε'), c = 1 − (1 − q)e^ε, e^ε' = q·e^ε/c;

with the Gaussian mechanism's δ_G(ε) = Φ(−a) − e^ε Φ(−a − μ), a = ε/μ − μ/2, μ = 1/σ
(Balle, Wang 2018, https://arxiv.org/abs/1805.06530, Thm. 8), valid for every real ε. Since
e^ε φ(a + μ) = φ(a), δ_G = φ(a)(M(a) − M(a + μ)) with Mills' ratio M = Φ(−x)/φ(x) (SciPy's
``erfcx``): no cancellation however far in the tail.

Two steps: the composition's δ is the first step's loss L₁ averaged through the second
step's δ, δ₂(ε) = E_{x∼P₁}[δ^{(2)}(ε − L₁(x))] (Koskela, Jälkö, Honkela 2020,
https://arxiv.org/abs/1906.03049, Sec. 3: δ(ε) = E_P[(1 − e^(ε − L₁ − L₂))₊], conditioned on
the first step), one 1-D integral of the closed one-step δ, by adaptive quadrature on
subintervals of σ₁/2 (relative tolerance 1e-12; narrower than the peak where one step's loss
alone reaches ε, which fixed-node rules and mpmath's default ``quad`` miss).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise

import numpy as np
from scipy import integrate, special

__all__ = ["log_delta_one", "log_delta_two", "log_gaussian_delta"]

_SQ = math.sqrt(math.pi / 2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _mills(x: float) -> float:
    """Φ(−x)/φ(x)."""
    return _SQ * float(special.erfcx(x / math.sqrt(2.0)))


def log_gaussian_delta(eps: float, mu: float) -> float:
    """log δ_G(ε) of the Gaussian mechanism with μ = sensitivity/σ, any real ε."""
    a = eps / mu - mu / 2.0
    if a > -5.0:
        d = _mills(a) - _mills(a + mu)
        return -0.5 * a * a - _LOG_SQRT_2PI + math.log(d) if d > 0.0 else -math.inf
    # Φ(−a) ≈ 1: δ_G = Φ(−a) − e^ε Φ(−a − μ) loses nothing (the second term is < φ(a)/μ)
    return math.log(float(special.ndtr(-a)) - math.exp(eps) * float(special.ndtr(-a - mu)))


def log_delta_one(eps: float, sigma: float, q: float, direction: str) -> float:
    """log δ(ε) of one subsampled Gaussian step, ``direction`` "remove" or "add"."""
    if q >= 1.0:
        return log_gaussian_delta(eps, 1.0 / sigma)
    l1q = math.log1p(-q)
    if direction == "remove":
        if eps <= l1q:
            return math.log(-math.expm1(eps))
        if eps < 30.0:
            ep = math.log1p(math.expm1(eps) / q)
        else:  # (e^ε overflows soon: log(1 + (e^ε − 1)/q) = ε − log q + log(1 − (1 − q)e^−ε))
            ep = eps - math.log(q) + math.log1p((q - 1.0) * math.exp(-eps))
        return math.log(q) + log_gaussian_delta(ep, 1.0 / sigma)
    if eps >= -l1q:
        return -math.inf
    log_c = math.log(-math.expm1(eps + l1q))  # log(1 − (1 − q)e^ε)
    return log_c + log_gaussian_delta(math.log(q) + eps - log_c, 1.0 / sigma)


def _loss(x: float, sigma: float, q: float) -> float:
    """The remove pair's loss log P/Q at output x (the add pair's is its negative)."""
    z = (2.0 * x - 1.0) / (2.0 * sigma * sigma)
    return float(np.logaddexp(math.log1p(-q), math.log(q) + z)) if q < 1.0 else z


def _log_density(x: float, sigma: float, q: float, mixture: bool) -> float:
    """log density of N(0, σ²) or (``mixture``) of (1 − q)N(0, σ²) + qN(1, σ²) at x."""
    base = -math.log(sigma) - _LOG_SQRT_2PI
    if not mixture:
        return base - 0.5 * (x / sigma) ** 2
    a = math.log1p(-q) - 0.5 * (x / sigma) ** 2 if q < 1.0 else -math.inf
    return base + float(np.logaddexp(a, math.log(q) - 0.5 * ((x - 1.0) / sigma) ** 2))


def _integrate(f: Callable[[float], float], lo: float, hi: float, step: float,
               breaks: list[float]) -> float:
    pts = np.linspace(lo, hi, max(1, math.ceil((hi - lo) / step)) + 1)
    near = 1e-6 * step  # (a break on a grid point would leave a sliver of an interval)
    extra = [b for b in breaks if lo < b < hi and float(np.abs(pts - b).min()) > near]
    pts = np.unique(np.concatenate((pts, extra)))
    return sum(integrate.quad(f, float(a), float(b), epsabs=1e-18, epsrel=1e-12, limit=200)[0]
               for a, b in pairwise(pts))


def log_delta_two(eps: float, first: tuple[float, float], second: tuple[float, float],
                  direction: str) -> float:
    """log δ(ε) of two subsampled Gaussian steps (σ, q) each, one direction."""
    (s1, q1), (s2, q2) = first, second
    remove = direction == "remove"
    sign = 1.0 if remove else -1.0  # the add pair's loss is −L at x ∼ N(0, σ²)

    def log_f(x: float) -> float:
        inner = log_delta_one(eps - sign * _loss(x, s1, q1), s2, q2, direction)
        return inner + _log_density(x, s1, q1, remove)

    if remove:  # up to where the first step's loss alone is ε + 2, and 15σ beyond
        a = eps + 2.0  # log((e^a − 1 + q)/q), in log form where e^a overflows
        top = (math.log((math.expm1(a) + q1) / q1) if a < 700.0
               else a + math.log1p((q1 - 1.0) * math.exp(-a)) - math.log(q1))
        x_top = s1 * s1 * top + 0.5
        lo, hi = -30.0 * s1, max(x_top + 15.0 * s1, 1.0 + 30.0 * s1)
    else:  # down to where the first step's add loss alone is ε + 2 (if any), and 15σ below
        lo, hi = -40.0 * s1, 1.0 + 30.0 * s1
        gap = math.exp(-eps - 2.0) - (1.0 - q1)  # e^(−ε−2) − (1 − q) = q·e^z there
        if gap > 0.0:
            lo = min(lo, s1 * s1 * math.log(gap / q1) + 0.5 - 15.0 * s1)
    # the integrand scaled by its largest value on a grid of σ₁/8 (it keeps float range)
    ref = max(log_f(float(x)) for x in np.linspace(lo, hi, 16 * math.ceil((hi - lo) / s1) + 1))
    if ref == -math.inf:
        return -math.inf
    # the second step's δ bends sharply where its argument ε' crosses log(1 − q), 0 (within
    # a few q·μ) and −log(1 − q): a narrow feature in x that the quadrature must not step over
    l1q, mu = (math.log1p(-q2) if q2 < 1.0 else -math.inf), 1.0 / s2
    inner = [l1q, -l1q] + [c * q2 * mu for c in (-16, -4, -1, -0.25, 0, 0.25, 1, 4, 16)]
    breaks = []
    for arg in inner:  # the x where the first step's loss is ε − ε'
        ell = sign * (eps - arg)
        u = math.expm1(ell) / q1 + 1.0 if math.isfinite(arg) and ell < 700.0 else 0.0
        if u > 0.0 and math.isfinite(u):
            breaks.append(s1 * s1 * math.log(u) + 0.5)
    total = _integrate(lambda x: math.exp(min(log_f(x) - ref, 700.0)), lo, hi, s1 / 2.0,
                       breaks)
    return math.log(total) + ref if total > 0.0 else -math.inf
