"""PrivacyAccountant(ledger=FILE) reopens an existing ledger without restating its budget."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from approxdp import PrivacyAccountant, PrivateTable
from approxdp.errors import LedgerError, ParameterTypeError
from approxdp.events import GaussianEvent


def test_reopen_takes_the_stored_budget_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    with PrivacyAccountant((2.0, 1e-6), ledger=path, composition="pld",
                           adaptivity="fixed") as acc:
        acc.spend(GaussianEvent(sigma=5.0))
    reopened = PrivacyAccountant(ledger=path)  # its stored mode and rule
    assert reopened.budget == (2.0, 1e-6) and reopened.composition == "pld"
    assert reopened.adaptivity == "fixed" and reopened.remaining().count == 1
    reopened.close()
    with pytest.raises(LedgerError, match="composition"):
        PrivacyAccountant(ledger=path, composition="basic")  # a stated rule is still checked
    with pytest.raises(LedgerError, match="adaptivity"):
        PrivacyAccountant(ledger=path, adaptivity="full")  # and so is a stated mode
    filtered = tmp_path / "filter.sqlite"
    PrivacyAccountant((2.0, 1e-6), ledger=filtered).close()
    with PrivacyAccountant(ledger=filtered) as again:
        assert (again.adaptivity, again.composition) == ("full", "gdp")


def test_a_release_spends_from_the_reopened_ledger(tmp_path: Path) -> None:
    path = tmp_path / "budget.sqlite"
    PrivacyAccountant((1.0, 1e-6), ledger=path).close()
    table = PrivateTable(pa.table({"x": [1.0, 2.0, 3.0]}),
                         accountant=PrivacyAccountant(ledger=path))
    table.count(epsilon=0.5, delta=5e-7)
    with PrivacyAccountant(ledger=path) as again:
        assert again.remaining().count == 1


def test_without_budget_a_ledger_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ParameterTypeError, match=r"budget=.* is required"):
        PrivacyAccountant()
    with pytest.raises(ParameterTypeError, match="existing ledger file"):
        PrivacyAccountant(ledger=tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()
