"""ε(δ) of a growing history, asked again and again: running compositions with headroom.

A training run asks its accountant for ε at a fixed δ after every epoch or phase, while its
history of (loss source, count) parts grows. :func:`~approxdp.accounting.pld.pld_epsilon`
answers each ask from scratch (grid search, window planning and an FFT per part, for two
directions and the lower bound's tests). :class:`IncrementalEpsilon` instead keeps one
:class:`~approxdp.accounting.pld.running.RunningComposition` per neighbouring direction (the
pessimistic connect-the-dots measures: the certified upper bound; Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380) and two for the dominant direction's rounded loss (its P-
and Q-measures: the certified lower bound's tests), all on one grid step h and on windows
planned for a history ``growth`` times as long as the one it was built on. An ask adds the
parts that are new or have grown since the last one (each transformed once) and reads the
bounds off one inverse FFT per composition.

Every answer is certified whatever the plan (any window, tilt and Chernoff point gives valid
bounds); the plan only decides how tight. So an answer is given only where its own certified
bracket shows it tight: upper ≤ lower·(1 + ``precision``) — then the upper bound is within
``precision`` of the true ε, as :func:`pld_epsilon` targets. Where it is not (the history
outgrew the window, or its grid is too coarse for the steps now composed), the states are
planned again for the present history — on a finer grid where the grid was the cause — and
where even a fresh plan is not tight enough, :meth:`IncrementalEpsilon.epsilon` returns None
(the caller answers by :func:`pld_epsilon`). Planning for ``growth`` times the steps makes a
run that grows geometrically replan O(log T) times.

A plan (four compositions of every part, and their windows) costs about one one-shot answer
of the same history; no ask should pay for one where the one-shot route is cheaper. So the
plan that follows is *prepared* while the present one still serves: past
:data:`_PREPARE_FROM` of the steps it holds, the next windows are planned on the present
grid (whose discretizations are cached) and its parts are added a few per ask, so that it is
complete when the present plan is outgrown. A plan made in one go (the first, or after a plan
failed) is made only where a cost model of counts — parts, and parts discretized afresh,
calibrated once (:mod:`~approxdp.accounting.pld.incremental_state`) — puts it at no more than the
one-shot route's dearest ask; otherwise None (the one-shot route answers). No clock is read:
the route, and so every digit of every answer, is the same on any machine and under any load
(what the process has computed before — cached discretizations and tail edges — can still
move the last digits, each answer certified either way). Windows are
planned, and their Chernoff points chosen, on the merged supports a schedule's one-shot
windows are planned on (:func:`~approxdp.accounting.pld.window.planning_supports`): only
tightness depends on them, and the bracket check guards it.

Scope: histories of subsampled Gaussians (DP-SGD's steps) under 10^8 steps, each part under
:data:`~approxdp.accounting.pld.blocks.BLOCK_FROM` steps (a longer one the one-shot accountant
composes in blocks, more cheaply); anything else returns None.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.compose import rounded_tails, test_epsilon
from approxdp.accounting.pld.incremental_build import _Builder
from approxdp.accounting.pld.incremental_state import (
    _MAX_POINTS,
    _ONESHOT_COST,
    _PLAN_COST,
    _PREPARE_ASKS,
    _PREPARE_BY,
    _PREPARE_FROM,
    Parts,
    _cost,
    _resized,
    _Running,
    _State,
    _supported,
)
from approxdp.accounting.pld.plan import _directions, _Plan
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.errors import InvalidParameterError

__all__ = ["INCREMENTAL_RULE", "IncrementalEpsilon"]

INCREMENTAL_RULE = (
    "privacy loss distribution: connect-the-dots discretization, FFT composition kept "
    "running over the history (Doroshenko et al. 2022, arXiv:2207.04380; Koskela et al. "
    "2021, arXiv:2006.07134)"
)
class IncrementalEpsilon(_Builder):
    """Certified ε at one δ of a history that grows between asks (see the module docstring).

    Args:
        delta: δ in (0, 1) (checked by the caller).
        precision: the bracket's relative width an answer must have (as :func:`pld_epsilon`).
        growth: the windows are planned for this many times the steps of the history they
            are built on.
    """

    #: the largest window a plan may have (points; a larger one: None, the one-shot answers)
    max_points = _MAX_POINTS
    #: whether the upper bounds' Chernoff points are found on merged supports (cheaper; a
    #: merged support's extremes sit inside the true ones: only tightness depends on it)
    merged = True
    #: the next plan is prepared on a finer grid where the last answer's bracket was wider
    #: than this share of the room (else on the present grid, its discretizations cached)
    finer_from = math.inf
    #: the cost model of the one-shot route's answers (see :data:`_ONESHOT_COST`)
    oneshot_model = _ONESHOT_COST

    def __init__(self, delta: float, precision: float, growth: float = 2.0) -> None:
        self.delta = delta
        self.precision = precision
        self.growth = growth
        self._room = precision  # the bracket's relative width an answer may have
        self._width = math.nan  # the last answer's
        self._state: _State | None = None
        self._next: _State | None = None  # the plan that follows, filled a few parts per ask
        self._pending: Callable[[], _State] | None = None  # (its lower bound, to plan)
        self._hint: float | None = None  # the grid step for the next fresh plan
        self.builds = 0  # plans made (for tests and benchmarks)
        self._retry_from = 0  # after a failed plan: the steps from which to try again
        self._worst = 0.0  # the dearest ask seen, in the cost model's units
        self._last_steps = 0  # the history's steps at the last ask
        self._last: dict[LossSource, int] = {}  # its parts (source -> count)

    def note_oneshot(self, parts: int) -> None:
        """The caller answered a first ask (a history of ``parts`` parts) by the one-shot
        accountant, every part discretized afresh: what it cost (in the model) is the
        budget a plan made in one go may spend later (see :meth:`epsilon`)."""
        self._worst = max(self._worst, _cost(parts, parts, self.oneshot_model))

    def epsilon(self, plan: _Plan) -> Guarantee | None:
        """The certified ε(δ) of ``plan``'s history with a bracket of relative width at most
        ``precision``, or None where this route cannot give one (the caller then answers by
        :func:`~approxdp.accounting.pld.pld_epsilon`)."""
        return self.answer(plan)

    def answer(self, plan: _Plan) -> Guarantee | None:
        """The certified answer for ``plan``'s history (what :meth:`_read` reads: ε(δ) here),
        or None where this route cannot give one tight enough (the caller's one-shot route
        answers).

        The route is chosen by a cost model of counts only (parts, parts new since the last
        ask, parts already discretized on the plan's grid), never by a clock: the same
        history and asks, in a process that computed the same before, give the same answers,
        digit for digit, on any machine. (Cached discretizations from earlier calls can move
        the last digits — by 3e-5 relative at a 50-phase δ far in the tail — never the
        certificate.)"""
        parts = max(len(plan.remove), len(plan.add))
        now = dict(plan.remove)
        new = sum(1 for s, c in now.items() if self._last.get(s) != c)
        grew = max(plan.steps - self._last_steps, 1)
        self._last, self._last_steps = now, plan.steps
        oneshot = _cost(parts, new, self.oneshot_model)  # the one-shot route's cost
        if not _supported(plan) or plan.steps < self._retry_from or self._declines():
            self._worst = max(self._worst, oneshot)
            return None
        ways = {"remove": plan.remove, "add": plan.add}
        names = ("remove",) if len(_directions(plan)) == 1 else ("remove", "add")
        # the present plan, then the next one (the rest of its parts added now): where
        # neither holds the history or is tight enough, a fresh plan
        for i in range(2):
            if i == 1 and self._pending is not None:  # the next one, its lower bound's
                # windows still to plan: planned now
                try:
                    self._next = self._pending()
                except (InvalidParameterError, FloatingPointError):
                    self._next = None
                self._pending = None
            state = self._state if i == 0 else self._next
            if state is None or plan.steps > state.planned_steps:
                continue
            got, self._width = self._answer(state, ways, names)
            if got is not None:
                if state is self._next:
                    self._state, self._next = state, None
                else:
                    self._prepare(plan, ways, names, state, grew)
                return got
        last, self._state, self._next, self._pending = self._state, None, None, None
        # a fresh plan, made in one go: on the grid of the plan that served (its parts'
        # discretizations cached), else the hinted one; then on one sized from the bracket
        # it gave (its width goes about as h²)
        h = last.h if last is not None else self._hint
        for _ in range(2):
            grid = h if h is not None else self._first_grid(plan, names)
            fresh = parts if last is None or grid != last.h else sum(
                1 for s, c in plan.remove if s not in last.uppers[last.dominant].added)
            if _cost(parts, fresh, _PLAN_COST) > max(self._worst, oneshot):
                # dearer than the one-shot route's dearest ask: the one-shot route answers,
                # and a plan is considered again at the next ask
                self._worst = max(self._worst, oneshot)
                return None
            try:
                built = self._build(plan, names, grid, self.growth)
            except (InvalidParameterError, FloatingPointError):
                built = None
            if built is None:
                break
            got, width = self._answer(built, ways, names)
            if got is not None:
                # the next fresh plan's grid: coarser where this one is far tighter than
                # needed (measured on a fresh plan: later, its windows widen the bracket)
                self._hint = _resized(built.h, width, self._room, coarser=True)
                self._state = built
                return got
            last = built
            h = _resized(built.h, width, self._room, coarser=False)
            widest = max(held.run.n for held, _ in self._jobs(built, ways, names))
            if widest * built.h / h > self.max_points:
                break  # (the finer plan's windows would be too wide: not worth building)
        # no plan is tight enough here: the one-shot accountant answers until the history
        # has grown ``growth``-fold (each failed ask would otherwise pay for two plans)
        self._retry_from = math.ceil(self.growth * plan.steps)
        self._worst = max(self._worst, oneshot)
        return None

    def _prepare(self, plan: _Plan, ways: Mapping[str, Parts], names: tuple[str, ...],
                 state: _State, grew: int) -> None:
        """Spread the plan that follows ``state`` over the asks ``state`` still serves, so
        that no ask pays for a whole plan: once the history is 1/√growth of what ``state``
        was planned for, the next windows are planned (on ``state``'s grid, whose
        discretizations are cached, for ``growth`` times ``state``'s steps), and from the
        next ask on its parts are added, as many per ask as finish it by the time ``state``
        is outgrown at the rate the history grew since the last ask."""
        nxt = self._next
        if nxt is None:
            try:
                if self._pending is not None:  # the lower bound's windows, planned at the
                    # ask before with the upper ones'
                    self._next, self._pending = self._pending(), None
                    return
                if plan.steps < _PREPARE_FROM * state.planned_steps:
                    return
                h = state.h if self._width <= self.finer_from * self._room else _resized(
                    state.h, self._width, self._room, coarser=False)
                self._pending = self._build_staged(
                    plan, names, h, self.growth * state.planned_steps / plan.steps)
            except (InvalidParameterError, FloatingPointError):
                self._next = self._pending = None
            return
        if set(nxt.uppers) != set(names):
            self._next = None
            return
        jobs = self._jobs(nxt, ways, names)
        todo = [[(s, c) for s, c in parts if c > run.added.get(s, 0)] for run, parts in jobs]
        missing = sum(len(t) for t in todo)
        room = state.planned_steps - plan.steps  # (steps until the present plan is outgrown)
        asks = 1 + max(int(_PREPARE_BY * state.planned_steps) - plan.steps,
                       min(room, _PREPARE_ASKS * grew), 0) // grew
        budget = -(-missing // asks)
        for (run, parts), t in zip(jobs, todo, strict=True):
            if budget <= 0:
                break
            if any(parts_now < run.added.get(s, 0) for s, parts_now in parts):
                self._next = None  # (a part shrank: a different history)
                return
            run.sync(t[:budget], nxt.step_tail)
            budget -= len(t[:budget])

    # -- answering ------------------------------------------------------------------------

    @staticmethod
    def _jobs(state: _State, ways: Mapping[str, Parts], names: tuple[str, ...]
              ) -> list[tuple[_Running, Parts]]:
        """Each composition of ``state`` with the parts it composes."""
        jobs = [(state.uppers[name], ways[name]) for name in names]
        return [*jobs, (state.p_low, ways[state.dominant]), (state.q_low, ways[state.dominant])]

    def _sync(self, state: _State, ways: Mapping[str, Parts], names: tuple[str, ...]) -> bool:
        """Add what is new to every composition; False where a part shrank or went away (a
        different history: the caller plans again)."""
        jobs = self._jobs(state, ways, names)
        for held, parts in jobs:
            now = dict(parts)
            if any(now.get(s, 0) < c for s, c in held.added.items()):
                return False
        for held, parts in jobs:
            held.sync(parts, state.step_tail)
        return True

    def _answer(
        self, state: _State, ways: Mapping[str, Parts], names: tuple[str, ...]
    ) -> tuple[Guarantee | None, float]:
        """The answer of ``state`` brought up to date, if tight enough, and its bracket's
        relative width (inf where there is none)."""
        if set(state.uppers) != set(names) or not self._sync(state, ways, names):
            return None, math.nan
        return self._read(state)

    def _read(self, state: _State) -> tuple[Guarantee | None, float]:
        """ε at δ read off the compositions: the answer if its bracket is within ``precision``,
        and the bracket's relative width."""
        delta = self.delta
        upper = max(held.run.composed().epsilon(delta) for held in state.uppers.values())
        tails = rounded_tails(state.p_low.run.composed(), state.q_low.run.composed())
        lower = test_epsilon(tails[0], tails[1], delta, tails[2])
        if lower > upper:  # both are certified: one of them is not; never answer from it
            return None, math.inf
        width = (upper - lower) / lower if lower > 0.0 else math.inf
        if not (math.isfinite(upper) and width <= self._room):
            return None, width
        return Guarantee(upper, delta, "upper bound", INCREMENTAL_RULE,
                         bracket=(lower, upper)), width
