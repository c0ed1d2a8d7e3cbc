"""``read_ledger_settings``: a ledger's stored budget and rule, read without creating anything."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from approxdp import GaussianEvent, LedgerError, PrivacyAccountant
from approxdp.accounting import LedgerSettings, read_ledger_settings


def test_reads_what_the_ledger_was_created_with(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with PrivacyAccountant(budget=(2.5, 1e-6), ledger=path, composition="optimal",
                           adaptivity="fixed") as acc:
        acc.spend(GaussianEvent(sigma=30.0))
        # While the writer is open (its data may still sit in the WAL) ...
        assert read_ledger_settings(path) == LedgerSettings((2.5, 1e-6), "optimal", "fixed")
    # ... and after it closed; the file is left as it was (no side files remain).
    assert read_ledger_settings(path) == LedgerSettings((2.5, 1e-6), "optimal", "fixed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.sqlite"]
    with PrivacyAccountant(budget=(2.5, 1e-6), ledger=path, composition="optimal",
                           adaptivity="fixed") as acc:
        assert len(acc.history()) == 1
    shared = tmp_path / "shared.sqlite"
    PrivacyAccountant((1.0, 1e-6), ledger=shared, basic_share=(0.25, 1e-7)).close()
    assert read_ledger_settings(shared) == LedgerSettings((1.0, 1e-6), "gdp", "full",
                                                          (0.25, 1e-7))


def test_refuses_missing_foreign_and_non_sqlite_files(tmp_path: Path) -> None:
    missing = tmp_path / "none.sqlite"
    with pytest.raises(LedgerError, match="not found"):
        read_ledger_settings(missing)
    assert not missing.exists()
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(LedgerError, match="not a SQLite file"):
        read_ledger_settings(text)
    foreign = tmp_path / "other.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="not an approxdp ledger"):
        read_ledger_settings(foreign)
