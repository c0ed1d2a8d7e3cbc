"""Ledger schema 5: one hash chain over spends and the commitments of plans, covering every
charge (issue 23 §6); the upgrade of files written by schemas 2, 3 and 4 (the committed files in
tests/accounting/data/, see its README), and tampering with charges and commitments."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from approxdp import GaussianEvent, LaplaceEvent, PrivacyAccountant
from approxdp.accounting import Receipt, verify_ledger
from approxdp.accounting.budget.chain import commitment_hash, seal_hash
from approxdp.accounting.budget.sqlite_schema import SCHEMA_VERSION, genesis_of
from approxdp.cli.app import cli

DATA = Path(__file__).parent / "data"
BUDGET = (2.0, 1e-5)


def _filter_ledger(path: Path) -> list[Receipt]:
    """Spends and plans interleaved: commit, spend, spend, commit, spend, close, spend."""
    receipts = []
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        acc.commit([(GaussianEvent(sigma=20.0), 2)], label="study")
        for _ in range(2):
            receipts.append(acc.spend(GaussianEvent(sigma=20.0)).receipt)
        later = acc.commit([(GaussianEvent(sigma=30.0), 2)], label="follow-up")
        receipts.append(acc.spend(GaussianEvent(sigma=30.0)).receipt)
        acc.close_commitment(later)
        receipts.append(acc.spend(LaplaceEvent(scale=50.0)).receipt)
    return [r for r in receipts if r is not None]


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def _verify_cli(path: Path, *receipts: Receipt) -> tuple[int, str]:
    args = ["ledger", "verify", str(path)]
    for receipt in receipts:
        args += ["--receipt", str(receipt)]
    done = CliRunner().invoke(cli, args)
    return done.exit_code, " ".join(done.output.split())


def test_spends_and_commitments_form_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    receipts = _filter_ledger(path)
    report = verify_ledger(path, receipts)
    assert report.ok and report.schema_version == SCHEMA_VERSION == 5 and report.notes == ()
    conn = sqlite3.connect(path)
    spends = conn.execute("SELECT id, seq FROM spends ORDER BY id").fetchall()
    commits = conn.execute("SELECT id, created, kind, commitment, label, pricing, events, "
                           "charge, seq, hash FROM commitments ORDER BY id").fetchall()
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    conn.close()
    assert spends == [(1, 2), (2, 3), (3, 5), (4, 7)]
    assert [(c[0], c[2], c[8]) for c in commits] == [(1, "commit", 1), (2, "commit", 4),
                                                     (3, "close", 6)]
    # the first entry is a commitment chained to the genesis hash, as documented
    assert commits[0][9] == commitment_hash(genesis_of(meta), 1, *commits[0][:8])
    assert "sealed_at" not in meta and "upgraded_to_5" not in meta


def test_an_edited_charge_is_caught_and_named(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    _filter_ledger(path)
    conn = sqlite3.connect(path)
    charge = json.loads(conn.execute("SELECT charge FROM spends WHERE id = 4").fetchone()[0])
    conn.close()
    assert charge["gdp"] > 0  # the Laplace spend, outside any plan
    charge["gdp"] = 0.0  # this spend "cost nothing"
    _sql(path, f"UPDATE spends SET charge = '{json.dumps(charge)}' WHERE id = 4")
    report = verify_ledger(path)
    assert not report.ok
    assert "the hash chain breaks at spend 4" in report.problems[0]
    code, text = _verify_cli(path)
    assert code == 5 and "NOT OK" in text and "hash chain breaks at spend 4" in text


def test_an_edited_commitment_charge_is_caught_and_named(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    _filter_ledger(path)
    _sql(path, "UPDATE commitments SET charge = replace(charge, '\"gdp\"', '\"gdp\" ') "
               "WHERE id = 2")
    assert any("breaks at commitment 2 (commit of plan 2, 'follow-up')" in p
               for p in verify_ledger(path).problems)


def test_a_deleted_commitment_is_caught_and_named(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    receipts = _filter_ledger(path)
    _sql(path, "DELETE FROM commitments WHERE id = 2")
    report = verify_ledger(path)
    text = " ".join(report.problems)
    assert "position(s) [4] of the chain are missing, just before spend 3" in text
    assert "the hash chain breaks at spend 3" in text
    code, out = _verify_cli(path, *receipts)
    assert code == 5 and "position(s) [4] of the chain are missing" in out
    # deleting the newest commitment leaves no gap: the filter's totals give it away
    path2 = tmp_path / "l2.sqlite"
    with PrivacyAccountant(budget=BUDGET, ledger=path2) as acc:
        acc.spend(GaussianEvent(sigma=20.0))
        acc.commit([(GaussianEvent(sigma=30.0), 2)], label="last")
    _sql(path2, "DELETE FROM commitments")
    assert not verify_ledger(path2).ok


def test_a_forger_who_rechains_everything_is_caught_by_receipts(tmp_path: Path) -> None:
    from ledger_forgery import rechain

    path = tmp_path / "l.sqlite"
    receipts = _filter_ledger(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM commitments WHERE id = 1")
        rechain(conn, fix_totals=False)
    conn.close()
    alone = verify_ledger(path)
    assert not any("hash chain" in p for p in alone.problems), alone.problems  # chain valid
    report = verify_ledger(path, receipts)
    assert any("spend 1 is not the one its receipt names" in p for p in report.problems)


def _copy(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.sqlite"
    shutil.copy(DATA / f"{name}.sqlite", path)
    return path


def _rows(path: Path, table: str, columns: str) -> list[Any]:
    conn = sqlite3.connect(path)
    rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY id").fetchall()
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    return [version, rows]


SPEND_COLUMNS = "id, created, event, rho, items, rule, delta_after"
V4_COLUMNS = SPEND_COLUMNS + ", charge, seeded, hash"
COMMIT_COLUMNS = "id, created, kind, commitment, label, pricing, events, charge"


def test_a_schema_4_file_is_upgraded_keeping_rows_hashes_and_receipts(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v4_filter")
    version, spends = _rows(path, "spends", V4_COLUMNS)
    _, commits = _rows(path, "commitments", COMMIT_COLUMNS)
    assert version == 4 and len(spends) == 5 and len(commits) == 3
    conn = sqlite3.connect(path)
    ledger_id = conn.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()[0]
    conn.close()
    old_receipts = [Receipt(ledger_id, int(r[0]), str(r[-1])) for r in spends]
    # read as it is: the old chain checks out, and the report says what it does not cover
    before = verify_ledger(path, old_receipts)
    assert before.ok and before.schema_version == 4
    assert "not their charges nor the commitments" in before.notes[0]
    with PrivacyAccountant(ledger=path) as acc:  # opened for writing: upgraded
        assert acc.remaining().count == 5 and len(acc.commitment_log()) == 3
        new = acc.spend(GaussianEvent(sigma=25.0)).receipt
    assert new is not None
    assert _rows(path, "spends", V4_COLUMNS)[1][:5] == spends  # every row and hash kept
    version, kept = _rows(path, "commitments", COMMIT_COLUMNS)
    assert version == 5 and kept == commits
    report = verify_ledger(path, [*old_receipts, new])
    assert report.ok, report.problems
    assert "upgraded from schema 4 to 5" in report.notes[0]
    assert "spends 1 to 5 keep their schema-4 hashes" in report.notes[0]
    assert "the 3 commitment(s)" in report.notes[0]
    # the old commitments follow the seal over the old spends' charges
    conn = sqlite3.connect(path)
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    first = conn.execute(f"SELECT {COMMIT_COLUMNS}, seq, hash FROM commitments "
                         "WHERE id = 1").fetchone()
    charges = [c for (c,) in conn.execute("SELECT charge FROM spends WHERE id <= 5 ORDER BY id")]
    conn.close()
    assert meta["sealed_at"] == "5" and first[8] == 6
    assert first[9] == commitment_hash(seal_hash(spends[4][-1], charges), 6, *first[:8])
    code, text = _verify_cli(path)
    assert code == 0 and "note: upgraded from schema 4 to 5" in text


def test_an_old_charge_edited_after_the_upgrade_breaks_the_seal(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v4_filter")
    with PrivacyAccountant(ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=25.0))
    _sql(path, "UPDATE spends SET charge = replace(charge, '\"gdp\"', '\"gdp\" ') WHERE id = 1")
    problems = verify_ledger(path).problems
    assert "the hash chain breaks at commitment 1 (commit of plan 1, 'study')" in problems[0]
    assert "that the seal covers" in problems[0]


def test_a_chain_broken_before_the_upgrade_stays_broken(tmp_path: Path) -> None:
    path = _copy(tmp_path, "ledger_v4_filter")
    _sql(path, "UPDATE spends SET event = replace(event, 'schema 4', 'edited') WHERE id = 3")
    assert "breaks at spend 3" in verify_ledger(path).problems[0]
    with PrivacyAccountant(ledger=path) as acc:  # the upgrade does not re-hash anything
        acc.spend(GaussianEvent(sigma=25.0))
    report = verify_ledger(path)
    assert not report.ok and "the hash chain breaks at spend 3" in " ".join(report.problems)
    assert "already broken then" in report.notes[0]


@pytest.mark.parametrize(("name", "spends", "commits"), [
    ("ledger_v2", 6, 0), ("ledger_v2_mixed", 5, 0), ("ledger_v3_filter", 3, 2),
])
def test_schema_2_and_3_files_are_upgraded_to_5(tmp_path: Path, name: str, spends: int,
                                                commits: int) -> None:
    path = _copy(tmp_path, name)
    version, before = _rows(path, "spends", SPEND_COLUMNS)
    assert version in (2, 3) and len(before) == spends
    adaptivity = "fixed" if name == "ledger_v2" else "full"
    with PrivacyAccountant(ledger=path, adaptivity=adaptivity) as acc:
        acc.spend(GaussianEvent(sigma=80.0))
        acc.spend(GaussianEvent(sigma=80.0))
    version, after = _rows(path, "spends", SPEND_COLUMNS)
    assert version == SCHEMA_VERSION and after[:spends] == before
    report = verify_ledger(path)
    assert report.ok, report.problems
    assert f"spends 1 to {spends} keep" in report.notes[0]
    assert f"the {commits} commitment(s)" in report.notes[0]
