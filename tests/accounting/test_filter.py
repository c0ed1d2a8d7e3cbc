"""The default ledger is a privacy filter: what it admits, how it charges, commitments, modes.

Tightness (issue 21 §2, §3): all-Gaussian histories are admitted exactly as the exact Gaussian
rule admits them; a DP-SGD run committed before the first spend costs what its privacy-loss
distribution says. Validity against adaptive analysts is tested in test_adaptive_attacks.py.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from approxdp.accounting import PrivacyAccountant, TrainingAccountant, pld_epsilon
from approxdp.accounting.budget.filter import (
    FilterState,
    budget_rho,
    declared_room,
    part_costs,
)
from approxdp.accounting.budget.gdp import laplace_mu, pure_dp_mu
from approxdp.accounting.composition.gaussian import sigma_from_rho
from approxdp.errors import BudgetExceededError, InvalidParameterError, UnknownMethodError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)
from approxdp.profiles import gaussian_delta

STEP = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)


def _spend_until_refused(acc: PrivacyAccountant, event: GaussianEvent, limit: int = 10_000) -> int:
    n = 0
    while n < limit:
        try:
            acc.spend(event)
        except BudgetExceededError:
            return n
        n += 1
    raise AssertionError("never refused")


# -- §2: all-Gaussian histories are admitted exactly as the exact Gaussian rule admits them ----


def test_twenty_gaussians_fit_and_the_twenty_first_does_not() -> None:
    acc = PrivacyAccountant(budget=(4.3059, 1e-6))
    for _ in range(20):
        acc.spend(GaussianEvent(sigma=5.0))
    with pytest.raises(BudgetExceededError, match="Gaussian-DP room"):
        acc.spend(GaussianEvent(sigma=5.0))
    status = acc.remaining()
    assert status.count == 20 and status.adaptivity == "full"
    assert status.spent_epsilon == pytest.approx(4.305841, abs=2e-6)
    assert "fully adaptive" in status.certified_by


@pytest.mark.parametrize(("sigma", "budget"), [
    (5.0, (4.3059, 1e-6)), (30.0, (1.0, 1e-5)), (3.0, (2.0, 1e-9)), (0.7, (8.0, 1e-3)),
    (12.0, (1.0, 1e-7)),
])
def test_admission_is_the_exact_gaussian_rule(sigma: float, budget: tuple[float, float]) -> None:
    """The filter admits n spends where the exact rule (the old `auto` on an all-Gaussian
    history) admits n: the same count, refused at the same spend."""
    n_filter = _spend_until_refused(PrivacyAccountant(budget=budget), GaussianEvent(sigma=sigma))
    old = PrivacyAccountant(budget=budget, composition="auto", adaptivity="fixed")
    assert n_filter == _spend_until_refused(old, GaussianEvent(sigma=sigma)) > 0
    rho = n_filter / sigma**2
    assert gaussian_delta(budget[0], 1.0 / math.sqrt(rho)) <= budget[1] * (1 + 1e-12)
    more = (n_filter + 1) / sigma**2
    assert gaussian_delta(budget[0], 1.0 / math.sqrt(more)) > budget[1]


def test_mixed_sensitivities_and_sigmas_use_the_exact_rule() -> None:
    rng = np.random.default_rng(7)
    budget = (2.0, 1e-6)
    acc = PrivacyAccountant(budget=budget)
    old = PrivacyAccountant(budget=budget, composition="auto", adaptivity="fixed")
    for _ in range(200):
        ev = GaussianEvent(sigma=float(rng.uniform(3, 30)), sensitivity=float(rng.uniform(0.5, 2)))
        ok_new = acc.plan([ev]).fits
        assert ok_new == old.plan([ev]).fits
        if ok_new:
            acc.spend(ev)
            old.spend(ev)
    assert acc.remaining().count == old.remaining().count > 0


def test_budget_rho_is_the_exact_threshold() -> None:
    for budget in ((1.0, 1e-5), (4.3059, 1e-6), (0.1, 1e-10), (20.0, 1e-3)):
        rho = budget_rho(budget)
        assert gaussian_delta(budget[0], sigma_from_rho(rho)) <= budget[1]
        assert gaussian_delta(budget[0], sigma_from_rho(math.nextafter(rho, math.inf))) > budget[1]


# -- what each event costs ---------------------------------------------------------------------


def test_part_costs_are_the_certified_mus() -> None:
    (lap,) = part_costs(LaplaceEvent(scale=2.0))
    assert lap.gdp == pytest.approx(laplace_mu(0.5) ** 2, rel=1e-14)
    assert lap.gdp is not None and lap.gdp >= laplace_mu(0.5) ** 2
    assert lap.basic == (Fraction(0.5), Fraction(0))
    (rr,) = part_costs(EpsilonDeltaEvent(0.5))
    assert rr.gdp is not None and rr.gdp >= pure_dp_mu(0.5) ** 2 > lap.gdp
    (approx,) = part_costs(EpsilonDeltaEvent(0.5, 1e-7))
    assert approx.gdp is None and approx.basic == (Fraction(0.5), Fraction(1e-7))
    (sub,) = part_costs(STEP)  # dominated by its own Gaussian: no amplification
    assert sub.gdp is not None and sub.gdp >= 1.0 and sub.basic is None
    (dg,) = part_costs(DiscreteGaussianEvent(sigma=5.0, sensitivity=1.0, epsilon=1.0,
                                             delta=1e-6))
    assert dg.gdp is None
    composed = part_costs(ComposedEvent((GaussianEvent(sigma=4.0), EpsilonDeltaEvent(0.0, 1e-8))))
    assert [p.gdp is None for p in composed] == [False, True]
    assert part_costs(GaussianEvent(sigma=math.inf)) == ()
    (amplified,) = part_costs(SubsampledEvent(LaplaceEvent(scale=1.0), 0.1))
    assert amplified.gdp is not None and amplified.basic is not None


def test_laplace_is_charged_its_own_mu_after_the_first_spend() -> None:
    acc = PrivacyAccountant(budget=(3.0, 1e-6))
    acc.spend(GaussianEvent(sigma=5.0))
    acc.spend(LaplaceEvent(scale=10.0))
    status = acc.remaining()
    assert status.room_used == pytest.approx(0.04 + laplace_mu(0.1) ** 2, rel=1e-12)
    assert "Gaussian-DP room" in acc.history()[-1].rule


def test_delta_events_need_a_basic_share_after_the_first_spend() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6))
    acc.spend(GaussianEvent(sigma=10.0))
    with pytest.raises(BudgetExceededError, match="basic_share") as info:
        acc.spend(EpsilonDeltaEvent(0.1, 1e-8))
    assert info.value.remaining.count == 1
    shared = PrivacyAccountant(budget=(1.0, 1e-6), basic_share=(0.2, 2e-7))
    shared.spend(GaussianEvent(sigma=10.0))
    shared.spend(EpsilonDeltaEvent(0.1, 1e-7))
    shared.spend(EpsilonDeltaEvent(0.1, 1e-7))
    with pytest.raises(BudgetExceededError, match="basic share left"):
        shared.spend(EpsilonDeltaEvent(0.0, 1e-9))
    status = shared.remaining()
    assert status.basic_share == (0.2, 2e-7) and status.basic_share_used == (0.2, 2e-7)
    # the share is declared at creation: it took Gaussian room (certified by the PLD)
    assert status.room is not None and status.room < budget_rho((1.0, 1e-6))


def test_a_first_spend_with_delta_is_declared_and_charged_by_its_pld() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6))
    sel = ComposedEvent((GaussianEvent(sigma=8.0), EpsilonDeltaEvent(0.0, 1e-7)))
    acc.spend(sel)
    f = acc.remaining()
    assert f.room is not None and 0 < f.room < budget_rho((1.0, 1e-6))
    assert f.room_used == pytest.approx(1 / 64, rel=1e-12)
    assert "declared before the first spend" in acc.history()[0].rule


def test_subsampled_gaussians_cost_their_gaussian_after_the_first_spend() -> None:
    acc = PrivacyAccountant(budget=(8.0, 1e-6))
    acc.spend(GaussianEvent(sigma=5.0))
    with pytest.raises(BudgetExceededError, match="commit the whole run before the first"):
        for _ in range(100):
            acc.spend(STEP)


# -- §3: plans committed before the first spend keep PLD tightness -----------------------------


MIXED = [(GaussianEvent(sigma=5.0), 10), (LaplaceEvent(scale=10.0), 10), (STEP, 1000)]


def _admits(eps: float, *, commit_first: bool) -> bool:
    acc = PrivacyAccountant(budget=(eps, 1e-6))
    try:
        if commit_first:
            acc.commit([(STEP, 1000)], label="DP-SGD")
        for _ in range(10):
            acc.spend(GaussianEvent(sigma=5.0))
        for _ in range(10):
            acc.spend(LaplaceEvent(scale=10.0))
        if commit_first:
            for _ in range(1000):
                acc.spend(STEP)
        else:
            acc.commit([(STEP, 1000)], label="DP-SGD")
    except BudgetExceededError:
        return False
    return True


def test_the_mixed_history_with_dpsgd_committed_first_is_within_ten_percent_of_pld() -> None:
    declared = float(pld_epsilon(MIXED, 1e-6, bracket=False).epsilon)
    assert declared == pytest.approx(3.953, abs=2e-3)
    assert _admits(1.10 * declared, commit_first=True)
    assert _admits(4.14, commit_first=True)  # measured: 4.1318 (1.045 × the PLD)
    assert not _admits(declared, commit_first=True)  # never below the declared sequence's ε


def test_a_run_committed_after_noise_is_drawn_costs_its_gaussian_domination() -> None:
    """Proven necessary (guide, and filter module docstring): after a first Gaussian noise
    draw, a cheaper DP-SGD run would let an adaptive analyst exceed the budget."""
    assert not _admits(10.0, commit_first=False)
    with pytest.raises(BudgetExceededError, match="1000 copies"):
        acc = PrivacyAccountant(budget=(10.0, 1e-6))
        acc.spend(GaussianEvent(sigma=5.0))
        acc.commit([(STEP, 1000)])


def test_committed_events_are_taken_from_the_plan_in_any_order() -> None:
    acc = PrivacyAccountant(budget=(4.2, 1e-6))
    plan = acc.commit([(STEP, 3), GaussianEvent(sigma=5.0)], label="study")
    assert plan.pricing == "declared" and plan.open and plan.spent == 0
    used = acc.remaining().room_used
    for ev in (STEP, GaussianEvent(sigma=5.0, label="named"), STEP, STEP):
        record = acc.spend(ev)
        assert "commitment #1" in record.rule
        assert acc.remaining().room_used == used  # charged when committed
    (done,) = acc.commitments()
    assert not done.open and done.spent == 4
    # outside the plan: charged as usual (the run's steps cost their Gaussian now)
    with pytest.raises(BudgetExceededError):
        acc.spend(SubsampledEvent(GaussianEvent(sigma=0.2), 0.01))


def test_prepaid_plans_are_refunded_when_closed_early() -> None:
    acc = PrivacyAccountant(budget=(2.0, 1e-6))
    acc.spend(GaussianEvent(sigma=10.0))
    before = acc.remaining().room_used
    plan = acc.commit([(GaussianEvent(sigma=20.0), 8)])
    assert plan.pricing == "prepaid"
    assert acc.remaining().room_used == pytest.approx(before + 8 / 400, rel=1e-12)
    acc.spend(GaussianEvent(sigma=20.0))
    acc.spend(GaussianEvent(sigma=20.0))
    closed = acc.close_commitment(plan)
    assert closed.closed and closed.spent == 2
    assert acc.remaining().room_used == pytest.approx(before + 2 / 400, rel=1e-9)
    assert acc.remaining().room_used >= before + 2 / 400  # refunds are rounded down
    with pytest.raises(InvalidParameterError, match="already closed"):
        acc.close_commitment(plan.id)
    with pytest.raises(InvalidParameterError, match="no commitment #7"):
        acc.close_commitment(7)


def test_declared_plans_closed_early_give_nothing_back() -> None:
    acc = PrivacyAccountant(budget=(4.2, 1e-6))
    plan = acc.commit([(STEP, 1000)])
    room = acc.remaining().room
    acc.spend(STEP)
    acc.close_commitment(plan)
    assert acc.remaining().room == room
    assert acc.remaining().open_commitments == 0


def test_a_plan_that_does_not_fit_is_refused_and_records_nothing() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6))
    with pytest.raises(BudgetExceededError, match="do not fit"):
        acc.commit([(STEP, 100_000)])
    assert acc.commitments() == ()
    acc.spend(GaussianEvent(sigma=10.0))  # still pristine before: a first spend works


def test_commit_inputs_are_checked() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="at least one event"):
        acc.commit([])
    with pytest.raises(InvalidParameterError, match="count must be an integer >= 1"):
        acc.commit([(STEP, 0)])
    with pytest.raises(TypeError, match="PrivacyEvent"):
        acc.commit(["gaussian"])
    fixed = PrivacyAccountant(budget=(1.0, 1e-6), composition="pld", adaptivity="fixed")
    with pytest.raises(InvalidParameterError, match="adaptivity='fixed'"):
        fixed.commit([STEP])


def test_the_declared_room_is_the_largest_that_fits() -> None:
    """Correctness of the declared room: the certified PLD of the block plus the Gaussian room
    fits the budget, and a little more room would not."""
    budget = (4.2, 1e-6)
    room = declared_room(budget, ((_key(STEP), 1000),), (Fraction(0), Fraction(0)))
    items = [(STEP, 1000), (GaussianEvent(sigma=1.0 / math.sqrt(room)), 1)]
    assert pld_epsilon(items, 1e-6, bracket=False).epsilon <= 4.2
    bigger = [(STEP, 1000), (GaussianEvent(sigma=1.0 / math.sqrt(room * 1.01)), 1)]
    assert pld_epsilon(bigger, 1e-6, bracket=False).epsilon > 4.2


def _key(event: object) -> str:
    from approxdp.accounting.serialization import event_key

    return event_key(event)  # type: ignore[arg-type]


# -- modes -------------------------------------------------------------------------------------


def test_rules_that_are_not_filters_need_adaptivity_fixed() -> None:
    for rule in ("pld", "auto", "optimal", "advanced"):
        with pytest.raises(InvalidParameterError, match="not a valid privacy filter"):
            PrivacyAccountant(budget=(1.0, 1e-6), composition=rule)
        acc = PrivacyAccountant(budget=(1.0, 1e-6), composition=rule, adaptivity="fixed")
        status = acc.remaining()
        assert status.adaptivity == "fixed" and "promised" in status.certified_by
    with pytest.raises(UnknownMethodError, match="adaptivity must be one of"):
        PrivacyAccountant(budget=(1.0, 1e-6), adaptivity="sometimes")
    assert PrivacyAccountant(budget=(1.0, 1e-6), adaptivity="fixed").composition == "auto"
    assert PrivacyAccountant(budget=(1.0, 1e-6)).composition == "gdp"


def test_the_basic_filter_charges_every_event_its_own_epsilon_delta() -> None:
    budget = (1.0, 2.0**-20)  # sums of binary fractions: exact (the sums are exact rationals)
    acc = PrivacyAccountant(budget=budget, composition="basic")
    for _ in range(8):
        acc.spend(EpsilonDeltaEvent(0.125, 2.0**-23))
    with pytest.raises(BudgetExceededError):
        acc.spend(LaplaceEvent(scale=1e6))
    status = acc.remaining()
    assert (status.spent_epsilon, status.spent_delta) == budget
    tenths = PrivacyAccountant(budget=(1.0, 1e-6), composition="basic")
    for _ in range(9):
        tenths.spend(EpsilonDeltaEvent(0.1, 1e-7))
    with pytest.raises(BudgetExceededError):  # ten times the float 0.1 exceeds 1 exactly
        tenths.spend(EpsilonDeltaEvent(0.1, 1e-7))
    with pytest.raises(BudgetExceededError, match="no \\(epsilon, delta\\) of its own"):
        PrivacyAccountant(budget=(1.0, 1e-6), composition="basic").spend(GaussianEvent(sigma=9))
    with pytest.raises(InvalidParameterError, match="basic_share is a share"):
        PrivacyAccountant(budget=(1.0, 1e-6), composition="basic", basic_share=(0.1, 0.0))


def test_basic_share_is_checked() -> None:
    with pytest.raises(InvalidParameterError, match="basic_share delta"):
        PrivacyAccountant(budget=(1.0, 1e-6), basic_share=(0.1, 1e-5))
    with pytest.raises(InvalidParameterError, match="an \\(epsilon, delta\\) pair"):
        PrivacyAccountant(budget=(1.0, 1e-6), basic_share=0.1)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError, match="does not fit"):
        PrivacyAccountant(budget=(1.0, 1e-6), basic_share=(1.0, 1e-6 * 1.0)).spend(
            GaussianEvent(sigma=1e-3))


def test_plan_says_why_and_spends_nothing() -> None:
    acc = PrivacyAccountant(budget=(1.0, 1e-6))
    acc.spend(GaussianEvent(sigma=10.0))
    result = acc.plan([GaussianEvent(sigma=10.0), EpsilonDeltaEvent(0.1, 1e-9)])
    assert not result.fits and result.reason is not None and "basic_share" in result.reason
    assert result.status_after.count == 2  # the first one would fit
    assert acc.remaining().count == 1


def test_explain_names_the_filter_the_mode_and_the_plans() -> None:
    acc = PrivacyAccountant(budget=(4.2, 1e-6))
    acc.commit([(STEP, 10)], label="warm-up run")
    acc.spend(STEP)
    text = acc.explain()
    assert "filter 'gdp'" in text and "fully adaptive" in text
    assert "commitment #1 'warm-up run' (declared, open): 1 of 10" in text
    assert "declared before the first spend" in text
    fixed = PrivacyAccountant(budget=(1.0, 1e-6), composition="pld", adaptivity="fixed")
    assert "promised" in fixed.explain()


def test_filter_state_round_trips_through_json() -> None:
    acc = PrivacyAccountant(budget=(4.2, 1e-6), basic_share=(0.1, 1e-7))
    acc.commit([(STEP, 5), EpsilonDeltaEvent(0.0, 1e-9)], label="x")
    acc.spend(STEP)
    acc.spend(EpsilonDeltaEvent(0.05, 1e-8))
    state = acc._ledger.state().filter
    assert state is not None
    assert FilterState.from_json(state.to_json()) == state


def test_a_training_run_is_committed_as_one_unit_within_ten_percent_of_its_pld() -> None:
    """Issue 21 §3: 10 × Gaussian σ=5, 10 × Laplace b=10 and a DP-SGD run (q=0.01, σ=1,
    T=1000) at δ=1e-6. Declared in advance the PLD certifies ε ≈ 3.953; the default ledger
    with the run committed (through TrainingAccountant.events()) must admit the history within
    10 % of that, and refuse it, spent one event at a time without the commitment."""
    run = TrainingAccountant(phases=[(1.0, 0.01, 1000)])
    releases = [(GaussianEvent(sigma=5.0), 10), (LaplaceEvent(scale=10.0), 10)]
    declared = pld_epsilon([*releases, *run.events()], 1e-6).epsilon
    assert declared == pytest.approx(3.953, abs=2e-3)

    acc = PrivacyAccountant(budget=(1.10 * declared, 1e-6))
    commitment = acc.commit(run.events(), label="DP-SGD run")
    assert commitment.pricing == "declared"
    for _ in range(10):
        acc.spend(GaussianEvent(sigma=5.0))
        acc.spend(LaplaceEvent(scale=10.0))
    (step, steps), = run.events()
    for _ in range(steps):
        acc.spend(step)
    status = acc.remaining()
    assert status.count == 1020 and status.open_commitments == 0
    with pytest.raises(BudgetExceededError):  # the run is spent: one step more is not in it
        acc.spend(step)

    # the same history, nothing committed: each step after the first spend costs its
    # Gaussian's μ² = 1, far beyond the budget
    plain = PrivacyAccountant(budget=(1.10 * declared, 1e-6))
    for _ in range(10):
        plain.spend(GaussianEvent(sigma=5.0))
        plain.spend(LaplaceEvent(scale=10.0))
    with pytest.raises(BudgetExceededError, match="commit the whole run"):
        for _ in range(steps):
            plain.spend(step)


def test_a_pure_delta_block_leaves_the_exact_room() -> None:
    """Partition selection's (0, δ) part declared before the first spend: the room is exact,
    δ₀ + (1 − δ₀)·δ_G(ε_B) ≤ δ_B (the PLD would be a hair pessimistic and refuse a release
    calibrated to the whole budget: a histogram without a domain as a table's only release)."""
    import pyarrow as pa

    from approxdp import PrivateTable

    budget = (1.0, 1e-6)
    declared = ((_key(EpsilonDeltaEvent(0.0, 5e-7)), 1),)
    room = declared_room(budget, declared, (Fraction(0), Fraction(0)))
    delta0 = 5e-7

    def total(rho: float) -> float:
        return delta0 + (1 - delta0) * float(gaussian_delta(1.0, sigma_from_rho(rho), 1.0))

    assert total(room) <= budget[1] < total(room * (1 + 1e-6))
    t = pa.table({"g": ["a"] * 900 + ["b"] * 800 + ["c"] * 700})
    whole = PrivateTable(t, budget=budget, seed=1).histogram("g", epsilon=1.0, delta=1e-6)
    assert len(whole.keys) == 3
    with pytest.raises(BudgetExceededError, match="on their own"):
        declared_room(budget, ((_key(EpsilonDeltaEvent(0.0, 2e-6)), 1),),
                      (Fraction(0), Fraction(0)))
