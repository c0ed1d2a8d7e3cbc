"""Events → privacy-loss distributions → certified (ε, δ): the PLD accountant.

Each event becomes one or two loss distributions (:mod:`approxdp.accounting.pld.privacy_loss`):
the "remove" and the "add" direction of add/remove neighbours (Zhu, Dong, Wang 2022,
https://arxiv.org/abs/2106.08567, Sec. 5). A history composes each direction separately
(:mod:`approxdp.accounting.pld.compose`) and δ(ε) is the larger of the two. Gaussian events are
merged first into one Gaussian with μ = (Σ Δᵢ²/σᵢ²)^(1/2), which is exact (Zhao et al. 2019,
https://arxiv.org/abs/1911.12060, Lemma 15).

The grid step is chosen from the history (:mod:`approxdp.accounting.pld.grid_steps`), then
checked and refined (:mod:`approxdp.accounting.pld.refine`); the history is planned per
direction in :mod:`approxdp.accounting.pld.plan`.

Only the direction that dominates is refined and bracketed: the other is certified at the
first grid, whose bound is valid whatever the grid; if it is not below the dominant one, it is
refined too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.delta import PLD_RULE, _capped, pld_delta
from approxdp.accounting.pld.estimates import estimate_moments, prefetch_estimates
from approxdp.accounting.pld.event_losses import LossPair, event_losses
from approxdp.accounting.pld.grid_steps import (
    _has_atoms,
    _planned_start,
    _Start,
    _start_step,
    grid_step,
)
from approxdp.accounting.pld.passes import (
    Parts,
    clear_caches,
    lower_epsilon,
    quantize,
    saddle_epsilon,
    upper_epsilon,
)
from approxdp.accounting.pld.plan import (
    DEFAULT_PRECISION,
    _check_delta,
    _check_step,
    _directions,
    _Plan,
    _plan,
    check_precision,
)
from approxdp.accounting.pld.refine import _refine, _solve, _Solved, finer_pass, lower_grids
from approxdp.accounting.pld.swapped import is_swap, swapped_delta
from approxdp.errors import InvalidParameterError
from approxdp.events import PrivacyEvent

__all__ = [
    "DEFAULT_PRECISION",
    "PLD_RULE",
    "LossPair",
    "check_precision",
    "clear_caches",
    "epsilon_by_direction",
    "event_losses",
    "grid_step",
    "pld_delta",
    "pld_epsilon",
    "search_grid",
    "search_grid_epsilon",
]

def search_grid(
    items: Sequence[tuple[PrivacyEvent, int]], delta: float,
    precision: float = DEFAULT_PRECISION,
) -> tuple[float, tuple[str, ...]]:
    """The grid step :func:`pld_epsilon` ends on for this history at δ, and the directions
    ("remove", "add") that matter there (the dominant one, and the other too when it is within
    1 %): a search over a parameter (calibrating a noise multiplier) holds them fixed, so that
    ε is monotone along it and each try costs one pass per direction. Where the two are
    within ``precision``/100 of each other (astronomically many steps: both near one
    Gaussian), only the larger is followed: a search that aims ``precision``/10 under its
    target absorbs that gap, and the caller certifies its answer on both anyway."""
    h, names, _ = search_grid_epsilon(items, delta, precision)
    return h, names


def search_grid_epsilon(
    items: Sequence[tuple[PrivacyEvent, int]], delta: float,
    precision: float = DEFAULT_PRECISION,
) -> tuple[float, tuple[str, ...], float]:
    """:func:`search_grid`, and the certified ε of this history on that grid (the largest of
    the chosen directions'): a search's first point, which it need not compose again."""
    precision = check_precision(precision)
    delta = _check_delta(delta)
    plan = _plan(items)
    prefetch_estimates([s for s, _ in (*plan.remove, *plan.add)])  # (one pass for all)
    names = ("remove", "add") if _directions(plan) != (plan.remove,) else ("remove",)
    solved = []
    for name in names:
        parts = plan.remove if name == "remove" else plan.add
        if parts:
            solved.append((_solve(parts, delta, _start_step(parts, precision, delta), None),
                           name, parts))
    solved.sort(key=lambda item: -item[0].eps)
    first, name, parts = solved[0]
    top = first if _has_atoms(parts) else _refine(parts, delta, first, precision)
    chosen = [name]
    eps = top.eps
    for other, other_name, other_parts in solved[1:]:
        if other.eps > top.eps * 0.99:  # close: it may take over along the search
            finer = _solve(other_parts, delta, top.h, other.eps)
            if abs(finer.eps - top.eps) <= 0.01 * precision * top.eps:
                chosen = [other_name] if finer.eps > top.eps else chosen
                eps = max(eps, finer.eps)
            elif finer.eps > top.eps * 0.99:
                chosen.append(other_name)
                eps = max(eps, finer.eps)
    return top.h, tuple(chosen), eps


def epsilon_by_direction(
    items: Sequence[tuple[PrivacyEvent, int]],
    delta: float,
    *,
    h: float,
    directions: tuple[str, ...] = ("remove", "add"),
    tilt_at: float | None = None,
) -> dict[str, float]:
    """Certified ε(δ) of each neighbouring direction separately, on a given grid step.

    The add/remove guarantee is the larger of the two; searches (calibrating a noise
    multiplier) use this to follow the direction that dominates."""
    plan = _plan(items)
    out: dict[str, float] = {}
    for name in directions:
        parts = plan.remove if name == "remove" else plan.add
        if not parts:
            out[name] = 0.0
            continue
        out[name] = upper_epsilon(parts, delta, h, tilt_at)[1]
    return out


def pld_epsilon(
    items: Sequence[tuple[PrivacyEvent, int]],
    delta: float,
    *,
    precision: float = DEFAULT_PRECISION,
    h: float | None = None,
    bracket: bool = True,
) -> Guarantee:
    """Certified ε(δ) of a history of (event, count) pairs under add/remove neighbours.

    Args:
        items: (event, count) pairs; a count repeats the event (T identical steps cost one
            FFT, whatever T).
        delta: δ in (0, 1).
        precision: target relative excess of ε over the true value (default 1e-3, giving
            ~0.05 %); smaller is slower.
        h: force the grid step (normally chosen from ``precision`` and the history, and
            refined until the estimated excess meets ``precision``).
        bracket: also certify a lower bound (``Guarantee.bracket``); a little extra time.

    Returns:
        A :class:`Guarantee` of kind "upper bound"; with ``bracket``, a certified (lower,
        upper) pair around the true ε.
    """
    precision = check_precision(precision)
    delta = _check_delta(delta)
    fixed = _check_step(h)
    plan = _plan(items)
    prefetch_estimates([s for s, _ in (*plan.remove, *plan.add)])  # (one pass for all)
    if plan.steps == 0:
        return Guarantee(0.0, delta, "exact", "no privacy loss", bracket=(0.0, 0.0))
    skip = None if fixed is not None else _without_capped(plan, delta)
    if skip is not None:
        alone, capped = skip
        got = _epsilon_of(alone, delta, precision, fixed, bracket)
        if _capped(capped, float(got.epsilon)):  # its δ at that ε is 0: certified for both
            return got
    return _epsilon_of(plan, delta, precision, fixed, bracket)


def _without_capped(plan: _Plan, delta: float) -> tuple[_Plan, Parts] | None:
    """(the plan of the other direction alone, the capped one) where one direction's loss
    has a ceiling (the add direction of Poisson subsampling: :func:`_capped`) and the other
    direction's saddle-point estimate of ε is half again above the sum of its ceilings: at
    any ε at least that sum the capped direction's δ is 0 exactly, so it need not be
    composed (the caller checks the certified ε). Its own grid, sized from its estimates, is
    meaningless there — a point mass at its ceiling: σ = 0.05, q = 0.01, T = 100 planned a
    grid step of 8e-15 and, after 3 s, a window of 1.4e10 points (GridTooLargeError). None
    elsewhere (every ε below the sum, as in every usual DP-SGD run)."""
    ways = _directions(plan)
    if len(ways) != 2:
        return None
    for capped, other in ((plan.add, plan.remove), (plan.remove, plan.add)):
        if _capped(capped, math.inf) and not _has_atoms(other):
            # (a Gaussian guess first, from the cached moments: most runs end here, where
            # the ceilings' sum is far above any ε asked of them)
            mean = sum(c * estimate_moments(s)[0] for s, c in other)
            var = sum(c * estimate_moments(s)[1] for s, c in other)
            if not _capped(capped, mean + math.sqrt(2.0 * var * -math.log(delta))):
                continue
            est = saddle_epsilon(other, delta)
            if est is not None and math.isfinite(est[0]) and _capped(capped, est[0] / 1.5):
                return _Plan(other, other, plan.steps), capped
    return None


def _epsilon_of(
    plan: _Plan, delta: float, precision: float, fixed: float | None, bracket: bool
) -> Guarantee:
    """:func:`pld_epsilon` of a checked plan."""
    # the dominant direction by the saddle-point estimates, its answer, then the other one
    # certified below it on a grid predicted to suffice (no first pass of its own); where a
    # direction has atoms, the estimates cannot tell, or the prediction misses: both
    # directions' first passes, the larger refined (each pass certified either way)
    known = None if fixed is not None else _dominant(plan, delta)
    lows: list[float] = []
    while known is not None:
        top_parts, other_parts, gap = known
        start = _planned_start(top_parts, precision, delta)
        first = _solve(top_parts, delta, start.h, start.aim, start.below)
        trusted, first_h = start.trusted, start.first_h
        top, lows = _top(top_parts, delta, first, precision, trusted, first_h, bracket)
        if _swap_below(top_parts, other_parts, delta, top, first):
            break
        if gap is None:  # (a swapped pair taken "remove" first: now the estimates decide)
            known = _estimated(plan, delta)
            if known is not None and known[0] is not top_parts:
                continue  # ("add" dominates: composed first, as the estimates would have had)
            if known is None:
                break
            gap = known[2]
        own = _start_step(other_parts, precision, delta)
        if not _below(other_parts, delta, top, first_h, gap, own):
            known = None  # (above it even on the final grid: it may dominate)
        break
    if known is None:
        top_parts, top, first_h, eps_up, lows = _both_ways(plan, delta, precision, fixed,
                                                           bracket)
    else:
        eps_up = top.eps
    eps_lo = 0.0
    if bracket:
        for low in lows or _lower(top_parts, delta, top, first_h, fixed, precision, eps_up):
            if low <= eps_up:  # (a test above a certified upper end is declined, never
                eps_lo = max(eps_lo, low)  # clamped: one of the two would be wrong)
    return Guarantee(
        eps_up, delta, "upper bound", PLD_RULE, bracket=(eps_lo, eps_up) if bracket else None
    )


def _top(
    parts: Parts, delta: float, first: _Solved, precision: float, trusted: bool,
    first_h: float, bracket: bool,
) -> tuple[_Solved, list[float]]:
    """The dominant direction refined from its first pass (:func:`_refine`), and its lower
    bounds (with ``bracket``): the check of the excess model. Where the bracket is wider than
    ``precision`` the model was not to be trusted: a trusted first pass is refined as an
    untrusted one would be (calibration pass first), any other answer gets one pass on a grid
    twice as fine (the model had said none was needed: σ = 0.6, q = 1e-5, T = 2, δ = 1e-12
    stopped 1.0e-3 above the exact ε, the calibrated model saying 3.6e-4; the finer pass
    puts it 3e-4 above). Every pass and every test is certified: the least upper end and the
    greatest lower end are kept."""
    top = _refine(parts, delta, first, precision, trusted)
    if not bracket:
        return top, []
    ideal: list[tuple[float, float]] = []
    lows = _lower(parts, delta, top, first_h, None, precision, ideal=ideal)
    if not (math.isfinite(top.eps) and top.eps > max(lows) * (1.0 + precision)):
        return top, lows
    if _roundoff_bound(ideal, precision, top.eps) and top.eps <= max(i for _, i in ideal) * (
            1.0 + precision):
        # the tests but for their FFT round-off bound are within ``precision``: the model
        # was right; the round-off bound alone costs the tests more than ``precision``, and
        # a finer grid does not shrink it (σ = 0.7674, q = 1.3e-5, T = 33502, δ = 5.63e-9:
        # its sum over a tail's ~1/(λh) entries is the same at h and h/2; the finer pass
        # there moved the upper end by 1.5e-4 and the lower one by 1e-5 of ε, for 40 % of
        # the time)
        return top, lows
    if trusted and top is first:
        return _refine(parts, delta, first, precision, calibrate=True), []
    finer = finer_pass(parts, delta, top, quantize(top.h / 2.0))
    if finer.eps >= top.eps:
        return top, lows
    return finer, [*lows, *_lower(parts, delta, finer, first_h, None, precision)]


def _lower(
    parts: Parts, delta: float, top: _Solved, first_h: float, fixed: float | None,
    precision: float, eps_up: float | None = None,
    ideal: list[tuple[float, float]] | None = None,
) -> list[float]:
    """The certified lower bounds of the dominant direction's tests (:func:`lower_grids`),
    coarsest first, until one is within ``precision`` of ``eps_up`` (default ``top.eps``),
    or the round-off bound alone costs one more than ``precision`` (:func:`_roundoff_bound`).
    ``ideal``: for each test not within ``precision``, (its certified ε, its ε without the
    round-off bound — not certified: :func:`~approxdp.accounting.pld.lower.lower_epsilon`)
    is appended to it."""
    eps_up = top.eps if eps_up is None else eps_up
    near = top.eps if math.isfinite(top.eps) else top.comp.lam_target or 0.0
    grids = [top.h] if fixed is not None else lower_grids(top, first_h)
    ideal = [] if ideal is None else ideal
    out = [0.0]
    for h_low in dict.fromkeys(grids):
        room = 4.0 * top.excess + 0.01 * near + 32.0 * h_low
        free: list[float] = []
        try:
            low = lower_epsilon(parts, delta, h_low, near, room, top.comp.blocked,
                                aim_h=top.h, like=top.comp, ideal=free,
                                ideal_below=eps_up / (1.0 + precision))
        except InvalidParameterError:  # (this grid's steps would not fit: no test on it —
            continue  # as pld_delta's tests; the upper end is certified either way)
        out.append(low)
        ideal.extend((low, i) for i in free)
        if eps_up <= min(max(out), eps_up) * (1.0 + precision):
            break
        if free and _roundoff_bound([(low, free[0])], precision, eps_up):
            # a finer test would not close the bracket either: the round-off bound does not
            # shrink with h (σ = 0.7674, q = 1.3e-5, T = 33502, δ = 5.63e-9: it cost the
            # tests 1.16e-3 of ε at 2h, 1.23e-3 at h; the test at h gained 2.2e-4)
            break
    return out


def _roundoff_bound(ideal: list[tuple[float, float]], precision: float, eps_up: float) -> bool:
    """Whether the FFT round-off bound alone costs every test of ``ideal`` ((certified ε,
    ε without the round-off bound) pairs) more than ``precision`` of its ε. That bound, a
    per-entry bound summed over a tail's ~1/(λh) entries, does not shrink with the grid
    step: where it holds a bracket open, finer grids do not close it. Only where each ε
    without it is at most the certified upper end ``eps_up``: above it (or ∞, a Q-tail
    that the round-off left ≤ 0: σ = 0.6, q = 1e-3, T = 2, δ = 1e-280) the round-off is
    not all that is wrong with the tests, and finer grids are tried as ever."""
    return bool(ideal) and all(
        eps_up >= i and i - low > precision * low > 0.0 for low, i in ideal)


def _both_ways(
    plan: _Plan, delta: float, precision: float, fixed: float | None, bracket: bool
) -> tuple[Parts, _Solved, float, float, list[float]]:
    """Every direction's first pass; the largest refined, the others certified at their first
    grid or, where that is above it, on a finer one: (dominant parts, its final pass, its
    first grid, the certified ε of all, its lower bounds where :func:`_top` made them)."""
    if fixed is None:
        starts = [(parts, _planned_start(parts, precision, delta)) for parts in _directions(plan)]
    else:
        starts = [(parts, _Start(fixed, False, fixed)) for parts in _directions(plan)]
    first = [(parts, _solve(parts, delta, st.h, st.aim, st.below), st.trusted, st.first_h)
             for parts, st in starts]
    first.sort(key=lambda item: -item[1].eps)
    top_parts, top, trusted, first_h = first[0]
    lows: list[float] = []
    if fixed is None and not _has_atoms(top_parts):
        top, lows = _top(top_parts, delta, top, precision, trusted, first_h, bracket)
    eps_up = top.eps
    for parts, other, _, _ in first[1:]:  # certified at its first grid; if it matters, on the
        if other.eps > eps_up and fixed is None:  # dominant one's final grid
            room = 2.0 * (other.eps - eps_up) + 0.01 * other.eps + 32.0 * other.h
            h_other = _other_step(other, top, eps_up)
            finer = _solve(parts, delta, h_other, other.eps, room)
            if finer.eps > eps_up and h_other > top.h:  # not enough: on the final grid
                again = _solve(parts, delta, top.h, other.eps, room)
                finer = again if again.eps < finer.eps else finer
            other = finer if finer.eps < other.eps else other
        eps_up = max(eps_up, other.eps)
    return top_parts, top, first_h, eps_up, lows if eps_up == top.eps else []


def _dominant(plan: _Plan, delta: float) -> tuple[Parts, Parts, float | None] | None:
    """The direction to compose first and the other: :func:`_estimated`, except for a
    Poisson-subsampled pair (the other direction its swap, no atoms) whose "remove" direction
    has a saddle-point estimate: (remove, add, None), without the estimate of "add" (one
    saddle-point search: a tenth of a small ask). It dominates on every setting of
    benchmarks/dpsgd.py; wherever it does, the swap reads "add" off its windows
    (:func:`_swap_below`) and the estimates are never needed. Where that fails they decide as
    before (the caller asks :func:`_estimated`): each pass is certified either way."""
    ways = _directions(plan)
    if len(ways) != 2 or any(_has_atoms(p) for p in ways):
        return None
    if is_swap(plan.remove, plan.add):
        est = saddle_epsilon(plan.remove, delta)
        if est is not None and math.isfinite(est[0]):
            return plan.remove, plan.add, None
    return _estimated(plan, delta)


def _estimated(plan: _Plan, delta: float) -> tuple[Parts, Parts, float] | None:
    """(the direction with the larger saddle-point estimate of ε, the other, the gap between
    the estimates) where there are two directions, neither has atoms (whose kinked profiles
    the estimate does not follow), both estimates exist and they differ by more than 1e-4;
    else None."""
    ways = _directions(plan)
    if len(ways) != 2 or any(_has_atoms(p) for p in ways):
        return None
    est = [saddle_epsilon(p, delta) for p in ways]
    if any(e is None or not math.isfinite(e[0]) for e in est):
        return None
    (a, ea), (b, eb) = sorted(zip(ways, est, strict=True), key=lambda t: -t[1][0])  # type: ignore[index]
    gap = ea[0] - eb[0]  # type: ignore[index]
    # (within 1e-4 of each other — astronomically many steps, both near one Gaussian — either
    # may come out above the other on one grid: there both are run, as ever)
    return (a, b, gap) if gap > 1e-4 * abs(ea[0]) else None  # type: ignore[index]


def _below(
    parts: Parts, delta: float, top: _Solved, first_h: float, gap: float, own: float
) -> bool:
    """Certify the non-dominant direction at most ``top.eps`` (the dominant one's final
    answer) with one pass, on the coarsest quarter-octave grid predicted to put it there with
    half the room to spare — up to twice its own first grid ``own``; where that misses, on
    ``own`` (where its first pass always was), then on the final grid: its answer is taken
    as the dominant one's true ε (its certified ε less the excess model's estimate) less the
    gap of their saddle-point estimates, and its excess as the dominant one's (the excess
    model at the final and the first grid, as a power of h). The grid is not certified, and
    need not be: each pass is. False where none is at most ``top.eps`` (then the caller runs
    both directions' first passes, as where the estimates cannot tell)."""
    room = top.excess + max(gap, 0.0)
    h = top.h
    if top.model is not None and room > 1e-3 * top.eps and first_h > top.h:
        try:
            near, far = top.model.at(top.h), top.model.at(first_h)
        except InvalidParameterError:
            near = far = 0.0
        k = math.log(far / near) / math.log(first_h / top.h) if far > near > 0.0 else 0.0
        if k > 0.5:
            ladder = quantize(top.h * 2.0**0.25)
            while ladder <= 2.0 * own and near * (ladder / top.h) ** k <= 0.5 * room:
                h = ladder
                up = quantize(ladder * 2.0**0.25)  # (may round back to ladder: 2^(k/4) and
                ladder = up if up > ladder else quantize(ladder * 2.0**0.25, up=True)  # log2 round)
    guess = top.eps - room
    below = room + 0.01 * abs(guess) + 32.0 * h
    for step in dict.fromkeys((h, min(own, h), top.h)):  # (ε only: no excess model, and
        # no second tilt once it is certified below)
        if upper_epsilon(parts, delta, step, guess, below, enough=top.eps)[1] <= top.eps:
            return True
    return False


def _swap_below(parts: Parts, other: Parts, delta: float, top: _Solved, first: _Solved) -> bool:
    """Certify the non-dominant direction at most ``top.eps`` without composing it, where it
    is the dominant one's swapped pair (Poisson subsampling): its δ at ``top.eps`` read off
    the dominant direction's composed windows at −ε (:mod:`approxdp.accounting.pld.swapped`),
    the final pass's and then the first pass's (any pass is a certified bound; the first one's
    window reaches furthest below its tilt). False where neither puts it at most δ."""
    if not (math.isfinite(top.eps) and is_swap(parts, other)):
        return False
    return any(swapped_delta(comp, top.eps) <= delta
               for comp in dict.fromkeys((top.comp, first.comp)))


def _other_step(other: _Solved, top: _Solved, eps_up: float) -> float:
    """The grid on which to certify a direction whose first pass (``other``) came out above
    the dominant direction's refined ε ``eps_up``: it only has to come out below that, not
    within ``precision`` of its own truth. The coarsest step on the quarter-octave ladder
    from ``other.h`` down to the dominant one's final grid whose predicted ε is below
    ``eps_up`` with half the room to spare (where the room is under 0.1 % of ``eps_up``, the
    final grid: no prediction is that sharp): the excess model's value at ``other.h``, scaled
    by the dominant direction's calibration, shrinking as h² (connect-the-dots' spread is
    h²·a(p − a)/p per interval). Not certified, and need not be: the pass on it is, and where
    it still comes out above ``eps_up`` the final grid is used as before (one pass more)."""
    if other.model is None or top.model is None or top.h >= other.h:
        return top.h
    excess = max(1.0, top.model.scale / max(other.model.scale, 1e-300)) * other.excess
    room = eps_up - (other.eps - excess)
    if room <= 1e-3 * eps_up or excess <= 0.0:  # too close to predict: the final grid
        return top.h
    h = other.h
    while h > top.h and excess * (h / other.h) ** 2 > 0.5 * room:
        h = quantize(h / 2.0**0.25)
    return max(h, top.h)
