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
of the same history; an ask that plans must not be slower than the one-shot route's asks,
nor the plans cost more over the run than they save. So once the caller reports what its
one-shot answers cost (:meth:`IncrementalEpsilon.note_oneshot`), a plan is made only where
the ask making it is predicted (in one-shot answers, as the dearest plan cost) to cost no
more than the one-shot route's costliest ask to its noise, and to pay for itself over as
many asks as the last plan served; otherwise None (the one-shot route answers). Windows are
planned, and their Chernoff points chosen, on the merged supports a schedule's one-shot
windows are planned on (:func:`~approxdp.accounting.pld.window.planning_supports`): only
tightness depends on them, and the bracket check guards it.

Scope: histories of subsampled Gaussians (DP-SGD's steps) under 10^8 steps, each part under
:data:`~approxdp.accounting.pld.blocks.BLOCK_FROM` steps (a longer one the one-shot accountant
composes in blocks, more cheaply); anything else returns None.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.blocks import BLOCK_FROM
from approxdp.accounting.pld.compose import DiscretePLD, rounded_tails, test_epsilon
from approxdp.accounting.pld.discretized import (
    STABLE_FROM,
    discretized_all,
    quantize,
    rounded_all,
)
from approxdp.accounting.pld.estimates import saddle_epsilon
from approxdp.accounting.pld.plan import _directions, _Plan
from approxdp.accounting.pld.privacy_loss import GaussianLoss, LossSource, SubsampledLoss
from approxdp.accounting.pld.refine import _first_step
from approxdp.accounting.pld.running import RunningComposition, plan_running
from approxdp.accounting.pld.window import (
    Window,
    composed_moments,
    planning_supports,
    solve_tilt,
    support_of,
)
from approxdp.errors import InvalidParameterError

__all__ = ["INCREMENTAL_RULE", "IncrementalEpsilon"]

INCREMENTAL_RULE = (
    "privacy loss distribution: connect-the-dots discretization, FFT composition kept "
    "running over the history (Doroshenko et al. 2022, arXiv:2207.04380; Koskela et al. "
    "2021, arXiv:2006.07134)"
)
Parts = Sequence[tuple[LossSource, int]]
#: The largest running window (points): beyond it the one-shot accountant, which composes
#: long phases in blocks, is cheaper.
_MAX_POINTS = 1 << 20
#: A first plan's cost, in one-shot answers of the same history (an ask that plans, measured
#: 0.7–1.4 of the one-shot answer on the training accountant's benchmark histories, load ~2)
_FIRST_BUILD = 1.2
#: An ask that plans may cost this many times the costliest one-shot answer seen: the
#: one-shot route's own spread from ask to ask (measured ±30 % on a shared machine)
_SPIKE = 1.25


@dataclass
class _Running:
    """One running composition, of which measure of its parts (``kind``: the pessimistic
    one, or the rounded loss's P- or Q-measure) on which grid, and what has been added to it
    (source → count)."""

    run: RunningComposition
    kind: int  # -1: pessimistic; 0, 1: the rounded loss's P-, Q-measure
    added: dict[LossSource, int] = field(default_factory=dict)

    def sync(self, parts: Parts, step_tail: float) -> None:
        """Add the parts that are new or have grown since the last call."""
        new = [(s, c - self.added.get(s, 0)) for s, c in parts if c > self.added.get(s, 0)]
        if not new:
            return
        h = self.run.h
        if self.kind < 0:
            measures = discretized_all(new, h, step_tail, False)
        else:
            measures = [r.as_measures()[self.kind] for r in rounded_all(new, h, step_tail, False)]
        for (s, extra), m in zip(new, measures, strict=True):
            self.run.add(m, extra)
            self.added[s] = self.added.get(s, 0) + extra


@dataclass
class _State:
    """The running compositions of one plan."""

    h: float  # the dominant direction's grid (the others', and the tests', twice as coarse)
    step_tail: float
    planned_steps: int  # the steps the windows were planned for
    uppers: dict[str, _Running]
    dominant: str
    p_low: _Running
    q_low: _Running


def _supported(plan: _Plan) -> bool:
    """Subsampled Gaussians only, each part under BLOCK_FROM steps: a longer part the
    one-shot accountant composes in blocks (√B-fold coarser windows), cheaper than one
    running window as wide as the whole sum (measured: one phase of 2·10^5 steps asked every
    2·10^4, 29 ms one-shot against 50–90 ms running)."""
    parts = [*plan.remove, *plan.add]
    return bool(parts) and plan.steps < STABLE_FROM and all(
        type(s) is SubsampledLoss and type(s.inner) is GaussianLoss and c < BLOCK_FROM
        for s, c in parts
    )


def _resized(h: float, width: float, precision: float, coarser: bool) -> float:
    """The grid step whose bracket is predicted at 0.4·``precision`` wide, from one of
    relative ``width`` at ``h`` (width ∝ h²): at most 4 times finer; coarser (at most twice)
    only if ``coarser`` — else at least a quarter octave finer. Unknown widths: h (a fresh plan
    on the same grid)."""
    if math.isnan(width):
        return h
    if not (0.0 < width < math.inf):
        return quantize(h / 2.0)
    ratio = math.sqrt(0.4 * precision / width)
    ratio = min(ratio, 2.0) if coarser else min(ratio, 2.0**-0.25)
    return quantize(h * max(ratio, 0.25))


def _scaled(parts: Parts, growth: float) -> list[tuple[LossSource, int]]:
    return [(s, max(c, math.ceil(growth * c))) for s, c in parts]


class IncrementalEpsilon:
    """Certified ε at one δ of a history that grows between asks (see the module docstring).

    Args:
        delta: δ in (0, 1) (checked by the caller).
        precision: the bracket's relative width an answer must have (as :func:`pld_epsilon`).
        growth: the windows are planned for this many times the steps of the history they
            are built on.
    """

    def __init__(self, delta: float, precision: float, growth: float = 2.0,
                 clock: Callable[[], float] | None = None) -> None:
        self.delta = delta
        self.precision = precision
        self.growth = growth
        self._state: _State | None = None
        self._hint: float | None = None  # the grid step for the next plan
        self.builds = 0  # plans made (for tests and benchmarks)
        self._retry_from = 0  # after a failed plan: the steps from which to try again
        # the cost guard (see :meth:`note_oneshot`): off until the caller reports a cost
        self._clock = clock or time.process_time
        self._costed = False  # whether the caller reports costs
        self._oneshot: tuple[int, float] | None = None  # (steps, seconds) of the last one
        self._worst = 0.0  # the costliest one-shot answer seen (seconds)
        self._ratio = _FIRST_BUILD  # the dearest plan's cost in one-shot answers (predicted)
        self._ask_cost = math.nan  # the last ask the running route answered without a plan
        self._served = 0  # asks the present plan answered
        self._served_before = 3  # asks the previous plan answered (a guess before the first)

    def note_oneshot(self, steps: int, seconds: float, warm: bool = True) -> None:
        """The caller answered the history of ``steps`` steps by the one-shot accountant at
        this cost. Once told, a plan is made only where the ask that makes it is predicted to
        cost no more than the one-shot route's costliest ask seen (to its noise,
        :data:`_SPIKE`), and the plan to pay for itself over as many asks as the last plan
        served. Not ``warm`` (the first ask, whose caches were cold):
        counted in the costliest ask only, not in predicting the next ones."""
        self._costed = True
        if warm:
            self._oneshot = (steps, seconds)
        self._worst = max(self._worst, seconds)

    def _affordable(self, steps: int, spent: float) -> bool:
        """Whether a plan for a history of ``steps`` steps is worth making, ``spent``
        seconds into this ask: the one-shot's cost scaled linearly in the steps from its
        last measure (on a history at least 1/``growth`` as long), a plan's as many one-shot
        answers as the dearest plan cost."""
        if self._oneshot is None:
            return not self._costed  # no cost model: always (direct use, tests)
        s_steps, s_cost = self._oneshot
        if s_steps * self.growth < steps:
            return False  # measured on a far shorter history: the one-shot route answers
            # this ask, and the next one is judged on its cost
        oneshot = s_cost * steps / max(s_steps, 1)
        build = self._ratio * oneshot
        ask = self._ask_cost if math.isfinite(self._ask_cost) else oneshot / 3.0
        saved = (self._served_before - 1) * max(oneshot - ask, 0.0)  # the asks after this
        return spent + build <= _SPIKE * self._worst and saved >= spent + build - oneshot

    def epsilon(self, plan: _Plan) -> Guarantee | None:
        """The certified ε(δ) of ``plan``'s history with a bracket of relative width at most
        ``precision``, or None where this route cannot give one (the caller then answers by
        :func:`~approxdp.accounting.pld.pld_epsilon`)."""
        if not _supported(plan) or plan.steps < self._retry_from:
            return None
        ways = {"remove": plan.remove, "add": plan.add}
        names = ("remove",) if len(_directions(plan)) == 1 else ("remove", "add")
        state = self._state
        # the present plan; where it is not tight enough, a fresh plan (the history outgrew
        # the windows, or a part changed their shape), on a grid sized from the bracket the
        # last plan gave (its width goes about as h²)
        h: float | None = None
        start = self._clock()
        if state is not None and plan.steps > state.planned_steps:
            state = None  # outgrown: planned afresh on the hinted grid (no try on the old one)
        for attempt in range(3):
            if state is None or attempt > 0:
                if not self._affordable(plan.steps, self._clock() - start):
                    # the one-shot route answers (cheaper here); a plan is tried again at
                    # the next ask, where the costs may have moved
                    self._state = None
                    return None
                try:
                    state = self._build(plan, names, h)
                except (InvalidParameterError, FloatingPointError):
                    state = None
                if state is None:
                    break
            fresh = state is not self._state
            got, width = self._answer(state, ways, names)
            if got is not None:
                if fresh:  # the next plan's grid: coarser where this one is far tighter than
                    # needed (measured on a fresh plan: later, its windows widen the bracket)
                    self._hint = _resized(state.h, width, self.precision, coarser=True)
                    if self._oneshot is not None:  # this plan's cost in one-shot answers
                        s_steps, s_cost = self._oneshot
                        self._ratio = max(self._ratio, (self._clock() - start) / max(
                            s_cost * plan.steps / max(s_steps, 1), 1e-9))
                    if self.builds > 1:
                        self._served_before = self._served
                    self._served = 0
                else:
                    self._ask_cost = self._clock() - start
                self._served += 1
                self._state = state
                return got
            # a plan that served earlier asks failing: its windows (planned for the history
            # then) are the likely cause, not its grid — a fresh plan on the hinted grid
            h = None if attempt == 0 and state is self._state else _resized(
                state.h, width, self.precision, coarser=False)
        # no plan is tight enough here: the one-shot accountant answers until the history
        # has grown ``growth``-fold (each failed ask would otherwise pay for three plans)
        self._state = None
        self._retry_from = math.ceil(self.growth * plan.steps)
        return None

    # -- building a plan ------------------------------------------------------------------

    def _build(self, plan: _Plan, names: tuple[str, ...], h: float | None) -> _State | None:
        """Running compositions for ``plan`` grown ``growth``-fold: empty, windows planned."""
        self.builds += 1
        delta = self.delta
        tail = 1e-4 * delta
        ways = {name: (plan.remove if name == "remove" else plan.add) for name in names}
        grown = {name: _scaled(parts, self.growth) for name, parts in ways.items()}
        if h is None:
            h = self._hint or min(quantize(_first_step(parts, self.precision, delta))
                                  for parts in grown.values())
        steps = max(sum(c for _, c in parts) for parts in grown.values())
        # each step's share of the left-out tail, at a power of 16 steps: a plan after the
        # history grew keeps its discretizations (cached) as long as it can
        step_tail = tail / 16.0 ** math.ceil(math.log(max(steps, 2), 16))
        # the dominant direction (the larger saddle-point estimate of ε) on the grid h, the
        # other one and the tests on a grid twice as coarse (pld_epsilon's first try for the
        # tests too): where the other one comes out above, or the tests too low, the bracket
        # shows it and the next plan is finer
        est = {name: (saddle_epsilon(list(ways[name]), delta), saddle_epsilon(parts, delta))
               for name, parts in grown.items()}
        if any(now is None or later is None for now, later in est.values()):
            return None
        dominant = max(names, key=lambda name: est[name][0][0])  # type: ignore[index]
        coarse = quantize(2.0 * h, up=True)
        uppers: dict[str, _Running] = {}
        aims: dict[str, tuple[float, float]] = {}
        for name, parts in grown.items():
            step = h if name == dominant else coarse
            (now, _), (later, _) = est[name]  # type: ignore[misc]
            plds = list(zip(discretized_all(parts, step, step_tail, False),
                            (c for _, c in parts), strict=True))
            below = self._below(plds, later, now, step)
            run = plan_running(plds, tail=tail, tilt_at=later, below=below, merged=True)
            if run.n > _MAX_POINTS:
                return None
            uppers[name] = _Running(run, -1)
            aims[name] = (later, below)
        p_low, q_low = self._plan_lower(grown[dominant], coarse, step_tail, tail,
                                        *aims[dominant])
        return _State(h, step_tail, steps, uppers, dominant, p_low, q_low)

    @staticmethod
    def _below(plds: Sequence[tuple[DiscretePLD, int]], later: float, now: float, h: float
               ) -> float:
        """How far under the grown history's ε the window must reach: down past the present
        ε, with three tilted standard deviations, a tenth of ε and 16 grid steps to spare
        (what :func:`~approxdp.accounting.pld.window.plan_window` leaves by default)."""
        sup = planning_supports([(support_of(p), c) for p, c in plds])  # (a size only)
        sd = math.sqrt(max(composed_moments(sup, solve_tilt(sup, now)).var, 0.0))
        return max(later - now, 0.0) + 3.0 * sd + 0.1 * abs(now) + 16.0 * h

    def _plan_lower(
        self, parts: Parts, h: float, step_tail: float, tail: float, aim: float, below: float
    ) -> tuple[_Running, _Running]:
        """The rounded loss's P- and Q-compositions (Q on P's window, tilted λ + 1), aimed as
        :func:`~approxdp.accounting.pld.lower.lower_epsilon` aims them: at the answer plus the
        mean shift of rounding to the nearest grid point instead of connecting the dots."""
        rounded = rounded_all(parts, h, step_tail, False)
        pess = discretized_all(parts, h, step_tail, False)
        aim += sum(c * (r.as_measures()[0].mean_var()[0] - d.mean_var()[0])
                   for (_, c), r, d in zip(parts, rounded, pess, strict=True))
        p_parts = [(r.as_measures()[0], c) for (_, c), r in zip(parts, rounded, strict=True)]
        q_parts = [(r.as_measures()[1], c) for (_, c), r in zip(parts, rounded, strict=True)]
        p_run = plan_running(p_parts, tail=tail, tilt_at=aim, below=below, merged=True)
        win = Window(p_run.lam, p_run.a_idx, p_run.n)
        q_run = plan_running(q_parts, tail=tail, tilt_at=None, below=None, window=win,
                             lam_shift=1.0, merged=True)
        return _Running(p_run, 0), _Running(q_run, 1)

    # -- answering ------------------------------------------------------------------------

    def _sync(self, state: _State, ways: Mapping[str, Parts], names: tuple[str, ...]) -> bool:
        """Add what is new to every composition; False where a part shrank or went away (a
        different history: the caller plans again)."""
        jobs = [(state.uppers[name], ways[name]) for name in names]
        jobs += [(state.p_low, ways[state.dominant]), (state.q_low, ways[state.dominant])]
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
        delta = self.delta
        upper = max(held.run.composed().epsilon(delta) for held in state.uppers.values())
        tails = rounded_tails(state.p_low.run.composed(), state.q_low.run.composed())
        lower = test_epsilon(tails[0], tails[1], delta)
        width = (upper - lower) / lower if lower > 0.0 else math.inf
        if not (math.isfinite(upper) and width <= self.precision):
            return None, width
        return Guarantee(upper, delta, "upper bound", INCREMENTAL_RULE,
                         bracket=(lower, upper)), width
