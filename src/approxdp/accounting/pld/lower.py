"""The certified lower bound of one direction: the rounded loss used as a test.

Every event E gives δ(ε) ≥ P(E) − e^ε Q(E). The events {S̃ ≥ t}, S̃ the composed loss
rounded to the grid (:func:`~approxdp.accounting.pld.rounded.discretize_rounded`), are nearly
the optimal tests; a lower bound on their P-mass and an upper bound on their Q-mass
(:func:`~approxdp.accounting.pld.composed.rounded_tails`) give certified lower bounds on
δ(ε) and ε(δ). The FFT: Koskela et al. 2021 (https://arxiv.org/abs/2006.07134).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from approxdp.accounting.pld.blocks import EXTENDED_FROM, rounded_pieces
from approxdp.accounting.pld.compose import (
    AliasTooLargeError,
    ComposedPLD,
    DiscretePLD,
    RoundedPLD,
    WindowTooLargeError,
    compose,
    rounded_tails,
    test_delta,
    test_epsilon,
)
from approxdp.accounting.pld.discretized import (
    Parts,
    _stable,
    _step_tail,
    discretized_all,
    rounded_all,
)
from approxdp.accounting.pld.small_power import SMALL_POWER
from approxdp.accounting.pld.window import Window, exact_planning, solve_tilt, support_of

__all__ = ["lower_delta", "lower_epsilon"]

Tails = tuple[np.ndarray, np.ndarray, np.ndarray]  # (P-lower, Q-upper, log Q-upper)
Worth = Callable[[Tails, Tails], bool]
#: The share of the answer the FFT round-off may cost the tests before a few steps are
#: composed again in extended precision (as passes' 1e-5 for the window's tails).
_ROUNDOFF_SHARE = 1e-5


def _rounded_tails(
    parts: Parts, h: float, tail: float, tilt_at: float, below: float | None = None,
    blocks: bool = False, aim_h: float | None = None, like: ComposedPLD | None = None,
    worth: Worth | None = None, kept: list[tuple[ComposedPLD, ComposedPLD]] | None = None,
) -> Tails | None:
    """Certified (P-tail lower, Q-tail upper) of the rounded loss, composed tilted at
    ``tilt_at`` (λ for P, λ + 1 for Q: Q-masses are about P-masses times e^(−loss), so both
    tilted measures have one shape and share one window). ``aim_h``: the grid step of the
    pessimistic pass that found ``tilt_at`` (default h). ``worth(tails, tails without the
    round-off)``: whether the round-off costs enough to compose a few steps again in extended
    precision."""
    step_tail = _step_tail(parts, tail)
    stable = _stable(parts)
    precise = sum(c for _, c in parts) >= EXTENDED_FROM
    rounded = list(zip(rounded_all(parts, h, step_tail, precise), (c for _, c in parts),
                       strict=True))
    # rounding to the nearest grid point shifts each step's mean (by up to h/2: over 10^6
    # steps the rounded sum sits far from the loss's); its tests are as good shifted alike,
    # so the window is aimed at the answer plus that shift — from the pessimistic steps the
    # answer was found on (cached: no discretization only to aim)
    pess = discretized_all(parts, h if aim_h is None else aim_h, step_tail, stable)
    shift = sum(
        c * (r.as_measures()[0].mean_var()[0] - d.mean_var()[0])
        for (r, c), d in zip(rounded, pess, strict=True)
    )
    tilt_at = tilt_at + shift
    if blocks:
        p_parts, q_parts = _rounded_in_blocks(rounded, tail, tilt_at)
    else:
        p_parts = [(r.as_measures()[0], c) for r, c in rounded]
        q_parts = [(r.as_measures()[1], c) for r, c in rounded]
    # (as for the upper bound: the last composition is used once)
    top = max(c for _, c in p_parts)
    ext = top >= EXTENDED_FROM
    try:
        p_comp: ComposedPLD | None = None
        if like is not None and not blocks and not like.blocked and like.size > 1:
            # the upper bound's window and tilt, moved by the rounding's shift onto this grid
            lo = like.offset * like.h + shift
            hi = (like.offset + like.size) * like.h + shift
            if below is not None:  # (reaching as far under the answer as a plan would)
                lo = min(lo, tilt_at - below)
            a_idx = math.floor(lo / h)
            win0 = Window(like.lam, a_idx, math.ceil(hi / h) - a_idx)
            try:
                p_comp = compose(p_parts, tail=tail, tilt_at=tilt_at, window=win0,
                                 extended=ext, alias_cap=math.log(tail))
            except AliasTooLargeError:
                # the upper bound's window ends too close above the answer for the tests:
                # the mass it may alias down from above its top (harmless to an upper bound)
                # swamps their P-tails there (σ = 0.6, q = 1e-3, T = 2, δ = 1e-280: bound
                # e^−636.7 at the answer against δ = e^−644.7; lower end 35.26, exact 72.21):
                # a window planned for the tests (decided before that window's FFT, which
                # was a third of the tests' time at σ = 0.675, q = 1.6e-5, T = 4.3e6)
                p_comp = None
        if p_comp is None:
            with exact_planning():  # (the tests lose what the window leaves out: planned
                p_comp = compose(p_parts, tail=tail, tilt_at=tilt_at, below=below,  # exactly)
                                 extended=ext)
        if p_comp.size <= 1:
            return None
        win = Window(p_comp.lam, p_comp.offset, p_comp.size)
        q_comp = compose(q_parts, tail=tail, window=win, lam_shift=1.0, extended=ext)
        if q_comp.log_beyond > math.log(tail) - max(tilt_at, 0.0) and p_comp.edges:
            # the Q-mass above the window bounded afresh from θ = 0 can come out useless where
            # the rounded Q-measure is a near point mass at 0 (its moments there are 0, and
            # Newton cannot start: σ = 0.05, q = 0.01, T = 100 bounded it by 1, every test's
            # Q-tail with it, and the lower end was 0 against an upper 1463.7; a Q-tail at
            # the answer is about e^−ε times its P-tail, so the bar is the tail target times
            # e^−ε: σ = 0.05, q = 0.5, T = 2, ε = 650 had e^−330 above the window, Q-tails
            # near e^−693 under it, and δ's lower end 0): from the P-measure's exponents,
            # moved as Q's are (K_Q(θ) ≈ K_P(θ − 1)), kept if better
            moved = _for_q(p_comp)
            other = compose(q_parts, tail=tail, window=moved, lam_shift=1.0, extended=ext)
            if other.log_beyond < q_comp.log_beyond:
                win, q_comp = moved, other
        tails = rounded_tails(p_comp, q_comp)
        if (worth is not None and not ext and not blocks and top <= SMALL_POWER
                and worth(tails, rounded_tails(p_comp, q_comp, roundoff=False))):
            # where the tests' P- and Q-tails nearly cancel (tiny q), the float64 round-off
            # summed over a tail costs them (σ = 1, q = 1e-5, T = 2, δ = 1e-12: 1 % of ε):
            # a few steps again on the same window in extended precision, the power too
            # (small_power: ~100 times less round-off), on the window with the P-measure's own
            # edge bounds (a window without them is bounded afresh from θ = 0, and its Chernoff
            # search may stop far from the least bound: σ ≈ 0.59, q ≤ 7.6e-4, T = 6, ε = 0.515
            # put e^−2.9 under the bottom of a window that holds the whole support, and the
            # retry's tests went negative — δ's lower end 0 against an upper 9.99e-7). The
            # tests of both compositions are kept (each is certified; the best one counts)
            again = Window(p_comp.lam, p_comp.offset, p_comp.size, *p_comp.edges)
            p_ext = compose(p_parts, tail=tail, tilt_at=tilt_at, window=again, extended=True)
            q_ext = compose(q_parts, tail=tail, window=win, lam_shift=1.0, extended=True)
            more = rounded_tails(p_ext, q_ext)
            tails = (np.concatenate((tails[0], more[0])), np.concatenate((tails[1], more[1])),
                     np.concatenate((tails[2], more[2])))
    except WindowTooLargeError:
        return None
    if kept is not None:
        kept.append((p_comp, q_comp))
    return tails


def _for_q(p_comp: ComposedPLD) -> Window:
    """``p_comp``'s window with Chernoff starts for the Q-measure of the same rounded loss:
    its Q-masses are about its P-masses times e^(−loss), so K_Q(θ) ≈ K_P(θ − 1) and each
    edge's θ moves by one (any θ gives a valid bound: these only start the search)."""
    beyond, alias, below = p_comp.edges
    return Window(p_comp.lam, p_comp.offset, p_comp.size, (beyond[0] + 1.0, beyond[1]), alias,
                  (max(below[0] - 1.0, 0.0), below[1]))


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
    blocks: bool = False, aim_h: float | None = None, like: ComposedPLD | None = None,
    ideal: list[float] | None = None, ideal_below: float = math.inf,
) -> float:
    """A certified lower bound on ε(δ) of one direction: the rounded-loss tests at grid step
    h, composed tilted at ``near`` (the upper bound, found at grid step ``aim_h``, default h:
    the answer is at most ``below`` under it), in blocks if ``blocks``. ``like``: the upper
    bound's composition, whose window and tilt the tests reuse (no plan of their own).

    ``ideal``: where the certified bound is below ``ideal_below``, the same tests' ε without
    the FFT round-off bound is appended to it (NOT certified: what the tests would give but
    for the round-off, i.e. whether a finer grid or the round-off holds a bracket open)."""

    def worth(tails: Tails, ideal: Tails) -> bool:
        return (test_epsilon(ideal[0], ideal[1], delta, ideal[2])
                > test_epsilon(tails[0], tails[1], delta, tails[2]) * (1.0 + _ROUNDOFF_SHARE))

    kept: list[tuple[ComposedPLD, ComposedPLD]] = []
    tails = _rounded_tails(parts, h, 1e-4 * delta, near, below, blocks, aim_h, like, worth,
                           kept)
    if tails is None:
        return 0.0
    low = test_epsilon(tails[0], tails[1], delta, tails[2])
    if ideal is not None and low < ideal_below and kept:
        free = rounded_tails(*kept[-1], roundoff=False)
        ideal.append(test_epsilon(free[0], free[1], delta, free[2]))
    return low


def lower_delta(
    parts: Parts, epsilon: float, h: float, blocks: bool = False, tail: float = 1e-30,
    aim_h: float | None = None,
) -> float:
    """A certified lower bound on δ(ε) of one direction (the rounded-loss tests). ``tail``:
    the P-mass each side left out of the grids (any is certified: the tests only lose up to
    about that much; 1e-4 of the δ found keeps the bound within 0.01 % of the best).
    ``aim_h``: the grid step of the upper bound's pass (default h)."""

    def worth(tails: Tails, ideal: Tails) -> bool:
        return (test_delta(ideal[0], ideal[1], epsilon, ideal[2])
                > test_delta(tails[0], tails[1], epsilon, tails[2]) * (1.0 + _ROUNDOFF_SHARE))

    tails = _rounded_tails(parts, h, tail, epsilon, None, blocks, aim_h, worth=worth)
    if tails is None:
        return 0.0
    return test_delta(tails[0], tails[1], epsilon, tails[2])
