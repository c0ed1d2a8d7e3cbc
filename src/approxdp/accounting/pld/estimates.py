"""Uncertified estimates that aim the passes and pick their grid step.

- :func:`saddle_epsilon` / :func:`saddle_delta`: saddle-point estimates of ε(δ) and δ(ε)
  (Daniels 1954; Lugannani, Rice 1980, https://doi.org/10.2307/1426607) on coarse copies of
  the steps: where to tilt the first pass, and how large its tails may be.
- :func:`estimate_moments` / :func:`estimate_support`: each step's loss mean, variance,
  range and a support for exact log-MGFs — for the Gaussian and Poisson-subsampled Gaussian
  losses by quadrature in the Gaussian coordinate (a few hundred nodes), for the others from
  a coarse discretization.
- :class:`ExcessModel`: how far the certified upper bound sits above the true ε as a function
  of the grid step, from the variance the connect-the-dots split adds (Doroshenko et al. 2022,
  https://arxiv.org/abs/2207.04380).

None of these is a bound: every number a caller reports comes from a certified pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy import optimize, special

from approxdp.accounting.pld.compose import ComposedPLD, DiscretePLD
from approxdp.accounting.pld.discretized import (
    ESTIMATES,
    SADDLES,
    SPREADS,
    Parts,
    _stable,
    _step_tail,
    coarse_moments,
    coarse_support,
    discretized_all,
    prefetch_coarse,
)
from approxdp.accounting.pld.privacy_loss import GaussianLoss, LossSource, SubsampledLoss
from approxdp.accounting.pld.window import Support, composed_moments, solve_tilt, support_of

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
        xs_list.append(np.linspace(lo, hi, n))
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


def _logsumexp(x: np.ndarray) -> float:
    """log Σ e^x (−inf for an empty or all −inf x): SciPy's logsumexp without its array-API
    dispatch, which costs ~1 ms a call here."""
    top = float(x.max()) if x.size else -math.inf
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.exp(x - top).sum()))


def _tilted_spread(pld: DiscretePLD, lam: float) -> float:
    """The connect-the-dots spread of one step under the λ-tilted measure: Σ_k v_k e^(λ m_k) /
    Σ_i p_i e^(λ l_i), m_k the interval's midpoint."""
    if pld.spread is None or pld.spread.size == 0:
        return 0.0
    with np.errstate(divide="ignore"):
        lp = pld.log_masses() + lam * pld.losses
        ls = np.log(pld.spread) + lam * (pld.losses[:-1] + 0.5 * pld.h)
    norm = _logsumexp(lp)
    top = float(ls.max())
    if not (math.isfinite(norm) and math.isfinite(top)):
        return 0.0
    return math.exp(top - norm) * float(np.exp(ls - top).sum())


@dataclass(frozen=True, slots=True)
class ExcessModel:
    """≈ how far the certified ε sits above the true ε, as a function of the grid step.

    The split adds variance V_j(h) to step j (mean V_j/2: it keeps E_P[e^(−L)]), which raises
    the tilted log-MGF by ΔK ≈ Σ_j c_j V_j λ(1 + λ)/2 at the saddle point λ of the answer
    (tilted mean = ε); δ(ε) moves by that factor and ε by about ΔK / s, s = −d log δ/dε =
    e^ε E[e^(−S); S > ε]/δ measured on the composed distribution (s ≈ λ for a near-Gaussian
    sum). ``scale`` corrects it by what two grids measured (:func:`calibrated`): where a few
    large losses make δ the model keeps its shape in h but not its constant."""

    parts: tuple[tuple[LossSource, int], ...]
    delta: float
    lam: float
    factor: float
    scale: float = 1.0
    gaussian: bool = False  # the saddle point's slope matched s: the model needs no calibration
    blocks: tuple[float, float] = (0.0, 1.0)  # (regridding spread, at grid step): ∝ h²
    #: (step tail, spread ratio, shift ratio): with many parts (a schedule), ``parts`` holds
    #: only those that make most of the spread, scaled up by what all of them made at the
    #: pass's grid (None: ``parts`` is the whole direction)
    subset: tuple[float, float, float] | None = None
    stable: bool = False  # the direction's discretizations use the stable split

    def at(self, h: float) -> float:
        """The estimated excess at grid step h (discretizes at h: cached)."""
        step_tail = (self.subset[0] if self.subset is not None
                     else _step_tail(self.parts, 1e-4 * self.delta))
        # (memoized: a pass's excess is asked for several times, each a sweep of its steps)
        key = (self.parts, step_tail, self.lam, self.stable, h)
        hit = SPREADS.get(key)
        if hit is None:
            plds = list(zip(discretized_all(self.parts, h, step_tail, self.stable),
                            (c for _, c in self.parts), strict=True))
            hit = (sum(c * _tilted_spread(p, self.lam) for p, c in plds),
                   # the split's float guard shifts every step's mean up (∝ 1/h: it can win
                   # at huge T)
                   sum(c * p.guard for p, c in plds))
            SPREADS.put(key, hit)
        spread, shift = cast(tuple[float, float], hit)
        if self.subset is not None:
            spread *= self.subset[1]
            shift *= self.subset[2]
        spread += self.blocks[0] * (h / self.blocks[1]) ** 2
        return self.scale * self.factor * spread + shift

    def with_scale(self, scale: float) -> ExcessModel:
        """The same model, scaled."""
        return ExcessModel(self.parts, self.delta, self.lam, self.factor, scale, self.gaussian,
                           self.blocks, self.subset, self.stable)


#: Parts the excess model follows one by one (beyond: the largest, scaled; it only picks grids)
_MODEL_PARTS = 6


def excess_model(
    parts: Parts, h: float, comp: ComposedPLD, eps: float, delta: float
) -> ExcessModel:
    """The excess model at the answer ``eps`` of the pass ``comp`` (grid step h)."""
    step_tail = _step_tail(parts, 1e-4 * delta)
    stable = _stable(parts)
    plds = list(zip(discretized_all(parts, h, step_tail, stable), (c for _, c in parts),
                    strict=True))
    lam = solve_tilt([(support_of(p), c) for p, c in plds], eps, start=comp.lam)
    slope = comp.slope(eps) / delta if delta > 0.0 else lam
    return _model(parts, plds, delta, lam, slope, (comp.block_spread, h), step_tail, stable)


def prior_model(parts: Parts, h: float, lam: float, slope: float, delta: float) -> ExcessModel:
    """The excess model before any pass: at the saddle point's tilt λ and slope −d log δ/dε
    (:func:`saddle_epsilon`), on the steps' discretizations at grid step h (those the pass
    there needs; one level: no blocks)."""
    step_tail = _step_tail(parts, 1e-4 * delta)
    stable = _stable(parts)
    plds = list(zip(discretized_all(parts, h, step_tail, stable), (c for _, c in parts),
                    strict=True))
    return _model(parts, plds, delta, lam, slope, (0.0, h), step_tail, stable)


def _near_gaussian(lam: float, slope: float) -> bool:
    """Whether a sum tilted at λ whose δ falls with slope −d log δ/dε = ``slope`` there is
    taken to be near-Gaussian (for a Gaussian sum the two agree): the excess model's flag."""
    return slope > 0.0 and 0.8 <= lam / slope <= 1.25 and lam >= 0.5


def _model(
    parts: Parts, plds: list[tuple[DiscretePLD, int]], delta: float, lam: float, slope: float,
    blocks: tuple[float, float], step_tail: float, stable: bool,
) -> ExcessModel:
    ratio = max(1.0, lam / slope) if slope > 0.0 else 1.0 + lam
    gaussian = _near_gaussian(lam, slope)
    kept, subset = tuple(parts), None
    if len(parts) > _MODEL_PARTS:  # a schedule: follow the parts that make most of the spread
        each = [(c * _tilted_spread(p, lam), c * p.guard) for p, c in plds]
        order = sorted(range(len(parts)), key=lambda i: -each[i][0])[:_MODEL_PARTS]
        spread, shift = sum(e[0] for e in each), sum(e[1] for e in each)
        part_spread = sum(each[i][0] for i in order)
        part_shift = sum(each[i][1] for i in order)
        if part_spread > 0.0:
            kept = tuple(parts[i] for i in order)
            subset = (step_tail, spread / part_spread,
                      shift / part_shift if part_shift > 0.0 else 1.0)
    return ExcessModel(kept, delta, lam, (1.0 + lam) / 2.0 * ratio, 1.0, gaussian,
                       blocks, subset, stable)


def calibrated(model: ExcessModel, coarse: tuple[float, float], fine: tuple[float, float]) -> (
    ExcessModel
):
    """``model`` scaled by what two certified passes measured: (h, ε) on a coarse and on a
    finer grid. The model's drop between them should be the drop of ε; where ε fell more,
    the model is scaled up (by at most 100), never down."""
    (h1, e1), (h2, e2) = coarse, fine
    base = model.with_scale(1.0)
    drop = base.at(h1) - base.at(h2)
    scale = model.scale
    if drop > 0.0 and e1 - e2 > drop * scale:
        scale = min(100.0, (e1 - e2) / drop)
    return model.with_scale(scale)
