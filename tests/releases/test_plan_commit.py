"""Releases of several spends committed as one plan (issue 21 §3): ``bounds="private"``.

The bounds release and the statistic clamped to them have every privacy parameter fixed
before any noise is drawn, so a privacy-filter ledger takes them as one commitment: before the
first spend it is charged by its privacy-loss distribution (a partition selection's (0, δ)
included, which one spend at a time after a first spend would refuse without a basic share);
the spends are taken from it; a plan that stops early is closed (refunded, or withdrawn while
nothing was spent) and keeps every ledger row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivateTable
from approxdp.accounting import PrivacyAccountant
from approxdp.errors import BudgetExceededError
from approxdp.releases import table_steps

BUDGET = (2.0, 1e-6)


def _table(n: int = 4000, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.normal(50.0, 10.0, n),
                     "g": rng.choice(["a", "b", "c"], n).astype(str)})


def test_private_bounds_are_one_committed_plan() -> None:
    t = PrivateTable(_table(), budget=BUDGET, seed=1)
    t.mean("x", "private", epsilon=1.0, delta=5e-7)
    acc = t.accountant
    assert isinstance(acc, PrivacyAccountant)
    (plan,) = acc.commitments()
    assert plan.label == "bounds='private': mean(x)" and plan.pricing == "declared"
    assert plan.spent == 2 and not plan.open
    assert [r.rule for r in acc.history()] == ["filter 'gdp': from commitment #1 (charged "
                                               "when committed)"] * 2


def test_the_committed_plan_costs_what_its_spends_cost_one_at_a_time() -> None:
    """All-Gaussian: the Gaussian-DP filter is exact for Gaussians, so committing costs the
    same room as spending one at a time (after a first spend: prepaid, same prices)."""
    committed = PrivateTable(_table(), budget=BUDGET, seed=1)
    committed.count(epsilon=0.2, delta=1e-8)
    committed.mean("x", "private", epsilon=1.0, delta=5e-7)
    acc = PrivacyAccountant(BUDGET)
    for record in committed.accountant.history():  # type: ignore[attr-defined]
        acc.spend(record.event)
    assert committed.remaining().room_used == pytest.approx(acc.remaining().room_used,
                                                            rel=1e-12)
    assert committed.accountant.commitments()[0].pricing == "prepaid"  # type: ignore[attr-defined]


def test_a_plan_with_partition_selection_fits_where_one_at_a_time_is_refused() -> None:
    """A grouped mean without a domain selects its groups privately: a (0, δ) part no Gaussian
    dominates. After a first spend the filter refuses it without a basic share; committed with
    the bounds before the first spend it is charged by the block's PLD and admitted."""
    t = PrivateTable(_table(), budget=BUDGET, seed=1)
    r = t.mean("x", "private", epsilon=1.0, delta=5e-7, by=["g"])
    assert len(r.keys) == 3
    events = [rec.event for rec in t.accountant.history()]  # type: ignore[attr-defined]
    one_at_a_time = PrivacyAccountant(BUDGET)
    one_at_a_time.spend(events[0])
    with pytest.raises(BudgetExceededError, match="basic share"):
        one_at_a_time.spend(events[1])


def test_an_interrupted_plan_keeps_its_rows_and_refunds_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The statistic's release fails after the bounds' spend (here: an interrupt): the first
    spend stays in the ledger file, the commitment is closed, and the unspent Gaussian's room
    is refunded — the ledger stands as if only the bounds had been spent."""
    ledger = tmp_path / "l.sqlite"
    t = PrivateTable(_table(), accountant=PrivacyAccountant(BUDGET, ledger=ledger))

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(table_steps.TableSteps, "execute", interrupted)
    with pytest.raises(KeyboardInterrupt):
        t.mean("x", "private", epsilon=1.0, delta=5e-7)
    t.accountant.close()  # type: ignore[attr-defined]
    reopened = PrivacyAccountant(ledger=ledger)
    (first,) = reopened.history()
    (plan,) = reopened.commitments()
    assert plan.closed and plan.spent == 1
    assert [e.kind for e in reopened.commitment_log()] == ["commit", "close"]
    alone = PrivacyAccountant(BUDGET)
    alone.spend(first.event)
    assert reopened.remaining().room_used == pytest.approx(alone.remaining().room_used,
                                                           rel=1e-12)
    assert reopened.remaining().open_commitments == 0
    reopened.close()


def test_a_plan_that_fails_before_its_first_spend_is_withdrawn() -> None:
    t = PrivateTable(pa.table({"x": [1.0, 2.0, 3.0]}), budget=BUDGET, seed=0)
    with pytest.raises(Exception, match="nothing was spent"):
        t.mean("x", "private", epsilon=0.5, delta=1e-7)
    status = t.remaining()
    assert status.count == 0 and status.room_used == 0.0 and status.open_commitments == 0


def test_a_plan_that_does_not_fit_is_refused_whole() -> None:
    t = PrivateTable(_table(), budget=(0.5, 1e-6), seed=1)
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        t.mean("x", "private", epsilon=1.0, delta=5e-7)
    assert t.remaining().count == 0
    assert t.accountant.commitments() == ()  # type: ignore[attr-defined]


def test_a_ledger_that_is_not_a_filter_spends_one_at_a_time() -> None:
    acc = PrivacyAccountant(BUDGET, composition="pld", adaptivity="fixed")
    t = PrivateTable(_table(), accountant=acc, seed=1)
    t.mean("x", "private", epsilon=1.0, delta=5e-7)
    assert acc.remaining().count == 2 and acc.commitments() == ()
