"""One direction of a history, on one grid: discretize (cached), compose, certify, estimate.

- :func:`composed` / :func:`upper_epsilon`: the certified upper bound on ε(δ) from the
  pessimistic discretization, tilted where the answer is (a saddle-point estimate first, then
  the answer itself when the first window's error terms are not small there), composed in
  blocks where that needs fewer FFT points.
- the steps' cached discretizations: :mod:`approxdp.accounting.pld.discretized`;
- the saddle-point estimates and the excess model that picks the grid step (how far the bound
  sits above the true ε): :mod:`approxdp.accounting.pld.estimates`;
- :func:`lower_epsilon` / :func:`lower_delta`, the certified lower bound from the rounded
  loss used as a test: :mod:`approxdp.accounting.pld.lower`.
  (All re-exported here.)

References: Doroshenko et al. 2022 (https://arxiv.org/abs/2207.04380) for connect-the-dots,
Koskela et al. 2021 (https://arxiv.org/abs/2006.07134) for the FFT, Daniels 1954 and
Lugannani, Rice 1980 (https://doi.org/10.2307/1426607) for the saddle-point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from approxdp.accounting.pld.blocks import (
    BLOCK_FROM,
    EXTENDED_FROM,
    block_factor,
    block_pieces,
    block_plan,
)
from approxdp.accounting.pld.compose import (
    MAX_WINDOW,
    ComposedPLD,
    DiscretePLD,
    WindowTooLargeError,
    compose,
)
from approxdp.accounting.pld.discretized import (
    STABLE_FROM,
    Parts,
    _stable,
    _step_tail,
    clear_caches,
    coarse_moments,
    coarse_support,
    discretized_all,
    prefetch_coarse,
    quantize,
)
from approxdp.accounting.pld.discretized import _discretized as _discretized  # (old path)
from approxdp.accounting.pld.estimates import (
    ExcessModel,
    _guess,
    calibrated,
    excess_model,
    saddle_delta,
    saddle_epsilon,
)
from approxdp.accounting.pld.grid import GridTooLargeError
from approxdp.accounting.pld.lower import lower_delta, lower_epsilon
from approxdp.accounting.pld.small_power import SMALL_POWER
from approxdp.accounting.pld.window import plan_window, solve_tilt, support_of
from approxdp.errors import InvalidParameterError

__all__ = [
    "STABLE_FROM",
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
    "prefetch_coarse",
    "quantize",
    "saddle_delta",
    "saddle_epsilon",
    "upper_epsilon",
]


def composed(
    parts: Parts, h: float, tail: float, tilt_at: float | None, below: float | None = None,
    lam: float | None = None, extended: bool = False,
) -> ComposedPLD:
    """Discretize (cached) and compose — in blocks where a part has many steps
    (:mod:`approxdp.accounting.pld.blocks`); a window too large for memory coarsens the grid
    (still certified, a little looser). ``lam``: the tilt of a one-level composition (any
    tilt is certified: the window's edges are bounded at it), else planned. ``extended``: a
    one-level composition in extended precision (:func:`~approxdp.accounting.pld.compose.
    compose`; with every count ≤ ``SMALL_POWER`` the power too)."""
    step_tail = _step_tail(parts, tail)
    stable = _stable(parts)
    for _ in range(6):
        try:
            plds = list(zip(discretized_all(parts, h, step_tail, stable),
                            (c for _, c in parts), strict=True))
            if _blocks_pay(plds, tail, tilt_at):
                comp = _in_blocks(plds, tail, tilt_at, below)
            else:
                comp = compose(plds, tail=tail, tilt_at=tilt_at, below=below, lam=lam,
                               extended=extended)
            comp.step_h = h
            return comp
        except WindowTooLargeError as exc:
            h = quantize(h * 1.1 * exc.needed / MAX_WINDOW, up=True)
        except GridTooLargeError as exc:  # one step's grid (δ far out in the tail, where
            # the steps' support reaches far): coarser, still certified, a little looser
            h = quantize(h * 1.1 * exc.needed / exc.limit, up=True)
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


def _clean(comp: ComposedPLD, eps: float, delta: float) -> bool:
    """Whether the window's own error terms are small against δ at the answer (round-off and
    left-out tails), so that another tilt would not tighten it."""
    if not math.isfinite(eps):
        return False
    if eps - comp.h < comp.bottom and comp.log_below > math.log(1e-3 * delta):
        return False  # pinned at the window's bottom (it cannot certify below): tilt lower
    rounding, tails = comp.error_terms(eps)
    return rounding <= 1e-4 * delta and tails <= 1e-3 * delta and eps >= comp.bottom


#: The share of ε that the window's left-out (and aliased) tails may move it by (a tenth of
#: the default precision's): the window is sized for tails of 1e-4·δ, which moves ε by
#: 1e-5–2e-5 of itself at MNIST's setting and at σ = 5, q = 1e-5, T = 1000; where ε is tiny
#: against δ (T = 2, q = 1e-4, σ = 5, δ = 1e-5: ε = 2.9e-6, |δ'(ε)| = 0.43) it moved ε by
#: 0.1 %, and refining the grid could not remove it
_TAIL_SHARE = 1e-4


def _smaller_tail(comp: ComposedPLD, eps: float, tail: float) -> float | None:
    """The tail to compose again with where the left-out tails at ε (``error_terms``) move ε
    by more than ``_TAIL_SHARE`` of itself (their δ over the slope |δ'(ε)|); else None."""
    if not (math.isfinite(eps) and eps > 0.0):
        return None
    tails = comp.error_terms(eps)[1]
    room = _TAIL_SHARE * eps * comp.slope(eps)
    if not (tails > room > 0.0):
        return None
    return max(tail * 0.5 * room / tails, 1e-12 * tail)


#: The share of ε that the FFT round-off may move it by before a composition of few steps
#: (every count ≤ ``SMALL_POWER``) is done again in extended precision, the power by
#: multiplication (:mod:`approxdp.accounting.pld.small_power`: ~200× less round-off). Where
#: the sum is tilted steeply (tiny q, small δ) the weighted round-off grows with the window:
#: σ = 0.7, q = 1e-5, T = 2, δ = 1e-12 lost 3.8e-4 of ε to it at h = 2e-4 (+4.0e-4 above the
#: exact ε; +2.9e-5 in extended precision), σ = 0.5, q = 1e-5, δ = 1e-9 at precision 1e-4
#: +1.0e-4 (now +5e-6). At 1e-5 the extended pass also ran where it gained nothing the
#: precision asked for (2–3× the time at precision 1e-4)
_ROUNDOFF_SHARE = 3e-5


def _extended_pays(comp: ComposedPLD, eps: float, parts: Parts) -> bool:
    """Whether the round-off at ε (``error_terms``) moves ε by more than ``_ROUNDOFF_SHARE`` of
    itself on a one-level composition of few steps (extended precision would remove it)."""
    if comp.blocked or not (math.isfinite(eps) and eps > 0.0):
        return False
    if max(c for _, c in parts) > SMALL_POWER:
        return False
    room = _ROUNDOFF_SHARE * eps * comp.slope(eps)
    return comp.error_terms(eps)[0] > room > 0.0


#: A second tilt at the answer is skipped where only the round-off keeps the first pass
#: from being clean and the answer's tilt is within this share of the first one's
_SAME_TILT = 0.02
#: ... on windows of at least this many points (a smaller one's second tilt costs little)
_RETILT_FROM = 1 << 18


def _retilt_futile(
    comp: ComposedPLD, eps: float, delta: float, parts: Parts, tail: float
) -> bool:
    """Whether composing again tilted at the answer ε cannot tighten ``comp``'s: its window
    reaches below ε with its left-out tails small (only the round-off is not small against
    δ) and the tilt that centres the composed mean at ε is within ``_SAME_TILT`` of
    ``comp``'s, which is then already near the one minimizing the round-off's weight
    e^(K(λ) − λε) at ε (the minimum is flat there: the change is second order in λ). A heavy
    tail's round-off floor stays: at σ = 0.675, q = 1.6e-5, T = 4.3e6, δ = 8.8e-11 the second
    tilt moved λ from 13.50 to 13.46 on a 3.7-million-point window, and came out looser."""
    if comp.size < _RETILT_FROM or comp.blocked or not (math.isfinite(eps) and comp.lam > 0.0):
        return False
    if eps - comp.h < comp.bottom:
        return False
    if comp.error_terms(eps)[1] > 1e-3 * delta:
        return False
    # (on the steps' grid the pass really used: coarser than h where h's would not fit —
    # discretizing at h there raised GridTooLargeError out of a certified answer: σ = 2.98,
    # q = 1.5e-4, T = 2, δ = 8.1e-272)
    try:
        plds = discretized_all(parts, comp.step_h, _step_tail(parts, tail), _stable(parts))
    except InvalidParameterError:
        return False
    sup = [(support_of(p), c) for p, c in zip(plds, (c for _, c in parts), strict=True)]
    lam = solve_tilt(sup, eps, start=comp.lam)
    return abs(lam - comp.lam) <= _SAME_TILT * comp.lam


def upper_epsilon(
    parts: Parts, delta: float, h: float, guess: float | None = None, below: float | None = None,
    lam: float | None = None, enough: float | None = None,
) -> tuple[ComposedPLD, float]:
    """The composed pessimistic PLD of one direction, good at its ε(δ), and that certified ε.

    Tilted at ``guess`` (default: the saddle-point estimate); if the error terms at the answer
    are not small against δ, composed again tilted at the answer (every pass is a valid upper
    bound: the best is kept). ``below``: how far under ``guess`` the answer may lie (default:
    three tilted standard deviations and a tenth of it). ``lam``: the first composition's
    tilt (default: planned for ``guess``). ``enough``: a caller that only needs ε at most
    this takes the first pass that certifies it (no second tilt to tighten it)."""
    tail = 1e-4 * delta
    target = _guess(parts, delta) if guess is None else guess
    first = composed(parts, h, tail, target, below, lam)
    eps = first.epsilon(delta)
    smaller = None if enough is not None and eps <= enough else _smaller_tail(first, eps, tail)
    if smaller is not None:  # the left-out tails cost too much ε: a wider window
        tail = smaller
        again = composed(parts, h, tail, target, below, lam)
        e = again.epsilon(delta)
        if e <= eps:
            first, eps = again, e
    ext = (enough is None or eps > enough) and _extended_pays(first, eps, parts)
    if ext:  # the round-off costs too much ε: the few steps again in extended precision
        again = composed(parts, h, tail, target, below, lam, extended=True)
        e = again.epsilon(delta)
        if e <= eps:
            first, eps = again, e
    if _clean(first, eps, delta) or (enough is not None and eps <= enough):
        return first, eps
    if _retilt_futile(first, eps, delta, parts, tail):
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
        comp = composed(parts, h, tail, nxt, extended=ext)
        e = comp.epsilon(delta)
        passes.append((e, comp))
        if _clean(comp, e, delta):
            break
    best_eps, best = min(passes, key=lambda p: p[0])
    return best, best_eps
