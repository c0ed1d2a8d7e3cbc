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

REF = Path(__file__).resolve().parents[1] / "reference"
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


@pytest.mark.parametrize("row", _rows("gaussian_calibration.csv"))
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
    # Zhao et al. Remark 2, checked at 60 digits: exact thresholds (the paper rounds them up).
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
    assert opt < m1 < m2  # Zhao et al. Ineq. 6, 8
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
    # pDP implies DP (Zhao et al. Lemma 3); both are rounded to nearest, so near δ = 1 they may
    # tie to within an ulp either way (hypothesis found ε = 34.5, σ = 0.05: 1 − 2^-53 vs 1.0)
    assert gaussian_pdp_delta(lo, sigma) >= gaussian_delta(lo, sigma) * (1.0 - 4e-16)


def test_paper_corner_m1_vs_opt() -> None:
    # Zhao et al. Table II's "M1 slightly greater than DP-OPT" fails for small ε (M1/OPT ≈ 98).
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


# --- scalar fast path versus the vectorized path (issue 2: speed without a second contract) ---

OPT_ROWS = [r for r in _rows("gaussian_calibration.csv") if r["method"] == "optimal"]


def test_vectorized_optimal_meets_contract_on_reference_grid() -> None:
    """One array call over the reference grid: never below the optimum, within 1e-10 of it,
    and exactly private (mpmath at 80 digits)."""
    e = np.array([float(r["epsilon"]) for r in OPT_ROWS])
    d = np.array([float(r["delta"]) for r in OPT_ROWS])
    want = np.array([float(r["sigma"]) for r in OPT_ROWS])
    got = calibrate_gaussian(e, d)
    assert np.all(got >= want * (1 - 1e-15))
    assert np.all((got - want) / want <= 1e-10)
    for ei, di, gi in zip(e, d, got, strict=True):
        assert exact_profile(ei, gi) <= di


def test_bracketed_fallback_meets_contract_on_reference_grid() -> None:
    """The bracketed search that catches points Halley's method does not settle."""
    from approxdp.calibration.optimal import _sigma_optimal_dp_bracketed

    e = np.array([float(r["epsilon"]) for r in OPT_ROWS])
    d = np.array([float(r["delta"]) for r in OPT_ROWS])
    want = np.array([float(r["sigma"]) for r in OPT_ROWS])
    got = _sigma_optimal_dp_bracketed(e, d)
    assert np.all(got >= want * (1 - 1e-15))
    assert np.all((got - want) / want <= 1e-10)


def _domain_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    eps = 10 ** rng.uniform(-12, 6, n)
    delta = np.concatenate(
        [10 ** rng.uniform(-300, -1e-3, n - n // 4), 1 - 10 ** rng.uniform(-12, -0.31, n // 4)]
    )
    return eps, delta


def test_halley_settles_the_whole_domain() -> None:
    """Halley's method converges everywhere on a broad sample (ε in [1e-12, 1e6], δ from 1e-300
    to 1 - 1e-12), for DP and pDP, so the bracketed fallback stays a safety net (deterministic:
    fixed seed)."""
    from approxdp.calibration._optimal_halley import sigma_dp_halley
    from approxdp.calibration._pdp_halley import sigma_pdp_halley

    eps, delta = _domain_sample(4000, 5)
    assert np.all(sigma_dp_halley(eps, delta)[1])
    assert np.all(sigma_pdp_halley(eps, delta)[1])


@pytest.mark.parametrize("method", ["optimal", "pdp-optimal"])
def test_scalar_and_vectorized_optimal_agree(method: str) -> None:
    """The scalar fast path and one vectorized call give the same σ over the whole domain, with
    and without a sensitivity: both lie between the optimum and the point they aim at (half an
    evaluation margin, ~1e-12, above it), so they agree to ~2e-12 (in practice ~1e-13)."""
    eps, delta = _domain_sample(600, 6)
    for sens in (1.0, 3.5):
        vec = calibrate_gaussian(eps, delta, sens, method=method)
        one = np.array(
            [
                calibrate_gaussian(float(e), float(d), sens, method=method)
                for e, d in zip(eps, delta, strict=True)
            ]
        )
        assert np.all(np.abs(one - vec) <= 2e-12 * vec)
    zero = calibrate_gaussian(np.zeros(delta.size), delta)
    for d, z in zip(delta[::10], zero[::10], strict=True):
        assert math.isclose(calibrate_gaussian(0.0, float(d)), z, rel_tol=2e-12)


@pytest.mark.parametrize("method", ["optimal", "pdp-optimal"])
def test_scalar_and_vectorized_optimal_both_private(method: str) -> None:
    """Both paths are exactly private on a random sample (mpmath), incl. δ close to 1."""
    pdp = method == "pdp-optimal"
    eps, delta = _domain_sample(40, 7)
    vec = calibrate_gaussian(eps, delta, method=method)
    for e, d, v in zip(eps, delta, vec, strict=True):
        one = calibrate_gaussian(float(e), float(d), method=method)
        assert exact_profile(float(e), one, pdp) <= d
        assert exact_profile(float(e), float(v), pdp) <= d


def test_scalar_fast_path_types_and_fallbacks() -> None:
    # NumPy floats and ints take the fast path; its result agrees with the array path's.
    assert calibrate_gaussian(np.float64(1.0), 1e-5) == calibrate_gaussian(1.0, 1e-5)
    one = calibrate_gaussian(1, 1e-5, 2)
    assert math.isclose(one, float(calibrate_gaussian(np.array([1.0]), 1e-5, 2)[0]), rel_tol=2e-12)
    assert isinstance(calibrate_gaussian(1, 1e-5), float)
    # Out-of-range and odd inputs still reach the validating path and its typed errors.
    with pytest.raises(InvalidParameterError, match="epsilon"):
        calibrate_gaussian(math.nan, 1e-5)
    with pytest.raises(ParameterTypeError, match="allow_non_private"):
        calibrate_gaussian(1.0, 1e-5, allow_non_private="yes")  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="epsilon"):
        calibrate_gaussian(True, 1e-5)


@pytest.mark.parametrize("row", _rows("gaussian_profile.csv")[::5], ids=lambda r: r["epsilon"])
def test_profile_scalar_and_array_agree(row: dict[str, str]) -> None:
    e, s = float(row["epsilon"]), float(row["sigma"])
    for fn in (gaussian_log_delta, gaussian_log_pdp_delta):
        one = fn(e, s)
        arr = float(fn(np.array([e]), np.array([s]))[0])
        assert one == arr or abs(one - arr) <= 1e-13 * max(1.0, abs(arr))


def test_erfcx_model_accuracy() -> None:
    """The start model of optimal_halley: erfcx(x) ≈ 2/(√π(x + √(x² + q(x)))) to 6e-5, and its
    difference at a, b = √(a² + ε) to 3e-3 (relative; worst near a = 0), against SciPy's erfcx."""
    from scipy import special

    from approxdp._numerics import erfcx_diff
    from approxdp.calibration._optimal_halley import model_erfcx, model_erfcx_diff

    x = np.concatenate([np.linspace(0.0, 5.0, 501), np.geomspace(5.0, 1e4, 200)])
    model_at_zero_eps = model_erfcx_diff(x, x, np.zeros_like(x), 0.0, np.sqrt)
    assert np.all(model_at_zero_eps == 0.0)
    rng = np.random.default_rng(3)
    a = np.concatenate([np.zeros(10), 10 ** rng.uniform(-6, 1.4, 2000)])
    eps = 10 ** rng.uniform(-12, 3, a.size)
    b = np.sqrt(a * a + eps)
    h = eps / (a + b)
    model = model_erfcx_diff(a, b, h, eps, np.sqrt)
    assert np.all(np.abs(model / erfcx_diff(a, h) - 1) < 3e-3)
    assert np.all(np.abs(model_erfcx(x, np.sqrt) / special.erfcx(x) - 1) < 6e-5)
    # the difference is that of the values where nothing cancels
    a, h = x[::10], np.full(x[::10].shape, 2.0)
    b = a + h
    direct = model_erfcx(a, np.sqrt) - model_erfcx(b, np.sqrt)
    assert np.allclose(model_erfcx_diff(a, b, h, b * b - a * a, np.sqrt), direct, rtol=1e-12)


@pytest.mark.parametrize("notion", ["dp", "pdp"])
def test_epsilon_scalar_and_array_agree(notion: str) -> None:
    """gaussian_epsilon's scalar path runs the same search and check as the array path."""
    rng = np.random.default_rng(8)
    sig = 10 ** rng.uniform(-3, 6, 300)
    d = 10 ** rng.uniform(-300, math.log10(0.5), 300)
    arr = gaussian_epsilon(sig, d, notion=notion)  # type: ignore[arg-type]
    one = np.array(
        [gaussian_epsilon(float(s), float(x), notion=notion) for s, x in zip(sig, d, strict=True)]  # type: ignore[arg-type]
    )
    assert np.all((one == 0) == (arr == 0))
    assert np.all(np.abs(one - arr) <= 1e-15 * arr)
    prof = gaussian_delta if notion == "dp" else gaussian_pdp_delta
    for s, x, e in zip(sig[::15], d[::15], one[::15], strict=True):
        assert prof(e, s) <= x


def test_complement_check_near_delta_one() -> None:
    """For δ close to 1 the privacy check is made on 1 - δ computed directly, so the optimum is
    found to ~1e-12 there too (the check through log δ would lose digits)."""
    for e, d in [(1e-12, 1 - 1e-10), (10.0, 1 - 1e-9), (1e3, 0.999999)]:
        s = calibrate_gaussian(e, d)
        mp_d = mp.mpf(d)
        assert exact_profile(e, s) <= mp_d
        # 1 - δ(σ(1 + 1e-10)) would exceed 1 - δ by far more than rounding if σ were loose
        assert exact_profile(e, s * (1 - 1e-10)) > mp_d


def _mp_profile(eps: float, sigma: float, notion: str) -> mp.mpf:
    with mp.workdps(60):
        e, s = mp.mpf(eps), mp.mpf(sigma)
        second = mp.ncdf(-1 / (2 * s) - e * s)
        if notion == "dp":
            return mp.ncdf(1 / (2 * s) - e * s) - mp.e**e * second
        return mp.ncdf(1 / (2 * s) - e * s) + second


@pytest.mark.parametrize("method", ["optimal", "pdp-optimal"])
def test_large_epsilon_tiny_delta_is_never_under_noised(method: str) -> None:
    """ε in [1e4, 1e6]: the profile's arguments 1/(2σ) ∓ εσ are rounded at magnitude √ε, an
    evaluation error the ε-free margin did not cover (σ at (340188.23, 3.11e-46) and
    (810050.82, 3.54e-233) gave δ(σ) 3.6e-12 and 1.8e-12 above δ). Scalar and array paths."""
    rng = np.random.default_rng(20261123)
    eps = np.concatenate([[340188.2329298892, 810050.8217068879], 10 ** rng.uniform(4, 6, 30)])
    delta = np.concatenate([[3.114729354775475e-46, 3.538479263692805e-233],
                            10 ** rng.uniform(-300, -2, 30)])
    notion = "dp" if method == "optimal" else "pdp"
    vector = approxdp.calibrate_gaussian(eps, delta, method=method)
    for e, d, s_vec in zip(eps.tolist(), delta.tolist(), vector.tolist(), strict=True):
        for s in (s_vec, approxdp.calibrate_gaussian(e, d, method=method)):
            assert _mp_profile(e, s, notion) <= d, (e, d, s)
            assert _mp_profile(e, s * (1 - 1e-10), notion) > d, (e, d, s)  # still tight


def test_root_finder_and_round_up_are_one_rule_on_arrays_and_floats() -> None:
    """solve_decreasing and its float driver share one step; round_up is one loop for both."""
    from approxdp._numerics import (
        ARRAY_OPS,
        SCALAR_OPS,
        round_up,
        solve_decreasing,
        solve_decreasing_scalar,
    )

    c = np.array([0.5, 2.0, 7.0, 1e-8])  # g(x) = c - x³ - x, decreasing, root in (0, 2)

    def fun(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return c[idx] - x**3 - x, -3.0 * x * x - 1.0

    arr = solve_decreasing(fun, np.zeros(4), np.full(4, 2.0), np.full(4, 2.0),
                           lambda x, idx: np.maximum(x, 1e-300))
    for i, ci in enumerate(c):
        one = solve_decreasing_scalar(lambda x, ci=ci: (ci - x**3 - x, -3.0 * x * x - 1.0),
                                      0.0, 2.0, 2.0, lambda x: max(x, 1e-300))
        assert one == arr[i]
        assert abs(ci - one**3 - one) <= 1e-15 * max(ci, 1.0)
    # round_up: grow until x >= c (bump 1e-13, doubling), the same on arrays and floats
    up = round_up(arr, lambda x: x**3 + x >= c, ARRAY_OPS, bump=1e-13, tries=80)
    for i, ci in enumerate(c):
        assert up[i] ** 3 + up[i] >= ci
        assert round_up(float(arr[i]), lambda x, ci=ci: x**3 + x >= ci, SCALAR_OPS,
                        bump=1e-13, tries=80) == up[i]
    assert round_up(0.0, lambda x: x > 0, SCALAR_OPS, bump=1e-13, tries=3) == 1e-300
