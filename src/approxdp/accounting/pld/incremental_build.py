"""Building the plans of :class:`~approxdp.accounting.pld.incremental.IncrementalEpsilon`
(moved from :mod:`~approxdp.accounting.pld.incremental`, which was past the ~400 lines a
module may have): the running compositions of a history grown ``growth``-fold, their grid,
windows and tilts (:class:`_Builder`, the base class of ``IncrementalEpsilon``; its δ-route
subclass :class:`~approxdp.accounting.pld.incremental_delta.IncrementalDelta` overrides the
aims). The composition: Koskela et al. 2021 (https://arxiv.org/abs/2006.07134); connect-the-
dots: Doroshenko et al. 2022 (https://arxiv.org/abs/2207.04380).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from approxdp.accounting.pld.compose import DiscretePLD
from approxdp.accounting.pld.discretized import discretized_all, quantize, rounded_all
from approxdp.accounting.pld.estimates import saddle_epsilon
from approxdp.accounting.pld.grid_steps import _first_step
from approxdp.accounting.pld.incremental_state import Parts, _Running, _scaled, _State
from approxdp.accounting.pld.plan import _Plan
from approxdp.accounting.pld.running import plan_running
from approxdp.accounting.pld.window import (
    Window,
    composed_moments,
    planning_supports,
    solve_tilt,
    support_of,
)

__all__: list[str] = []


class _Builder:
    """The plan-building methods of :class:`~approxdp.accounting.pld.incremental.IncrementalEpsilon`
    (its subclass: these attributes are set there)."""

    delta: float
    precision: float
    growth: float
    builds: int
    max_points: int
    merged: bool

    # -- building a plan ------------------------------------------------------------------

    def _first_grid(self, plan: _Plan, names: tuple[str, ...]) -> float:
        """The grid of a first plan: pld_epsilon's first grid for the grown history."""
        ways = {"remove": plan.remove, "add": plan.add}
        return min(quantize(_first_step(_scaled(ways[name], self.growth), self.precision,
                                        self.delta)) for name in names)

    def _build(self, plan: _Plan, names: tuple[str, ...], h: float, scale: float
               ) -> _State | None:
        """Running compositions for ``plan`` grown ``scale``-fold on the grid ``h``: empty,
        windows planned."""
        finish = self._build_staged(plan, names, h, scale)
        return None if finish is None else finish()

    def _build_staged(self, plan: _Plan, names: tuple[str, ...], h: float, scale: float
                      ) -> Callable[[], _State] | None:
        """:meth:`_build` in two stages: the upper bounds' windows now, the lower bound's
        when the callable returned is called (what it plans is fixed now)."""
        self.builds += 1
        tail = self._tail(plan)
        ways = {name: (plan.remove if name == "remove" else plan.add) for name in names}
        grown = {name: _scaled(parts, scale) for name, parts in ways.items()}
        steps = max(sum(c for _, c in parts) for parts in grown.values())
        # each step's share of the left-out tail, at a power of 16 steps: a plan after the
        # history grew keeps its discretizations (cached) as long as it can
        step_tail = tail / 16.0 ** math.ceil(math.log(max(steps, 2), 16))
        # the dominant direction on the grid h, the other one and the tests on a grid twice
        # as coarse (pld_epsilon's first try for the tests too): where the other one comes
        # out above, or the tests too low, the bracket shows it and the next plan is finer
        aims = self._aims(ways, grown)
        if aims is None:
            return None
        est, dominant = aims
        coarse = quantize(2.0 * h, up=True)
        uppers: dict[str, _Running] = {}
        aimed: dict[str, tuple[float, float | None]] = {}
        for name, parts in grown.items():
            step = h if name == dominant else coarse
            now, later = est[name]
            plds = list(zip(discretized_all(parts, step, step_tail, False),
                            (c for _, c in parts), strict=True))
            below = self._below(plds, later, now, step, [c for _, c in ways[name]])
            run = plan_running(plds, tail=tail, tilt_at=later, below=below,
                               merged=self.merged,
                               lam=self._tilt(ways[name], plds, later))
            if run.n > self.max_points:
                return None
            uppers[name] = _Running(run, -1)
            aimed[name] = (later, below)
        def finish() -> _State:
            p_low, q_low = self._plan_lower(grown[dominant], coarse, step_tail, tail,
                                            *aimed[dominant], aim_h=h, present=ways[dominant])
            return _State(h, step_tail, steps, uppers, dominant, p_low, q_low)

        return finish

    def _tilt(self, present: Parts, plds: Sequence[tuple[DiscretePLD, int]], at: float
              ) -> float | None:
        """The tilt of a window aimed at ``at`` for the grown history ``plds`` (the
        ``present`` parts, grown); None: plan_window's choice."""
        return None

    def _declines(self) -> bool:
        """Whether to leave this ask to the one-shot route outright (never, here)."""
        return False

    def _tail(self, plan: _Plan) -> float:
        """The mass the windows may leave out (as pld_epsilon's: 1e-4 of δ)."""
        return 1e-4 * self.delta

    def _aims(self, ways: Mapping[str, Parts], grown: Mapping[str, Parts]
              ) -> tuple[dict[str, tuple[float, float]], str] | None:
        """Per direction, where its windows are tilted for the present and the grown history
        (the saddle-point estimates of ε at δ), and the dominant direction (the larger
        present estimate); None where an estimate fails."""
        est: dict[str, tuple[float, float]] = {}
        for name, parts in grown.items():
            now, later = saddle_epsilon(list(ways[name]), self.delta), saddle_epsilon(
                list(parts), self.delta)
            if now is None or later is None:
                return None
            est[name] = (now[0], later[0])
        return est, max(est, key=lambda name: est[name][0])

    def _below(self, plds: Sequence[tuple[DiscretePLD, int]], later: float, now: float,
               h: float, counts: Sequence[int]) -> float | None:
        """How far under the grown history's ε the window must reach: down past the present
        ε, with three tilted standard deviations, a tenth of ε and 16 grid steps to spare
        (what :func:`~approxdp.accounting.pld.window.plan_window` leaves by default).
        (``counts``: the present history's, of the same parts.)"""
        sup = planning_supports([(support_of(p), c) for p, c in plds])  # (a size only)
        sd = math.sqrt(max(composed_moments(sup, solve_tilt(sup, now)).var, 0.0))
        return max(later - now, 0.0) + 3.0 * sd + 0.1 * abs(now) + 16.0 * h

    def _plan_lower(
        self, parts: Parts, h: float, step_tail: float, tail: float, aim: float,
        below: float | None, aim_h: float, present: Parts,
    ) -> tuple[_Running, _Running]:
        """The rounded loss's P- and Q-compositions (Q on P's window, tilted λ + 1), aimed as
        :func:`~approxdp.accounting.pld.lower.lower_epsilon` aims them: at the answer plus the
        mean shift of rounding to the nearest grid point instead of connecting the dots — the
        latter from the pessimistic measures on ``aim_h``, the dominant direction's grid, which
        its running composition holds already (as ``lower_epsilon``'s ``aim_h``: at the
        tests' own grid they were 15-25 % of a re-plan, each part discretized only to aim)."""
        rounded = rounded_all(parts, h, step_tail, False)
        pess = discretized_all(parts, aim_h, step_tail, False)
        aim += sum(c * (r.as_measures()[0].mean_var()[0] - d.mean_var()[0])
                   for (_, c), r, d in zip(parts, rounded, pess, strict=True))
        p_parts = [(r.as_measures()[0], c) for (_, c), r in zip(parts, rounded, strict=True)]
        q_parts = [(r.as_measures()[1], c) for (_, c), r in zip(parts, rounded, strict=True)]
        p_run = plan_running(p_parts, tail=tail, tilt_at=aim, below=below, merged=True,
                             lam=self._tilt(present, p_parts, aim))
        win = Window(p_run.lam, p_run.a_idx, p_run.n)
        q_run = plan_running(q_parts, tail=tail, tilt_at=None, below=None, window=win,
                             lam_shift=1.0, merged=True)
        return _Running(p_run, 0), _Running(q_run, 1)
