"""The RDP accountant of the subsampled Gaussian (DP-SGD): values, bounds, peers, inputs.

References:

- ``tests/reference/subsampled_gaussian_rdp.csv``: Rényi divergences of the Poisson-subsampled
  Gaussian in both directions, from mpmath quadrature at 40 digits (integer orders also summed
  exactly), by ``tests/reference/make_rdp_reference.py``. Our values must be upper bounds on the
  worse direction and within 1e-9 relative (plus 2e-14 in log A_α, the floating-point margin).
- dp_accounting's ``RdpAccountant`` (a test-only dependency): same orders and the same
  RDP→DP conversion, so our ε must never exceed its ε (beyond 1e-9 relative), and must stay
  close to it; without replacement (REPLACE_ONE) we evaluate Thm 9, which is never below its
  Thm 27 and equal where both reduce to the same formula.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path

import dp_accounting
import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given, settings
from hypothesis import strategies as st

from approxdp.accounting import (
    DEFAULT_RDP_ORDERS,
    Guarantee,
    rdp_dpsgd_delta,
    rdp_dpsgd_epsilon,
    rdp_sampled_without_replacement_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_delta,
    rdp_to_epsilon,
)
from approxdp.errors import (
    ApproxDPError,
    InvalidParameterError,
    ParameterTypeError,
    UnknownMethodError,
)

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "subsampled_gaussian_rdp.csv"
ORDERS = np.array(DEFAULT_RDP_ORDERS)

# the DP-SGD example of issue 14
Q, SIGMA, STEPS, DELTA = 256 / 60000, 1.1, 14063, 1e-5


def _reference_rows() -> list[dict[str, str]]:
    with open(REFERENCE, newline="") as fh:
        return list(csv.DictReader(fh))


# -- (a) values against the high-precision reference -------------------------------------------


def _row_id(row: dict[str, str]) -> str:
    return f"q={row['sample_rate']}-s={row['noise_multiplier']}-a={row['order']}"


@pytest.mark.parametrize("row", _reference_rows(), ids=_row_id)
def test_rdp_is_a_tight_upper_bound_on_the_reference(row: dict[str, str]) -> None:
    q, sigma, alpha = float(row["sample_rate"]), float(row["noise_multiplier"]), float(row["order"])
    ours = rdp_subsampled_gaussian(sigma, q, [alpha])[0]
    with mp.workdps(40):
        ref = mp.mpf(row["rdp_remove"])
        # covers the worse direction (Mironov et al. Thm 5: A_α >= B_α)
        if row["rdp_add"]:
            assert mp.mpf(row["rdp_add"]) <= ref
        assert ours >= ref, f"under-reports: {ours!r} < {mp.nstr(ref, 20)}"
        slack = 1e-9 * ref + mp.mpf(2e-14) / (alpha - 1)
        assert ours - ref <= slack, f"loose: {ours!r} vs {mp.nstr(ref, 20)}"


def test_reference_table_covers_both_kinds_of_order() -> None:
    orders = {float(r["order"]) for r in _reference_rows()}
    assert any(a.is_integer() for a in orders) and any(not a.is_integer() for a in orders)
    assert min(orders) <= 1.1 and max(orders) >= 1024


def test_integer_orders_match_the_exact_binomial_sum() -> None:
    """An inline check independent of the table: the exact expansion at 50 digits."""
    for q, sigma, alpha in [(0.02, 0.8, 7), (0.3, 4.0, 40), (1e-3, 1.0, 256)]:
        ours = rdp_subsampled_gaussian(sigma, q, [alpha])[0]
        with mp.workdps(50):
            qq, s = mp.mpf(q), mp.mpf(sigma)
            am1 = mp.fsum(
                mp.binomial(alpha, k) * (1 - qq) ** (alpha - k) * qq**k
                * mp.expm1(mp.mpf(k * (k - 1)) / (2 * s * s))
                for k in range(2, alpha + 1)
            )
            ref = mp.log1p(am1) / (alpha - 1)
            assert ref <= ours <= ref * (1 + 1e-12)


def test_full_batch_is_the_gaussian() -> None:
    orders = [1.5, 2.0, 7.25, 64.0]
    for fn in (rdp_subsampled_gaussian, rdp_sampled_without_replacement_gaussian):
        got = fn(2.0, 1.0, orders)
        want = np.array(orders) / 8.0
        assert np.all(got >= want) and np.allclose(got, want, rtol=1e-14, atol=0)


def test_infinite_noise_is_free() -> None:
    assert np.all(rdp_subsampled_gaussian(math.inf, 0.5) == 0.0)
    assert rdp_dpsgd_epsilon(math.inf, 0.5, 100, 1e-5).epsilon == 0.0


# -- (b) against dp_accounting -------------------------------------------------------------------


def _dpa_step_rdp(sigma: float, q: float, sampling: str = "poisson") -> np.ndarray:
    if sampling == "poisson":
        acc = dpa_rdp.RdpAccountant(orders=list(DEFAULT_RDP_ORDERS))
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)))
    else:
        acc = dpa_rdp.RdpAccountant(
            orders=list(DEFAULT_RDP_ORDERS),
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        )
        n = 1_000_000
        acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(
            n, round(q * n), dp_accounting.GaussianDpEvent(sigma)))
    return np.asarray(acc.rdp, dtype=np.float64)


SIGMAS = [0.5, 1.0, 2.0, 5.0, 10.0]
RATES = [1e-4, 1e-3, 0.01, 0.1, 0.5, 1.0]
STEP_COUNTS = [1, 100, 10_000, 100_000]
DELTAS = [1e-10, 1e-5, 1e-3]


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("q", RATES)
def test_never_above_dp_accounting(sigma: float, q: float) -> None:
    theirs_step = _dpa_step_rdp(sigma, q)
    ours_step = rdp_subsampled_gaussian(sigma, q, ORDERS)
    finite = np.isfinite(theirs_step)  # dp_accounting drops fractional orders it cannot sum
    # our values are rounded up by a floating-point margin, up to 1e-9 relative and 2e-14 in
    # log A_α (the reference test); dp_accounting's carry its rounding either way
    margin = 3e-14 / (ORDERS - 1)
    assert np.all(ours_step[finite] <= theirs_step[finite] * (1 + 1e-9) + margin[finite])
    # at integer orders both sum the same exact expansion (theirs as log A, which keeps only
    # ~1e-16 absolute when A ≈ 1; ours as log1p(A - 1), to full relative precision)
    ints = np.floor(ORDERS) == ORDERS
    np.testing.assert_allclose(ours_step[ints], theirs_step[ints], rtol=1e-9, atol=1e-15)
    for steps in STEP_COUNTS:
        for delta in DELTAS:
            theirs, _ = dpa_rdp.compute_epsilon(ORDERS, steps * theirs_step, delta)
            g = rdp_dpsgd_epsilon(sigma, q, steps, delta)
            grid, _ = rdp_to_epsilon(steps * ours_step, ORDERS, delta)
            assert not math.isnan(g.epsilon)
            assert g.epsilon <= grid <= theirs * (1 + 1e-9) + steps * 3e-13
            # the same bound, not a different one: on the integer orders (the same exact sums)
            # the two conversions agree. Over the whole grid ours is lower where their absolute
            # sums overestimate fractional orders (21 % at α = 1.1, σ = 0.5, q = 0.01), and
            # the refinement can gain more where the grid is coarse (16 % at σ = 2, q = 1e-4,
            # T = 1, δ = 1e-10: order 74.3, between 63 and 128)
            ours_int, _ = rdp_to_epsilon(steps * ours_step[ints], ORDERS[ints], delta)
            theirs_int, _ = dpa_rdp.compute_epsilon(ORDERS[ints], steps * theirs_step[ints], delta)
            assert ours_int == pytest.approx(theirs_int, rel=1e-9, abs=steps * 3e-13)


@pytest.mark.parametrize("sigma", [0.7, 1.1, 4.0])
@pytest.mark.parametrize("q", [1e-3, 0.02, 0.3])
def test_without_replacement_against_dp_accounting(sigma: float, q: float) -> None:
    ours = rdp_sampled_without_replacement_gaussian(sigma, q, ORDERS)
    theirs = _dpa_step_rdp(sigma, q, "without-replacement")
    # Thm 9 >= the Thm 27 that dp_accounting evaluates, with equality where they coincide
    # (α <= 2: the j = 2 term only; α > 256: dp_accounting's own fallback is Thm 9); ours is
    # also capped at the Gaussian's α/(2σ²), which dp_accounting does not do
    gauss = ORDERS / (2 * sigma**2)
    assert np.all(ours <= gauss * (1 + 1e-12))
    assert np.all(ours >= np.minimum(theirs, gauss) * (1 - 1e-12))
    same = ((ORDERS <= 2.0) | (ORDERS > 256)) & (theirs < gauss)
    np.testing.assert_allclose(ours[same], theirs[same], rtol=1e-10)
    # DP-SGD's noise multiplier is over the clipping norm; substitution moves the sum by 2C
    for steps, delta in [(1, 1e-5), (1000, 1e-5), (100_000, 1e-8)]:
        wor = "without-replacement"
        grid = rdp_dpsgd_epsilon(2 * sigma, q, steps, delta, wor, orders=ORDERS).epsilon
        refined = rdp_dpsgd_epsilon(2 * sigma, q, steps, delta, wor).epsilon
        theirs_eps, _ = dpa_rdp.compute_epsilon(ORDERS, steps * theirs, delta)
        capped, _ = dpa_rdp.compute_epsilon(ORDERS, steps * np.minimum(theirs, gauss), delta)
        assert capped * (1 - 1e-9) <= grid <= theirs_eps * 1.5 + 1e-9
        assert 0 < refined <= grid


# -- (d) the known DP-SGD value --------------------------------------------------------------------


def test_dpsgd_example_matches_the_published_rdp_value() -> None:
    g = rdp_dpsgd_epsilon(SIGMA, Q, STEPS, DELTA)
    assert isinstance(g, Guarantee) and g.kind == "upper bound" and g.delta == DELTA
    acc = dpa_rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)), STEPS)
    theirs = acc.get_epsilon(DELTA)
    assert theirs == pytest.approx(2.5967, abs=1e-4)
    assert g.epsilon <= theirs and g.epsilon == pytest.approx(theirs, rel=1e-4)
    assert "order" in g.rule and "1908.10530" in g.rule


def test_dpsgd_example_is_above_the_true_epsilon() -> None:
    """dp_accounting's PLD (≈ 2.38, the true ε to its discretization): RDP is ~9 % above it."""
    from dp_accounting.pld import pld_privacy_accountant as pld

    acc = pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)), STEPS)
    true_eps = acc.get_epsilon(DELTA)
    assert true_eps == pytest.approx(2.38, abs=0.01)
    eps = rdp_dpsgd_epsilon(SIGMA, Q, STEPS, DELTA).epsilon
    assert true_eps < eps < 1.1 * true_eps


def test_delta_direction_inverts_epsilon() -> None:
    g = rdp_dpsgd_epsilon(SIGMA, Q, STEPS, DELTA)
    back = rdp_dpsgd_delta(SIGMA, Q, STEPS, g.epsilon)
    assert back.kind == "upper bound" and back.epsilon == g.epsilon
    assert back.delta <= DELTA * (1 + 1e-9)
    assert back.delta == pytest.approx(DELTA, rel=1e-3)
    rdp = STEPS * rdp_subsampled_gaussian(SIGMA, Q, ORDERS)
    eps, order = rdp_to_epsilon(rdp, ORDERS, DELTA)
    delta, order2 = rdp_to_delta(rdp, ORDERS, eps)
    assert delta <= DELTA * (1 + 1e-12) and order2 == order
    theirs_delta, _ = dpa_rdp.compute_delta(ORDERS, rdp, eps)
    assert delta <= theirs_delta * (1 + 1e-9)


def test_small_rdp_gives_zero_epsilon_through_total_variation() -> None:
    # RDP 1e-12 at every order: TV <= sqrt(1 - e^-1e-12) ~ 1e-6 <= δ = 1e-5
    assert rdp_to_epsilon(np.full(3, 1e-12), [2.0, 3.0, 4.0], 1e-5) == (0.0, 2.0)
    assert rdp_to_delta(np.full(3, 1e-12), [2.0, 3.0, 4.0], 0.0)[0] <= 1.000001e-6


def test_infinite_orders_are_skipped() -> None:
    eps, order = rdp_to_epsilon([np.inf, 1.0, np.inf], [2.0, 8.0, 32.0], 1e-5)
    assert order == 8.0 and math.isfinite(eps)
    assert rdp_to_epsilon([np.inf, np.inf], [2.0, 3.0], 1e-5)[0] == math.inf
    assert rdp_to_delta([np.inf, np.inf], [2.0, 3.0], 1.0)[0] == 1.0


def test_custom_orders_are_used_as_given() -> None:
    g = rdp_dpsgd_epsilon(SIGMA, Q, STEPS, DELTA, orders=[8.0])
    rdp = STEPS * rdp_subsampled_gaussian(SIGMA, Q, [8.0])
    assert g.epsilon == rdp_to_epsilon(rdp, [8.0], DELTA)[0]
    assert "order 8" in g.rule


# -- (c) bad input: typed one-line errors, and never a hang ---------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"noise_multiplier": 0.0}, InvalidParameterError, "noise_multiplier"),
        ({"noise_multiplier": -1.0}, InvalidParameterError, "noise_multiplier"),
        ({"noise_multiplier": math.nan}, InvalidParameterError, "noise_multiplier=nan"),
        ({"noise_multiplier": "1.1"}, ParameterTypeError, "noise_multiplier"),
        ({"noise_multiplier": None}, ParameterTypeError, "noise_multiplier"),
        ({"sample_rate": 0.0}, InvalidParameterError, "sample_rate must be in (0, 1]"),
        ({"sample_rate": 1.5}, InvalidParameterError, "sample_rate=1.5"),
        ({"sample_rate": math.nan}, InvalidParameterError, "sample_rate"),
        ({"steps": 0}, InvalidParameterError, "steps"),
        ({"steps": 2.5}, InvalidParameterError, "steps"),
        ({"steps": math.inf}, InvalidParameterError, "steps"),
        ({"steps": True}, ParameterTypeError, "steps"),
        ({"delta": 0.0}, InvalidParameterError, "delta must be in (0, 1)"),
        ({"delta": 1.0}, InvalidParameterError, "delta"),
        ({"delta": math.nan}, InvalidParameterError, "delta"),
        ({"orders": [1.0, 2.0]}, InvalidParameterError, "orders must be in (1, 65536]"),
        ({"orders": [0.5]}, InvalidParameterError, "orders"),
        ({"orders": [math.nan]}, InvalidParameterError, "orders"),
        ({"orders": [1e6]}, InvalidParameterError, "orders"),
        ({"orders": []}, InvalidParameterError, "orders"),
        ({"orders": [[2.0, 3.0]]}, InvalidParameterError, "orders"),
        ({"sampling": "shuffle"}, UnknownMethodError, "sampling"),
    ],
)
def test_bad_input_is_a_typed_one_line_error(kwargs: dict, error: type, words: str) -> None:
    args = {"noise_multiplier": SIGMA, "sample_rate": Q, "steps": STEPS, "delta": DELTA, **kwargs}
    with pytest.raises(error) as info:
        rdp_dpsgd_epsilon(**args)
    message = str(info.value)
    assert issubclass(error, ApproxDPError) and words in message and "\n" not in message


def test_bad_input_to_the_curves_and_conversions() -> None:
    with pytest.raises(InvalidParameterError, match="noise_multiplier"):
        rdp_subsampled_gaussian([1.0, 2.0], 0.1)
    with pytest.raises(InvalidParameterError, match="sample_rate"):
        rdp_sampled_without_replacement_gaussian(1.0, -0.1)
    with pytest.raises(InvalidParameterError, match="rdp must have one value per order"):
        rdp_to_epsilon([1.0, 2.0], [2.0], 1e-5)
    with pytest.raises(InvalidParameterError, match="rdp"):
        rdp_to_epsilon([math.nan], [2.0], 1e-5)
    with pytest.raises(InvalidParameterError, match="rdp"):
        rdp_to_delta([-1.0], [2.0], 1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        rdp_to_delta([1.0], [2.0], math.inf)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        rdp_dpsgd_delta(SIGMA, Q, STEPS, -1.0)


def test_a_billion_steps_is_fast() -> None:
    start = time.perf_counter()
    g = rdp_dpsgd_epsilon(SIGMA, Q, 10**9, DELTA)
    h = rdp_dpsgd_epsilon(SIGMA, Q, 1e9, DELTA, sampling="without-replacement")
    assert time.perf_counter() - start < 2.0
    assert math.isfinite(g.epsilon) and g.epsilon > 100 and h.epsilon > g.epsilon


def test_extreme_inputs_give_an_answer_not_nan() -> None:
    cases = [(0.05, 0.9, 10), (1e-3, 1e-300, 1), (1e6, 0.5, 10**12), (0.5, 1.0, 10**400)]
    for sigma, q, steps in cases:
        for sampling in ("poisson", "without-replacement"):
            eps = rdp_dpsgd_epsilon(sigma, q, steps, 1e-10, sampling).epsilon
            assert eps >= 0.0 and not math.isnan(eps)
    # slow-converging fractional series (z0 ~ 0, large σ) stay bounded in time
    start = time.perf_counter()
    rdp_subsampled_gaussian(10.0, 0.5)
    assert time.perf_counter() - start < 1.0


# -- (e) monotone in T, q and 1/σ ------------------------------------------------------------------

sigmas = st.floats(0.5, 10.0)
rates = st.floats(1e-4, 1.0)
steps_st = st.integers(1, 100_000)
deltas = st.floats(1e-10, 1e-3)


def _eps(sigma: float, q: float, steps: int, delta: float, sampling: str = "poisson") -> float:
    return float(rdp_dpsgd_epsilon(sigma, q, steps, delta, sampling).epsilon)


def _le(a: float, b: float) -> bool:
    return a <= b * (1 + 1e-9) + 1e-12


@settings(max_examples=40, deadline=None)
@given(sigmas, rates, steps_st, steps_st, deltas)
def test_monotone_in_steps(sigma: float, q: float, t1: int, t2: int, delta: float) -> None:
    lo, hi = sorted((t1, t2))
    assert _le(_eps(sigma, q, lo, delta), _eps(sigma, q, hi, delta))


@settings(max_examples=40, deadline=None)
@given(sigmas, rates, rates, steps_st, deltas)
def test_monotone_in_rate(sigma: float, q1: float, q2: float, steps: int, delta: float) -> None:
    lo, hi = sorted((q1, q2))
    assert _le(_eps(sigma, lo, steps, delta), _eps(sigma, hi, steps, delta))


@settings(max_examples=40, deadline=None)
@given(sigmas, sigmas, rates, steps_st, deltas)
def test_monotone_in_noise(s1: float, s2: float, q: float, steps: int, delta: float) -> None:
    lo, hi = sorted((s1, s2))
    assert _le(_eps(hi, q, steps, delta), _eps(lo, q, steps, delta))


@settings(max_examples=25, deadline=None)
@given(sigmas, rates, rates, steps_st, deltas)
def test_without_replacement_monotone_in_rate(
    sigma: float, q1: float, q2: float, steps: int, delta: float
) -> None:
    lo, hi = sorted((q1, q2))
    a = _eps(sigma, lo, steps, delta, "without-replacement")
    assert _le(a, _eps(sigma, hi, steps, delta, "without-replacement"))


@settings(max_examples=40, deadline=None)
@given(sigmas, rates, st.sampled_from(list(DEFAULT_RDP_ORDERS)))
def test_step_rdp_monotone_in_rate_and_order(sigma: float, q: float, order: float) -> None:
    curve = rdp_subsampled_gaussian(sigma, q, ORDERS)
    assert np.all(np.diff(curve) >= -1e-12 * curve[1:])  # RDP is nondecreasing in α
    smaller = rdp_subsampled_gaussian(sigma, q / 2, [order])[0]
    assert smaller <= rdp_subsampled_gaussian(sigma, q, [order])[0] * (1 + 1e-12)
