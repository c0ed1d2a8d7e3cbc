"""Uncertified estimates that aim the passes and pick their grid step.

- :func:`saddle_epsilon` / :func:`saddle_delta`: saddle-point estimates of ε(δ) and δ(ε)
  (Daniels 1954; Lugannani, Rice 1980, https://doi.org/10.2307/1426607) on coarse copies of
  the steps: where to tilt the first pass, and how large its tails may be.
- :func:`estimate_moments` / :func:`estimate_support`: each step's loss mean, variance,
  range and a support for exact log-MGFs — for the Gaussian and Poisson-subsampled Gaussian
  losses by quadrature in the Gaussian coordinate (a few hundred nodes), for the others from
  a coarse discretization.
- :class:`ExcessModel` and its makers (:func:`excess_model`, :func:`prior_model`,
  :func:`calibrated`): how far the certified upper bound sits above the true ε as a function
  of the grid step, from the variance the connect-the-dots split adds (Doroshenko et al. 2022,
  https://arxiv.org/abs/2207.04380); they live in :mod:`approxdp.accounting.pld.excess` and
  are re-exported here (the import path callers use).

None of these is a bound: every number a caller reports comes from a certified pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import numpy as np
from scipy import optimize, special

from approxdp.accounting.pld.compose import DiscretePLD
from approxdp.accounting.pld.discretized import (
    ESTIMATES,
    SADDLES,
    Parts,
    coarse_moments,
    coarse_support,
    prefetch_coarse,
)
from approxdp.accounting.pld.excess import (  # (re-exported: the path callers import from)
    _MODEL_PARTS as _MODEL_PARTS,
)
from approxdp.accounting.pld.excess import (
    ExcessModel,
    calibrated,
    excess_model,
    prior_model,
)
from approxdp.accounting.pld.excess import (
    _near_gaussian as _near_gaussian,
)
from approxdp.accounting.pld.privacy_loss import GaussianLoss, LossSource, SubsampledLoss
from approxdp.accounting.pld.window import Support, composed_moments, solve_tilt

__all__ = [
    "ExcessModel",
    "calibrated",
    "estimate_moments",
    "estimate_support",
    "excess_model",
    "prefetch_estimates",
    "prior_model",
    "saddle_delta",
    "saddle_epsilon",
]


#: The P-mass each end of the quadrature's range leaves out (as the coarse discretization's).
_QUAD_TAIL = 1e-14
#: Node spacing in the Gaussian coordinate x. The trapezoid rule on a Gaussian weight times a
#: smooth function errs by about e^(−2π²/dx²) relative (Trefethen, Weideman 2014,
#: https://doi.org/10.1137/130932132, Sec. 5): nothing at dx = 1/8, also under the tilts the
#: saddle point asks for (they shift the Gaussian, not its width, where the loss is linear).
_QUAD_DX = 0.125


class _Nodes:
    """Quadrature nodes as :class:`Support` reads a measure: losses (ascending), masses."""

    def __init__(self, losses: np.ndarray, logw: np.ndarray) -> None:
        order = np.argsort(losses, kind="stable")
        self.losses = losses[order]
        self._logw = logw[order]
        self.pmf = np.exp(self._logw)

    def log_masses(self) -> np.ndarray:
        return self._logw


def _gaussian_form(source: LossSource) -> tuple[float, float, str] | None:
    """(μ, q, direction) of a Gaussian loss (q = 1, "gaussian") or a Poisson-subsampled one;
    None for every other source."""
    if isinstance(source, GaussianLoss):
        return source.mu, 1.0, "gaussian"
    if (isinstance(source, SubsampledLoss) and isinstance(source.inner, GaussianLoss)
            and source.direction in ("remove", "add") and 0.0 < source.q < 1.0):
        return source.inner.mu, source.q, source.direction
    return None


def _linspace(lo: float, hi: float, n: int) -> np.ndarray:
    """``np.linspace(lo, hi, n)`` for floats lo < hi and n ≥ 2: its very operations (i·step,
    step = (hi − lo)/(n − 1), plus lo, the last point set to hi) without its Python-level
    set-up (~6 µs a call)."""
    step = (hi - lo) / (n - 1)
    if not (n >= 2 and step > 0.0):  # (np.linspace's own special cases: its own route)
        return np.linspace(lo, hi, n)
    y = np.arange(n, dtype=np.float64)
    y *= step
    y += lo
    y[-1] = hi
    return y


def _quadrature(mu: float, q: float, direction: str) -> tuple[Support, float, float, float]:
    """The loss of N(μ, 1) vs N(0, 1), Poisson-subsampled at rate q in ``direction``, on
    trapezoid nodes in x (the Gaussian coordinate): (support, mean, variance, width).

    Under P, x is a mixture of unit Gaussians — remove: (1 − q)·N(0, 1) + q·N(μ, 1) (Zhu,
    Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9); add: N(0, 1); Gaussian:
    N(μ, 1) — and the loss is l = μx − μ²/2 (Gaussian), f(l) = log(1 − q + q e^l) (remove)
    or −f(l) (add). Each component's nodes span its share of the 1e-14 P-mass left out at
    each end (so that far-apart components at large μ cost no nodes in between); width: the
    loss's range over them (as the coarse discretization's, between its 1e-14 tails)."""
    if direction == "remove":
        comps = [(math.log1p(-q), 0.0), (math.log(q), mu)]
    else:
        comps = [(0.0, mu if direction == "gaussian" else 0.0)]
    spans = []
    for logw, m in comps:  # each component's share of the tail mass (none if it is less)
        share = _QUAD_TAIL * math.exp(-logw)
        if share < 0.25:
            c = -float(special.ndtri(share))
            spans.append([m - c, m + c])
    spans.sort()
    merged = [spans[0]]
    for lo, hi in spans[1:]:
        if lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    # f(l) is analytic in x within π/μ of the real axis: the rule needs dx ≲ 1/(2μ) there
    # (at most 4096 nodes a span: beyond, a rough estimate is all a grid's choice needs)
    dx = min(_QUAD_DX, 0.5 / mu) if direction != "gaussian" else _QUAD_DX
    xs_list, dx_list = [], []
    for lo, hi in merged:
        n = min(max(3, math.ceil((hi - lo) / dx) + 1), 4097)
        xs_list.append(_linspace(lo, hi, n))
        dx_list.append(np.full(n, (hi - lo) / (n - 1)))
    xs, steps = np.concatenate(xs_list), np.concatenate(dx_list)
    dens = [lw - 0.5 * (xs - m) ** 2 for lw, m in comps]
    log_mass = np.logaddexp(dens[0], dens[1]) if len(dens) == 2 else dens[0]
    log_mass += np.log(steps) - 0.5 * math.log(2.0 * math.pi)
    inner = mu * xs - 0.5 * mu * mu
    if direction == "gaussian":
        losses = inner
    else:
        f = np.logaddexp(math.log1p(-q), math.log(q) + inner)
        losses = f if direction == "remove" else -f
    support = Support(cast(DiscretePLD, _Nodes(losses, log_mass)))
    _, mean, var = support.moments(0.0)
    width = max(float(losses.max() - losses.min()), 1e-12)
    return support, mean, var, width


def _estimate(source: LossSource) -> tuple[Support, float, float, float]:
    """(support, mean, variance, width) of one step's loss under P (cached): by quadrature
    where :func:`_gaussian_form` knows the source, else from the coarse discretization."""
    key = ("estimate", source)
    hit = ESTIMATES.get(key)
    if hit is None:
        form = _gaussian_form(source)
        if form is not None:
            hit = _quadrature(*form)
        else:
            hit = (coarse_support(source), *coarse_moments(source))
        ESTIMATES.put(key, hit)
    return hit  # type: ignore[return-value]


def estimate_moments(source: LossSource) -> tuple[float, float, float]:
    """(mean, variance, width) of one step's finite loss under P — width: the range between
    its 1e-14 tails (uncertified: they only pick grids)."""
    _, mean, var, width = _estimate(source)
    return mean, var, width


def estimate_support(source: LossSource) -> Support:
    """A :class:`Support` of one step's loss (quadrature nodes or the coarse discretization's
    points), for uncertified saddle-point estimates."""
    return _estimate(source)[0]


def prefetch_estimates(sources: list[LossSource]) -> None:
    """The coarse discretizations of the sources that need one (those without a quadrature),
    together in one vectorized pass (a schedule's phases)."""
    prefetch_coarse([s for s in sources if _gaussian_form(s) is None])


def _log_hockey(lam: float, sd: float) -> float:
    """log E[e^(−λX)(1 − e^(−X)); X > 0] for X ~ N(0, sd²): (erfcx(λs/√2) − erfcx((λ+1)s/√2))/2
    (the saddle-point factor of the hockey-stick divergence)."""
    r = 1.0 / math.sqrt(2.0)
    g = float(special.erfcx(lam * sd * r)) - float(special.erfcx((lam + 1.0) * sd * r))
    return math.log(max(g, 1e-300)) - math.log(2.0)


def saddle_epsilon(parts: Parts, delta: float) -> tuple[float, float] | None:
    """A saddle-point estimate of ε(δ) and its tilt λ (not certified: they only aim the
    tilt and size the first grid), on coarse copies of the steps: log δ ≈ K(λ) − λK'(λ) +
    log E[e^(−λX)(1 − e^(−X)); X > 0] with X ~ N(0, K''(λ)) and ε = K'(λ). None where δ is
    above its value at λ = 0. (Memoized: the first grid's choice and the first pass's tilt
    ask for the same one.)"""
    key = ("epsilon", tuple(parts), delta)
    hit = SADDLES.get(key)
    if hit is None:
        hit = (_saddle_epsilon(parts, delta),)
        SADDLES.put(key, hit)
    return hit[0]  # type: ignore[index,no-any-return]


def _saddle_epsilon(parts: Parts, delta: float) -> tuple[float, float] | None:
    coarse = [(estimate_support(s), c) for s, c in parts]
    target = math.log(delta)

    seen: dict[float, tuple[float, float]] = {}  # (brentq starts on the bracket's ends)

    def f(lam: float) -> tuple[float, float]:
        hit = seen.get(lam)
        if hit is None:
            mo = composed_moments(coarse, lam)
            hit = mo.k - lam * mo.mean + _log_hockey(lam, math.sqrt(mo.var)), mo.mean
            seen[lam] = hit
        return hit

    at0, _ = f(0.0)
    if target >= at0:
        return None
    lo, hi, val = _bracket(lambda k: f(math.ldexp(1.0, k))[0], target)
    if not val < target:  # (f never fell that far, or left float range: the last λ good)
        return f(lo)[1], lo
    lam = float(optimize.brentq(lambda x: f(x)[0] - target, lo, hi, xtol=1e-12, rtol=1e-4))
    return f(lam)[1], lam


def _bracket(g: Callable[[int], float], target: float) -> tuple[float, float, float]:
    """(lo, hi, g at hi's exponent) with hi = 2^k for the least k in [0, 60) where
    g(k) < target and lo = hi/2 (0 for k = 0) — where none is, (2^59, 2^60, g(59)): as a
    scan doubling λ from 1 finds them, where ``g`` falls in k. Galloping (k = 0, 1, 3, 7,
    15, ...), then bisecting the last gap: ~2·log₂k evaluations instead of k + 1. Where a
    probe is not finite (f left float range), the plain scan, as before."""
    last = -1  # the largest k known to have g(k) ≥ target
    k = 0
    while k < 60:
        val = g(k)
        if not math.isfinite(val):
            return _scan(g, target)
        if val < target:
            break
        last, k = k, min(2 * k + 1, 59) if k < 59 else 60
    else:
        return math.ldexp(1.0, 59), math.ldexp(1.0, 60), g(59)
    first = k  # g(first) < target, g(last) ≥ target (or last = −1)
    while first - last > 1:
        mid = (first + last) // 2
        val = g(mid)
        if not math.isfinite(val):
            return _scan(g, target)
        if val < target:
            first = mid
        else:
            last = mid
    return (0.0 if first == 0 else math.ldexp(1.0, first - 1)), math.ldexp(1.0, first), g(first)


def _scan(g: Callable[[int], float], target: float) -> tuple[float, float, float]:
    """:func:`_bracket` by the plain scan: λ doubled from 1 until g falls below ``target``."""
    lo, hi, val = 0.0, 1.0, math.nan
    for k in range(60):
        val = g(k)
        if val < target:
            break
        lo, hi = hi, 2.0 * hi
    return lo, hi, val


def saddle_delta(parts: Parts, epsilon: float) -> float:
    """A saddle-point estimate of δ(ε) (not certified: it sizes the first pass's tails), on
    coarse copies of the steps; 1 where ε is below the mean. (Memoized: ordering the
    directions and sizing each one's first pass ask for the same one.)"""
    key = ("delta", tuple(parts), epsilon)
    hit = SADDLES.get(key)
    if hit is None:
        hit = _saddle_delta(parts, epsilon)
        SADDLES.put(key, hit)
    return hit  # type: ignore[return-value]


def _saddle_delta(parts: Parts, epsilon: float) -> float:
    coarse = [(estimate_support(s), c) for s, c in parts]
    lam = solve_tilt(coarse, epsilon)
    if lam <= 0.0:
        return 1.0
    mo = composed_moments(coarse, lam)
    log_d = mo.k - lam * epsilon + _log_hockey(lam, math.sqrt(mo.var))
    return math.exp(min(log_d, 0.0))


def _guess(parts: Parts, delta: float) -> float:
    """The tilt target: the saddle-point ε, else the normal approximation's m + sd·Φ⁻¹(1 − δ)."""
    saddle = saddle_epsilon(parts, delta)
    if saddle is not None and math.isfinite(saddle[0]):
        return max(saddle[0], 0.0)
    mean = sum(c * estimate_moments(s)[0] for s, c in parts)
    var = sum(c * estimate_moments(s)[1] for s, c in parts)
    return max(0.0, mean + math.sqrt(var) * -float(special.ndtri(delta)))
