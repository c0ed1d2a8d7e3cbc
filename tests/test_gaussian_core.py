"""Issue 2 contract: exact Gaussian profiles and calibrations against mpmath references."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import approxdp
from approxdp import (
    CALIBRATION_METHODS,
    InvalidParameterError,
    NotPrivateError,
    NotPrivateWarning,
    ParameterTypeError,
    UnknownMethodError,
    calibrate_gaussian,
    classical_failure_threshold,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_log_pdp_delta,
    gaussian_pdp_delta,
)

REF = Path(__file__).parent / "reference"
mp.mp.dps = 80


def _rows(name: str) -> list[dict[str, str]]:
    with open(REF / name) as fh:
        return list(csv.DictReader(fh))


def exact_profile(eps: float, sigma: float, pdp: bool = False) -> mp.mpf:
    e, s = mp.mpf(eps), mp.mpf(sigma)
    p, q = 1 / (2 * s) - e * s, -1 / (2 * s) - e * s
    return mp.ncdf(p) + mp.ncdf(q) if pdp else mp.ncdf(p) - mp.exp(e) * mp.ncdf(q)


@pytest.mark.parametrize("row", _rows("gaussian_profile.csv"), ids=lambda r: r["epsilon"])
def test_profiles_match_reference(row: dict[str, str]) -> None:
    e, s = float(row["epsilon"]), float(row["sigma"])
    for fn, key in (
        (gaussian_log_delta, "log_delta_dp"),
        (gaussian_log_pdp_delta, "log_delta_pdp"),
    ):
        want = float(row[key])
        got = fn(e, s)
        if math.isinf(want):
            assert got == want
        elif want > -690:  # δ >= 1e-300: relative error of δ <= 1e-10
            assert abs(got - want) <= 1e-10, (e, s, got, want)
        else:  # below 1e-300: log space, relative error of log δ
            assert abs(got - want) <= 1e-12 * abs(want)


def _calibration_params() -> list[object]:
    out: list[object] = []
    for r in _rows("gaussian_calibration.csv"):
        if (
            r["method"] == "zhao-m1"
            and float(r["epsilon"]) == 1e-12
            and float(r["delta"]) == 5.6e-7
        ):
            # Known: 1.1e-11 relative here (t = inverfc(s0) with s0 within 1e-6 of 1); see notes.
            out.append(pytest.param(r, marks=pytest.mark.xfail(strict=True, reason="M1 corner")))
        else:
            out.append(r)
    return out


@pytest.mark.parametrize("row", _calibration_params())
def test_calibration_matches_reference(row: dict[str, str]) -> None:
    e, d, method = float(row["epsilon"]), float(row["delta"]), row["method"]
    want = float(row["sigma"])
    got = calibrate_gaussian(e, d, method=method, allow_non_private=True)
    if method in ("optimal", "pdp-optimal"):
        # never below the exact optimum, and within 1e-10 of it
        assert got >= want * (1 - 1e-15)
        assert (got - want) / want <= 1e-10
        assert exact_profile(e, got, pdp=method == "pdp-optimal") <= d
    else:
        assert abs(got - want) / want <= 1e-12


@pytest.fixture(autouse=True)
def _quiet_not_private() -> object:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def test_edge_cases() -> None:
    assert gaussian_delta(1.0, math.inf) == 0.0
    assert gaussian_delta(1.0, 2.0, 0.0) == 0.0
    assert gaussian_delta(math.inf, 2.0) == 0.0
    assert isinstance(gaussian_delta(1.0, 2.0), float)
    assert gaussian_delta(np.array([0.5, 1.0]), np.array([[1.0], [2.0]])).shape == (2, 2)
    assert gaussian_epsilon(1e6, 0.5) == 0.0
    assert calibrate_gaussian(1.0, 1e-5, 0.0) == 0.0
    assert calibrate_gaussian(1.0, 1e-5, 3.0) >= 3 * calibrate_gaussian(1.0, 1e-5)


def test_zero_epsilon_and_thresholds() -> None:
    s0 = calibrate_gaussian(0.0, 1e-5)
    assert math.isclose(
        s0, 1 / (2 * math.sqrt(2) * float(mp.erfinv(mp.mpf("1e-5")))), rel_tol=1e-12
    )
    assert exact_profile(0.0, s0) <= 1e-5
    # SPEC §3, checked at 60 digits: exact thresholds (the paper rounds them up).
    for d, g_dr, g_d6 in [
        (1e-3, 7.4635, 8.5124),
        (1e-4, 7.9910, 8.9927),
        (1e-5, 8.4198, 9.3913),
        (1e-6, 8.7821, 9.7328),
    ]:
        assert round(classical_failure_threshold(d), 4) == g_dr
        assert round(classical_failure_threshold(d, "dwork-2006"), 4) == g_d6


def test_table_one_row_and_not_private() -> None:
    assert round(calibrate_gaussian(10, 0.01), 4) == 0.3501
    with pytest.raises(NotPrivateError, match=r"dwork-roth-2014 is not .*use method='optimal'"):
        calibrate_gaussian(10, 1e-5, method="dwork-roth-2014")
    with pytest.warns(NotPrivateWarning):
        import warnings

        warnings.simplefilter("always", NotPrivateWarning)
        assert (
            round(calibrate_gaussian(10, 0.01, method="dwork-roth-2014", allow_non_private=True), 4)
            == 0.3108
        )


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 100), st.floats(-250, -0.5))
def test_orderings_and_round_trip(eps: float, log10_delta: float) -> None:
    d = 10.0**log10_delta
    opt = calibrate_gaussian(eps, d)
    m1 = calibrate_gaussian(eps, d, method="zhao-m1")
    m2 = calibrate_gaussian(eps, d, method="zhao-m2")
    assert opt < m1 < m2  # paper Ineq. 6, 8
    assert opt < calibrate_gaussian(0.0, d) * (1 + 1e-12)  # Thm 3 ①
    assert calibrate_gaussian(eps, d, method="pdp-optimal") >= opt
    if eps <= 1:  # Ineq. 10
        assert (
            m2
            < calibrate_gaussian(eps, d, method="dwork-roth-2014")
            < calibrate_gaussian(eps, d, method="dwork-2006")
        )
    back = gaussian_epsilon(opt, d)
    assert back <= eps * (1 + 1e-9) and gaussian_delta(back, opt) <= d


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 50), st.floats(1e-6, 50), st.floats(1e-2, 1e3))
def test_profile_decreasing(e1: float, e2: float, sigma: float) -> None:
    lo, hi = sorted((e1, e2))
    assert gaussian_delta(hi, sigma) <= gaussian_delta(lo, sigma)
    assert gaussian_delta(lo, sigma * 1.5) <= gaussian_delta(lo, sigma)
    assert gaussian_pdp_delta(lo, sigma) >= gaussian_delta(lo, sigma)


def test_paper_corner_m1_vs_opt() -> None:
    # SPEC: Table II's "M1 slightly greater than DP-OPT" fails for small ε (M1/OPT ≈ 98).
    ratio = calibrate_gaussian(1e-3, 0.1, method="zhao-m1") / calibrate_gaussian(1e-3, 0.1)
    assert 90 < ratio < 110


BAD = [
    ({"epsilon": -1.0, "delta": 1e-5}, InvalidParameterError, "epsilon"),
    ({"epsilon": math.nan, "delta": 1e-5}, InvalidParameterError, "epsilon=nan"),
    ({"epsilon": math.inf, "delta": 1e-5}, InvalidParameterError, "epsilon"),
    ({"epsilon": 1.0, "delta": 0.0}, InvalidParameterError, r"delta must be in \(0, 1\)"),
    ({"epsilon": 1.0, "delta": 1.0}, InvalidParameterError, "delta"),
    ({"epsilon": 1.0, "delta": 1e-5, "sensitivity": -1.0}, InvalidParameterError, "sensitivity"),
    ({"epsilon": "1", "delta": 1e-5}, ParameterTypeError, "epsilon"),
    ({"epsilon": None, "delta": 1e-5}, ParameterTypeError, "epsilon"),
    ({"epsilon": 1.0, "delta": 1e-5, "method": "gauss"}, UnknownMethodError, "unknown method"),
    ({"epsilon": [1.0, -1.0], "delta": 1e-5}, InvalidParameterError, "1 of 2"),
    ({"epsilon": 0.0, "delta": 1e-5, "method": "zcdp"}, InvalidParameterError, "epsilon"),
    ({"epsilon": 1.0, "delta": 0.7, "method": "zhao-m2"}, InvalidParameterError, "zhao-m2"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD)
def test_bad_input(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        calibrate_gaussian(**kwargs)  # type: ignore[arg-type]


def test_public_api() -> None:
    assert set(CALIBRATION_METHODS) == {
        "optimal",
        "pdp-optimal",
        "zhao-m1",
        "zhao-m2",
        "zhao-m3",
        "zhao-m4",
        "dwork-2006",
        "dwork-roth-2014",
        "wang-lecture",
        "zcdp",
    }
    for name in approxdp.__all__:
        assert hasattr(approxdp, name)
    with pytest.raises(UnknownMethodError):
        gaussian_epsilon(1.0, 1e-5, notion="rdp")  # type: ignore[arg-type]
