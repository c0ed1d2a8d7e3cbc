"""A table's budget keeps a basic share for partition selection (issue 21 §2).

The (0, δ) of partition selection is dominated by no Gaussian, so after a first release the
Gaussian-DP filter admits it only from a basic share fixed before any noise. ``PrivateTable(...,
budget=...)`` defaults to ``basic_share="auto"``: (0, δ/5), fixed at the first release if that
one fits with it. Its validity against an adaptive analyst is tested in
tests/accounting/test_adaptive_attacks.py (test_the_auto_basic_share_stays_within_budget).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivateTable
from approxdp.accounting import PrivacyAccountant
from approxdp.accounting.budget.accountant import AUTO_SHARE_DELTA
from approxdp.errors import BudgetExceededError, InvalidParameterError, ParameterTypeError

BUDGET = (1.0, 1e-6)


@pytest.fixture(scope="module")
def shops() -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table({"shop": rng.choice(["a", "b", "c"], 3000).astype(str)})


def test_the_default_share_admits_partition_selection_after_a_first_release(
        shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=BUDGET, seed=1)
    assert t.accountant.basic_share is None  # type: ignore[attr-defined]  # not fixed yet
    assert "basic share (auto)" in t.accountant.explain()  # type: ignore[attr-defined]
    t.count(epsilon=0.3, delta=1e-7)
    assert t.accountant.basic_share == (0.0, AUTO_SHARE_DELTA * BUDGET[1])  # type: ignore
    h = t.histogram("shop", epsilon=0.3, delta=2e-7)
    assert h.keys == [("a",), ("b",), ("c",)]
    assert t.remaining().basic_share_used == (0.0, 1e-7)


def test_the_share_costs_the_gaussian_room_about_one_percent(shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=BUDGET, seed=1)
    t.count(epsilon=0.3, delta=1e-7)
    bare = PrivacyAccountant(BUDGET)
    bare.spend(t.accountant.history()[0].event)  # type: ignore[attr-defined]
    ratio = (t.remaining().room / bare.remaining().room) ** 0.5  # type: ignore[operator]
    assert 0.985 < ratio < 0.995


def test_a_first_release_of_the_whole_budget_drops_the_share(shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=BUDGET, seed=1)
    t.count(epsilon=1.0, delta=1e-6)
    assert t.accountant.basic_share is None  # type: ignore[attr-defined]
    with pytest.raises(BudgetExceededError):
        t.count(epsilon=0.01, delta=1e-9)


def test_without_a_share_the_refusal_names_the_option(shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=BUDGET, seed=1, basic_share=None)
    t.count(epsilon=0.3, delta=1e-7)
    with pytest.raises(BudgetExceededError, match=r"PrivateTable\(\.\.\., basic_share="):
        t.histogram("shop", epsilon=0.3, delta=2e-7)
    assert t.remaining().count == 1


def test_an_explicit_share_is_fixed_at_creation(shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=BUDGET, seed=1, basic_share=(0.0, 3e-7))
    assert t.accountant.basic_share == (0.0, 3e-7)  # type: ignore[attr-defined]
    t.count(epsilon=0.3, delta=1e-7)
    t.histogram("shop", epsilon=0.3, delta=2e-7)
    t.histogram("shop", epsilon=0.3, delta=4e-7)
    assert t.remaining().basic_share_used == (0.0, 3e-7)


def test_the_share_belongs_to_the_accountant_that_budget_creates(shops: pa.Table) -> None:
    with pytest.raises(ParameterTypeError, match="basic_share"):
        PrivateTable(shops, accountant=PrivacyAccountant(BUDGET), basic_share=(0.0, 1e-7))
    with pytest.raises(InvalidParameterError, match=r"basic_share delta must be in \[0, 1e-06\]"):
        PrivateTable(shops, budget=BUDGET, basic_share=(0.0, 2e-6))
    with pytest.raises(InvalidParameterError, match="'auto'"):
        PrivateTable(shops, budget=BUDGET, basic_share="half")  # type: ignore[arg-type]


def test_auto_is_for_in_memory_budgets(tmp_path: object) -> None:
    with pytest.raises(InvalidParameterError, match="ledger file"):
        PrivacyAccountant(BUDGET, ledger=f"{tmp_path}/l.sqlite", basic_share="auto")


def test_a_pure_epsilon_budget_has_no_share(shops: pa.Table) -> None:
    t = PrivateTable(shops, budget=(1.0, 0.0), seed=1)
    assert t.accountant.composition == "basic"  # type: ignore[attr-defined]
    assert t.accountant.basic_share is None  # type: ignore[attr-defined]


def test_a_plan_withdrawn_before_any_release_puts_the_auto_share_back() -> None:
    """A bounds='private' release that fails its checks before its first spend (too few
    values) withdraws its plan; the table is then as new: the share is pending again, and a
    first release of the whole budget is admitted (the share dropped)."""
    t = PrivateTable(pa.table({"x": [1.0, 2.0, 3.0]}), budget=BUDGET, seed=0)
    with pytest.raises(Exception, match="nothing was spent"):
        t.mean("x", "private", epsilon=0.5, delta=1e-7)
    assert t.accountant.basic_share is None  # type: ignore[attr-defined]
    assert "basic share (auto)" in t.accountant.explain()  # type: ignore[attr-defined]
    t.count(epsilon=1.0, delta=1e-6)
    assert t.remaining().count == 1
