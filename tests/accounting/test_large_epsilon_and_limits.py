"""Accounting at the edges (issue 15, items 3, 5, 6, 7): large ε without overflow, costs that
cannot be recorded refused with a typed error, ledger paths that are not files, and work that
is O(1) in the number of repeated steps (or refused above a documented limit)."""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import mpmath
import pytest

from approxdp import (
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    compose_gaussian,
    dp_to_pdp,
    group_privacy,
    optimal_composition,
    simplified_advanced_composition,
    split_budget,
    zcdp_to_dp,
)
from approxdp.accounting import PrivacyAccountant, read_ledger_settings
from approxdp.accounting.budget.costs import Contribution, LedgerState
from approxdp.accounting.budget.rules import delta_at, epsilon_at
from approxdp.accounting.composition.optimal import OPTIMAL_MAX_STEPS
from approxdp.errors import BudgetExceededError, InvalidParameterError, LedgerError
from approxdp.events import EpsilonDeltaEvent, GaussianEvent, LaplaceEvent, SubsampledEvent

mpmath.mp.dps = 50


def _amplified(eps: float, q: float) -> float:
    e, qq = mpmath.mpf(eps), mpmath.mpf(q)
    return float(mpmath.log1p(qq * mpmath.expm1(e)))


@pytest.mark.parametrize("eps", [0.0, 1e-12, 0.3, 1.0, 1.5, 30.0, 700.0, 710.0, 1000.0, 1e5])
@pytest.mark.parametrize("q", [1e-9, 0.01, 0.5, 1.0])
def test_amplification_is_exact_at_every_epsilon(eps: float, q: float) -> None:
    """log(1 + q(e^ε − 1)) in log space: 1000 and q = 0.01 give 995.39..., not inf."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = float(amplify_by_subsampling(eps, 1e-6, q).epsilon)
    true = _amplified(eps, q)
    assert true <= got <= true + 1e-15 * true + 10 * math.ulp(eps)  # an upper bound, tight


def test_amplification_of_the_issue() -> None:
    eps = float(amplify_by_subsampling(1000, 1e-6, 0.01).epsilon)
    assert eps == pytest.approx(1000 + math.log(0.01), rel=1e-15)  # ≈ 995.3948


def test_conversions_and_compositions_never_warn_at_large_epsilon() -> None:
    """Where the true value exceeds the largest float the answer is inf; otherwise its digits."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert group_privacy(1e308, 1e-6, 3).epsilon == math.inf
        assert group_privacy(400.0, 1e-300, 2).epsilon == 800.0
        assert dp_to_pdp(1000.0, 1e-6, 2000.0).delta == pytest.approx(1e-6, rel=1e-12)
        assert zcdp_to_dp(1e300, 1e-6).epsilon == pytest.approx(1e300, rel=1e-12)
        assert advanced_composition(1000.0, 0.0, 10, 1e-6).epsilon == math.inf
        assert simplified_advanced_composition(1000.0, 10, 1e-6).kind == "approximation"
        assert basic_composition([(1e308, 0.0), (1e308, 0.0)]).epsilon == math.inf
        assert optimal_composition(1000.0, 0.0, 3, 1e-6).epsilon <= 3000.0 * (1 + 1e-12)


@pytest.mark.parametrize("rule", ["auto", "basic", "advanced", "optimal"])
def test_accountant_status_at_large_epsilon(rule: str) -> None:
    """One (1000, 0)-DP step: every rule reports a status (the optimal rule's S(0) = 1 was a
    math domain error); the advanced bound is vacuous there, so it refuses the spend."""
    acc = PrivacyAccountant((2000.0, 1e-5), composition=rule, adaptivity="fixed")
    if rule == "advanced":
        with pytest.raises(BudgetExceededError):
            acc.spend(EpsilonDeltaEvent(1000.0, 0.0))
        return
    acc.spend(EpsilonDeltaEvent(1000.0, 0.0))
    status = acc.remaining()
    assert 0 < status.spent_epsilon <= 1000.0
    assert status.remaining_epsilon == pytest.approx(2000.0 - status.spent_epsilon)


@pytest.mark.parametrize("rule", ["auto", "basic", "optimal"])
def test_spent_epsilon_beyond_1e7_is_found(rule: str) -> None:
    """The search for the spent ε stopped at 1e7 and reported inf (remaining −inf)."""
    acc = PrivacyAccountant((1e300, 0.5), composition=rule, adaptivity="fixed")
    acc.spend(EpsilonDeltaEvent(1e299, 0.0))
    acc.spend(GaussianEvent(1e-100))
    status = acc.remaining()
    assert 1e299 <= status.spent_epsilon <= 1.0001e299
    assert 0 < status.remaining_epsilon < 1e300
    alone = PrivacyAccountant((1e300, 0.5))
    alone.spend(GaussianEvent(1e-10))  # ε ≈ 1/(2σ²) = 5e19 at δ = 1/2
    assert alone.remaining().spent_epsilon == pytest.approx(5e19, rel=1e-6)


def test_unrecordable_costs_are_typed_errors_and_change_nothing(tmp_path: Path) -> None:
    acc = PrivacyAccountant((1e300, 0.5), ledger=tmp_path / "l.sqlite")
    before = acc.remaining()
    for event in (GaussianEvent(1e-200), LaplaceEvent(scale=1e-308, sensitivity=1e10)):
        with pytest.raises(InvalidParameterError, match="cannot be accounted"):
            acc.spend(event)
        with pytest.raises(InvalidParameterError, match="cannot be accounted"):
            acc.plan([event])
    assert acc.remaining() == before and acc.history() == ()


def test_refused_spend_reports_the_budget_before_it() -> None:
    """A fresh budget said "remaining before this spend: delta=-0.99..., epsilon=-inf"."""
    acc = PrivacyAccountant((1.0, 0.5))
    with pytest.raises(BudgetExceededError) as info:
        acc.spend(GaussianEvent(7e-151))
    before = info.value.remaining
    assert (before.remaining_epsilon, before.remaining_delta, before.count) == (1.0, 0.5, 0)
    assert "epsilon=1 at the full delta" in str(info.value)


def test_ledger_path_that_is_a_directory_or_in_no_folder(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="is a directory"):
        PrivacyAccountant(budget=(1.0, 1e-6), ledger=tmp_path)
    with pytest.raises(LedgerError, match="is a directory"):
        read_ledger_settings(tmp_path)
    with pytest.raises(LedgerError, match="does not exist"):
        PrivacyAccountant(budget=(1.0, 1e-6), ledger=tmp_path / "missing" / "l.sqlite")
    with pytest.raises(TypeError, match="file path"):
        PrivacyAccountant(budget=(1.0, 1e-6), ledger=3)  # type: ignore[arg-type]


def test_repeated_gaussians_compose_in_constant_time() -> None:
    listed = compose_gaussian([2.0, 3.0], [1.0, 0.5], counts=[3, 4])
    expanded = compose_gaussian([2.0] * 3 + [3.0] * 4, [1.0] * 3 + [0.5] * 4)
    assert listed.sigma == pytest.approx(expanded.sigma, rel=1e-15)
    assert listed.count == expanded.count == 7
    start = time.perf_counter()
    many = compose_gaussian(1.0, counts=10**9)
    assert many.sigma == pytest.approx(1.0 / math.sqrt(1e9), rel=1e-14)
    assert many.sigma <= 1.0 / math.sqrt(1e9)  # rounded to the private side
    split = split_budget(1.0, 1e-5, 10**9, composition="gaussian")
    assert split.total.delta <= 1e-5
    assert time.perf_counter() - start < 1.0
    with pytest.raises(InvalidParameterError, match="counts"):
        compose_gaussian([1.0, 2.0], counts=[1])


def test_optimal_composition_refuses_above_its_limit() -> None:
    for call in (
        lambda: optimal_composition(0.01, 0.0, OPTIMAL_MAX_STEPS + 1, 1e-6),
        lambda: split_budget(1.0, 1e-5, OPTIMAL_MAX_STEPS + 1, composition="optimal"),
    ):
        with pytest.raises(InvalidParameterError, match="limited to k <= 1,000,000"):
            call()


def test_long_histories_use_bounds_that_cost_o1() -> None:
    """2·10⁶ (ε, δ) parts: the optimal rule is replaced by the advanced bound (which it never
    exceeds) and says so; the accountant's state adds repeats in O(1)."""
    state = LedgerState().add(Contribution(items=((1e-4, 1e-12),)), times=2 * OPTIMAL_MAX_STEPS)
    assert state.n_items == 2 * OPTIMAL_MAX_STEPS and state.count == 2 * OPTIMAL_MAX_STEPS
    start = time.perf_counter()
    delta, rule = delta_at(state, 2.0, "optimal")
    eps, _ = epsilon_at(state, 1e-5, "auto")
    assert time.perf_counter() - start < 5.0
    assert "advanced" in rule and "limited" in rule
    drift = 2 * OPTIMAL_MAX_STEPS * 1e-4 * math.expm1(1e-4)  # Dwork-Roth Thm 3.20 at ε' = 2
    z = (2.0 - drift) / 1e-4
    tail = math.exp(-z * z / (2 * 2 * OPTIMAL_MAX_STEPS))
    assert delta == pytest.approx(2 * OPTIMAL_MAX_STEPS * 1e-12 + tail, rel=1e-9)
    assert 0 < eps < 2 * OPTIMAL_MAX_STEPS * 1e-4  # below basic composition's Σε = 200
    assert delta_at(state, eps, "auto")[0] <= 1e-5


def test_subsampled_event_at_large_epsilon_is_accounted() -> None:
    acc = PrivacyAccountant((2000.0, 1e-5), composition="basic", adaptivity="fixed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc.spend(SubsampledEvent(EpsilonDeltaEvent(1000.0, 1e-7), 0.01))
    assert acc.remaining().spent_epsilon == pytest.approx(1000 + math.log(0.01), rel=1e-9)
