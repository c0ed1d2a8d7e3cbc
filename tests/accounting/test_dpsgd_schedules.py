"""DP-SGD beyond one number: arrays of δ and ε, δ at ε, schedules of phases (σ, q, T)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    DPSGDPhase,
    dpsgd_delta,
    dpsgd_epsilon,
    dpsgd_schedule_delta,
    dpsgd_schedule_epsilon,
)
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_delta
from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon, rdp_schedule_epsilon
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.profiles.gaussian import gaussian_delta

RUN = {"noise_multiplier": 1.1, "sample_rate": 0.01, "steps": 300}


def test_an_array_of_delta_gives_one_certified_epsilon_each() -> None:
    """The issue's call: our message said arrays were accepted, NumPy raised a bare
    TypeError."""
    deltas = np.array([1e-5, 1e-6])
    g = dpsgd_epsilon(**RUN, delta=deltas)
    assert isinstance(g.epsilon, np.ndarray) and g.epsilon.shape == (2,)
    assert np.array_equal(g.delta, deltas)
    assert g.bracket is not None
    lo, hi = (np.asarray(b) for b in g.bracket)
    for i, d in enumerate(deltas):
        one = dpsgd_epsilon(**RUN, delta=float(d))
        assert g.epsilon[i] == one.epsilon
        assert one.bracket is not None
        assert (lo[i], hi[i]) == one.bracket
    assert g.epsilon[1] > g.epsilon[0]  # less δ, more ε


@pytest.mark.parametrize("accountant", DPSGD_ACCOUNTANTS)
def test_arrays_keep_their_shape_under_every_accountant(accountant: str) -> None:
    deltas = [[1e-3, 1e-5], [1e-7, 1e-9]]
    g = dpsgd_epsilon(**RUN, delta=deltas, accountant=accountant)
    eps = np.asarray(g.epsilon)
    assert eps.shape == (2, 2)
    assert np.all(np.diff(eps.ravel()) >= 0)
    d = dpsgd_delta(**RUN, epsilon=np.array([0.5, 1.0, 2.0]), accountant=accountant)
    dl = np.asarray(d.delta)
    assert dl.shape == (3,) and np.all(np.diff(dl) <= 0)


def test_delta_at_epsilon_inverts_epsilon_at_delta() -> None:
    """ε(δ₀) is an upper bound, so the true δ at it is ≤ δ₀: the certified lower end of the δ
    bracket must be ≤ δ₀, and the upper end close to δ₀."""
    for delta in (1e-5, 1e-9):
        eps = float(dpsgd_epsilon(**RUN, delta=delta).epsilon)
        g = dpsgd_delta(**RUN, epsilon=eps)
        assert g.bracket is not None
        assert float(g.bracket[0]) <= delta
        assert delta * 0.98 <= float(g.delta) <= delta * 1.02


def test_delta_closed_forms_are_exact() -> None:
    one = dpsgd_delta(noise_multiplier=0.8, sample_rate=0.01, steps=1, epsilon=0.5)
    ref = subsampled_gaussian_delta(0.5, 1 / 0.8, 0.01)
    assert one.kind == "exact" and ref <= float(one.delta) <= ref * (1 + 1e-11)
    full = dpsgd_delta(noise_multiplier=2.0, sample_rate=1.0, steps=100, epsilon=1.0)
    ref = float(gaussian_delta(1.0, 2.0 / 10.0))
    assert full.kind == "exact" and ref <= float(full.delta) <= ref * (1 + 1e-11)


def test_a_schedule_of_one_phase_is_the_plain_call() -> None:
    g = dpsgd_schedule_epsilon([(1.1, 0.01, 300)], delta=1e-5)
    assert g.epsilon == dpsgd_epsilon(**RUN, delta=1e-5).epsilon
    d = dpsgd_schedule_delta([DPSGDPhase(1.1, 0.01, 300)], epsilon=1.0)
    assert d.delta == dpsgd_delta(**RUN, epsilon=1.0).delta


@pytest.mark.parametrize("accountant", ["pld", "rdp", "gdp-clt"])
def test_split_phases_compose_to_the_whole_run(accountant: str) -> None:
    whole = float(dpsgd_epsilon(**RUN, delta=1e-6, accountant=accountant).epsilon)
    split = float(
        dpsgd_schedule_epsilon(
            [(1.1, 0.01, 100), (1.1, 0.01, 200)], delta=1e-6, accountant=accountant
        ).epsilon
    )
    assert split == pytest.approx(whole, rel=2e-3)


def test_a_schedule_costs_more_than_each_of_its_phases_and_inf_noise_costs_nothing() -> None:
    phases = [(1.1, 0.004, 2000), (0.9, 0.016, 500)]
    g = dpsgd_schedule_epsilon(phases, delta=1e-5)
    for sigma, q, t in phases:
        assert float(g.epsilon) > float(
            dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=t, delta=1e-5).epsilon
        )
    assert g.bracket is not None and float(g.bracket[0]) <= float(g.epsilon)
    same = dpsgd_schedule_epsilon([*phases, (math.inf, 0.5, 10**6)], delta=1e-5)
    assert same.epsilon == g.epsilon
    rdp = dpsgd_schedule_epsilon(phases, delta=1e-5, accountant="rdp")
    assert float(rdp.epsilon) > float(g.epsilon)  # certified, looser


def test_rdp_schedule_sums_the_curves() -> None:
    one = rdp_dpsgd_epsilon(1.1, 0.01, 300, 1e-5)
    two = rdp_schedule_epsilon([(1.1, 0.01, 120), (1.1, 0.01, 180)], 1e-5)
    assert float(two.epsilon) == pytest.approx(float(one.epsilon), rel=1e-9)


def test_opacus_style_history_and_dataclass_phases() -> None:
    history = [(1.0, 0.01, 50), (1.0, 0.02, 50)]  # Opacus's accountant.history
    g = dpsgd_schedule_epsilon(history, delta=1e-5)
    h = dpsgd_schedule_epsilon([DPSGDPhase(*p) for p in history], delta=1e-5)
    assert g.epsilon == h.epsilon


BAD_PHASES: list[tuple[object, type[Exception], str]] = [
    ([], InvalidParameterError, "at least one phase"),
    (None, ParameterTypeError, "phases must be"),
    ("1,0.1,10", ParameterTypeError, "phases must be"),
    ([(1.0, 0.1)], ParameterTypeError, r"phases\[0\]"),
    ([(1.0, 0.1, 10), (1.0, 1.5, 10)], InvalidParameterError, r"phases\[1\]\.sample_rate"),
    ([(1.0, 0.1, 10), (-1.0, 0.1, 10)], InvalidParameterError, r"phases\[1\]\.noise_mult"),
    ([(1.0, 0.1, 2.5)], InvalidParameterError, r"phases\[0\]\.steps"),
    ([(1.0, 0.1, 10**12), (1.0, 0.1, 1)], InvalidParameterError, "at most"),
    ([(np.array([1.0, 2.0]), 0.1, 10)], InvalidParameterError, "single number"),
]


@pytest.mark.parametrize(("phases", "error", "match"), BAD_PHASES)
def test_bad_phases_are_typed_errors(phases: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        dpsgd_schedule_epsilon(phases, delta=1e-5)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
        ({"epsilon": math.inf}, InvalidParameterError, "epsilon"),
        ({"epsilon": [0.5, math.nan]}, InvalidParameterError, "epsilon"),
        ({"epsilon": "1"}, ParameterTypeError, "epsilon"),
        ({"accountant": "moments"}, Exception, "accountant"),
    ],
)
def test_bad_delta_calls_are_typed_errors(
    change: dict[str, object], error: type[Exception], match: str
) -> None:
    kw: dict[str, object] = {**RUN, "epsilon": 1.0}
    kw.update(change)
    with pytest.raises(error, match=match):
        dpsgd_delta(**kw)  # type: ignore[arg-type]
