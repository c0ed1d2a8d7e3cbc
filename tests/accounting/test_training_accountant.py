"""The training accountant: O(1) steps stored as phases, (ε, δ) on demand, checkpoints."""

from __future__ import annotations

import itertools
import json
import math
import time
from typing import Any

import numpy as np
import pytest

import approxdp as dp
import approxdp.accounting as acc
from approxdp.accounting import DPSGDPhase as Phase
from approxdp.accounting import pld_epsilon
from approxdp.accounting.dpsgd.training import STATE_FORMAT, TrainingAccountant
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.accounting.pld.incremental import INCREMENTAL_RULE
from approxdp.accounting.pld.incremental_delta import IncrementalDelta
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.events import GaussianEvent, SubsampledEvent

Q = 256 / 60000


def test_steps_are_stored_as_phases() -> None:
    acct = TrainingAccountant()
    for _ in range(300):
        acct.step(noise_multiplier=1.1, sample_rate=Q)
    acct.step(noise_multiplier=0.9, sample_rate=Q)
    acct.step(noise_multiplier=0.9, sample_rate=Q, steps=99)
    acct.step(noise_multiplier=1.1, sample_rate=Q)
    assert acct.history == [(1.1, Q, 300), (0.9, Q, 100), (1.1, Q, 1)]
    assert acct.phases == (Phase(1.1, Q, 300), Phase(0.9, Q, 100), Phase(1.1, Q, 1))
    assert len(acct) == acct.steps == 401
    # NumPy floats and ints take the same path and give the same phases
    other = TrainingAccountant()
    for _ in range(300):
        other.step(noise_multiplier=np.float64(1.1), sample_rate=np.float64(Q))
    other.add_phase(noise_multiplier=0.9, sample_rate=Q, steps=100)
    other.step(noise_multiplier=1.1, sample_rate=Q)
    assert other.history == acct.history


def test_one_phase_is_dpsgd_epsilon_and_many_are_the_pld_of_the_history() -> None:
    acct = TrainingAccountant(phases=[(1.1, Q, 2000)])
    g = acct.epsilon(1e-5)
    ref = dp.dpsgd_epsilon(noise_multiplier=1.1, sample_rate=Q, steps=2000, delta=1e-5)
    assert g == ref
    acct.step(noise_multiplier=0.8, sample_rate=0.01, steps=300)
    acct.step(noise_multiplier=1.1, sample_rate=Q, steps=1000)  # a third phase, same (σ, q)
    both = acct.epsilon(1e-5)
    # composition commutes: the same steps in two phases give the same ε — here a second ask
    # at another history, answered by the running composition: another certified bracket of
    # the same truth, as tight
    merged = pld_epsilon(
        [(SubsampledEvent(GaussianEvent(1.1), Q), 3000),
         (SubsampledEvent(GaussianEvent(0.8), 0.01), 300)], 1e-5)
    assert both.bracket is not None and merged.bracket is not None
    assert both.bracket[0] <= merged.epsilon and merged.bracket[0] <= both.epsilon
    assert both.epsilon <= both.bracket[0] * (1.0 + acct.precision)
    assert both.epsilon <= merged.epsilon * (1.0 + 1e-4)
    assert both.epsilon > g.epsilon  # more steps, more loss


def test_heterogeneous_run_agrees_with_dp_accounting_pld() -> None:
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import PLDAccountant

    phases = [(1.2, 0.01, 400), (0.9, 0.02, 200), (2.0, 0.05, 100)]
    acct = TrainingAccountant(phases=phases)
    theirs = PLDAccountant()
    for sigma, q, t in phases:
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), t)
    ours = acct.epsilon(1e-6)
    lower, upper = ours.bracket
    their_eps = theirs.get_epsilon(1e-6)
    assert lower <= their_eps * (1 + 1e-3)  # both near the truth, ours certified above it
    assert abs(upper - their_eps) <= 2e-3 * their_eps
    d = acct.delta(ours.epsilon).delta  # δ at our ε is about the δ we asked for
    assert 0.99e-6 <= d <= 1.01e-6
    assert abs(d - theirs.get_delta(ours.epsilon)) <= 0.01 * d


def test_rdp_and_clt_over_phases() -> None:
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import RdpAccountant

    phases = [(1.2, 0.01, 400), (0.9, 0.02, 200)]
    acct = TrainingAccountant(phases=phases)
    theirs = RdpAccountant()
    for sigma, q, t in phases:
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), t)
    rdp = acct.epsilon(1e-5, accountant="rdp")
    assert rdp.kind == "upper bound"
    assert abs(rdp.epsilon - theirs.get_epsilon(1e-5)) <= 0.02 * rdp.epsilon
    assert rdp.epsilon > acct.epsilon(1e-5).epsilon
    assert acct.delta(rdp.epsilon, accountant="rdp").delta <= 1.0001e-5
    clt = acct.epsilon(1e-5, accountant="gdp-clt")
    assert clt.kind == "approximation"
    one = TrainingAccountant(phases=[(1.1, Q, 5000)])
    assert one.epsilon(1e-5, accountant="gdp-clt").epsilon == pytest.approx(
        acc.gdp_clt_epsilon(1.1, Q, 5000, 1e-5).epsilon, rel=1e-12)
    assert one.epsilon(1e-5, accountant="rdp").epsilon == pytest.approx(
        acc.rdp_dpsgd_epsilon(1.1, Q, 5000, 1e-5).epsilon, rel=1e-12)


def test_arrays_of_targets_keep_their_shape_and_values() -> None:
    acct = TrainingAccountant(phases=[(1.0, 0.01, 500)])
    deltas = np.array([[1e-5, 1e-7], [1e-3, 1e-9]])
    g = acct.epsilon(deltas)
    assert g.epsilon.shape == deltas.shape and g.bracket[0].shape == deltas.shape
    for idx in np.ndindex(deltas.shape):
        assert g.epsilon[idx] == acct.epsilon(float(deltas[idx])).epsilon
    assert np.all(np.diff(np.sort(g.epsilon.ravel())) > 0)
    eps = [0.5, 1.0, 2.0]
    d = acct.delta(eps)
    assert d.delta.shape == (3,) and np.all(np.diff(d.delta) < 0)
    assert np.array_equal(acct.get_delta(eps), d.delta)
    assert acct.get_epsilon(1e-5) == acct.epsilon(1e-5).epsilon


def test_answers_are_cached_until_the_next_step() -> None:
    acct = TrainingAccountant(phases=[(1.0, 0.01, 500)])
    first = acct.epsilon(1e-5)
    assert acct.epsilon(1e-5) is first
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    again = acct.epsilon(1e-5)
    assert again is not first and again.epsilon > first.epsilon


def test_edge_runs() -> None:
    empty = TrainingAccountant()
    assert empty.epsilon(1e-5).epsilon == 0.0 and empty.delta(1.0).delta == 0.0
    free = TrainingAccountant(phases=[(math.inf, 0.5, 10)])  # steps that add infinite noise
    assert free.epsilon(1e-5).epsilon == 0.0
    full = TrainingAccountant(phases=[(2.0, 1.0, 4)])  # q = 1: four Gaussians, one of σ/2
    assert full.epsilon(1e-5).epsilon == pytest.approx(
        float(dp.gaussian_epsilon(1.0, 1e-5)), rel=1e-9)


def test_without_replacement_uses_substitution_sensitivity() -> None:
    acct = TrainingAccountant(sampling="without-replacement", phases=[(1.1, Q, 3000)])
    ref = dp.dpsgd_epsilon(noise_multiplier=1.1, sample_rate=Q, steps=3000, delta=1e-5,
                           sampling="without-replacement")
    assert acct.epsilon(1e-5) == ref
    event, count = acct.events()[0]
    assert isinstance(event, SubsampledEvent) and count == 3000
    assert event.sampling == "without-replacement" and event.event == GaussianEvent(1.1, 2.0)
    assert acct.epsilon(1e-5).epsilon > TrainingAccountant(phases=[(1.1, Q, 3000)]).epsilon(
        1e-5).epsilon


def test_state_dict_round_trips_through_json() -> None:
    acct = TrainingAccountant(precision=2e-3)
    acct.step(noise_multiplier=1.1, sample_rate=Q, steps=700)
    acct.step(noise_multiplier=0.7, sample_rate=0.02, steps=30)
    state = json.loads(json.dumps(acct.state_dict()))
    assert state["format"] == STATE_FORMAT and state["version"] == 1
    back = TrainingAccountant(precision=1e-3)
    back.load_state_dict(state)
    assert back.history == acct.history and back.precision == 2e-3
    assert back.epsilon(1e-5) == acct.epsilon(1e-5)
    back.step(noise_multiplier=0.7, sample_rate=0.02)  # training continues in the last phase
    assert back.history[-1] == (0.7, 0.02, 31)
    assert TrainingAccountant.from_state_dict(state).history == acct.history


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "opacus"}, "not a TrainingAccountant state"),
        ({"version": 2}, "state version 2"),
        ({"sampling": "without-replacement"}, "sampling='without-replacement'"),
        ({"sampling": "shuffle"}, "sampling must be one of"),
        ({"precision": 0.5}, "precision must be in"),
        ({"phases": [[1.1, Q, 10], [float("nan"), Q, 1]]}, "noise_multiplier must be in"),
        ({"phases": [[1.1, 2.0, 10]]}, "sample_rate must be in"),
        ({"phases": [[1.1, Q, 0]]}, "steps must be an integer"),
        ({"phases": [[1.1, Q]]}, "must be a DPSGDPhase or"),
        ({"phases": "1.1 0.1 10"}, "must be a sequence"),
        ({"phases": [[1.1, Q, 10**12], [1.0, Q, 1]]}, "at most 1e"),
    ],
)
def test_a_bad_state_changes_nothing(edit: dict[str, Any], message: str) -> None:
    acct = TrainingAccountant(phases=[(2.0, 0.1, 5)])
    state = {**TrainingAccountant(phases=[(1.1, Q, 3)]).state_dict(), **edit}
    with pytest.raises((InvalidParameterError, ParameterTypeError), match=message):
        acct.load_state_dict(state)
    assert acct.history == [(2.0, 0.1, 5)]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"noise_multiplier": float("nan")}, InvalidParameterError, "noise_multiplier must be"),
        ({"noise_multiplier": 0.0}, InvalidParameterError, "noise_multiplier must be in"),
        ({"noise_multiplier": -1.0}, InvalidParameterError, "noise_multiplier must be in"),
        ({"noise_multiplier": "1.1"}, ParameterTypeError, "noise_multiplier must be a number"),
        ({"noise_multiplier": True}, ParameterTypeError, "noise_multiplier must be a number"),
        ({"noise_multiplier": [1.0, 2.0]}, ParameterTypeError, "single number"),
        ({"sample_rate": 0.0}, InvalidParameterError, "sample_rate must be in"),
        ({"sample_rate": 1.5}, InvalidParameterError, "sample_rate must be in"),
        ({"sample_rate": float("nan")}, InvalidParameterError, "sample_rate must be in"),
        ({"steps": 0}, InvalidParameterError, "steps must be an integer"),
        ({"steps": 2.5}, InvalidParameterError, "steps must be an integer"),
        ({"steps": True}, ParameterTypeError, "steps must be an integer"),
        ({"steps": 10**13}, InvalidParameterError, "steps must be an integer in"),
    ],
)
def test_bad_steps_are_refused_and_change_nothing(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    acct = TrainingAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.5)
    with pytest.raises(error, match=message):
        acct.step(**{"noise_multiplier": 1.0, "sample_rate": 0.5, **kwargs})
    assert acct.history == [(1.0, 0.5, 1)]


def test_bad_queries_and_settings() -> None:
    acct = TrainingAccountant(phases=[(1.0, 0.5, 2)])
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        acct.epsilon(1.5)
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        acct.epsilon([1e-5, float("nan")])
    with pytest.raises(InvalidParameterError, match="epsilon must be in"):
        acct.delta(-1.0)
    with pytest.raises(UnknownMethodError, match="accountant must be one of"):
        acct.epsilon(1e-5, accountant="prv")
    with pytest.raises(UnknownMethodError, match="sampling must be one of"):
        TrainingAccountant(sampling="shuffle")
    with pytest.raises(InvalidParameterError, match="precision must be in"):
        TrainingAccountant(precision=0.0)
    with pytest.raises(ParameterTypeError, match="must be a sequence"):
        TrainingAccountant(phases=3)  # type: ignore[arg-type]
    acct.reset()
    assert acct.history == [] and acct.epsilon(1e-5).epsilon == 0.0


def test_asks_every_phase_are_answered_by_a_running_composition_as_tight() -> None:
    """A loop asking ε after every phase: from the second ask on a running composition
    answers (each phase transformed once, replanned as the run outgrows it), with a bracket
    around the same truth as the one-shot schedule accountant's, and as tight. (Caches
    cleared first: a discretization cached by another test with a smaller tail serves the
    one-shot accountant too, and moves its digits.)"""
    clear_caches()
    acct = TrainingAccountant()
    phases = [(1.5 - 0.05 * i, Q, 300) for i in range(8)]
    for i, (sigma, q, steps) in enumerate(phases):
        acct.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
        g = acct.epsilon(1e-5)
        ref = acc.dpsgd_schedule_epsilon(phases[: i + 1], delta=1e-5)
        assert g.bracket is not None and ref.bracket is not None
        lo, up = g.bracket
        assert lo <= ref.epsilon and ref.bracket[0] <= up == g.epsilon
        assert up <= lo * (1.0 + acct.precision) and up <= ref.epsilon * (1.0 + 1e-4)
        assert acct.epsilon(1e-5) is g  # asked again: the cache
    running = acct._running["epsilon", 1e-5][1]
    # 7 asks, 8-fold growth: plans made in one go, and next plans prepared over the asks
    assert running is not None and 1 <= running.builds <= 5
    assert g.rule == INCREMENTAL_RULE
    acct.reset()
    assert not acct._running


def _loop_answers(monkeypatch: pytest.MonkeyPatch, tick: float) -> list[tuple[Any, ...]]:
    """Every answer of a training loop (ε after each phase, then δ once), every clock the
    code could read advancing by ``tick`` seconds per read."""
    reads = itertools.count()
    for name in ("process_time", "perf_counter", "monotonic", "time", "thread_time"):
        monkeypatch.setattr(time, name, lambda: tick * next(reads))
    acct = TrainingAccountant()
    out: list[tuple[Any, ...]] = []
    for i in range(10):
        acct.step(noise_multiplier=1.5 - 0.04 * i, sample_rate=Q, steps=300)
        g = acct.epsilon(1e-5)
        out.append((g.epsilon, g.bracket, g.rule))
        if i % 3 == 2:
            d = acct.delta(0.5)
            out.append((d.delta, d.bracket, d.rule))
    monkeypatch.undo()
    return out


def test_the_route_and_every_digit_do_not_depend_on_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same history and asks give the same answers, digit for digit, on a fast machine,
    a slow or loaded one, and here: the running route is chosen by a cost model of counts,
    never by timing (a user comparing a checkpointed run on two machines sees one ε)."""
    here = _loop_answers(monkeypatch, 0.0)
    fast = _loop_answers(monkeypatch, 1e-9)
    slow = _loop_answers(monkeypatch, 10.0)
    assert here == fast == slow
    assert any(rule == INCREMENTAL_RULE for _, _, rule in here)  # both routes ran
    assert here[0][2] != INCREMENTAL_RULE


def test_schedules_of_several_sample_rates_take_the_running_route() -> None:
    """A schedule whose sample rate changes (the 10-phase benchmark's batch doubles): from
    the second ask on, ε comes from running compositions (before: the one-shot accountant
    at every ask), each a certified upper bound above the one-shot's certified lower end
    and within the precision of its ε, its bracket reaching below it."""
    acct = TrainingAccountant()
    rules = []
    for i in range(4):
        acct.step(noise_multiplier=1.5 - 0.1 * i, sample_rate=Q if i < 2 else 2 * Q,
                  steps=300)
        g = acct.epsilon(1e-5)
        ref = acc.dpsgd_schedule_epsilon(acct.phases, delta=1e-5)
        assert g.bracket is not None and ref.bracket is not None
        assert ref.bracket[0] <= g.epsilon <= ref.epsilon * (1.0 + 1e-3)
        assert g.bracket[0] <= ref.epsilon
        rules.append(g.rule)
    assert rules[0] != INCREMENTAL_RULE and rules[1:] == [INCREMENTAL_RULE] * 3
    assert acct._running["epsilon", 1e-5][1].builds >= 1


def test_delta_asks_every_epoch_are_answered_by_a_running_composition_as_tight() -> None:
    """δ at a fixed ε after every epoch: the first ask by the one-shot schedule
    accountant; later ones by running compositions tilted at ε — each a
    certified upper bound above the one-shot's certified lower end, no looser than its upper
    bound, with a bracket reaching below it."""
    acct = TrainingAccountant()
    rules = []
    for _ in range(5):
        acct.step(noise_multiplier=1.1, sample_rate=Q, steps=1406)
        g = acct.delta(1.0)
        ref = acc.dpsgd_schedule_delta(acct.phases, epsilon=1.0)
        assert g.bracket is not None and ref.bracket is not None
        lo, up = g.bracket
        assert up == g.delta and ref.bracket[0] <= up <= float(ref.delta) * (1.0 + 2e-3)
        assert lo <= float(ref.delta)
        assert acct.delta(1.0) is g  # asked again: the cache
        rules.append(g.rule)
    assert rules[0] != INCREMENTAL_RULE and rules[-1] == INCREMENTAL_RULE
    running = acct._running["delta", 1.0][1]
    assert isinstance(running, IncrementalDelta) and 1 <= running.builds <= 3


def test_delta_asks_far_in_the_tail_are_answered_by_a_running_composition() -> None:
    """δ(2) after each of the benchmark's first 50-phase schedule's phases (1e-27 to 1e-25,
    far below FAR_TAIL): from the second ask on a running composition answers (before, the
    one-shot accountant did: 300-500 ms an ask), each answer above the one-shot's certified
    lower end and within 2e-3 of its upper bound."""
    acct = TrainingAccountant()
    rules = []
    for i in range(4):
        acct.step(noise_multiplier=1.5 - 0.01 * i, sample_rate=Q, steps=300)
        g = acct.delta(2.0)
        assert g.bracket is not None and g.delta < 1e-24
        if i >= 2:
            ref = acc.dpsgd_schedule_delta(acct.phases, epsilon=2.0)
            assert ref.bracket is not None
            assert ref.bracket[0] <= g.delta <= float(ref.delta) * (1.0 + 2e-3)
            assert g.bracket[0] <= float(ref.delta)
        rules.append(g.rule)
    assert rules[0] != INCREMENTAL_RULE and rules[1:] == [INCREMENTAL_RULE] * 3
