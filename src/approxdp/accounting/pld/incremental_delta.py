"""δ(ε) of a growing history, asked again and again: the running route of δ asks.

:class:`~approxdp.accounting.pld.incremental.IncrementalEpsilon` answers a training loop's
repeated ε(δ) asks from running compositions planned with headroom. :class:`IncrementalDelta`
is the same machinery for δ at a fixed ε: the pessimistic compositions of both neighbouring
directions (Doroshenko et al. 2022, https://arxiv.org/abs/2207.04380) give the certified upper
bound, the dominant direction's rounded-loss P- and Q-compositions the certified lower bound
(their hypothesis tests at ε), every window tilted at ε itself — where δ(ε) is read — as
:func:`~approxdp.accounting.pld.pld_delta`'s passes are, and planned for ``growth`` times the
history's steps (Koskela et al. 2021, https://arxiv.org/abs/2006.07134, Sec. 4 for the tilt).

The windows may leave out 1e-5 of the δ answered at the last ask (δ grows with the history:
later asks lose less of theirs; before any answer the one-shot route answers). Far in the
tail (that δ below :data:`FAR_TAIL`) the windows are tilted a little below ε's own tilt, as
far as the modelled FFT round-off allows (a subsampled Gaussian tilted at ε's tilt carries
a bump far up in each step's tail, which widens the window several-fold), on a grid three
times as coarse (the bracket allowed there is wide in δ: δ falls steeply with ε). An answer
is given only where its own
certified bracket is as tight as :func:`pld_delta` makes its own: within 2·``precision`` of
δ (what it accepts from its tests), or within what moves ε by at most ``precision``/2 of
itself (the grid's cost it allows, in ε terms: far in the tail, where δ falls steeply with ε,
a wider bracket in δ); otherwise the states are planned again, or None (the caller answers
by :func:`pld_delta`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.compose import DiscretePLD, rounded_tails, test_delta
from approxdp.accounting.pld.discretized import quantize
from approxdp.accounting.pld.estimates import saddle_delta
from approxdp.accounting.pld.grid_steps import _first_step
from approxdp.accounting.pld.incremental import INCREMENTAL_RULE, IncrementalEpsilon
from approxdp.accounting.pld.incremental_state import Parts, _scaled, _State
from approxdp.accounting.pld.plan import _Plan
from approxdp.accounting.pld.window import (
    _predicted_roundoff,
    composed_moments,
    planning_supports,
    solve_tilt,
    support_of,
)

__all__ = ["FAR_TAIL", "IncrementalDelta"]

#: Below this δ (the last answer's) the windows are planned far in the tail (see
#: :meth:`IncrementalDelta._tilt`): at ε's own tilt, the windows that hold δ to its bracket
#: there were 3-7·10^5 points (the 50-phase benchmark's first phases, δ(2) ~ 1e-27: asks of
#: 130-690 ms, when this route left them to pld_delta's 300-2000), and the saddle-point
#: estimate of δ there is off by up to 10^21 (9e-48 for 8e-27), so the last answer sizes them
FAR_TAIL = 1e-10


class IncrementalDelta(IncrementalEpsilon):
    """Certified δ at one ε of a history that grows between asks (see the module docstring).

    :meth:`answer` gives the certified δ(``at``) of a history, or None (see
    :meth:`IncrementalEpsilon.answer`).

    Args:
        epsilon: ε ≥ 0, finite (checked by the caller): kept as ``at``.
        precision: as :func:`pld_delta`'s; an answer's bracket is within 2·``precision``.
        growth: the windows are planned for this many times the steps of the history they
            are built on.
    """

    #: (far in the tail, at ε's own tilt, the windows that hold δ to its bracket were
    #: 3-7·10^5 points at 1-5 of the 50-phase benchmark's phases; on the lesser tilt of
    #: :meth:`_tilt` and the far grid, 2-6·10^4)
    max_points = 1 << 17
    #: (at a fixed grid δ's bracket widens with the steps: a plan at 0.84 of the room at 2
    #: MNIST epochs failed at 5, its next one, on the same grid, at once)
    finer_from = 0.7
    #: pld_delta's answers (CPU ms, load ~2-4, 16:30 UTC): 26-50 at MNIST's one part, ~100
    #: at 8 of the 10-phase schedule's, 464 / 706 / 569 at 28 / 40 / 48 of the 50-phase one
    #: (where δ ≥ 1e-10; 350-2500 below)
    oneshot_model = (20.0, 15.0, 20.0)

    def __init__(self, epsilon: float, precision: float, growth: float = 2.0) -> None:
        super().__init__(math.nan, precision, growth)  # (no δ: asked at ``at``)
        self.at = epsilon
        self._room = 2.0 * precision
        self.last = 0.0  # δ answered at the last ask, by either route (set by the caller too)

    def _declines(self) -> bool:
        """Before any answer (no δ to size the windows by) the one-shot answers."""
        return not self.last > 0.0

    def _far(self) -> bool:
        """Whether the last answer was far in the tail (below :data:`FAR_TAIL`)."""
        return self.last < FAR_TAIL

    def _tilt(self, present: Parts, plds: Sequence[tuple[DiscretePLD, int]], at: float
              ) -> float | None:
        """Far in the tail, the least tilt λ ≤ λ* (λ*: the one whose tilted mean is ``at``)
        whose modelled FFT round-off at ``at`` stays within ``precision`` of the last answer
        (the model, :func:`~approxdp.accounting.pld.window._predicted_roundoff`, is no bound:
        the composition bounds the real round-off, and the bracket shows it); else None
        (plan_window's choice).

        Far in the tail a subsampled Gaussian's loss tilted at λ* carries rare large jumps
        (each step's upper tail, tilted, is a bump near λ*/σ²) that widen the window several
        fold; a slightly smaller tilt leaves them out. Measured on the 50-phase benchmark at 3
        phases grown 2-fold (δ(2) = 3.7e-26): λ* = 24.9, window 38 nats (4.4·10^5 points at
        h = 8.6e-5); 0.9·λ*: 9.9 nats (1.1·10^5), modelled round-off 4.7e-4·δ, certified
        δ 2e-5 above λ*'s."""
        if not self._far():
            return None
        sup = planning_supports([(support_of(p), c) for p, c in plds])
        star = solve_tilt(sup, at)
        if not star > 0.0:
            return None
        # the round-off is weighed at the present history (its untilting factor
        # e^(K(λ) − λε) against δ is largest there, the tilt being the grown one's)
        sups = [support_of(p) for p, _ in plds]
        now = planning_supports([(sup, c) for sup, (_, c) in zip(sups, present, strict=True)])
        count = sum(c for _, c in present)
        budget = self.precision * self.last  # (δ only grows with the history)

        def fits(lam: float) -> bool:
            mo = composed_moments(now, lam)
            noise = _predicted_roundoff(count, lam=lam, eps_ref=at, h=plds[0][0].h,
                                        n=1 << 17, k_lam=mo.k, sd=math.sqrt(max(mo.var, 0.0)))
            return noise <= budget

        lo, hi = 0.5 * star, star  # the model's noise falls as λ grows to λ* (K convex)
        if fits(lo):
            return lo
        if not fits(hi):
            return None
        for _ in range(6):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if fits(mid) else (mid, hi)
        return hi

    def _estimate(self, parts: Parts) -> float:
        return max(saddle_delta(list(parts), self.at), 1e-300)

    def _tail(self, plan: _Plan) -> float:
        """1e-5 of the last answer (δ only grows with the history; the saddle-point estimate
        can be far below it)."""
        return 1e-5 * self.last

    def _aims(self, ways: Mapping[str, Parts], grown: Mapping[str, Parts]
              ) -> tuple[dict[str, tuple[float, float]], str] | None:
        """Every window tilted at ε; the dominant direction: the larger estimated δ."""
        est = {name: (self.at, self.at) for name in grown}
        return est, max(grown, key=lambda name: self._estimate(ways[name]))

    def _below(self, plds: Sequence[tuple[DiscretePLD, int]], later: float, now: float,
               h: float, counts: Sequence[int]) -> float | None:
        """How far under ε the window must reach: down past the *present* history's bulk
        under the tilt planned for the grown one (its tilted mean, less three tilted standard
        deviations), with a tenth of ε and 16 grid steps to spare. (Measured: windows
        reaching only three grown-history deviations down lost their bracket to the aliased
        mass 5 phases after a plan at 28 of the 50-phase benchmark's.) Far in the tail:
        plan_window's own (three tilted deviations of the grown history, a tenth of ε, 16
        steps): the tilt there is large, so what lies below aliases up shrunk by e^(−λNh).)"""
        if self._far():
            return None
        grown = planning_supports([(support_of(p), c) for p, c in plds])
        lam = solve_tilt(grown, self.at)
        present = planning_supports([(support_of(p), c)
                                     for (p, _), c in zip(plds, counts, strict=True)])
        mo = composed_moments(present, lam)
        return (max(self.at - mo.mean, 0.0) + 3.0 * math.sqrt(max(mo.var, 0.0))
                + 0.1 * abs(self.at) + 16.0 * h)

    def _first_grid(self, plan: _Plan, names: tuple[str, ...]) -> float:
        """The grown history's dominant direction's first grid (the others are composed twice
        as coarse): half pld_epsilon's first step, its z from 1e-3 of the last answer (on
        the 50-phase benchmark at 28 phases, δ(2) = 4.4e-10, the bracket came out at 1.5
        room on that step, 0.38 room on half of it; at 2 MNIST epochs, δ(1) = 1.1e-5, at
        0.84 room on 1/√2 of it; width goes as h²). Far in the tail 1.5 times that step:
        the room there is in ε terms (δ(2) = 8.1e-27 at 2 of the 50 phases: the bracket at
        0.02 room on half the step, 0.35 on twice it)."""
        ways = {"remove": plan.remove, "add": plan.add}
        name = max(names, key=lambda name: self._estimate(ways[name]))
        grown, near = _scaled(ways[name], self.growth), 1e-3 * self.last
        return quantize(_first_step(grown, self.precision, near) * (1.5 if self._far() else 0.5))

    def _read(self, state: _State) -> tuple[Guarantee | None, float]:
        """δ at ε read off the compositions: the answer if its bracket is within
        2·``precision``, and the bracket's relative width."""
        eps = self.at
        comps = {name: held.run.composed() for name, held in state.uppers.items()}
        upper = max(comp.delta(eps) for comp in comps.values())
        tails = rounded_tails(state.p_low.run.composed(), state.q_low.run.composed())
        lower = test_delta(tails[0], tails[1], eps, tails[2])
        if lower > upper:  # both are certified: one of them is not; never answer from it
            return None, math.inf
        # tight as pld_delta's: within 2·precision of δ, or within what costs ε no more
        # than precision/2 of itself (δ' = −slope: far in the tail δ moves fast with ε)
        allowed = max(2.0 * self.precision * lower,
                      0.5 * self.precision * eps * comps[state.dominant].slope(eps))
        width = (upper - lower) / allowed * self._room if allowed > 0.0 else math.inf
        if not (0.0 < upper < 1.0 and width <= self._room):
            return None, width
        self.last = upper
        return Guarantee(eps, upper, "upper bound", INCREMENTAL_RULE,
                         bracket=(lower, upper)), width
