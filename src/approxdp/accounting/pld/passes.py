"""One direction of a history, on one grid: discretize (cached), compose, certify, estimate.

- :func:`upper_epsilon`: the certified upper bound on ε(δ) from the pessimistic
  discretization, tilted where the answer is (a saddle-point estimate first, then the answer
  itself when the first window's error terms are not small there).
- :func:`excess`: an estimate of how far that bound sits above the true ε, from the variance
  the connect-the-dots split adds (its ``spread``) — what picks the grid step.
- :func:`lower_epsilon` / :func:`lower_delta`: the certified lower bound from the rounded
  loss used as a test (:func:`~approxdp.accounting.pld.grid.discretize_rounded`).

References: Doroshenko et al. 2022 (https://arxiv.org/abs/2207.04380) for connect-the-dots,
Koskela et al. 2021 (https://arxiv.org/abs/2006.07134) for the FFT, Daniels 1954 and
Lugannani, Rice 1980 (https://doi.org/10.2307/1426607) for the saddle-point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, special

from approxdp.accounting.pld.blocks import (
    BLOCK_FROM,
    EXTENDED_FROM,
    block_factor,
    block_pieces,
    block_plan,
    rounded_pieces,
)
from approxdp.accounting.pld.compose import (
    MAX_WINDOW,
    ComposedPLD,
    DiscretePLD,
    RoundedPLD,
    WindowTooLargeError,
    compose,
    discretize,
    discretize_rounded,
    rounded_tails,
    tail_edge,
    test_delta,
    test_epsilon,
)
from approxdp.accounting.pld.grid import _edges
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.accounting.pld.window import (
    Support,
    Window,
    clear_supports,
    composed_moments,
    plan_window,
    solve_tilt,
    support_of,
)
from approxdp.errors import InvalidParameterError

__all__ = [
    "ExcessModel",
    "Parts",
    "calibrated",
    "clear_caches",
    "coarse_moments",
    "coarse_support",
    "composed",
    "excess_model",
    "lower_delta",
    "lower_epsilon",
    "quantize",
    "saddle_delta",
    "saddle_epsilon",
    "upper_epsilon",
]

Parts = Sequence[tuple[LossSource, int]]
_COARSE_POINTS = 4096
#: From this many composed steps the split is also formed without cancellation
#: (:func:`~approxdp.accounting.pld.grid.discretize`'s ``stable``): below it the plain split's
#: float guard shifts ε by < 3e-5 of itself (measured: 2.6e-5 at T = 10^8, 2e-7 at 10^7; 9e-4
#: at 10^10), while the second form costs 20–35 % of a mid-size call. (The lower bound's
#: long-double bin masses, :func:`~approxdp.accounting.pld.grid.discretize_rounded`'s
#: ``precise``, start at EXTENDED_FROM = 10^10 steps: below, the CDF differences' margin
#: costs < 1e-4 of the P-mass — bracket 0.071 % at T = 10^9 — and the series ~50 ms.)
STABLE_FROM = 10**8


def quantize(h: float, up: bool = False) -> float:
    """Round a grid step to a power of 2^(1/4), down by default (so discretizations can be
    cached across calls)."""
    k = 4.0 * math.log2(h)
    return float(2.0 ** ((math.ceil(k) if up else math.floor(k)) / 4.0))


@lru_cache(maxsize=256)
def _coarse(source: LossSource) -> tuple[DiscretePLD, float]:
    """A coarse discretization of ``source`` (about 4096 points over its 1e-14 tails) and the
    width of that range."""
    lo = tail_edge(source, 1e-9, 1e-14, upper=False)
    hi = tail_edge(source, 1e-9, 1e-14, upper=True)
    width = max(hi - lo, 1e-12)
    return discretize(source, width / _COARSE_POINTS, 1e-14), width


@lru_cache(maxsize=256)
def coarse_moments(source: LossSource) -> tuple[float, float, float]:
    """(mean, variance, width) of the finite loss under P, from a coarse discretization."""
    coarse, width = _coarse(source)
    mean, var = coarse.mean_var()
    return mean, var, width


@lru_cache(maxsize=256)
def coarse_support(source: LossSource) -> Support:
    """The :class:`Support` of the coarse discretization (for cheap, uncertified estimates)."""
    return Support(_coarse(source)[0])


@lru_cache(maxsize=256)
def _discretized(source: LossSource, h: float, tail: float, stable: bool) -> DiscretePLD:
    return discretize(source, h, tail, stable)


def _stable(parts: Parts) -> bool:
    """Whether a direction's steps are many enough for the stable split (:data:`STABLE_FROM`)."""
    return sum(c for _, c in parts) >= STABLE_FROM


@lru_cache(maxsize=64)
def _rounded(source: LossSource, h: float, tail: float, precise: bool) -> RoundedPLD:
    return discretize_rounded(source, h, tail, precise)


def clear_caches() -> None:
    """Forget every cached discretization (for benchmarks of cold calls, and tests)."""
    _coarse.cache_clear()
    coarse_moments.cache_clear()
    coarse_support.cache_clear()
    _discretized.cache_clear()
    _rounded.cache_clear()
    _edges.cache_clear()
    clear_supports()


def _step_tail(parts: Parts, tail: float) -> float:
    return tail / max(sum(c for _, c in parts), 1)


def composed(
    parts: Parts, h: float, tail: float, tilt_at: float | None, below: float | None = None
) -> ComposedPLD:
    """Discretize (cached) and compose — in blocks where a part has many steps
    (:mod:`approxdp.accounting.pld.blocks`); a window too large for memory coarsens the grid
    (still certified, a little looser)."""
    step_tail = _step_tail(parts, tail)
    stable = _stable(parts)
    for _ in range(6):
        plds = [(_discretized(s, h, step_tail, stable), c) for s, c in parts]
        try:
            if _blocks_pay(plds, tail, tilt_at):
                return _in_blocks(plds, tail, tilt_at, below)
            return compose(plds, tail=tail, tilt_at=tilt_at, below=below)
        except WindowTooLargeError as exc:
            h = quantize(h * 1.1 * exc.needed / MAX_WINDOW, up=True)
    raise InvalidParameterError(  # pragma: no cover - the grid grows geometrically
        "the PLD window did not fit in memory; use a coarser precision"
    )


def _blocks_pay(
    plds: Sequence[tuple[DiscretePLD, int]], tail: float, tilt_at: float | None
) -> bool:
    """Whether composing in blocks needs fewer FFT points than one composition: the planned
    window of the whole sum against the largest part's block window plus the coarser second
    level (a near-Gaussian sum gains √B-fold; a heavy-tailed one, whose window is set by a few
    large losses, does not)."""
    if all(c < BLOCK_FROM for _, c in plds):
        return False
    sup = [(support_of(p), c) for p, c in plds]
    h = plds[0][0].h
    lo = sum(c * p.offset for p, c in plds)
    hi = sum(c * (p.offset + p.pmf.size - 1) for p, c in plds)
    whole = plan_window(sup, h=h, tilt_at=tilt_at, log_tail=math.log(tail), support=(lo, hi),
                        below=None, delta_scale=1e4 * tail).n
    p, c = max(plds, key=lambda item: item[1])
    block, k, _ = block_plan(c)
    factor = block_factor(block)
    lam = 0.0 if tilt_at is None else solve_tilt(sup, tilt_at)
    one = [(support_of(p), block)]
    mean = one[0][0].moments(lam)[1]
    part = plan_window(one, h=h, tilt_at=None if tilt_at is None else block * mean,
                       log_tail=math.log(tail / (k + 1)),
                       support=(block * p.offset, block * (p.offset + p.pmf.size - 1)),
                       below=None, delta_scale=1e4 * tail, lam=lam).n
    return 2 * part + whole / factor < 0.5 * whole


def _in_blocks(
    plds: Sequence[tuple[DiscretePLD, int]], tail: float, tilt_at: float | None,
    below: float | None,
) -> ComposedPLD:
    """Each part composed in blocks (:mod:`approxdp.accounting.pld.blocks`), the blocks
    composed on their coarser grid; every level tilted alike (λ solving the whole sum's tilted
    mean = ``tilt_at``)."""
    sup = [(support_of(p), c) for p, c in plds]
    lam = 0.0 if tilt_at is None else solve_tilt(sup, tilt_at)
    ext = sum(c for _, c in plds) >= EXTENDED_FROM
    pieces, spread = block_pieces(plds, lam=lam, tilt_at=tilt_at, tail=tail / 2.0,
                                  extended=ext)
    # the last composition is used once: extended only for a count that large itself
    top = max(c for _, c in pieces) >= EXTENDED_FROM
    comp = compose(pieces, tail=tail / 2.0, tilt_at=tilt_at, below=below, extended=top)
    comp.block_spread = spread
    comp.blocked = True
    return comp


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
    above its value at λ = 0."""
    coarse = [(coarse_support(s), c) for s, c in parts]
    target = math.log(delta)

    def f(lam: float) -> tuple[float, float]:
        mo = composed_moments(coarse, lam)
        return mo.k - lam * mo.mean + _log_hockey(lam, math.sqrt(mo.var)), mo.mean

    at0, _ = f(0.0)
    if target >= at0:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bracket: f falls as λ grows
        val, _ = f(hi)
        if val < target:
            break
        lo, hi = hi, 2.0 * hi
    if not val < target:  # (f never fell that far, or left float range: the last λ good)
        return f(lo)[1], lo
    lam = float(optimize.brentq(lambda x: f(x)[0] - target, lo, hi, xtol=1e-12, rtol=1e-4))
    return f(lam)[1], lam


def saddle_delta(parts: Parts, epsilon: float) -> float:
    """A saddle-point estimate of δ(ε) (not certified: it sizes the first pass's tails), on
    coarse copies of the steps; 1 where ε is below the mean."""
    coarse = [(coarse_support(s), c) for s, c in parts]
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
    mean = sum(c * coarse_moments(s)[0] for s, c in parts)
    var = sum(c * coarse_moments(s)[1] for s, c in parts)
    return max(0.0, mean + math.sqrt(var) * -float(special.ndtri(delta)))


def _clean(comp: ComposedPLD, eps: float, delta: float) -> bool:
    """Whether the window's own error terms are small against δ at the answer (round-off and
    left-out tails), so that another tilt would not tighten it."""
    if not math.isfinite(eps):
        return False
    rounding, tails = comp.error_terms(eps)
    return rounding <= 1e-4 * delta and tails <= 1e-3 * delta and eps >= comp.bottom


def upper_epsilon(
    parts: Parts, delta: float, h: float, guess: float | None = None, below: float | None = None
) -> tuple[ComposedPLD, float]:
    """The composed pessimistic PLD of one direction, good at its ε(δ), and that certified ε.

    Tilted at ``guess`` (default: the saddle-point estimate); if the error terms at the answer
    are not small against δ, composed again tilted at the answer (every pass is a valid upper
    bound: the best is kept). ``below``: how far under ``guess`` the answer may lie (default:
    three tilted standard deviations and a tenth of it)."""
    tail = 1e-4 * delta
    target = _guess(parts, delta) if guess is None else guess
    first = composed(parts, h, tail, target, below)
    eps = first.epsilon(delta)
    if _clean(first, eps, delta):
        return first, eps
    passes = [(eps, first)]
    tried = [target]
    for _ in range(3):
        best_eps, best = min(passes, key=lambda p: p[0])
        if math.isfinite(best_eps):
            nxt = best_eps
        else:  # nothing certified in the window: aim at what the masses point to
            core = best._core_epsilon(delta - best.infinity_mass, with_rounding=False)
            nxt = core if math.isfinite(core) and core > 0.0 else 2.0 * max(tried) + 1.0
        if any(abs(nxt - t) <= 1e-6 * (1.0 + abs(t)) for t in tried):
            break
        tried.append(nxt)
        comp = composed(parts, h, tail, nxt)
        e = comp.epsilon(delta)
        passes.append((e, comp))
        if _clean(comp, e, delta):
            break
    best_eps, best = min(passes, key=lambda p: p[0])
    return best, best_eps


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
        plds = [(_discretized(s, h, step_tail, self.stable), c) for s, c in self.parts]
        spread = sum(c * _tilted_spread(p, self.lam) for p, c in plds)
        # the split's float guard shifts every step's mean up (∝ 1/h: it can win at huge T)
        shift = sum(c * p.guard for p, c in plds)
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
    plds = [(_discretized(s, h, step_tail, stable), c) for s, c in parts]
    lam = solve_tilt([(support_of(p), c) for p, c in plds], eps, start=comp.lam)
    slope = comp.slope(eps) / delta if delta > 0.0 else lam
    ratio = max(1.0, lam / slope) if slope > 0.0 else 1.0 + lam
    gaussian = slope > 0.0 and 0.8 <= lam / slope <= 1.25 and lam >= 0.5
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
                       (comp.block_spread, h), subset, stable)


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


def _rounded_tails(
    parts: Parts, h: float, tail: float, tilt_at: float, below: float | None = None,
    blocks: bool = False,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Certified (P-tail lower, Q-tail upper) of the rounded loss, composed tilted at
    ``tilt_at`` (λ for P, λ + 1 for Q: Q-masses are about P-masses times e^(−loss), so both
    tilted measures have one shape and share one window)."""
    step_tail = _step_tail(parts, tail)
    stable = _stable(parts)
    precise = sum(c for _, c in parts) >= EXTENDED_FROM
    rounded = [(_rounded(s, h, step_tail, precise), c) for s, c in parts]
    # rounding to the nearest grid point shifts each step's mean (by up to h/2: over 10^6
    # steps the rounded sum sits far from the loss's); its tests are as good shifted alike,
    # so the window is aimed at the answer plus that shift
    tilt_at = tilt_at + sum(
        c * (r.as_measures()[0].mean_var()[0]
             - _discretized(s, h, step_tail, stable).mean_var()[0])
        for (r, c), (s, _) in zip(rounded, parts, strict=True)
    )
    if blocks:
        p_parts, q_parts = _rounded_in_blocks(rounded, tail, tilt_at)
    else:
        p_parts = [(r.as_measures()[0], c) for r, c in rounded]
        q_parts = [(r.as_measures()[1], c) for r, c in rounded]
    # (as for the upper bound: the last composition is used once)
    ext = max(c for _, c in p_parts) >= EXTENDED_FROM
    try:
        p_comp = compose(p_parts, tail=tail, tilt_at=tilt_at, below=below, extended=ext)
        if p_comp.size <= 1:
            return None
        win = Window(p_comp.lam, p_comp.offset, p_comp.size)
        q_comp = compose(q_parts, tail=tail, window=win, lam_shift=1.0, extended=ext)
    except WindowTooLargeError:
        return None
    return rounded_tails(p_comp, q_comp)


def _rounded_in_blocks(
    rounded: Sequence[tuple[RoundedPLD, int]], tail: float, tilt_at: float
) -> tuple[list[tuple[DiscretePLD, int]], list[tuple[DiscretePLD, int]]]:
    """The rounded loss in blocks (as :func:`_in_blocks` for the upper bound): the P-lower
    and Q-upper measures of every part's blocks on one coarser grid."""
    sup = [(support_of(r.as_measures()[0]), c) for r, c in rounded]
    lam = solve_tilt(sup, tilt_at)
    ext = sum(c for _, c in rounded) >= EXTENDED_FROM
    return rounded_pieces(rounded, lam=lam, tilt_at=tilt_at, tail=tail / 2.0, extended=ext)


def lower_epsilon(
    parts: Parts, delta: float, h: float, near: float, below: float | None = None,
    blocks: bool = False,
) -> float:
    """A certified lower bound on ε(δ) of one direction: the rounded-loss tests at grid step
    h, composed tilted at ``near`` (the upper bound: the answer is at most ``below`` under
    it), in blocks if ``blocks``."""
    tails = _rounded_tails(parts, h, 1e-4 * delta, near, below, blocks)
    if tails is None:
        return 0.0
    return test_epsilon(tails[0], tails[1], delta)


def lower_delta(
    parts: Parts, epsilon: float, h: float, blocks: bool = False, tail: float = 1e-30
) -> float:
    """A certified lower bound on δ(ε) of one direction (the rounded-loss tests). ``tail``:
    the P-mass each side left out of the grids (any is certified: the tests only lose up to
    about that much; 1e-4 of the δ found keeps the bound within 0.01 % of the best)."""
    tails = _rounded_tails(parts, h, tail, epsilon, None, blocks)
    if tails is None:
        return 0.0
    return test_delta(tails[0], tails[1], epsilon)
