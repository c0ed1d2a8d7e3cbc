"""The grid step of the PLD accountant: a first guess from the history, then checked and
refined.

The grid step is chosen from the history, then checked. The first guess: the connect-the-dots
rounding adds at most T·h²/4 to the variance of the summed loss, so h = 2·sqrt(precision ·
Var(S)/T) keeps the excess in ε near ``precision``/2 relative for a near-Gaussian sum, and a
step is never finer than a 2^15th of one step's loss range. The check: the excess is estimated
from the variance the split really adds under the tilt of the answer
(:func:`~approxdp.accounting.pld.passes.excess`), and the grid refined until it is below
``precision``/2 — this is what keeps heavy-tailed sums (small sampling rates, where a few
large losses make δ) tight on a grid as coarse as they allow. Steps are quantized to powers of
2^(1/4) so that discretizations can be cached across calls (a growing ledger reuses them).

The first pass runs on a grid about 4x coarser than the first guess (a cheap pass aims the
tilt and measures the excess), except where the window at the first guess is small anyway
(about 2^14 points, where planning costs as much as composing): there the first guess is the
first pass (and one step's grid there is small too), which saves a pass for small sampling
rates and few steps.

Where the saddle point predicts the excess well (:func:`_planned_start`), the first pass goes
straight to the grid that coarse pass, or the calibration pass after it, would have led to:
one pass instead of two, checked by the lower bound's bracket.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from approxdp.accounting.pld.blocks import BLOCK_FROM
from approxdp.accounting.pld.estimates import (
    _MODEL_PARTS,
    _log_hockey,
    _near_gaussian,
    estimate_moments,
    estimate_support,
    prior_model,
)
from approxdp.accounting.pld.passes import (
    ExcessModel,
    Parts,
    quantize,
    saddle_epsilon,
)
from approxdp.accounting.pld.plan import DEFAULT_PRECISION, _Plan, _plan, check_precision
from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    LaplaceLoss,
    LossSource,
)
from approxdp.accounting.pld.window import composed_moments
from approxdp.errors import InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = ["grid_step"]


#: A step's grid is never finer than this fraction of its loss range (in the first guess).
_STEP_POINTS = 1 << 15


def _first_step(parts: Parts, precision: float, delta: float) -> float:
    """The first grid step of one direction (see the module docstring)."""
    var = sum(c * estimate_moments(s)[1] for s, c in parts)
    n = sum(c for _, c in parts)
    widest = max(estimate_moments(s)[2] for s, _ in parts)
    z = math.sqrt(2.0 * -math.log(1e-4 * delta)) + 2.0
    step = 2.0 * math.sqrt(precision * var / n) if var > 0.0 else widest / 64.0
    # atoms (Laplace, (ε, δ) parts) make δ(ε) kinked: there the interpolation error is
    # first order in h until composition smooths the kinks (~√T atoms per kink spacing)
    step = min(step, precision * widest * math.sqrt(n) / 4.0)
    # a step's grid within 2^15 points of its range (the excess check refines where needed)
    step = max(step, widest / _STEP_POINTS)
    if n < BLOCK_FROM:  # and one composed window (~2z standard deviations) within 2^21 points
        step = max(step, 2.0 * z * math.sqrt(var) / (1 << 21))  # (blocks need no such floor)
    return quantize(step)


def _grid_step(plan: _Plan, precision: float, h: float | None, delta: float) -> float:
    if h is not None:
        return h
    return min(_first_step(parts, precision, delta) for parts in (plan.remove, plan.add))


def grid_step(
    items: Sequence[tuple[PrivacyEvent, int]], delta: float, precision: float = DEFAULT_PRECISION
) -> float:
    """The first grid step the PLD accountant tries for this history at this δ (to hold it
    fixed across a search, e.g. when calibrating a noise multiplier)."""
    return _grid_step(_plan(items), check_precision(precision), None, delta)


def _coarse_step(parts: Parts, precision: float, delta: float) -> float:
    """The grid of the first pass, meant to be about 4x coarser than the final one (a cheap
    pass then aims the tilt and measures the excess): 4x :func:`_first_step`, at least a
    2^11th of one step's loss range, and — where ε is large and mean-dominated — as coarse as
    a near-Gaussian sum's excess T·(h²/6)·(1 + λ)/2 allows at 16 times the target, at the
    saddle-point estimate of ε and its tilt λ (up to a 16th of one step's range)."""
    widest = max(estimate_moments(s)[2] for s, _ in parts)
    step = max(4.0 * _first_step(parts, precision, delta), widest / 2048.0)
    saddle = saddle_epsilon(parts, delta)
    if saddle is not None:  # a large mean-dominated ε allows a much coarser grid
        eps, lam = saddle
        count = sum(c for _, c in parts)
        smooth = math.sqrt(192.0 * _target(eps, precision) / (count * (1.0 + lam)))
        step = max(step, min(smooth, widest / 16.0))
    return quantize(step)


def _finer_model(model: ExcessModel, h: float, target: float) -> float:
    """About the coarsest grid step whose modelled excess is within ``target`` (the model only
    discretizes: cheap next to composing): power-law steps down from h, the exponent
    measured between the points tried (first guess 1.5: the excess goes as h for concentrated
    losses, h² for smooth ones), then back up inside the last bracket. Where the model stops
    falling twice in a row (the float guard of the split, ∝ 1/h, wins at astronomically many
    steps), the step where it was least."""
    start = h
    hi_h, hi_ex = h, model.at(h)  # too coarse
    best = (hi_ex, hi_h)
    k = _exponent(model, hi_h, hi_ex)
    ok: tuple[float, float] | None = None
    bumps = 0
    for _ in range(6):
        if ok is None:
            ratio = (0.85 * target / hi_ex) ** (1.0 / k)
            h = quantize(hi_h * min(0.7, max(1.0 / 64.0, ratio)))
        else:
            ratio = (0.85 * target / ok[1]) ** (1.0 / k)
            h = quantize(ok[0] * max(1.0, ratio))
            if h >= hi_h or h <= ok[0]:
                break
        try:
            ex = model.at(h)
        except InvalidParameterError:  # the step's grid would not fit: coarser only
            break
        if ok is None and ex >= best[0]:  # finer is no better: the least is behind us —
            # or a bump: the split's spread is not monotone in h where the loss is
            # concentrated (σ = 1, q = 1e-4, T = 2, δ = 1e-12: 3.5e-5 at h, 4.1e-5 at h/2,
            # 1.3e-5 at h/4); a second step down decides
            bumps += 1
            if bumps >= 2:
                break
            hi_h, hi_ex = h, ex
            continue
        best = min(best, (ex, h))
        if ex > 0.0 and hi_ex > 0.0 and h != hi_h:
            k = min(2.5, max(0.8, math.log(hi_ex / ex) / math.log(hi_h / h)))
        if ex <= target:
            ok = (h, ex) if ok is None or h > ok[0] else ok
            if ex >= 0.5 * target:
                break
        else:
            hi_h, hi_ex = h, ex
    if ok is not None:
        return ok[0]
    return best[1] if best[1] < start else quantize(start * 0.5)


def _exponent(model: ExcessModel, h: float, excess: float) -> float:
    """The excess model's power of h, measured between h and a grid twice as coarse (whose
    discretization costs half as much as this one's: the pass that made the model has it
    cached), in [0.8, 2.5]; 1.5 where it cannot be measured."""
    if model.stable:  # (the float guard, ∝ 1/h, is a visible part of the model there)
        return 1.5
    coarse = quantize(2.0 * h)
    try:
        up = model.at(coarse)
    except InvalidParameterError:
        return 1.5
    if not (up > excess > 0.0 and coarse > h):
        return 1.5
    k = math.log(up / excess) / math.log(coarse / h)
    return min(k, 2.5) if k >= 1.9 else 1.5


def _atomic(source: LossSource) -> bool:
    inner = getattr(source, "inner", source)
    return isinstance(inner, EpsilonDeltaLoss | LaplaceLoss | DiscreteGaussianLoss)


def _has_atoms(parts: Parts) -> bool:
    """Whether a direction has losses with atoms or hard edges ((ε, δ) parts, Laplace,
    discrete Gaussians): there the excess model (a variance added to a smooth sum) does not
    hold, and the atom-aware first step is used as is."""
    return any(_atomic(s) for s, _ in parts)


#: Composed windows up to this many points cost about what the planning around them costs:
#: there a coarse first pass saves nothing.
_SMALL_WINDOW = 1 << 14


def _window_estimate(parts: Parts, h: float, delta: float) -> float:
    """≈ the points of the composed window at grid step h (not a bound: it only picks the
    first grid): 16 tilted standard deviations at the saddle point and a tenth of ε there,
    on the coarse copies of the steps; inf where there is no saddle point."""
    saddle = saddle_epsilon(parts, delta)
    if saddle is None:
        return math.inf
    eps, lam = saddle
    mo = composed_moments([(estimate_support(s), c) for s, c in parts], lam)
    if not (math.isfinite(mo.var) and math.isfinite(eps)):
        return math.inf
    return (16.0 * math.sqrt(max(mo.var, 0.0)) + 0.1 * abs(eps)) / h


def _start_step(parts: Parts, precision: float, delta: float) -> float:
    """The first pass's grid: :func:`_coarse_step`; the final one for losses with atoms, and
    where the window on it is small anyway (a coarse pass would only add a pass)."""
    fine = _first_step(parts, precision, delta)
    if _has_atoms(parts):
        return fine
    widest = max(estimate_moments(s)[2] for s, _ in parts)  # one step's grid must be small too
    if widest / fine <= _SMALL_WINDOW and _window_estimate(parts, fine, delta) <= _SMALL_WINDOW:
        return fine
    return _coarse_step(parts, precision, delta)


#: The excess allowed, as a share of the target, on a first grid whose uncalibrated model is
#: trusted (:func:`_planned_start`): the calibration pass is skipped there, the lower bound's
#: bracket checks it (a calibration factor above 4 shows up as a bracket above ``precision``)
_TRUSTED = 0.25


@dataclass(frozen=True, slots=True)
class _Start:
    """The first pass (:func:`_planned_start`): its grid; whether its excess model may be
    trusted without a pass before it (without the calibration pass, where it is not
    near-Gaussian); the grid the first pass would have been on (:func:`_start_step`); where
    to tilt it and how far under that the answer may lie (None: the saddle point's)."""

    h: float
    trusted: bool = False
    replaced: float | None = None  # (None: h)
    aim: float | None = None
    below: float | None = None

    @property
    def first_h(self) -> float:
        """The grid the first pass would have been on."""
        return self.h if self.replaced is None else self.replaced


def _planned_start(parts: Parts, precision: float, delta: float) -> _Start:
    """The first pass's grid, planned (see :class:`_Start`).

    Predicted before any pass from the saddle point (its tilt λ and slope −d log δ/dε, the
    excess model on the steps' discretizations: :func:`prior_model`), for losses without
    atoms, in one level (no part in blocks):

    - near-Gaussian (λ/slope in [0.8, 1.25], λ ≥ 0.5, as :func:`excess_model`'s flag, and
      a skewness that puts the estimate of ε, hence the target, within ~0.1 %) where
      the first pass would be the coarse one (:func:`_start_step`) and its model above the
      target: that pass only aims the tilt and picks the final grid (:func:`_finer`) — the
      grid is picked from the prior model instead, and the one pass there is trusted;
    - not near-Gaussian where the first pass is on the final grid's first guess (small
      windows): :func:`_refine` would follow it with a calibration pass on a grid twice as
      fine and end there — where the model is within ``_TRUSTED`` of the target on that grid,
      the first pass goes there directly.

    A trusted pass is checked by the caller's lower bound (a bracket wider than ``precision``
    refines it as before). Elsewhere the untrusted :func:`_start_step`, as before."""
    h = _start_step(parts, precision, delta)
    if _has_atoms(parts) or any(c >= BLOCK_FROM for _, c in parts):
        return _Start(h, False, h)
    saddle = saddle_epsilon(parts, delta)
    if saddle is None or not (math.isfinite(saddle[0]) and saddle[0] > 0.0 and saddle[1] >= 0.5):
        return _Start(h, False, h)
    eps, lam = saddle
    slope, skew = _saddle_shape(parts, lam)
    if not slope > 0.0:
        return _Start(h, False, h)
    target = _target(eps, precision)
    try:
        if h != _first_step(parts, precision, delta):  # a coarse first pass
            if not (_near_gaussian(lam, slope) and skew <= _SKEW):
                return _Start(h, False, h)
            model = prior_model(parts, h, lam, slope, delta)
            if model.at(h) <= target:  # (the first pass is the answer: as before)
                return _Start(h, False, h)
            fine_h = _finer_model(model, h, target)
            # tilted where the coarse pass's answer would have been, as the pass after it was
            # (a window aimed a little above the answer leaves less out at it)
            excess = model.at(h)
            return _Start(fine_h, True, h, eps + excess,
                          2.0 * excess + 0.01 * (eps + excess) + 32.0 * fine_h)
        if lam / slope >= 0.8 or len(parts) > _MODEL_PARTS:
            return _Start(h, False, h)
        half = quantize(h / 2.0)
        fine = prior_model(parts, half, lam, slope, delta).at(half)
    except InvalidParameterError:
        return _Start(h, False, h)
    # (the excess falls about as h²: at h it would be ~4x this, above a 16th of the target)
    if 4.0 * fine <= target / 16.0 or fine > _TRUSTED * target:
        return _Start(h, False, h)
    return _Start(half, True, h)


def _saddle_shape(parts: Parts, lam: float) -> tuple[float, float]:
    """At the saddle point's tilt λ (:func:`saddle_epsilon`: log δ(λ) = K(λ) − λK'(λ) +
    log E[e^(−λX)(1 − e^(−X)); X > 0], ε(λ) = K'(λ)), by central differences in λ on the
    steps' coarse copies: the slope −d log δ/dε, and the tilted sum's skewness κ₃/κ₂^1.5
    (small where the estimate is close: at most 0.15 on issue 22's sweep where it was within
    0.1 % of the answer, 0.38 or more where it was 0.7 % to 30x off). NaNs where they cannot
    be formed."""
    coarse = [(estimate_support(s), c) for s, c in parts]
    ends = []
    for lam_x in (lam * (1.0 - 1e-3), lam * (1.0 + 1e-3)):
        mo = composed_moments(coarse, lam_x)
        if not (math.isfinite(mo.k) and math.isfinite(mo.mean) and mo.var > 0.0):
            return math.nan, math.nan
        ends.append((mo.k - lam_x * mo.mean + _log_hockey(lam_x, math.sqrt(mo.var)), mo.mean,
                     mo.var))
    (d_lo, e_lo, v_lo), (d_hi, e_hi, v_hi) = ends
    if not e_hi > e_lo:
        return math.nan, math.nan
    var = 0.5 * (v_lo + v_hi)
    return (d_lo - d_hi) / (e_hi - e_lo), (v_hi - v_lo) / (2e-3 * lam) / var**1.5


#: The saddle point's skewness up to which it is taken to place ε within ~0.1 % (the
#: target it sizes the grid for is a share of ε): see :func:`_saddle_shape`
_SKEW = 0.2


def _target(eps: float, precision: float, floor: float = 1e-6) -> float:
    """The excess allowed: ``precision``/2 of ε (of ``floor`` for smaller ε: an absolute
    floor; δ at a given ε uses 1e-3, where ε near 0 would otherwise ask for any grid)."""
    return 0.5 * precision * max(eps, floor)
