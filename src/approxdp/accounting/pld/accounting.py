"""Events → privacy-loss distributions → certified (ε, δ): the PLD accountant.

Each event becomes one or two loss distributions (:mod:`approxdp.accounting.pld.privacy_loss`):
the "remove" and the "add" direction of add/remove neighbours (Zhu, Dong, Wang 2022,
https://arxiv.org/abs/2106.08567, Sec. 5). A history composes each direction separately
(:mod:`approxdp.accounting.pld.compose`) and δ(ε) is the larger of the two. Gaussian events are
merged first into one Gaussian with μ = (Σ Δᵢ²/σᵢ²)^(1/2), which is exact (Zhao et al. 2019,
https://arxiv.org/abs/1911.12060, Lemma 15).

The grid step is chosen from the history, then checked. The first guess: the connect-the-dots
rounding adds at most T·h²/4 to the variance of the summed loss, so h = 2·sqrt(precision ·
Var(S)/T) keeps the excess in ε near ``precision``/2 relative for a near-Gaussian sum, and a
step is never finer than a 2^15th of one step's loss range. The check: the excess is estimated
from the variance the split really adds under the tilt of the answer
(:func:`~approxdp.accounting.pld.passes.excess`), and the grid refined until it is below
``precision``/2 — this is what keeps heavy-tailed sums (small sampling rates, where a few
large losses make δ) tight on a grid as coarse as they allow. Steps are quantized to powers of
2^(1/4) so that discretizations can be cached across calls (a growing ledger reuses them).

Only the direction that dominates is refined and bracketed: the other is certified at the
first grid, whose bound is valid whatever the grid; if it is not below the dominant one, it is
refined too.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from approxdp._validation import check_parameter
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.blocks import BLOCK_FROM
from approxdp.accounting.pld.compose import ComposedPLD
from approxdp.accounting.pld.event_losses import LossPair, event_losses, gaussian_source
from approxdp.accounting.pld.passes import (
    ExcessModel,
    Parts,
    calibrated,
    clear_caches,
    coarse_moments,
    composed,
    excess_model,
    lower_delta,
    lower_epsilon,
    quantize,
    saddle_delta,
    saddle_epsilon,
    upper_epsilon,
)
from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    LaplaceLoss,
    LossSource,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError
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
]

PLD_RULE = (
    "privacy loss distribution: connect-the-dots discretization, FFT composition "
    "(Doroshenko et al. 2022, arXiv:2207.04380; Koskela et al. 2021, arXiv:2006.07134)"
)
DEFAULT_PRECISION = 1e-3
#: A step's grid is never finer than this fraction of its loss range (in the first guess).
_STEP_POINTS = 1 << 15


@dataclass(frozen=True, slots=True)
class _Plan:
    """A history ready to compose: per direction, (source, count) pairs; the merged Gaussian."""

    remove: tuple[tuple[LossSource, int], ...]
    add: tuple[tuple[LossSource, int], ...]
    steps: int


_MAX_COUNT = 10**15


def _check_items(items: object) -> list[tuple[PrivacyEvent, int]]:
    """``items`` as (event, count) pairs with integer counts in [1, 1e15], or a typed error."""
    if not isinstance(items, Sequence | Iterable) or isinstance(items, str | bytes):
        raise ParameterTypeError(
            f"items must be a sequence of (event, count) pairs, got {type(items).__name__}"
        )
    out: list[tuple[PrivacyEvent, int]] = []
    for i, item in enumerate(items):
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ParameterTypeError(
                f"items[{i}] must be an (event, count) pair, got {item!r}"[:200]
            )
        event, count = item
        if not isinstance(event, PrivacyEvent):
            raise ParameterTypeError(
                f"items[{i}][0] must be a PrivacyEvent, got {type(event).__name__}"
            )
        if isinstance(count, bool) or not isinstance(count, numbers.Integral):
            raise ParameterTypeError(
                f"items[{i}] count must be an integer in [1, 1e15], got {count!r}"
            )
        if not 1 <= int(count) <= _MAX_COUNT:
            raise InvalidParameterError(
                f"items[{i}] count must be an integer in [1, 1e15], got count={count}"
            )
        out.append((event, int(count)))
    return out


def _check_step(h: object) -> float | None:
    if h is None:
        return None
    if isinstance(h, bool) or not isinstance(h, numbers.Real):
        raise ParameterTypeError(f"h must be a positive number or None, got {h!r}")
    if not (math.isfinite(float(h)) and float(h) > 0.0):
        raise InvalidParameterError(f"h must be a finite grid step > 0, got h={h}")
    return float(h)


def _plan(items: Sequence[tuple[PrivacyEvent, int]]) -> _Plan:
    rho = 0.0
    rem: dict[LossSource, int] = {}
    add: dict[LossSource, int] = {}
    steps = 0
    for event, count in _check_items(items):
        for pair in event_losses(event):
            steps += count
            if pair.remove is None or pair.add is None:
                rho += count * pair.gaussian_rho
                continue
            rem[pair.remove] = rem.get(pair.remove, 0) + count
            add[pair.add] = add.get(pair.add, 0) + count
    if rho > 0.0:
        g = gaussian_source(math.nextafter(math.sqrt(rho), math.inf))
        rem[g] = rem.get(g, 0) + 1
        add[g] = add.get(g, 0) + 1
    return _Plan(tuple(rem.items()), tuple(add.items()), steps)


def _directions(plan: _Plan) -> tuple[tuple[tuple[LossSource, int], ...], ...]:
    """The directions to compose: one when every event is symmetric (both are the same)."""
    if set(plan.remove) == set(plan.add):
        return (plan.remove,)
    return (plan.remove, plan.add)


def _first_step(parts: Parts, precision: float, delta: float) -> float:
    """The first grid step of one direction (see the module docstring)."""
    var = sum(c * coarse_moments(s)[1] for s, c in parts)
    n = sum(c for _, c in parts)
    widest = max(coarse_moments(s)[2] for s, _ in parts)
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


def _check_delta(delta: object) -> float:
    """δ in [1e-300, 1): below, δ's own tail terms (1e-4 δ) underflow."""
    value = float(check_parameter("delta", delta))
    if value < 1e-300:
        raise InvalidParameterError(f"delta must be in [1e-300, 1), got delta={value:.6g}")
    return value


def check_precision(precision: float) -> float:
    """``precision`` in [1e-6, 0.1], or a typed error."""
    if not (isinstance(precision, (int, float)) and 1e-6 <= precision <= 0.1):
        raise InvalidParameterError(
            f"precision must be in [1e-06, 0.1], got precision={precision!r}"
        )
    return float(precision)


@dataclass(frozen=True, slots=True)
class _Solved:
    """One direction solved at one δ: its composed PLD, certified ε, grid step, and the
    model of its excess over the true ε."""

    comp: ComposedPLD
    eps: float
    h: float
    model: ExcessModel | None

    @property
    def excess(self) -> float:
        return self.model.at(self.h) if self.model is not None else 0.0


def _solve(
    parts: Parts, delta: float, h: float, guess: float | None, below: float | None = None
) -> _Solved:
    comp, eps = upper_epsilon(parts, delta, h, guess, below)
    model = excess_model(parts, h, comp, eps, delta) if math.isfinite(eps) else None
    return _Solved(comp, eps, h, model)


def _coarse_step(parts: Parts, precision: float, delta: float) -> float:
    """The grid of the first pass, meant to be about 4x coarser than the final one (a cheap
    pass then aims the tilt and measures the excess): 4x :func:`_first_step`, at least a
    2^11th of one step's loss range, and — where ε is large and mean-dominated — as coarse as
    a near-Gaussian sum's excess T·(h²/6)·(1 + λ)/2 allows at 16 times the target, at the
    saddle-point estimate of ε and its tilt λ (up to a 16th of one step's range)."""
    widest = max(coarse_moments(s)[2] for s, _ in parts)
    step = max(4.0 * _first_step(parts, precision, delta), widest / 2048.0)
    saddle = saddle_epsilon(parts, delta)
    if saddle is not None:  # a large mean-dominated ε allows a much coarser grid
        eps, lam = saddle
        count = sum(c for _, c in parts)
        smooth = math.sqrt(192.0 * _target(eps, precision) / (count * (1.0 + lam)))
        step = max(step, min(smooth, widest / 16.0))
    return quantize(step)


def _finer(cur: _Solved, target: float) -> float:
    """About the coarsest grid step whose modelled excess is within ``target`` (the model only
    discretizes: cheap next to composing): power-law steps down from ``cur.h``, the exponent
    measured between the points tried (first guess 1.5: the excess goes as h for concentrated
    losses, h² for smooth ones), then back up inside the last bracket. Where the model stops
    falling (the float guard of the split, ∝ 1/h, wins at astronomically many steps), the
    step where it was least."""
    assert cur.model is not None
    hi_h, hi_ex = cur.h, cur.excess  # too coarse
    best = (hi_ex, hi_h)
    k = 1.5
    ok: tuple[float, float] | None = None
    for _ in range(5):
        if ok is None:
            ratio = (0.85 * target / hi_ex) ** (1.0 / k)
            h = quantize(hi_h * min(0.7, max(1.0 / 64.0, ratio)))
        else:
            ratio = (0.85 * target / ok[1]) ** (1.0 / k)
            h = quantize(ok[0] * max(1.0, ratio))
            if h >= hi_h or h <= ok[0]:
                break
        try:
            ex = cur.model.at(h)
        except InvalidParameterError:  # the step's grid would not fit: coarser only
            break
        if ok is None and ex >= best[0]:  # finer is no better: the least is behind us
            break
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
    return best[1] if best[1] < cur.h else quantize(cur.h * 0.5)


def _atomic(source: LossSource) -> bool:
    inner = getattr(source, "inner", source)
    return isinstance(inner, EpsilonDeltaLoss | LaplaceLoss | DiscreteGaussianLoss)


def _has_atoms(parts: Parts) -> bool:
    """Whether a direction has losses with atoms or hard edges ((ε, δ) parts, Laplace,
    discrete Gaussians): there the excess model (a variance added to a smooth sum) does not
    hold, and the atom-aware first step is used as is."""
    return any(_atomic(s) for s, _ in parts)


def _start_step(parts: Parts, precision: float, delta: float) -> float:
    """The first pass's grid: :func:`_coarse_step`, or for losses with atoms the final one."""
    if _has_atoms(parts):
        return _first_step(parts, precision, delta)
    return _coarse_step(parts, precision, delta)


def _target(eps: float, precision: float, floor: float = 1e-6) -> float:
    """The excess allowed: ``precision``/2 of ε (of ``floor`` for smaller ε: an absolute
    floor; δ at a given ε uses 1e-3, where ε near 0 would otherwise ask for any grid)."""
    return 0.5 * precision * max(eps, floor)


def _refine(parts: Parts, delta: float, first: _Solved, precision: float) -> _Solved:
    """The pass whose estimated excess is at most ``precision``/2 of ε. Where the composed
    loss is not near-Gaussian, a second pass on a grid twice as fine first calibrates the
    excess model against what ε really did; every later pass recalibrates it (each pass is
    certified, and tilted at the previous answer)."""
    cur = first
    target = _target(cur.eps, precision)
    if cur.model is None or cur.eps == 0.0 or cur.excess <= target / 16.0:
        return cur
    if not cur.model.gaussian:
        room = 2.0 * cur.excess + 0.02 * cur.eps + 32.0 * cur.h
        half = _solve(parts, delta, quantize(cur.h / 2.0), cur.eps, room)
        cur = _step(cur, half)
    for _ in range(2):
        target = _target(cur.eps, precision)
        if cur.model is None or cur.excess <= target or cur.eps == 0.0:
            return cur
        room = 2.0 * cur.excess + 0.01 * cur.eps + 32.0 * cur.h
        h = _finer(cur, target)
        try:
            if cur.model.at(h) > 0.7 * cur.excess:  # a finer grid would gain little
                return cur
        except InvalidParameterError:
            return cur
        cur = _step(cur, _solve(parts, delta, h, cur.eps, room))
    return cur


def _step(cur: _Solved, nxt: _Solved) -> _Solved:
    """The better of two certified passes, with the finer one's excess model calibrated by
    the pair."""
    if nxt.model is None or cur.model is None:
        return min((cur, nxt), key=lambda p: p.eps)
    model = calibrated(nxt.model.with_scale(cur.model.scale), (cur.h, cur.eps), (nxt.h, nxt.eps))
    if nxt.eps > cur.eps:  # (a coarser grid can be luckier: both are certified)
        return _Solved(cur.comp, cur.eps, nxt.h, model)
    return _Solved(nxt.comp, nxt.eps, nxt.h, model)


def search_grid(
    items: Sequence[tuple[PrivacyEvent, int]], delta: float,
    precision: float = DEFAULT_PRECISION,
) -> tuple[float, tuple[str, ...]]:
    """The grid step :func:`pld_epsilon` ends on for this history at δ, and the directions
    ("remove", "add") that matter there (the dominant one, and the other too when it is within
    1 %): a search over a parameter (calibrating a noise multiplier) holds them fixed, so that
    ε is monotone along it and each try costs one pass per direction."""
    precision = check_precision(precision)
    delta = _check_delta(delta)
    plan = _plan(items)
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
    for other, other_name, other_parts in solved[1:]:
        if other.eps > top.eps * 0.99:  # close: it may take over along the search
            finer = _solve(other_parts, delta, top.h, other.eps)
            if finer.eps > top.eps * 0.99:
                chosen.append(other_name)
    return top.h, tuple(chosen)


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
    if plan.steps == 0:
        return Guarantee(0.0, delta, "exact", "no privacy loss", bracket=(0.0, 0.0))
    if fixed is None:
        first = [
            (parts, _solve(parts, delta, _start_step(parts, precision, delta), None))
            for parts in _directions(plan)
        ]
    else:
        first = [(parts, _solve(parts, delta, fixed, None)) for parts in _directions(plan)]
    first.sort(key=lambda item: -item[1].eps)
    top_parts, top = first[0]
    first_h = top.h
    if fixed is None and not _has_atoms(top_parts):
        top = _refine(top_parts, delta, top, precision)
    eps_up = top.eps
    for parts, other in first[1:]:  # certified at its first grid; if it matters, on the
        if other.eps > eps_up and fixed is None:  # dominant one's final grid
            room = 2.0 * (other.eps - eps_up) + 0.01 * other.eps + 32.0 * other.h
            finer = _solve(parts, delta, top.h, other.eps, room)
            other = finer if finer.eps < other.eps else other
        eps_up = max(eps_up, other.eps)
    eps_lo = 0.0
    if bracket:
        # the tests lose about as much as the pessimistic pass gains: first on a grid twice
        # as coarse as the final one (never coarser than the first), then, where that leaves
        # the bracket wider than ``precision`` (or its window did not fit), on the final grid;
        # each is certified: the larger holds
        near = top.eps if math.isfinite(top.eps) else top.comp.lam_target or 0.0
        grids = [top.h]
        if fixed is None and not top.comp.blocked:  # (in blocks the final grid costs little)
            grids.insert(0, min(quantize(2.0 * top.h, up=True), first_h))
        for h_low in dict.fromkeys(grids):
            room = 4.0 * top.excess + 0.01 * near + 32.0 * h_low
            low = lower_epsilon(top_parts, delta, h_low, near, room, top.comp.blocked)
            eps_lo = min(max(eps_lo, low), eps_up)
            if eps_up <= eps_lo * (1.0 + precision):
                break
    return Guarantee(
        eps_up, delta, "upper bound", PLD_RULE, bracket=(eps_lo, eps_up) if bracket else None
    )


def _delta_pass(parts: Parts, epsilon: float, h: float, tail: float) -> tuple[float, _Solved]:
    """δ(ε) of one direction at grid step h (its certified upper bound), and the pass as a
    :class:`_Solved` whose excess model says how far ε is from where the true δ equals it."""
    comp = composed(parts, h, tail, epsilon)
    d = comp.delta(epsilon)
    model = None
    if 0.0 < d < 1.0 and comp.slope(epsilon) > 0.0:
        model = excess_model(parts, h, comp, epsilon, d)
    return d, _Solved(comp, epsilon, h, model)


def _delta_direction(
    parts: Parts, epsilon: float, precision: float, fixed: float | None, enough: float = 0.0
) -> tuple[float, float, bool]:
    """(certified δ(ε), grid step, blocked) of one direction: a coarse pass (tilted at ε), then
    finer ones — each with the left-out tails within 1e-4 of the δ found — until the excess
    model puts the grid's cost in ε within ``precision``/2 (the grid pld_epsilon would use for
    the δ it reports), or δ is at most ``enough`` (another direction's certified δ, which the
    answer is at least: refining this one would not change it)."""
    # the first pass's tails within 1e-7 of a saddle-point estimate of δ (later ones: 1e-4 of
    # the δ found); a guess too high only loosens that pass, which the next one redoes
    first_tail = max(1e-7 * saddle_delta(parts, epsilon), 1e-300)
    if fixed is not None:
        d, cur = _delta_pass(parts, epsilon, fixed, first_tail)
        if d < 1e3 * first_tail:  # the tails were not small against δ: again, with smaller
            d, cur = _delta_pass(parts, epsilon, fixed, max(1e-4 * d, 1e-300))
        return d, fixed, cur.comp.blocked
    # δ at a given ε can sit on a kink (an atom's loss), where the grid's cost in ε says little:
    # start no coarser than the atom-aware first step
    h = _first_step(parts, precision, max(first_tail * 1e4, 1e-300))
    d, cur = _delta_pass(parts, epsilon, h, first_tail)
    best = d
    for _ in range(3):
        target = _target(epsilon, precision, 1e-3)
        if cur.model is None or cur.excess <= target or best <= enough:
            break
        h = _finer(cur, target)
        d, nxt = _delta_pass(parts, epsilon, h, max(1e-4 * best, 1e-300))
        if nxt.model is not None and cur.model is not None:
            nxt = _Solved(nxt.comp, epsilon, h, nxt.model.with_scale(cur.model.scale))
        best = min(best, d)
        cur = nxt
    return best, cur.h, cur.comp.blocked


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
    if plan.steps == 0:
        return Guarantee(epsilon, 0.0, "exact", "no privacy loss", bracket=(0.0, 0.0))
    # every direction's certified δ — the likely dominant one first (a saddle-point estimate),
    # the others refined only while above what it certified — then the lower bound of the
    # largest only (it bounds the max over directions from below)
    solved: list[tuple[float, float, bool, Parts]] = []
    for way in sorted(_directions(plan), key=lambda p: -saddle_delta(p, epsilon)):
        enough = max((item[0] for item in solved), default=0.0)
        solved.append((*_delta_direction(way, epsilon, precision, fixed, enough), way))
    solved.sort(key=lambda item: -item[0])
    d, step, blocked, parts = solved[0]
    others = max((item[0] for item in solved[1:]), default=0.0)

    def lower(h: float, in_blocks: bool, near: float) -> float:
        return lower_delta(parts, epsilon, h, in_blocks, max(1e-4 * near, 1e-300))

    # the tests on a grid twice as coarse first (cheap; often as tight), then, where that
    # leaves δ's bracket wider than 2·precision, on the final one (each certified: the larger)
    low = 0.0
    for h_low in dict.fromkeys(
        ([] if fixed is not None or blocked else [quantize(2.0 * step, up=True)]) + [step]
    ):
        if d <= 0.0 or d <= low * (1.0 + 2.0 * precision):
            break
        try:
            low = max(low, lower(h_low, blocked, d))
        except InvalidParameterError:  # the grid would not fit: the next one
            continue
    # at a kink of δ (ε on an atom's loss) the grid's cost in ε says little; the bracket
    # does: a finer grid while it is wide
    for _ in range(3 if fixed is None and low > 0.0 else 0):
        if d <= low * (1.0 + 20.0 * precision) or d <= others:
            break
        try:
            finer = quantize(step / 4.0)
            d = min(d, _delta_pass(parts, epsilon, finer, max(1e-4 * low, 1e-300))[0])
            low = max(low, lower(finer, False, low))
        except InvalidParameterError:  # the grid would not fit: keep what is certified
            break
        step = finer
    d_up = max(d, others)
    return Guarantee(epsilon, d_up, "upper bound", PLD_RULE, bracket=(min(low, d_up), d_up))
