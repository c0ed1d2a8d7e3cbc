"""PrivacyAccountant with the in-memory ledger: never overspends, side-effect-free queries."""

from __future__ import annotations

import math
import threading

import pytest

import approxdp
from approxdp import (
    BudgetExceededError,
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyAccountant,
    SubsampledEvent,
    compose_gaussian,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError

# Needs the lead's exact Gaussian profile (issue 2); skipped only until it lands on main.
pytest.importorskip("approxdp.profiles.gaussian")


def max_gaussian_spends(sigma: float, eps: float, delta: float) -> int:
    n = 0
    while compose_gaussian([sigma] * (n + 1)).delta(eps) <= delta:
        n += 1
    return n


def test_gaussian_spends_fill_budget_exactly() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-5))
    n = 0
    with pytest.raises(BudgetExceededError) as info:
        while True:
            acc.spend(GaussianEvent(sigma=30.0))
            n += 1
    assert n == max_gaussian_spends(30.0, 1.0, 1e-5)
    err = info.value
    assert err.requested == GaussianEvent(sigma=30.0)
    assert err.remaining.count == n
    assert "remaining" in str(err) and "delta" in str(err)
    assert len(acc.history()) == n
    assert acc.remaining().spent_delta <= 1e-5
    assert "Gaussian-DP room" in acc.history()[-1].rule  # the filter's exact Gaussian currency


def test_refused_spend_changes_nothing() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6), composition="basic")  # pure ε: basic filter
    acc.spend(LaplaceEvent(scale=2.0))
    before = (acc.remaining(), acc.history())
    with pytest.raises(BudgetExceededError):
        acc.spend(LaplaceEvent(scale=1.0))
    assert (acc.remaining(), acc.history()) == before
    acc.spend(LaplaceEvent(scale=2.0))  # exactly fills ε = 1 with δ = 0
    assert acc.remaining().remaining_epsilon == 0.0
    assert acc.remaining().remaining_delta == 1e-6
    # the declared-sequence rules (adaptivity="fixed"): the optimal composition of the two
    # steps at the full δ = 1e-6 leaves a sliver of ε
    fixed = PrivacyAccountant(budget=(1.0, 1e-6), adaptivity="fixed")
    fixed.spend(LaplaceEvent(scale=2.0))
    fixed.spend(LaplaceEvent(scale=2.0))
    assert 0.0 <= fixed.remaining().remaining_epsilon < 1e-5


def test_queries_have_no_side_effects() -> None:
    acc = PrivacyAccountant(budget=(2.0, 1e-5))
    acc.spend(EpsilonDeltaEvent(0.1, 1e-7))
    first = acc.remaining()
    for _ in range(3):
        assert acc.remaining() == first
        assert len(acc.history()) == 1
    plan = acc.plan([GaussianEvent(sigma=5.0)] * 3)
    assert plan.fits and plan.status_after.count == 4
    assert acc.remaining() == first


def test_optimal_composition_admits_more_than_basic() -> None:
    counts = {}
    for rule in ("basic", "advanced", "optimal", "auto"):
        acc = PrivacyAccountant(budget=(1.0, 1e-5), composition=rule, adaptivity="fixed")
        try:
            while True:
                acc.spend(EpsilonDeltaEvent(1 / 64, 1e-9))
        except BudgetExceededError:
            counts[rule] = len(acc.history())
    assert counts["basic"] == 64  # 64 x 2**-6 is exactly 1: basic sums are exact
    assert counts["optimal"] > counts["advanced"] > counts["basic"]
    assert counts["auto"] == counts["optimal"]
    acc = PrivacyAccountant(budget=(1.0, 1e-5), composition="optimal", adaptivity="fixed")
    acc.spend(EpsilonDeltaEvent(1 / 64, 1e-9))
    assert "Kairouz" in acc.history()[0].rule


def test_mixed_events_and_plan() -> None:
    acc = PrivacyAccountant(budget=(3.0, 1e-5), basic_share=(0.5, 1e-7))
    acc.spend(ComposedEvent((GaussianEvent(sigma=4.0), LaplaceEvent(scale=5.0))))
    acc.spend(SubsampledEvent(EpsilonDeltaEvent(1.0, 1e-7), q=0.1))  # from the basic share
    status = acc.remaining()
    assert status.spent_delta <= 1e-5 and status.spent_epsilon <= 3.0
    assert "Gaussian-DP" in status.rule and status.basic_share_used == pytest.approx(
        (float(approxdp.amplify_by_subsampling(1.0, 1e-7, 0.1).epsilon), 1e-8))
    assert not acc.plan([LaplaceEvent(scale=0.1)]).fits
    assert acc.remaining() == status


def test_threads_never_overspend() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-5))
    accepted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(40):
            try:
                acc.spend(GaussianEvent(sigma=30.0))
            except BudgetExceededError:
                continue
            with lock:
                accepted.append(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(accepted) == len(acc.history()) == max_gaussian_spends(30.0, 1.0, 1e-5)


def test_zero_budget_refuses_everything_but_free_events() -> None:
    acc = PrivacyAccountant(budget=(0.0, 0.0))
    acc.spend(GaussianEvent(sigma=math.inf))
    with pytest.raises(BudgetExceededError):
        acc.spend(GaussianEvent(sigma=1e6))


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"budget": (-1.0, 1e-5)}, InvalidParameterError, "budget epsilon"),
        ({"budget": (math.nan, 1e-5)}, InvalidParameterError, "budget epsilon"),
        ({"budget": (1.0, 1.0)}, InvalidParameterError, "budget delta"),
        ({"budget": (1.0, -1e-5)}, InvalidParameterError, "budget delta"),
        ({"budget": 1.0}, InvalidParameterError, "budget"),
        ({"budget": (1.0, 1e-5), "composition": "magic"}, InvalidParameterError, "composition"),
        ({"budget": ("1", 1e-5)}, ParameterTypeError, "budget epsilon"),
    ],
)
def test_bad_accountant_arguments(kwargs: dict, error: type, name: str) -> None:
    with pytest.raises(error, match=name):
        PrivacyAccountant(**kwargs)


def test_bad_events() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-5))
    with pytest.raises(ParameterTypeError, match="event"):
        acc.spend("gaussian")  # type: ignore[arg-type]
    # a subsampled Gaussian has no (ε, δ) summary: the closed-form rules refuse it, typed,
    # before anything is recorded (the PLD and auto rules account it)
    for rule in ("basic", "advanced", "optimal"):
        closed = PrivacyAccountant(budget=(1.0, 1e-5), composition=rule,
                                   adaptivity="fixed")
        with pytest.raises(InvalidParameterError, match="composition='pld' or 'auto'"):
            closed.spend(SubsampledEvent(GaussianEvent(sigma=1.0), q=0.5))
        assert closed.history() == ()
    with pytest.raises(InvalidParameterError, match="SubsampledEvent of a ComposedEvent"):
        acc.spend(SubsampledEvent(ComposedEvent((GaussianEvent(sigma=1.0),)), q=0.5))
    assert acc.history() == ()
