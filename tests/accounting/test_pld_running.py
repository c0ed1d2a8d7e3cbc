"""Running compositions (parts added one at a time on a fixed window) and the incremental
ε(δ) of a growing history: the same certified bounds as the one-shot composer, exact values
from above, stale windows still certified, and brackets as tight as pld_epsilon's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.bounds import event_of
from approxdp.accounting.dpsgd.phases import DPSGDPhase
from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.pld.compose import compose
from approxdp.accounting.pld.discretized import _step_tail, discretized_all
from approxdp.accounting.pld.event_losses import gaussian_source
from approxdp.accounting.pld.incremental import IncrementalEpsilon
from approxdp.accounting.pld.incremental_delta import FAR_TAIL, IncrementalDelta
from approxdp.accounting.pld.plan import _plan
from approxdp.accounting.pld.running import RunningComposition, _log_mgfs, plan_running
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_epsilon
from approxdp.accounting.pld.window import planning_supports, solve_tilt, support_of
from approxdp.profiles.gaussian import gaussian_epsilon

Q = 256 / 60000
DELTA = 1e-5


def _items(phases: list[tuple[float, float, int]]) -> list[tuple[object, int]]:
    return [(event_of(DPSGDPhase(*p), "poisson"), p[2]) for p in phases]


def _plds(phases: list[tuple[float, float, int]], h: float, direction: str = "remove"):
    plan = _plan(_items(phases))
    parts = plan.remove if direction == "remove" else plan.add
    tail = _step_tail(parts, 1e-4 * DELTA)
    return list(zip(discretized_all(parts, h, tail, False), (c for _, c in parts), strict=True))


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_running_composition_is_the_composers_on_the_same_window(direction: str) -> None:
    phases = [(1.5 - 0.1 * i, Q, 300) for i in range(5)]
    plds = _plds(phases, 2.0**-11, direction)
    whole = compose(plds, tail=1e-4 * DELTA, tilt_at=1.0)
    run = plan_running(plds, tail=1e-4 * DELTA, tilt_at=1.0, below=None)
    assert (run.lam, run.a_idx, run.n) == (whole.lam, whole.offset, whole.size)
    for p, c in plds:
        run.add(p, c)
    comp = run.composed()
    np.testing.assert_allclose(comp.tilted, whole.tilted, rtol=0, atol=1e-15)
    for name in ("log_beyond", "log_alias_up", "log_alias_low", "log_below", "log_mgf"):
        a, b = getattr(comp, name), getattr(whole, name)
        assert a == b or abs(a - b) <= 1e-9 * (1.0 + abs(b)), name
    assert comp.infinity_mass == pytest.approx(whole.infinity_mass, rel=1e-12)
    # the sums over parts are charged more round-off, never less
    assert whole.roundoff <= comp.roundoff <= 1.01 * whole.roundoff
    assert comp.epsilon(DELTA) == pytest.approx(whole.epsilon(DELTA), rel=1e-12)


def test_a_part_added_in_pieces_is_the_part_added_once() -> None:
    plds = _plds([(1.1, Q, 3000)], 2.0**-11)
    (p, c), = plds
    once = plan_running(plds, tail=1e-4 * DELTA, tilt_at=1.5, below=None)
    pieces = plan_running(plds, tail=1e-4 * DELTA, tilt_at=1.5, below=None)
    once.add(p, c)
    for part in (1000, 1500, 500):
        pieces.add(p, part)
    a, b = once.composed(), pieces.composed()
    assert b.steps == a.steps == c
    np.testing.assert_allclose(b.tilted, a.tilted, rtol=0, atol=1e-13 * float(a.tilted.max()))
    assert b.roundoff >= a.roundoff  # (three adds are charged more)
    assert b.epsilon(DELTA) == pytest.approx(a.epsilon(DELTA), rel=1e-9)


@pytest.mark.parametrize(("mu", "steps"), [(0.05, 400), (0.2, 60)])
def test_running_gaussian_composition_is_exact_from_above(mu: float, steps: int) -> None:
    """T Gaussian steps compose to one Gaussian with μ√T (exact): the running composition,
    fed in four pieces, is above the exact ε and within 0.1 % of it."""
    source = gaussian_source(mu)
    h = 2.0**-14
    (p,) = discretized_all([(source, steps)], h, 1e-4 * DELTA / steps, False)
    run = plan_running([(p, steps)], tail=1e-4 * DELTA, tilt_at=None, below=None)
    for part in (steps // 4,) * 3 + (steps - 3 * (steps // 4),):
        run.add(p, part)
    exact = float(gaussian_epsilon(1.0 / (mu * math.sqrt(steps)), DELTA))
    eps = run.composed().epsilon(DELTA)
    assert exact <= eps <= exact * (1.0 + 1e-3)


def test_one_subsampled_step_brackets_the_exact_profile() -> None:
    plds = _plds([(1.1, Q, 1)], 2.0**-14)
    run = plan_running(plds, tail=1e-4 * DELTA, tilt_at=None, below=None)
    for p, c in plds:
        run.add(p, c)
    exact = subsampled_gaussian_epsilon(DELTA, 1 / 1.1, Q, "remove")
    assert exact <= run.composed().epsilon(DELTA) <= exact * (1.0 + 1e-3)


def test_a_window_planned_for_far_fewer_steps_stays_certified() -> None:
    """Planned for 300 steps, fed 6000: the Chernoff points are stale, the bounds loose, but
    the answer is never below the truth (above pld_epsilon's certified lower end)."""
    small = _plds([(1.1, Q, 300)], 2.0**-11)
    run = plan_running(small, tail=1e-4 * DELTA, tilt_at=0.5, below=None)
    (p, _), = small
    for _ in range(20):
        run.add(p, 300)
    comp = run.composed()
    ref = pld_epsilon(_items([(1.1, Q, 6000)]), DELTA)
    assert ref.bracket is not None
    assert comp.epsilon(DELTA) >= ref.bracket[0]
    assert comp.delta(ref.bracket[0]) >= DELTA  # δ at the lower end of ε: at least δ


def _growing(phases: list[tuple[float, float, int]]):
    """The incremental answers after each phase, with pld_epsilon's."""
    inc = IncrementalEpsilon(DELTA, 1e-3)
    for k in range(1, len(phases) + 1):
        items = _items(phases[:k])
        yield inc, inc.epsilon(_plan(items)), pld_epsilon(items, DELTA)


def test_incremental_epsilon_brackets_agree_with_pld_epsilon_as_the_run_grows() -> None:
    phases = [(2.0 - 0.12 * i, Q if i < 5 else 2 * Q, 700) for i in range(10)]
    answered = 0
    for _, g, ref in _growing(phases):
        if g is None:
            continue
        answered += 1
        assert g.bracket is not None and ref.bracket is not None
        lo, up = g.bracket
        assert up == g.epsilon and 0.0 < lo <= up <= lo * (1.0 + 1e-3)
        # both certified around one truth; ours as tight as pld_epsilon's (up to 1e-4)
        assert lo <= ref.epsilon and ref.bracket[0] <= up
        assert up <= ref.epsilon * (1.0 + 1e-4)
    assert answered == len(phases)


def test_incremental_epsilon_replans_geometrically_and_extends_the_last_phase() -> None:
    inc = IncrementalEpsilon(DELTA, 1e-3)
    history: list[tuple[float, float, int]] = []
    for epoch in range(16):
        history = [(1.1, Q, 235 * (epoch + 1))]  # one phase, extended every epoch
        g = inc.epsilon(_plan(_items(history)))
        assert g is not None and g.bracket is not None
        assert g.epsilon <= g.bracket[0] * (1.0 + 1e-3)
    assert inc.builds <= 6  # 16 asks over a 16-fold growth: log₂ 16 plans and a couple
    ref = pld_epsilon(_items(history), DELTA)
    assert ref.bracket is not None and ref.bracket[0] <= g.epsilon <= ref.epsilon * (1 + 1e-4)


def test_incremental_epsilon_declines_what_it_does_not_cover() -> None:
    inc = IncrementalEpsilon(DELTA, 1e-3)
    from approxdp.events import GaussianEvent

    assert inc.epsilon(_plan([(GaussianEvent(2.0), 10)])) is None  # merged Gaussians
    assert inc.epsilon(_plan(_items([(1.1, Q, 10**8)]))) is None  # the stable split's range
    assert inc.epsilon(_plan(_items([(1.1, Q, 1 << 15)]))) is None  # composed in blocks
    # a shorter history than the one held: planned afresh, not subtracted
    long, short = _items([(1.1, Q, 2000)]), _items([(1.1, Q, 1000)])
    assert inc.epsilon(_plan(long)) is not None
    builds = inc.builds
    g = inc.epsilon(_plan(short))
    assert g is not None and inc.builds == builds + 1
    ref = pld_epsilon(short, DELTA)
    assert ref.bracket is not None and ref.bracket[0] <= g.epsilon


def test_incremental_epsilon_plans_only_where_the_one_shot_route_costs_as_much() -> None:
    """The cost guard, a model of counts: a plan made in one go (every part discretized
    afresh on its grid) only where the model puts it at no more than the one-shot route's
    dearest ask (this ask's, or a cold first ask noted by the caller); otherwise None (the
    one-shot route answers) — whatever the clock says."""
    phases = [(1.5 - 0.02 * i, Q, 200) for i in range(12)]
    seen = _plan(_items(phases[:11]))
    grown = _plan(_items(phases))
    inc = IncrementalEpsilon(DELTA, 1e-3)
    inc._last, inc._last_steps = dict(seen.remove), seen.steps  # asked, answered one-shot
    # one part new since: the one-shot route re-discretizes one part, a plan all twelve
    assert inc.epsilon(grown) is None and inc.builds == 0
    inc._last, inc._last_steps = dict(seen.remove), seen.steps
    inc.note_oneshot(12)  # a cold first ask of as many parts: the budget a plan may spend
    g = inc.epsilon(grown)
    assert g is not None and inc.builds == 1 and g.bracket is not None
    ref = pld_epsilon(_items(phases), DELTA)
    assert ref.bracket is not None and ref.bracket[0] <= g.epsilon <= ref.epsilon * (1 + 1e-4)


def test_incremental_epsilon_prepares_the_next_plan_over_the_asks_before() -> None:
    """Past _PREPARE_FROM of the steps its plan holds, the next plan's windows are planned
    and its parts added a few per ask; the ask that outgrows the present plan is answered by
    the next one (no plan made then), within the bracket."""
    inc = IncrementalEpsilon(DELTA, 1e-3)
    first = inc.epsilon(_plan(_items([(1.2, Q, 200)])))
    assert first is not None and inc.builds == 1 and inc._state is not None
    planned = inc._state.planned_steps
    steps = 200
    while steps + 100 <= planned:
        steps += 100
        assert inc.epsilon(_plan(_items([(1.2, Q, steps)]))) is not None
    assert inc._next is not None and inc.builds == 2  # prepared, not yet serving
    assert inc._next.planned_steps > planned
    g = inc.epsilon(_plan(_items([(1.2, Q, steps + 100)])))  # outgrows the present plan
    assert g is not None and inc.builds == 2 and inc._next is None
    assert inc._state is not None and inc._state.planned_steps > planned
    ref = pld_epsilon(_items([(1.2, Q, steps + 100)]), DELTA)
    assert ref.bracket is not None and g.bracket is not None
    assert ref.bracket[0] <= g.epsilon <= ref.epsilon * (1 + 1e-4)
    assert g.bracket[0] <= ref.epsilon


def test_running_composition_drops_negligible_frequencies_and_stays_certified() -> None:
    """Many parts on a wide window: most frequencies fall below e^_DROP and are no longer
    followed; the masses still match the composer's on the same window, and the ε read off
    is above the exact one-phase value."""
    phases = [(1.0 + 0.02 * i, Q, 400) for i in range(12)]
    h = 2e-4
    plds = _plds(phases, h)
    run = plan_running([(p, 4 * c) for p, c in plds], tail=1e-4 * DELTA, tilt_at=None,
                       below=None)
    for p, c in plds:
        run.add(p, c)
    assert run._dropped > 0
    ours = run.composed()
    ref = pld_epsilon(_items(phases), DELTA)
    assert ref.bracket is not None
    assert ref.bracket[0] <= ours.epsilon(DELTA)
    assert ours.roundoff < 1e-12


def test_incremental_delta_brackets_pld_delta_and_is_as_tight() -> None:
    """δ(ε) asked as one phase grows: from the running compositions (tilted at ε), each
    answer a certified upper bound above pld_delta's certified lower end, its own bracket
    reaching below pld_delta's upper end, no looser than pld_delta's upper bound; before any
    answer (no δ to size the windows by) the one-shot route is left to answer."""
    inc = IncrementalDelta(1.0, 1e-3)
    first = _plan(_items([(1.1, Q, 1400)]))
    assert inc.answer(first) is None and inc.builds == 0  # no answer seen yet
    inc.last = float(pld_delta(_items([(1.1, Q, 1400)]), 1.0).delta)
    assert inc.last >= FAR_TAIL
    answered = 0
    for steps in (2800, 4200, 5600, 7000):
        items = _items([(1.1, Q, steps)])
        g = inc.answer(_plan(items))
        ref = pld_delta(items, 1.0)
        assert g is not None and g.bracket is not None and ref.bracket is not None
        lo, up = g.bracket
        assert up == g.delta and g.epsilon == 1.0
        assert ref.bracket[0] <= up <= float(ref.delta) * (1.0 + 2e-3)
        assert lo <= float(ref.delta) and lo <= up
        answered += 1
    assert answered == 4 and 1 <= inc.builds <= 3


def test_running_edges_hold_as_heavier_phases_are_added() -> None:
    """δ at ε = 2 of a schedule whose σ falls (the benchmark's 50 phases, from the 28th):
    the window's edges are bounded at shares of their planned Chernoff points too, so the
    phases of lower σ added after the plan (heavier than the scaled ones it was planned
    for) do not void the bounds above the window: the plan serves every ask until the next
    one, prepared meanwhile, takes over (at the planned point alone the bound on the mass
    above the window reached 1 five phases on, and every such ask re-planned)."""
    phases = [(1.5 - 0.01 * i, Q, 300) for i in range(34)]
    inc = IncrementalDelta(2.0, 1e-3)
    inc.last = 1.89e-10  # δ(2) after 27 phases (pld_delta): sizes the tails and the grid
    for k in range(28, 35):
        assert inc.answer(_plan(_items(phases[:k]))) is not None
    # the plan, and the next one prepared (its lower bound's windows planned at the next ask)
    assert inc.builds == 2 and (inc._next is not None or inc._pending is not None)
    g = inc.answer(_plan(_items(phases)))
    ref = pld_delta(_items(phases), 2.0)
    assert g is not None and ref.bracket is not None and g.bracket is not None
    assert ref.bracket[0] <= g.delta <= float(ref.delta) * (1.0 + 2e-3)
    assert g.bracket[0] <= float(ref.delta)


def test_far_tail_delta_asks_are_answered_running_on_a_lesser_tilt() -> None:
    """δ(2) of the benchmark's 50-phase schedule after 1-5 phases (1e-27 to 1e-24, far below
    FAR_TAIL): answered by the running compositions (before: left to pld_delta, 300-500 ms
    an ask), each a certified upper bound above pld_delta's certified lower end and within
    2e-3 of its upper bound, its own bracket reaching below it. The dominant window is tilted
    below λ* (whose tilted mean is ε: there each step's tilted upper tail carries a bump that
    widens the window ~4-fold) and holds at most max_points points."""
    phases = [(1.5 - 0.01 * i, Q, 300) for i in range(5)]
    inc = IncrementalDelta(2.0, 1e-3)
    inc.last = float(pld_delta(_items(phases[:1]), 2.0).delta)
    assert inc.last < 1e-26 < FAR_TAIL
    for k in range(2, 6):
        items = _items(phases[:k])
        g = inc.answer(_plan(items))
        ref = pld_delta(items, 2.0)
        assert g is not None and g.bracket is not None and ref.bracket is not None
        lo, up = g.bracket
        assert up == g.delta and ref.bracket[0] <= up <= float(ref.delta) * (1.0 + 2e-3)
        assert lo <= float(ref.delta) and lo <= up
        state = inc._state
        assert state is not None
        run = state.uppers[state.dominant].run
        assert run.n <= inc.max_points and state.p_low.run.n <= inc.max_points
    assert inc.builds <= 3
    # the tilt: below the one whose tilted mean is ε, for the grown history planned
    grown = _plds([(s, q, 2 * c) for s, q, c in phases[:2]], 2.4e-4)
    present = _plan(_items(phases[:2])).remove
    star = solve_tilt(planning_supports([(support_of(p), c) for p, c in grown]), 2.0)
    inc.last = 8e-27
    lam = inc._tilt(present, grown, 2.0)
    assert lam is not None and 0.5 * star <= lam < 0.97 * star
    inc.last = 1e-9  # not far in the tail: plan_window's tilt
    assert inc._tilt(present, grown, 2.0) is None


def test_the_next_plan_is_spread_over_the_asks_before_it_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ε after each of the benchmark's 50 phases (σ falls): the next plan's windows are
    planned in two stages (the upper bounds', then the lower bound's at the next ask) and
    its parts added by 70 % of the present plan's steps, over 3 asks at least, so that no
    ask adds more than ~a dozen parts to each composition (before: the ask that switched to
    it added the 33 parts still missing to each of its 4 compositions, 130-260 ms)."""
    added = [0]
    add = RunningComposition.add

    def counted(self: RunningComposition, p: object, count: int) -> None:
        added[0] += 1
        add(self, p, count)  # type: ignore[arg-type]

    monkeypatch.setattr(RunningComposition, "add", counted)
    phases = [(1.5 - 0.01 * i, Q, 300) for i in range(50)]
    inc = IncrementalEpsilon(DELTA, 1e-3)
    inc.note_oneshot(1)
    staged = 0
    most = 0
    for k in range(1, 51):
        added[0] = 0
        builds = inc.builds
        assert inc.answer(_plan(_items(phases[:k]))) is not None
        if inc.builds > builds and inc._pending is not None:
            staged += 1
            assert inc._next is None
        if k > 2:
            most = max(most, added[0])
    assert staged >= 2 and most <= 60


def test_the_parts_log_mgfs_at_every_chernoff_point_in_one_pass() -> None:
    """The log-MGFs a running composition keeps for each part (at its 7 Chernoff points, in
    one pass over the part's masses) are each part's log Σ p e^(u·l) to the last bits, and
    +∞ where the sum overflows (a void bound)."""
    p = _plds([(1.2, Q, 300)], 2e-4)[0][0]
    keep = p.pmf > 0.0
    logs, losses = np.log(p.pmf[keep]), p.losses[keep]
    us = [3.0, 25.0, -40.0, 12.5, 6.25, 1.5, 0.75, math.inf]
    got = _log_mgfs(p, us)
    for u, k in zip(us[:-1], got[:-1], strict=True):
        a = logs + u * losses
        assert k == pytest.approx(float(a.max() + np.log(np.exp(a - a.max()).sum())),
                                  rel=1e-14)
    assert got[-1] == math.inf
