"""δ(ε) of a history: the PLD accountant's other question (:func:`pld_delta`).

Each direction's certified δ at ε from the pessimistic discretization (refined until the grid
costs at most ``precision``/2 of ε), the likely dominant direction first; then a certified
lower bound from the rounded loss's tests (:mod:`approxdp.accounting.pld.lower`). The
composition: Koskela et al. 2021 (https://arxiv.org/abs/2006.07134); connect-the-dots:
Doroshenko et al. 2022 (https://arxiv.org/abs/2207.04380).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from approxdp._validation import check_parameter
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.estimates import estimate_moments, prefetch_estimates
from approxdp.accounting.pld.grid import discretize_many
from approxdp.accounting.pld.grid_steps import _first_step, _has_atoms, _start_step, _target
from approxdp.accounting.pld.passes import (
    Parts,
    composed,
    excess_model,
    lower_delta,
    quantize,
    saddle_delta,
)
from approxdp.accounting.pld.plan import (
    DEFAULT_PRECISION,
    _check_step,
    _directions,
    _plan,
    check_precision,
)
from approxdp.accounting.pld.privacy_loss import SubsampledLoss
from approxdp.accounting.pld.refine import _finer, _Solved
from approxdp.errors import InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = ["PLD_RULE", "pld_delta"]

PLD_RULE = (
    "privacy loss distribution: connect-the-dots discretization, FFT composition "
    "(Doroshenko et al. 2022, arXiv:2207.04380; Koskela et al. 2021, arXiv:2006.07134)"
)


def _delta_pass(
    parts: Parts, epsilon: float, h: float, tail: float, enough: float = 0.0
) -> tuple[float, _Solved]:
    """δ(ε) of one direction at grid step h (its certified upper bound), and the pass as a
    :class:`_Solved` whose excess model says how far ε is from where the true δ equals it
    (none where δ is at most ``enough``: the caller stops there)."""
    comp = composed(parts, h, tail, epsilon)
    h = comp.step_h  # (coarser than asked where that grid would not fit in memory)
    d = comp.delta(epsilon)
    model = None
    if enough < d < 1.0 and d > 0.0 and comp.slope(epsilon) > 0.0:
        model = excess_model(parts, h, comp, epsilon, d)
    return d, _Solved(comp, epsilon, h, model)


def _delta_direction(
    parts: Parts, epsilon: float, precision: float, fixed: float | None, enough: float = 0.0,
    enough_at: tuple[float, float] = (0.0, math.inf),
) -> tuple[float, float, bool, float]:
    """(certified δ(ε), grid step, blocked, ≈ relative excess of that δ over the true one) of
    one direction: a coarse pass (tilted at ε), then finer ones — each with the left-out tails
    within 1e-4 of the δ found — until the excess model puts the grid's cost in ε within
    ``precision``/2 (the grid pld_epsilon would use for the δ it reports), or δ is at most
    ``enough`` (another direction's certified δ, which the answer is at least: refining this
    one would not change it). ``enough_at``: (grid step, ≈ relative excess of δ) of the pass
    that certified ``enough``. Where this direction's saddle-point estimate is under
    ``_OTHER_ROOM`` times ``enough`` with that pass's excess grown 16-fold (as h², on a grid
    4x as coarse) to spare, a first pass on a grid 4x as coarse as that one (a 4th to a 6th
    of the cost) usually certifies it already; where it does not, the usual passes follow
    (each pass is certified: the least δ is kept)."""
    # the first pass's tails within 1e-7 of a saddle-point estimate of δ (later ones: 1e-4 of
    # the δ found); a guess too high only loosens that pass, which the next one redoes
    first_tail = max(1e-7 * _delta_guess(parts, epsilon), 1e-300)
    if fixed is not None:
        d, cur = _delta_pass(parts, epsilon, fixed, first_tail)
        if d < 1e3 * first_tail:  # the tails were not small against δ: again, with smaller
            d, cur = _delta_pass(parts, epsilon, fixed, max(1e-4 * d, 1e-300))
        return d, fixed, cur.comp.blocked, math.inf
    # δ at a given ε can sit on a kink (an atom's loss), where the grid's cost in ε says little:
    # start no coarser than the atom-aware first step where there are atoms
    h = _first_step(parts, precision, max(first_tail * 1e4, 1e-300))
    if not _has_atoms(parts) and first_tail < 1e-17:  # smooth, δ far in the tail (steps'
        # supports wide against their bulk): a coarse first pass (the composed loss's scale,
        # not one step's) where the window is large, then the excess model's refinements
        h = max(h, _start_step(parts, precision, max(first_tail * 1e4, 1e-300)))
    best = math.inf
    coarse = quantize(4.0 * min(h, enough_at[0])) if enough_at[0] > 0.0 else h
    if coarse > h and not _has_atoms(parts) and saddle_delta(parts, epsilon) * (
            1.0 + 16.0 * enough_at[1]) <= _OTHER_ROOM * enough:
        d, cur = _delta_pass(parts, epsilon, coarse, first_tail, math.inf)  # (no model)
        if d <= enough:
            return d, cur.h, cur.comp.blocked, math.inf
        best = d
    d, cur = _delta_pass(parts, epsilon, h, first_tail, enough)
    best = min(best, d)
    for _ in range(3):
        target = _target(epsilon, precision, 1e-3)
        if cur.comp.error_terms(epsilon)[0] >= 0.5 * best:
            break  # the FFT's round-off bounds δ here (far in the tail): no grid helps
        try:
            if cur.model is None or cur.excess <= target or best <= enough:
                break
            h = _finer(cur, target)
            d, nxt = _delta_pass(parts, epsilon, h, max(1e-4 * best, 1e-300))
        except InvalidParameterError:  # the finer grid (or the excess model's sweep of it)
            break  # would not fit: keep what is certified
        if nxt.model is not None and cur.model is not None:
            nxt = _Solved(nxt.comp, epsilon, nxt.h, nxt.model.with_scale(cur.model.scale))
        best = min(best, d)
        cur = nxt
    return best, cur.h, cur.comp.blocked, _delta_excess(cur, best)


def _delta_guess(parts: Parts, epsilon: float) -> float:
    """The saddle-point estimate of δ(ε); where it sees nothing (ε beyond its coarse supports,
    whose tails are cut at ~1e-14), the largest one-step δ(ε) instead — a lower bound on the
    composition's (dropping the other steps' outputs cannot raise the hockey-stick divergence),
    and within a factor ~T of it where one step's large loss alone makes δ (small q, small T):
    estimated on a coarse pessimistic discretization cut at 1e-300, read one grid step above
    ε (that grid rounds losses up by at most a step)."""
    guess = saddle_delta(parts, epsilon)
    if guess >= _UNSEEN:
        return guess
    widest = max(estimate_moments(s)[2] for s, _ in parts)
    h = quantize(widest / 64.0)
    at = epsilon + h
    for pld in discretize_many([s for s, _ in parts], h, 1e-300):
        # (its finite losses only, as ever: not DiscretePLD.delta, which adds the mass at +∞)
        guess = max(guess, pld.finite_delta(at))
    return guess


#: saddle-point estimates below this are read as "beyond the estimate's supports"
_UNSEEN = 1e-290


#: A non-dominant direction whose saddle-point estimate of δ (times 1 + 16x the dominant
#: pass's relative excess) is under this fraction of the dominant one's certified δ starts on
#: a grid 4x coarser (it only has to come out below it). Measured: that estimate is within
#: 1-8 % of what the coarse pass certifies (ratio 0.49-0.97 over MNIST, 10 phases, q = 0.01,
#: 0.1, 0.3 at ε = 0.1-2), so 0.9 leaves ~10 % room; a miss costs one coarse pass (a 4th to
#: a 6th of the fine one). Was 0.5: the 10-phase history at ε = 2 (ratio 0.69) composed its
#: other direction on the fine grid (18 ms of ~65; now 8)
_OTHER_ROOM = 0.9


def _capped(parts: Parts, epsilon: float) -> bool:
    """Whether δ(ε) of a direction is 0 exactly: every step is the add direction of a
    Poisson-subsampled pair (B, qA + (1 − q)B), q < 1, whose loss −log(1 − q + q·A/B) is at
    most −log(1 − q) and never +∞ (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567,
    Thm 9), and ε is at least the sum of those ceilings (with 1e-9 of it to spare for their
    rounding): then S ≤ ε surely and δ(ε) = E[(1 − e^(ε − S))₊] = 0. Its pessimistic pass
    gave ~3e-322 (the mass its grid sends to +∞) after 0.4-7 s of window planning at q ≤ 1e-5
    (T = 2, σ = 1, q = 1e-5, ε = 2: 6.7 s of 37)."""
    top = 0.0
    for source, count in parts:
        if not (isinstance(source, SubsampledLoss) and source.direction == "add"
                and 0.0 < source.q < 1.0):
            return False
        top += count * -math.log1p(-source.q)
    return epsilon >= top * (1.0 + 1e-9)


def _kink_done(d: float, low: float, rounding: float, d_fine: float) -> bool:
    """Whether :func:`pld_delta`'s kink loop stops after a finer pass (certified δ ``d``, the
    least so far; that pass's own δ ``d_fine`` and round-off charge ``rounding``) before
    running its tests on that grid (a pass's costliest part: 4-6 times its composition): where
    the round-off is half that pass's δ (far in the tail: finer grids only add to it; T = 2,
    σ = 5, q = 1e-3, ε = 0.5: 12 s and 8 s more for nothing), or half the bracket left (with
    the lower end ``low``). The next grid's window is 4x as long and its round-off (charged
    at each entry's weight since 73305aa) larger still, so no finer pass closes the bracket,
    and the tests there lose about as much to their own: T = 2, q = 1e-5, σ = 0.7, ε = 0.05
    gave upper ends 2.90, 3.18, 3.34, 3.35e-13 and lower ends 2.82, 2.77, 2.76e-13 on h, h/4,
    h/16, h/64 (exact 2.85e-13): 1.6 s, then 2.9, 14 and 5 s more for nothing."""
    return rounding >= 0.5 * d_fine or rounding >= 0.5 * (d - low)


def _delta_excess(cur: _Solved, d: float) -> float:
    """≈ the relative excess of a pass's certified δ (``d``) over the true δ: its excess
    model's excess in ε times the slope −d log δ/dε there; inf where there is no model."""
    if cur.model is None or not d > 0.0:
        return math.inf
    try:
        return cur.comp.slope(cur.eps) / d * cur.excess
    except InvalidParameterError:
        return math.inf


def pld_delta(
    items: Sequence[tuple[PrivacyEvent, int]],
    epsilon: float,
    *,
    precision: float = DEFAULT_PRECISION,
    h: float | None = None,
) -> Guarantee:
    """Certified δ(ε) of a history of (event, count) pairs under add/remove neighbours, with a
    certified (lower, upper) bracket around the true δ.

    Args:
        items: (event, count) pairs.
        epsilon: ε ≥ 0 (finite).
        precision: as in :func:`pld_epsilon`: the grid is refined until it costs at most
            about ``precision``/2 of ε (so δ is that close to the truth in ε terms).
        h: force the grid step.
    """
    precision = check_precision(precision)
    epsilon = float(check_parameter("epsilon", epsilon))
    fixed = _check_step(h)
    plan = _plan(items)
    prefetch_estimates([s for s, _ in (*plan.remove, *plan.add)])  # (one pass for all)
    if plan.steps == 0:
        return Guarantee(epsilon, 0.0, "exact", "no privacy loss", bracket=(0.0, 0.0))
    # every direction's certified δ — the likely dominant one first (a saddle-point estimate),
    # the others refined only while above what it certified — then the lower bound of the
    # largest only (it bounds the max over directions from below)
    solved: list[tuple[float, float, bool, float, Parts]] = []
    for way in sorted(_directions(plan), key=lambda p: -saddle_delta(p, epsilon)):
        if _capped(way, epsilon):  # δ(ε) = 0 exactly: no pass (each cost 0.4-7 s at q ≤ 1e-5)
            solved.append((0.0, 0.0, False, math.inf, way))
            continue
        enough, at, _, ex, _ = max(solved, default=(0.0, 0.0, False, math.inf, way),
                                   key=lambda item: item[0])
        solved.append((*_delta_direction(way, epsilon, precision, fixed, enough, (at, ex)),
                       way))
    solved.sort(key=lambda item: -item[0])
    d, step, blocked, excess, parts = solved[0]
    others = max((item[0] for item in solved[1:]), default=0.0)

    def lower(h: float, in_blocks: bool, near: float, aim_h: float) -> float:
        return lower_delta(parts, epsilon, h, in_blocks, max(1e-4 * near, 1e-300), aim_h)

    # the tests on a grid twice as coarse first (cheap; often as tight), then, where that
    # leaves δ's bracket wider than 2·precision, on the final one (each certified: the
    # larger). Where the upper bound alone is estimated ``precision`` above the truth, the
    # coarse tests (which lose about twice that) cannot close the bracket: the final grid's
    # only (measured: the coarse tests' bracket 2.2-2.4x that estimate, or more)
    coarse = fixed is None and not blocked and not excess > precision
    lows = [0.0]
    low = 0.0
    for h_low in dict.fromkeys(([quantize(2.0 * step, up=True)] if coarse else []) + [step]):
        if d <= 0.0 or d <= low * (1.0 + 2.0 * precision):
            break
        try:
            lows.append(lower(h_low, blocked, d, step))
        except InvalidParameterError:  # the grid would not fit: the next one
            continue
        low = max(lows)
    # at a kink of δ (ε on an atom's loss) the grid's cost in ε says little; the bracket
    # does: a finer grid while it is wide
    for _ in range(3 if fixed is None and low > 0.0 else 0):
        if d <= low * (1.0 + 20.0 * precision) or d <= others:
            break
        try:
            finer = quantize(step / 4.0)
            d_fine, fine = _delta_pass(parts, epsilon, finer, max(1e-4 * low, 1e-300))
            d = min(d, d_fine)
            if _kink_done(d, low, fine.comp.error_terms(epsilon)[0], d_fine):
                break
            lows.append(lower(finer, False, low, finer))
            low = max(lows)
        except InvalidParameterError:  # the grid would not fit: keep what is certified
            break
        step = finer
    d_up = max(d, others)
    # a test above a certified upper end is declined, never clamped (one of them would be
    # wrong: tests whose Q-tails underflowed certified lower ends above the truth)
    low = max(x for x in lows if x <= d_up)
    return Guarantee(epsilon, d_up, "upper bound", PLD_RULE, bracket=(low, d_up))
