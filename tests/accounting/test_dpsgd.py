"""DP-SGD accounting: the API, its closed-form corners, monotonicity, calibration, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    dpsgd_epsilon,
)
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_epsilon
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.profiles.gaussian import gaussian_epsilon

EXAMPLE = {"noise_multiplier": 1.1, "sample_rate": 256 / 60000, "steps": 14063, "delta": 1e-5}


def test_the_mnist_example() -> None:
    g = dpsgd_epsilon(**EXAMPLE)
    assert g.kind == "upper bound"
    assert 2.380 < g.epsilon < 2.385  # true value ~2.3817 (dp_accounting PLD at 1e-5: 2.38169)
    assert g.bracket is not None
    assert g.bracket[0] < 2.3817 < g.bracket[1] == g.epsilon


def test_one_step_and_no_subsampling_are_exact() -> None:
    one = dpsgd_epsilon(noise_multiplier=0.8, sample_rate=0.01, steps=1, delta=1e-6)
    assert one.kind == "exact"
    assert one.epsilon == subsampled_gaussian_epsilon(1e-6, 1 / 0.8, 0.01)
    full = dpsgd_epsilon(noise_multiplier=2.0, sample_rate=1.0, steps=100, delta=1e-6)
    assert full.kind == "exact"
    assert full.epsilon == float(gaussian_epsilon(2.0 / 10.0, 1e-6))


def test_without_replacement_uses_substitution_sensitivity() -> None:
    """One step without replacement: the remove-direction pair with Δ = 2C."""
    wor = dpsgd_epsilon(
        noise_multiplier=2.0, sample_rate=0.05, steps=1, delta=1e-6, sampling="without-replacement"
    )
    assert wor.epsilon == subsampled_gaussian_epsilon(1e-6, 2 / 2.0, 0.05, "remove")
    many = dpsgd_epsilon(
        noise_multiplier=2.0,
        sample_rate=0.05,
        steps=500,
        delta=1e-6,
        sampling="without-replacement",
    )
    poisson = dpsgd_epsilon(noise_multiplier=2.0, sample_rate=0.05, steps=500, delta=1e-6)
    assert many.epsilon > poisson.epsilon  # twice the sensitivity


@settings(max_examples=12, deadline=None)
@given(
    sigma=st.floats(0.6, 8.0),
    q=st.floats(1e-3, 0.5),
    steps=st.integers(2, 3000),
    factor=st.floats(1.05, 3.0),
)
def test_monotone_in_steps_rate_and_noise(
    sigma: float, q: float, steps: int, factor: float
) -> None:
    base = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=1e-6).epsilon
    more_steps = dpsgd_epsilon(
        noise_multiplier=sigma, sample_rate=q, steps=int(steps * factor) + 1, delta=1e-6
    ).epsilon
    more_rate = dpsgd_epsilon(
        noise_multiplier=sigma, sample_rate=min(1.0, q * factor), steps=steps, delta=1e-6
    ).epsilon
    less_noise = dpsgd_epsilon(
        noise_multiplier=sigma / factor, sample_rate=q, steps=steps, delta=1e-6
    ).epsilon
    # each is a certified upper bound within ~0.1 % of the truth: allow that much slack
    assert more_steps >= base * (1 - 2e-3)
    assert more_rate >= base * (1 - 2e-3)
    assert less_noise >= base * (1 - 2e-3)


def test_calibration_is_private_and_tight() -> None:
    kw = {"delta": 1e-5, "sample_rate": 256 / 60000, "steps": 14063}
    sigma = calibrate_dpsgd(epsilon=3.0, **kw)
    at = dpsgd_epsilon(noise_multiplier=sigma, **kw)
    assert at.epsilon <= 3.0
    below = dpsgd_epsilon(noise_multiplier=sigma * (1 - 1e-3), **kw)
    assert below.epsilon > 3.0  # within 0.1 % of the least certified σ
    assert 0.96 < sigma < 0.975


@pytest.mark.parametrize(
    "kw",
    [
        {"sample_rate": 1.0, "steps": 10},
        {"sample_rate": 0.01, "steps": 1},
        {"sample_rate": 0.1, "steps": 100, "sampling": "without-replacement"},
        {"sample_rate": 0.02, "steps": 2000},
    ],
)
def test_calibration_round_trip(kw: dict[str, object]) -> None:
    sigma = calibrate_dpsgd(epsilon=1.0, delta=1e-6, **kw)  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma, delta=1e-6, **kw).epsilon <= 1.0  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma * 0.995, delta=1e-6, **kw).epsilon > 1.0  # type: ignore[arg-type]


def test_accountants_side_by_side() -> None:
    rows = {r.accountant: r for r in compare_dpsgd_accountants(**EXAMPLE)}
    assert set(rows) == set(DPSGD_ACCOUNTANTS)
    pld = float(rows["pld"].guarantee.epsilon)
    assert rows["rdp"].guarantee.kind == "upper bound"
    assert float(rows["rdp"].guarantee.epsilon) > pld  # certified but looser (~2.6 here)
    assert rows["gdp-clt"].guarantee.kind == "approximation"
    assert float(rows["amplify+compose"].guarantee.epsilon) > 10 * pld
    assert all(r.seconds >= 0 for r in rows.values())


def test_a_billion_steps_answer() -> None:
    g = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=256 / 60000, steps=10**9, delta=1e-5)
    assert math.isfinite(g.epsilon)
    assert g.epsilon > dpsgd_epsilon(
        noise_multiplier=1.1, sample_rate=256 / 60000, steps=10**6, delta=1e-5
    ).epsilon


BAD: list[tuple[dict[str, object], type[Exception], str]] = [
    ({"noise_multiplier": 0.0}, InvalidParameterError, "noise_multiplier"),
    ({"noise_multiplier": -1.0}, InvalidParameterError, "noise_multiplier"),
    ({"noise_multiplier": math.nan}, InvalidParameterError, "noise_multiplier"),
    ({"noise_multiplier": "1"}, ParameterTypeError, "noise_multiplier"),
    ({"sample_rate": 0.0}, InvalidParameterError, "sample_rate"),
    ({"sample_rate": 1.5}, InvalidParameterError, "sample_rate"),
    ({"sample_rate": math.nan}, InvalidParameterError, "sample_rate"),
    ({"steps": 0}, InvalidParameterError, "steps"),
    ({"steps": 1.5}, InvalidParameterError, "steps"),
    ({"steps": True}, ParameterTypeError, "steps"),
    ({"steps": "10"}, ParameterTypeError, "steps"),
    ({"steps": 10**13}, InvalidParameterError, "steps"),
    ({"delta": 0.0}, InvalidParameterError, "delta"),
    ({"delta": 1.0}, InvalidParameterError, "delta"),
    ({"sampling": "shuffle"}, UnknownMethodError, "sampling"),
    ({"accountant": "moments"}, UnknownMethodError, "accountant"),
    ({"precision": 0.5}, InvalidParameterError, "precision"),
]


@pytest.mark.parametrize(("change", "error", "name"), BAD)
def test_bad_input(change: dict[str, object], error: type[Exception], name: str) -> None:
    kw: dict[str, object] = dict(EXAMPLE)
    kw.update(change)
    with pytest.raises(error, match=name):
        dpsgd_epsilon(**kw)  # type: ignore[arg-type]


def test_bad_calibration_input() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        calibrate_dpsgd(epsilon=0.0, delta=1e-5, sample_rate=0.01, steps=10)
    with pytest.raises(InvalidParameterError, match="steps"):
        calibrate_dpsgd(epsilon=1.0, delta=1e-5, sample_rate=0.01, steps=0)


def test_numpy_integer_steps_and_huge_t_take_the_tighter_certified_bound() -> None:
    import numpy as np

    g = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=0.01, steps=np.int64(100), delta=1e-5)
    assert g.epsilon == dpsgd_epsilon(
        noise_multiplier=1.1, sample_rate=0.01, steps=100, delta=1e-5
    ).epsilon
    # beyond 1e8 steps the PLD grid coarsens; RDP (also certified, O(1) in T) caps it
    huge = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10**12, delta=1e-5)
    rdp = dpsgd_epsilon(
        noise_multiplier=1.0, sample_rate=0.01, steps=10**12, delta=1e-5, accountant="rdp"
    )
    assert huge.epsilon <= rdp.epsilon and huge.kind == "upper bound"


def test_calibration_at_tiny_delta_is_tight() -> None:
    """The search tilted every pass at the target ε; where the answer lay far below it, the
    window missed it and σ came out 29x too large (72.2 instead of ~2.48)."""
    kw = {"delta": 3.71e-17, "sample_rate": 0.0236, "steps": 155}
    sigma = calibrate_dpsgd(epsilon=1.121, **kw)  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma, **kw).epsilon <= 1.121  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma * 0.995, **kw).epsilon > 1.121  # type: ignore[arg-type]


@pytest.mark.parametrize(("power", "slope"), [(1.0, -1.0), (1.3, -1.3), (2.5, -1.0), (0.4, -3.0)])
def test_sigma_search_finds_the_least_sigma_whatever_its_first_slope(
    power: float, slope: float
) -> None:
    """The σ search steps along a slope (the central-limit one at first, then the one it
    measures): right or wrong, it returns a σ at or above the least one within precision/20,
    and with the right slope it needs few evaluations."""
    from approxdp.accounting.dpsgd.calibration import _bisect_sigma

    calls: list[float] = []

    def eps_of(sigma: float) -> float:
        calls.append(sigma)
        return 3.0 * (5.0 / sigma) ** power

    target, precision = 1.0, 1e-3
    least = 5.0 * 3.0 ** (1.0 / power)
    for sigma0 in (0.3 * least, least, 4.0 * least):
        calls.clear()
        sigma = _bisect_sigma(eps_of, target, sigma0, precision, slope=slope)
        used = len(calls)
        assert eps_of(sigma) <= target
        assert least * (1.0 - 1e-12) <= sigma <= least * (1.0 + precision / 20.0)
        if slope == -power:
            assert used <= 5


def test_calibration_reuses_the_grid_search_pass_and_stays_certified() -> None:
    """search_grid_epsilon's ε is the certified ε at σ0 on its grid (the search's first
    point), and the calibrated σ is certified by dpsgd_epsilon, 0.1 % less is not."""
    from approxdp.accounting.pld.accounting import epsilon_by_direction, search_grid_epsilon
    from approxdp.events import GaussianEvent, SubsampledEvent

    items = [(SubsampledEvent(GaussianEvent(sigma=1.1), 0.004), 10_000)]
    h, names, eps = search_grid_epsilon(items, 1e-5)
    by_dir = epsilon_by_direction(items, 1e-5, h=h, directions=names)
    assert eps == pytest.approx(max(by_dir.values()), rel=1e-4)
    kw = {"delta": 1e-5, "sample_rate": 0.004, "steps": 10_000}
    sigma = calibrate_dpsgd(epsilon=eps, **kw)  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma, **kw).epsilon <= eps  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma / 1.001, **kw).epsilon > eps  # type: ignore[arg-type]
