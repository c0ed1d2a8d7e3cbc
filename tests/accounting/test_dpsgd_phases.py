"""Schedules of DP-SGD phases: (ε, δ) under each accountant, the forms phases may take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import approxdp as dp
from approxdp.accounting.dpsgd.phases import (
    Phase,
    check_phases,
    phase_events,
    phases_delta,
    phases_epsilon,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.events import GaussianEvent, SubsampledEvent


def test_phases_in_every_form() -> None:
    forms: list[Any] = [
        [(1.0, 0.1, 5), (2.0, 1.0, 3)],
        [Phase(1.0, 0.1, 5), Phase(2.0, 1.0, 3)],
        [{"noise_multiplier": 1.0, "sample_rate": 0.1, "steps": 5}, [2.0, 1.0, 3.0]],
    ]
    for form in forms:
        assert check_phases(form) == [Phase(1.0, 0.1, 5), Phase(2.0, 1.0, 3)]
    assert phase_events(check_phases(forms[0])) == [
        (SubsampledEvent(GaussianEvent(1.0), 0.1), 5), (GaussianEvent(2.0), 3)]
    with pytest.raises(InvalidParameterError, match=r"phases\[0\] must have .* 'steps'"):
        check_phases([{"noise_multiplier": 1.0, "sample_rate": 0.1}])


def test_a_split_phase_costs_what_the_whole_does() -> None:
    one = phases_epsilon([(1.1, 0.01, 1000)], 1e-5)
    two = phases_epsilon([(1.1, 0.01, 400), (1.1, 0.01, 600)], 1e-5)
    assert two.epsilon == pytest.approx(one.epsilon, rel=2e-3)
    assert two.bracket[0] <= one.epsilon and one.bracket[0] <= two.epsilon


def test_each_accountant_and_arrays() -> None:
    phases = [(1.0, 0.02, 300), (1.5, 0.05, 200)]
    pld = phases_epsilon(phases, 1e-6)
    rdp = phases_epsilon(phases, 1e-6, accountant="rdp")
    clt = phases_epsilon(phases, 1e-6, accountant="gdp-clt")
    assert pld.kind == rdp.kind == "upper bound" and clt.kind == "approximation"
    assert pld.epsilon < rdp.epsilon
    many = phases_epsilon(phases, [1e-4, 1e-6], accountant="rdp")
    assert many.epsilon[1] == rdp.epsilon and many.epsilon[0] < rdp.epsilon
    d = phases_delta(phases, np.array([pld.epsilon]))
    assert d.delta.shape == (1,) and d.delta[0] <= 1.01e-6
    # without replacement: μ = 2/σ per step, more loss than Poisson at the same σ
    wor = phases_epsilon(phases, 1e-6, sampling="without-replacement")
    assert wor.epsilon > pld.epsilon
    assert phases_epsilon([], 1e-6).epsilon == 0.0
    exact = phases_epsilon([(3.0, 1.0, 9)], 1e-6)  # nine σ=3 Gaussians are one σ=1
    assert exact.epsilon == pytest.approx(float(dp.gaussian_epsilon(1.0, 1e-6)), rel=1e-9)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (([(1.0, 0.1, 5)], 1e-5), {"accountant": "prv"}, UnknownMethodError, "accountant"),
        (([(1.0, 0.1, 5)], 1e-5), {"sampling": "shuffle"}, UnknownMethodError, "sampling"),
        (([(1.0, 0.1, 5)], 1e-5), {"precision": 1.0}, InvalidParameterError, "precision"),
        (([(1.0, 0.1, 5)], 0.0), {}, InvalidParameterError, "delta must be in"),
        (([(float("inf"), 0.1, 5), (1.0, 0.1, 0)], 1e-5), {}, InvalidParameterError,
         r"steps must be an integer"),
        ((7, 1e-5), {}, ParameterTypeError, "must be a sequence"),
        (([(1.0, 0.1, 5, 1)], 1e-5), {}, ParameterTypeError, r"phases\[0\] must be a Phase"),
    ],
)
def test_bad_schedules(args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception],
                       message: str) -> None:
    with pytest.raises(error, match=message):
        phases_epsilon(*args, **kwargs)
