"""PrivateTable's ledger settings beyond the budget: a Rényi share (``rdp_share``,
``rdp_orders``) and sub-budgets (``sub_budgets``, :meth:`PrivateTable.sub_budget`), with the
same typed errors as ``basic_share`` when they come with ``accountant=``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp.accounting import PrivacyAccountant
from approxdp.accounting.budget.filter_rdp import DEFAULT_SHARE_ORDERS
from approxdp.errors import (
    BudgetExceededError,
    InvalidParameterError,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.events import GaussianEvent, SubsampledEvent
from approxdp.releases.session import PrivateTable

BUDGET = (4.0, 1e-6)


def _data() -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({"v": rng.uniform(0, 10, 500), "g": rng.choice(["a", "b"], 500)})


def test_a_table_made_with_a_renyi_share_keeps_it_at_its_orders() -> None:
    t = PrivateTable(_data(), budget=BUDGET, rdp_share=(3.0, 5e-7), rdp_orders=[4, 8, 16])
    acc = t.accountant
    assert isinstance(acc, PrivacyAccountant)
    share = acc.rdp_share
    assert share is not None and share.orders == (4.0, 8.0, 16.0)
    assert (float(share.epsilon), float(share.delta)) == (3.0, 5e-7)
    t.count(epsilon=0.5, delta=1e-7)
    # DP-SGD steps on the same accountant after the first release go to the share: 200 steps
    # of q = 0.01, σ = 1 would cost μ² = 1 each in the Gaussian-DP room (refused there)
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    for _ in range(200):
        acc.spend(step)
    assert max(acc.rdp_share.used) > 0.0  # type: ignore[union-attr]
    assert "Rényi share" in acc.explain()
    plain = PrivateTable(_data(), budget=BUDGET)
    plain.count(epsilon=0.5, delta=1e-7)
    with pytest.raises(BudgetExceededError, match=r"rdp_share=\(epsilon, delta\)"):
        for _ in range(200):
            plain.accountant.spend(step)


def test_default_orders_and_no_share_by_default() -> None:
    t = PrivateTable(_data(), budget=BUDGET, rdp_share=(1.0, 1e-7))
    assert t.accountant.rdp_share.orders == DEFAULT_SHARE_ORDERS  # type: ignore[attr-defined]
    assert PrivateTable(_data(), budget=BUDGET).accountant.rdp_share is None  # type: ignore


@pytest.mark.parametrize(("options", "match"), [
    ({"rdp_share": (5.0, 1e-7)}, r"rdp_share.*0 < epsilon <= 4"),  # above the budget's ε
    ({"rdp_share": (1.0, 2e-6)}, r"rdp_share.*delta <= 1e-06"),
    ({"rdp_share": (0.0, 1e-7)}, r"rdp_share"),
    ({"rdp_share": "half"}, r"rdp_share must be an \(epsilon, delta\) pair"),
    ({"rdp_share": (1.0, 1e-7), "rdp_orders": [1.0]}, r"rdp_orders.*\(1, 1024\]"),
    ({"rdp_share": (1.0, 1e-7), "rdp_orders": [2000]}, r"rdp_orders.*\(1, 1024\]"),
    ({"rdp_share": (1.0, 1e-7), "rdp_orders": []}, r"rdp_orders"),
    ({"rdp_orders": [8]}, r"rdp_orders.*pass rdp_share"),
    ({"sub_budgets": {"a": (5.0, 1e-7)}}, r"sub_budgets\['a'\].*not within the budget"),
    ({"sub_budgets": {"a": (3.0, 6e-7), "b": (3.0, 4e-7)}}, r"sub_budgets"),
])
def test_bad_settings_are_typed_errors_naming_them(options: dict[str, Any], match: str) -> None:
    with pytest.raises((InvalidParameterError, ParameterTypeError), match=match):
        PrivateTable(_data(), budget=BUDGET, **options)


@pytest.mark.parametrize(("name", "value"), [
    ("basic_share", (0.0, 1e-7)), ("basic_share", None), ("rdp_share", (1.0, 1e-7)),
    ("rdp_orders", [8.0]), ("sub_budgets", {"a": (1.0, 1e-7)}),
])
def test_settings_with_an_accountant_are_refused_naming_them(name: str, value: Any) -> None:
    acc = PrivacyAccountant(BUDGET)
    with pytest.raises(ParameterTypeError, match=rf"{name}=.* is for the accountant that "
                                                 rf"budget= creates.*PrivacyAccountant\("):
        PrivateTable(_data(), accountant=acc, **{name: value})
    PrivateTable(_data(), accountant=acc, basic_share="auto")  # the default: no setting


def test_a_sub_budget_table_pays_from_its_sub_budget_only() -> None:
    t = PrivateTable(_data(), budget=BUDGET, sub_budgets={"reports": (1.0, 2e-7)})
    sub = t.filter("v > 1").sub_budget("reports")
    assert sub.steps == ("filter('v > 1')",) and sub.accountant is t.accountant.sub("reports")  # type: ignore[attr-defined]
    r = sub.mean("v", (0, 10), epsilon=0.5, delta=1e-7)
    assert r.value is not None
    assert sub.remaining().count == 1 and t.remaining().count == 0
    with pytest.raises(BudgetExceededError):  # past the sub-budget's own (1, 2e-7) ...
        sub.count(epsilon=1.0, delta=1e-7)
    assert sub.remaining().count == 1  # ... refused, nothing spent
    t.count(epsilon=1.0, delta=1e-7)  # while the main budget still has room
    with pytest.raises(UnknownMethodError, match=r"no sub-budget 'other'.*\['reports'\]"):
        t.sub_budget("other")
    with pytest.raises(UnknownMethodError, match="no sub-budget 'reports'"):
        PrivateTable(_data(), budget=BUDGET).sub_budget("reports")


def test_sub_budget_needs_an_accountant_with_sub_budgets() -> None:
    class Plain:
        def remaining(self) -> Any:
            return None

        def spend(self, event: Any, *, seeded: bool = False) -> Any:
            return None

    t = PrivateTable(_data(), accountant=Plain())  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match=r"sub_budget\('a'\) needs a PrivacyAccountant"):
        t.sub_budget("a")


def test_a_sub_budget_of_a_ledger_file_keeps_its_spends(tmp_path: Any) -> None:
    ledger = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=ledger, sub_budgets={"reports": (1.0, 2e-7)}) as acc:
        PrivateTable(_data(), accountant=acc).sub_budget("reports").count(epsilon=0.5,
                                                                          delta=1e-7)
    with PrivacyAccountant(ledger=ledger) as again:  # reopened: the stored split and spends
        table = PrivateTable(_data(), accountant=again)
        assert table.sub_budget("reports").remaining().count == 1
        assert table.remaining().count == 0
        assert table.sub_budget("reports").accountant.persistent  # type: ignore[attr-defined]
