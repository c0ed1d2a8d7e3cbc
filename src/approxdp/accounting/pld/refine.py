"""The passes of the PLD accountant on the grids :mod:`~approxdp.accounting.pld.grid_steps`
picks: each certified, the next on a finer grid while the modelled excess is above
``precision``/2 of ε (calibrated by the pair), and the lower bound's test grids."""

from __future__ import annotations

import math
from dataclasses import dataclass

from approxdp.accounting.pld.compose import ComposedPLD
from approxdp.accounting.pld.grid_steps import _TRUSTED, _finer_model, _target
from approxdp.accounting.pld.passes import (
    ExcessModel,
    Parts,
    calibrated,
    excess_model,
    quantize,
    upper_epsilon,
)
from approxdp.errors import InvalidParameterError

__all__ = ["finer_pass", "lower_grids"]


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
    parts: Parts, delta: float, h: float, guess: float | None, below: float | None = None,
    lam: float | None = None,
) -> _Solved:
    comp, eps = upper_epsilon(parts, delta, h, guess, below, lam)
    h = comp.step_h  # (coarser than asked where that grid would not fit: as delta's passes)
    model = excess_model(parts, h, comp, eps, delta) if math.isfinite(eps) else None
    return _Solved(comp, eps, h, model)


def _finer(cur: _Solved, target: float) -> float:
    """:func:`_finer_model` from a pass's model and grid."""
    assert cur.model is not None
    return _finer_model(cur.model, cur.h, target)


def _refine(
    parts: Parts, delta: float, first: _Solved, precision: float, trusted: bool = False,
    calibrate: bool = False,
) -> _Solved:
    """The pass whose estimated excess is at most ``precision``/2 of ε. Where the composed
    loss is not near-Gaussian, a second pass on a grid twice as fine first calibrates the
    excess model against what ε really did; every later pass recalibrates it (each pass is
    certified, and tilted at the previous answer). ``trusted`` (:func:`_planned_start`): no
    calibration pass where the model is within ``_TRUSTED`` of the target. ``calibrate``:
    the calibration pass even where the loss looks near-Gaussian (a bracket wider than
    ``precision`` said the model was off)."""
    cur = first
    target = _target(cur.eps, precision)
    if cur.model is None or cur.eps == 0.0 or cur.excess <= target / 16.0:
        return cur
    if trusted and cur.excess <= _TRUSTED * target:
        return cur
    if not cur.model.gaussian or calibrate:
        room = 2.0 * cur.excess + 0.02 * cur.eps + 32.0 * cur.h
        # tilted as the pass before (its tilt was planned for about this ε on this loss, a
        # grid twice as coarse: the plan's five tilt searches would land within 0.2 % of it)
        lam = None if cur.comp.blocked or cur.comp.lam <= 0.0 else cur.comp.lam
        half = _solve(parts, delta, quantize(cur.h / 2.0), cur.eps, room, lam)
        cur = _step(cur, half)
    for _ in range(2):
        target = _target(cur.eps, precision)
        if cur.model is None or cur.excess <= target or cur.eps == 0.0:
            return cur
        h = _finer(cur, target)
        try:
            if cur.model.at(h) > 0.7 * cur.excess:  # a finer grid would gain little
                return cur
        except InvalidParameterError:
            return cur
        cur = finer_pass(parts, delta, cur, h)
    return cur


def finer_pass(parts: Parts, delta: float, cur: _Solved, h: float) -> _Solved:
    """One more certified pass on grid step h, tilted at ``cur``'s answer (the window reaching
    twice its excess below it), and the better of the two (:func:`_step`)."""
    room = 2.0 * cur.excess + 0.01 * cur.eps + 32.0 * cur.h
    return _step(cur, _solve(parts, delta, h, cur.eps, room))


def _step(cur: _Solved, nxt: _Solved) -> _Solved:
    """The better of two certified passes, with the finer one's excess model calibrated by
    the pair."""
    if nxt.model is None or cur.model is None:
        return min((cur, nxt), key=lambda p: p.eps)
    model = calibrated(nxt.model.with_scale(cur.model.scale), (cur.h, cur.eps), (nxt.h, nxt.eps))
    if nxt.eps > cur.eps:  # (a coarser grid can be luckier: both are certified)
        return _Solved(cur.comp, cur.eps, nxt.h, model)
    return _Solved(nxt.comp, nxt.eps, nxt.h, model)


#: An excess model calibrated up by at least this much (:func:`calibrated`: ε fell that much
#: faster between two grids than the split's variance predicts) marks a loss concentrated far
#: below one grid step, where the pessimistic split errs to first order in h and the rounded
#: loss's tests only to second order
_CONCENTRATED = 4.0


def lower_grids(top: _Solved, first_h: float) -> list[float]:
    """The grids of the lower bound's tests, coarsest first (each test is certified: the
    largest holds; the next runs only while the bracket is wider than ``precision``).

    The tests lose about as much as the pessimistic pass gains on a grid: first on one twice
    as coarse as the final one (never coarser than the first pass's), then on the final one.
    In blocks, first on one √2 times as coarse (its tests lose ~h², and a block's rounding
    adds to it: at 2h they took ~0.08 % of ε at T = 10^7, at √2·h 0.055 %, for 2/3 of the
    cost). Where the pass's excess model had to be calibrated up ``_CONCENTRATED``-fold, the
    upper bound's excess is first order in h but the tests' loss is not: they start at 4h
    (measured at σ = 0.5, q = 1e-5, T = 1000: the bracket 0.045 % at 4h, 0.036 % at 2h, for
    half the cost)."""
    if top.comp.blocked:
        return [quantize(math.sqrt(2.0) * top.h, up=True), top.h]
    grids = [min(quantize(2.0 * top.h, up=True), first_h), top.h]
    if top.model is not None and top.model.scale >= _CONCENTRATED:
        grids.insert(0, min(quantize(4.0 * top.h, up=True), first_h))
    return grids
