"""Ledger files written before privacy filters (schema 2) are upgraded and re-certified.

The fixtures were written by the code on main before the filter (7d56d4d):

- ``ledger_v2_attack.sqlite``: budget (1, 1e-6), rule ``auto``; the issue's adaptive attack as
  that code admitted it: GaussianEvent(σ = 15), then LaplaceEvent(b = 1.32699). Under a valid
  filter it exceeds the budget.
- ``ledger_v2_mixed.sqlite``: budget (2, 1e-5), rule ``auto``; Gaussian, Laplace, a second
  Gaussian, randomized response and one DP-SGD step (σ = 4): within the budget under the
  filter (written by main at 2f98aea, also before the filter).
"""

from __future__ import annotations

import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from approxdp.accounting import PrivacyAccountant, read_ledger_settings
from approxdp.accounting.budget.sqlite_ledger import SCHEMA_VERSION, SQLiteLedger
from approxdp.errors import BudgetExceededError, LedgerError, LedgerRecertificationWarning
from approxdp.events import GaussianEvent, LaplaceEvent

DATA = Path(__file__).parent / "data"


def _copy(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.sqlite"
    shutil.copy(DATA / f"{name}.sqlite", path)
    return path


def _rows(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT id, created, event, rho, items, rule, delta_after FROM spends ORDER BY id"
        ).fetchall()


def test_the_fixtures_are_schema_2_files_from_before_the_filter(tmp_path: Path) -> None:
    for name, count in (("ledger_v2_attack", 2), ("ledger_v2_mixed", 5)):
        path = _copy(tmp_path, name)
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        settings = read_ledger_settings(path)
        assert settings.adaptivity is None and settings.composition == "auto"
        assert settings.legacy_composition == "auto" and settings.schema == 2
        assert len(_rows(path)) == count


def test_an_overspent_history_is_flagged_kept_and_refuses_spends(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v2_attack")
    before = _rows(path)
    with pytest.warns(LedgerRecertificationWarning, match="spend #2 of 2 does not fit"):
        acc = PrivacyAccountant(ledger=path)
    assert _rows(path) == before  # every row kept, unchanged
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    status = acc.remaining()
    assert status.over_budget and status.refusing is not None
    assert "adaptivity='fixed'" in status.refusing and "its rule was 'auto'" in status.refusing
    assert status.count == 2 and len(acc.history()) == 2
    with pytest.raises(BudgetExceededError, match="is refused: this ledger's stored history"):
        acc.spend(GaussianEvent(sigma=1000.0))
    with pytest.raises(BudgetExceededError, match="refused"):
        acc.commit([GaussianEvent(sigma=1000.0)])
    assert "REFUSING SPENDS" in acc.explain()
    acc.close()
    # it says so again on every opening, until the user decides
    with pytest.warns(LedgerRecertificationWarning):
        PrivacyAccountant(ledger=path).close()


def test_the_user_decides_by_declaring_the_old_history_fixed(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v2_attack")
    with pytest.warns(LedgerRecertificationWarning):
        PrivacyAccountant(ledger=path).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", LedgerRecertificationWarning)
        acc = PrivacyAccountant(ledger=path, adaptivity="fixed")  # its old rule: auto
    assert (acc.adaptivity, acc.composition) == ("fixed", "auto")
    status = acc.remaining()
    assert not status.over_budget and "promised" in status.certified_by
    with pytest.raises(BudgetExceededError):  # the old rule's budget is spent, as before
        acc.spend(LaplaceEvent(scale=1.0))
    acc.close()
    assert read_ledger_settings(path).adaptivity == "fixed"
    # nothing spent since: the decision can still be changed back (and warns again)
    with pytest.warns(LedgerRecertificationWarning):
        PrivacyAccountant(ledger=path, adaptivity="full").close()


def test_once_spent_under_a_mode_an_old_ledger_keeps_it(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v2_mixed")
    with PrivacyAccountant(ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=100.0))
    with pytest.raises(LedgerError, match="adaptivity='full'"):
        PrivacyAccountant(ledger=path, adaptivity="fixed")


def test_a_history_within_budget_continues_under_the_filter(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v2_mixed")
    before = _rows(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LedgerRecertificationWarning)
        acc = PrivacyAccountant(ledger=path)
    assert _rows(path) == before
    assert (acc.adaptivity, acc.composition) == ("full", "gdp")
    status = acc.remaining()
    assert not status.over_budget and status.count == 5
    assert status.spent_epsilon < 2.0 and status.room is not None
    acc.spend(GaussianEvent(sigma=50.0))
    assert acc.remaining().count == 6
    acc.close()
    ledger = SQLiteLedger(path, budget=(2.0, 1e-5), composition="gdp", adaptivity="full")
    assert ledger.verify().count == 6  # the charges stored by the re-certification add up
    ledger.close()
    settings = read_ledger_settings(path)
    assert settings.legacy_composition == "auto" and settings.adaptivity == "full"


def test_the_upgrade_keeps_the_old_rules_readings(tmp_path: Path) -> None:
    """Declared fixed at the first opening, an old ledger reads as it did before."""
    path = _copy(tmp_path, "ledger_v2_mixed")
    acc = PrivacyAccountant(ledger=path, adaptivity="fixed")
    old = acc.remaining()
    # as main reported when the file was written (1.0255978824392895); the PLD engine has been
    # made faster since (dpsgdfast 547c363) and its certified bound moved by < 1e-6 relative
    assert old.spent_epsilon == pytest.approx(1.0255978824392895, rel=1e-5)
    assert old.adaptivity == "fixed"
    acc.close()


def test_the_cli_ledger_command_shows_the_refusal(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from approxdp.cli.app import cli

    path = _copy(tmp_path, "ledger_v2_attack")
    out = CliRunner().invoke(cli, ["ledger", str(path), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["status"]["over_budget"] is True and data["adaptivity"] == "full"
    assert data["warnings"] and "does not fit" in data["warnings"][0]
    text = CliRunner().invoke(cli, ["ledger", str(path)]).output
    assert "REFUSING SPENDS" in text and "filter 'gdp'" in text
