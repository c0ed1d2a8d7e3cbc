"""The accountant's PLD rule: subsampled Gaussians in a ledger, mixed histories, ``auto``, and
ledger files written before the rule existed (schema 1) upgraded in place."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from approxdp import PrivacyAccountant
from approxdp.accounting.budget.costs import contribution
from approxdp.accounting.budget.rules import COMPOSITION_RULES
from approxdp.accounting.budget.sqlite_ledger import SCHEMA_VERSION, SQLiteLedger
from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.serialization import event_from_json, event_key
from approxdp.errors import BudgetExceededError, LedgerError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)

DATA = Path(__file__).parent / "data"
STEP = SubsampledEvent(GaussianEvent(sigma=1.1), 256 / 60000, label="dp-sgd step")


def test_pld_is_a_composition_rule() -> None:
    assert "pld" in COMPOSITION_RULES


def test_event_keys_ignore_labels_and_round_trip() -> None:
    a = SubsampledEvent(GaussianEvent(sigma=2.0, label="x"), 0.1, label="one")
    b = SubsampledEvent(GaussianEvent(sigma=2.0, label="y"), 0.1, label="two")
    assert event_key(a) == event_key(b)
    assert event_from_json(event_key(a)) == a  # labels do not take part in equality
    assert contribution(a).pld == (event_key(a),)
    assert contribution(GaussianEvent(sigma=2.0)).pld == ()  # Gaussians compose through ρ


@pytest.mark.parametrize("rule", ["pld", "auto"])
def test_dp_sgd_steps_in_a_ledger(tmp_path: Path, rule: str) -> None:
    """100 steps spent one by one cost what the PLD says 100 steps cost, and the spend that
    would cross the budget is refused with nothing recorded."""
    path = tmp_path / "sgd.sqlite"
    budget = pld_epsilon([(STEP, 130)], 1e-5, bracket=False).epsilon  # room for ~130 steps
    acc = PrivacyAccountant(budget=(budget, 1e-5), ledger=path, composition=rule,
                            adaptivity="fixed")
    for _ in range(10):
        acc.spend(STEP)
    acc.spend(ComposedEvent((STEP,) * 90))  # an epoch as one spend: the same 90 events
    status = acc.remaining()
    expected = pld_epsilon([(STEP, 100)], 1e-5, bracket=False).epsilon
    assert status.spent_epsilon == pytest.approx(expected, rel=1e-9)
    assert "privacy loss distribution" in status.rule
    assert status.spent_delta <= 1e-5
    # spend until refused: the refusal leaves the ledger as it was
    spent = 100
    with pytest.raises(BudgetExceededError):
        for _ in range(100_000):
            acc.spend(STEP)
            spent += 1
    assert len(acc.history()) == spent - 89
    assert 120 <= spent <= 140
    assert pld_epsilon([(STEP, spent)], 1e-5, bracket=False).epsilon <= budget
    assert float(pld_delta([(STEP, spent + 1)], budget).delta) > 1e-5
    acc.close()
    # reopened, the history and its status are the same
    again = PrivacyAccountant(budget=(budget, 1e-5), ledger=path, composition=rule,
                              adaptivity="fixed")
    assert again.remaining().count == spent - 89
    assert again.remaining().spent_epsilon == pytest.approx(
        pld_epsilon([(STEP, spent)], 1e-5, bracket=False).epsilon, rel=1e-9
    )
    again.close()


def test_auto_is_exact_for_gaussians_and_never_worse_than_the_closed_forms() -> None:
    gauss = PrivacyAccountant(budget=(2.0, 1e-5), adaptivity="fixed")
    gauss.spend(GaussianEvent(sigma=5.0))
    gauss.spend(GaussianEvent(sigma=3.0))
    assert "exact Gaussian" in gauss.remaining().rule  # no PLD for all-Gaussian histories
    history = [
        GaussianEvent(sigma=6.0),
        LaplaceEvent(scale=10.0),
        LaplaceEvent(scale=10.0),
        EpsilonDeltaEvent(0.05, 1e-8),
        DiscreteGaussianEvent(sigma=4.0, sensitivity=1.0, epsilon=0.4, delta=1e-9),
    ]
    results = {}
    for rule in ("auto", "basic", "optimal", "advanced", "pld"):
        acc = PrivacyAccountant(budget=(10.0, 1e-5), composition=rule, adaptivity="fixed")
        for ev in history:
            acc.spend(ev)
        results[rule] = acc.remaining().spent_epsilon
    assert results["auto"] == min(results["basic"], results["optimal"], results["pld"])
    # the Laplace and discrete-Gaussian events' own loss distributions beat their (ε, δ)
    assert results["pld"] < results["optimal"]


def test_pld_only_events_make_auto_use_the_pld() -> None:
    acc = PrivacyAccountant(budget=(5.0, 1e-5), adaptivity="fixed")
    acc.spend(LaplaceEvent(scale=2.0))
    acc.spend(STEP)
    status = acc.remaining()
    assert "privacy loss distribution" in status.rule
    assert status.spent_epsilon == pytest.approx(
        pld_epsilon([(LaplaceEvent(scale=2.0), 1), (STEP, 1)], 1e-5, bracket=False).epsilon,
        rel=1e-9,
    )


def test_plan_counts_subsampled_gaussians() -> None:
    fixed = PrivacyAccountant(budget=(1.0, 1e-5), adaptivity="fixed")
    assert fixed.plan([STEP] * 50).fits
    assert not fixed.plan([SubsampledEvent(GaussianEvent(sigma=0.5), 0.5)] * 50).fits
    assert fixed.history() == ()
    # under the filter, steps spent one by one cost their Gaussian (no amplification) once
    # noise may have been drawn; the run committed first is charged by its PLD
    acc = PrivacyAccountant(budget=(1.0, 1e-5))
    assert not acc.plan([STEP] * 50).fits
    acc.commit([(STEP, 50)])
    assert acc.plan([STEP] * 50).fits


def test_schema_1_ledger_is_upgraded_in_place(tmp_path: Path) -> None:
    """tests/accounting/data/ledger_v1.sqlite was written by the schema-1 code (before the PLD
    rule): Gaussian, Laplace, (ε, δ), subsampled-Laplace, composed and discrete-Gaussian spends
    under budget (2, 1e-5) with composition='auto'."""
    path = tmp_path / "old.sqlite"
    shutil.copy(DATA / "ledger_v1.sqlite", path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        before_rows = conn.execute("SELECT id, event, rho, items FROM spends").fetchall()
    acc = PrivacyAccountant(budget=(2.0, 1e-5), ledger=path, adaptivity="fixed")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert conn.execute("SELECT id, event, rho, items FROM spends").fetchall() == before_rows
    events = [r.event for r in acc.history()]
    assert len(events) == 6
    # the upgraded totals are exactly those of the same events spent by this code
    fresh = PrivacyAccountant(budget=(2.0, 1e-5), adaptivity="fixed")
    for ev in events:
        fresh.spend(ev)
    assert acc.remaining() == fresh.remaining()
    ledger = SQLiteLedger(path, budget=(2.0, 1e-5), composition="auto")
    assert ledger.verify().count == 6
    ledger.close()
    # the PLD re-accounts the old history more tightly than the rule that recorded it
    old_rule_eps = 1.0089040180798747  # what the schema-1 code reported (basic composition)
    assert acc.remaining().spent_epsilon < old_rule_eps
    acc.spend(LaplaceEvent(scale=50.0))  # and it keeps working
    assert len(acc.history()) == 7
    acc.close()


def test_unknown_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    shutil.copy(DATA / "ledger_v1.sqlite", path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(LedgerError, match="schema version 7"):
        PrivacyAccountant(budget=(2.0, 1e-5), ledger=path)


def test_composed_and_subsampled_parts_have_descriptions() -> None:
    composed = ComposedEvent((GaussianEvent(sigma=3.0), LaplaceEvent(scale=4.0), STEP))
    contrib = contribution(composed)
    assert contrib.rho > 0 and len(contrib.pld) == 2
    sub_composed = SubsampledEvent(ComposedEvent((LaplaceEvent(scale=1.0),) * 2), 0.1)
    (key,) = contribution(sub_composed).pld
    assert isinstance(event_from_json(key), EpsilonDeltaEvent)  # its amplified (ε, δ)
