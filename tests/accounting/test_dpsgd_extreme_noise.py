"""Every DP-SGD accountant at extreme and invalid noise: one typed error or one consistent,
correct answer (issue 22 §4: amplify+compose raised ZeroDivisionError at σ = ∞, GDP-CLT "math
domain error" at 1e300, RDP gave ε = ∞ at 1e200 while 0 at 1e100)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    compare_dpsgd_accountants,
    dpsgd_delta,
    dpsgd_epsilon,
)
from approxdp.accounting.dpsgd.gdp_clt import gdp_clt_epsilon, gdp_clt_mu
from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon
from approxdp.accounting.rdp.subsampled_gaussian import rdp_subsampled_gaussian
from approxdp.errors import InvalidParameterError, ParameterTypeError

HUGE = [math.inf, 1e300, 1e200, 1e155, 1e100, 1e20, 1e8]
SAMPLINGS = ["poisson", "without-replacement"]
KW = {"sample_rate": 0.01, "steps": 10, "delta": 1e-5}


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("accountant", DPSGD_ACCOUNTANTS)
@pytest.mark.parametrize("sigma", HUGE)
def test_huge_noise_is_zero_epsilon_in_every_accountant(
    sigma: float, accountant: str, sampling: str
) -> None:
    """Here the run's total variation (≤ T·q·μ/√(2π)) is below δ: it is exactly (0, δ)-DP."""
    g = dpsgd_epsilon(noise_multiplier=sigma, accountant=accountant, sampling=sampling, **KW)
    assert g.epsilon == 0.0
    if accountant != "gdp-clt":
        assert g.kind == "exact" and g.bracket == (0.0, 0.0)
    d = dpsgd_delta(
        noise_multiplier=sigma, sample_rate=0.01, steps=10, epsilon=0.0,
        accountant=accountant, sampling=sampling,
    )
    assert 0.0 <= float(d.delta) <= 1e-5


@pytest.mark.parametrize("accountant", DPSGD_ACCOUNTANTS)
def test_epsilon_falls_steadily_as_noise_grows_to_1e300(accountant: str) -> None:
    sigmas = np.geomspace(0.5, 1e300, 40)
    eps = [
        float(dpsgd_epsilon(noise_multiplier=s, sample_rate=0.01, steps=10**6, delta=1e-5,
                            accountant=accountant).epsilon)
        for s in sigmas
    ]
    assert all(math.isfinite(e) for e in eps)
    assert all(a >= b * (1 - 2e-3) for a, b in itertools.pairwise(eps))
    assert eps[-1] == 0.0


def test_the_issue_commands_no_longer_crash() -> None:
    for sigma in (math.inf, 1e300):
        rows = compare_dpsgd_accountants(noise_multiplier=sigma, **KW)
        assert [r.accountant for r in rows] == list(DPSGD_ACCOUNTANTS)
        assert all(r.guarantee.epsilon == 0.0 for r in rows)


def test_rdp_and_clt_stay_finite_at_huge_noise_on_their_own() -> None:
    """The public RDP and CLT functions, without the accountants' total-variation shortcut."""
    for sigma in (1e100, 1e155, 1e200, 1e300):
        rdp = rdp_subsampled_gaussian(sigma, 0.01, [1.5, 2.0, 64.0])
        assert np.all(np.isfinite(rdp)) and np.all(rdp > 0.0)
        assert rdp_dpsgd_epsilon(sigma, 0.01, 10**12, 1e-5).epsilon == 0.0
        assert 0.0 < gdp_clt_mu(sigma, 0.01, 10**12) < 1e-90
        assert gdp_clt_epsilon(sigma, 0.01, 10**12, 1e-5).epsilon == 0.0
    # and the cap never raises a value that the series computed well
    moderate = rdp_subsampled_gaussian(3.0, 0.01, [1.5, 2.0, 64.0])
    assert np.all(moderate < np.array([1.5, 2.0, 64.0]) / (2 * 9.0))


BAD_SIGMA: list[tuple[object, type[Exception]]] = [
    (math.nan, InvalidParameterError),
    (-1.0, InvalidParameterError),
    (0.0, InvalidParameterError),
    (-math.inf, InvalidParameterError),
    (np.array([1.0, 2.0]), InvalidParameterError),
    ([1.0, 2.0], ParameterTypeError),
    ("1.0", ParameterTypeError),
    (None, ParameterTypeError),
    (True, ParameterTypeError),
]


@pytest.mark.parametrize("accountant", DPSGD_ACCOUNTANTS)
@pytest.mark.parametrize(("sigma", "error"), BAD_SIGMA)
def test_bad_noise_is_one_typed_error(
    sigma: object, error: type[Exception], accountant: str
) -> None:
    with pytest.raises(error, match="noise_multiplier") as info:
        dpsgd_epsilon(noise_multiplier=sigma, accountant=accountant, **KW)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"sample_rate": np.array([0.1, 0.2])}, "sample_rate"),
        ({"steps": np.array([10, 20])}, "steps"),
        ({"steps": [10, 20]}, "steps"),
        ({"steps": math.inf}, "steps"),
    ],
)
def test_arrays_where_one_number_is_meant_are_typed_errors(
    change: dict[str, object], name: str
) -> None:
    kw: dict[str, object] = {"noise_multiplier": 1.0, **KW}
    kw.update(change)
    with pytest.raises((InvalidParameterError, ParameterTypeError), match=name):
        dpsgd_epsilon(**kw)  # type: ignore[arg-type]
