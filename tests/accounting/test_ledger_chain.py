"""The ledger's hash chain, receipts, seeded marker, read-only views and the schema-3 upgrade."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from approxdp import GaussianEvent, LaplaceEvent, LedgerError, PrivacyAccountant
from approxdp.accounting import Receipt, read_ledger_settings, verify_ledger
from approxdp.accounting.budget.chain import genesis_hash, spend_hash
from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger
from approxdp.accounting.budget.sqlite_schema import SCHEMA_VERSION
from ledger_forgery import rechain as _rechain

DATA = Path(__file__).parent / "data"
BUDGET = (2.0, 1e-5)


def _ledger(path: Path, n: int = 4) -> list[Receipt]:
    receipts = []
    # a declared-sequence ledger: its only running totals are the ones _rechain fixes (a
    # privacy filter's state is a second one: test_a_rewrite_is_caught_by_the_filters_totals)
    with PrivacyAccountant(budget=BUDGET, ledger=path, composition="auto",
                           adaptivity="fixed") as acc:
        for i in range(n):
            record = acc.spend(GaussianEvent(sigma=50.0 + i, label=f"spend {i}"))
            assert record.receipt is not None
            receipts.append(record.receipt)
    return receipts


def test_every_row_is_chained_and_receipts_verify(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    receipts = _ledger(path)
    assert [r.index for r in receipts] == [1, 2, 3, 4]
    assert len({r.ledger_id for r in receipts}) == 1
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        history = acc.history()
    assert [r.receipt for r in history] == receipts  # records read back carry the same receipts
    report = verify_ledger(path, receipts)
    assert report.ok and report.chained and report.spends == 4 and report.receipts == 4
    assert report.schema_version == SCHEMA_VERSION == 5
    # the chain is exactly the documented construction
    with sqlite3.connect(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        first = conn.execute("SELECT id, created, event, rho, items, rule, delta_after, seeded, "
                             "hash, charge, seq FROM spends WHERE id = 1").fetchone()
    genesis = genesis_hash(meta["ledger_id"], BUDGET, "auto")
    assert first[10] == 1
    assert first[8] == spend_hash(genesis, 1, *first[:7], bool(first[7]), first[9]) == \
        receipts[0].chain_hash


def test_receipt_text_round_trips_and_bad_receipts_are_typed() -> None:
    r = Receipt("abc", 3, "0" * 64)
    assert Receipt.from_obj(str(r)) == r == Receipt.from_obj(r.to_dict())
    for bad in ("abc:x:" + "0" * 64, "abc:3", "abc:3:zz"):
        with pytest.raises(ValueError, match="receipt"):
            Receipt.from_obj(bad)
    with pytest.raises(TypeError, match="receipt"):
        Receipt.from_obj(42)


@pytest.mark.parametrize("edit", ["delete-middle", "change-row", "zero-totals"])
def test_naive_edits_are_caught_by_the_chain_or_the_totals(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "l.sqlite"
    _ledger(path)
    with sqlite3.connect(path) as conn:
        if edit == "delete-middle":
            conn.execute("DELETE FROM spends WHERE id = 2")
            conn.execute("UPDATE totals SET count = 3")
        elif edit == "change-row":
            conn.execute("UPDATE spends SET event = replace(event, '52.0', '5200.0') WHERE id = 3")
        else:
            conn.execute("UPDATE totals SET rho = 0, count = 4")
    conn.close()
    report = verify_ledger(path)
    assert not report.ok
    text = " ".join(report.problems)
    assert {"delete-middle": "missing", "change-row": "chain breaks at spend 3",
            "zero-totals": "totals"}[edit] in text
    with pytest.raises(LedgerError, match="inconsistent"):
        SQLiteLedger(path, budget=BUDGET, composition="auto").verify()


def test_a_consistent_rewrite_is_caught_by_the_receipts(tmp_path: Path) -> None:
    """Rows deleted, renumbered, rechained and totals recomputed: the file alone looks intact
    (nothing in it is secret), but a receipt kept in an artifact shows the rewrite."""
    path = tmp_path / "l.sqlite"
    receipts = _ledger(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM spends WHERE id = 2")
        _rechain(conn)
    conn.close()
    assert verify_ledger(path).ok  # undetectable without something kept elsewhere
    report = verify_ledger(path, receipts)
    assert not report.ok
    assert any("spend 2 is not the one its receipt names" in p for p in report.problems)
    assert any("spend 4, named by a receipt, is gone" in p for p in report.problems)
    assert not any("spend 1 " in p for p in report.problems)  # before the edit: intact


def test_all_rows_deleted_and_totals_zeroed(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    receipts = _ledger(path, 2)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM spends")
        _rechain(conn)
    conn.close()
    assert PrivacyAccountant(budget=BUDGET, ledger=path).remaining().count == 0
    report = verify_ledger(path, receipts)
    assert [p for p in report.problems if "is gone" in p] == [
        "spend 1, named by a receipt, is gone from the ledger",
        "spend 2, named by a receipt, is gone from the ledger",
    ]


def test_a_receipt_of_another_ledger_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    receipts = _ledger(a, 1)
    _ledger(b, 1)
    report = verify_ledger(b, receipts)
    assert not report.ok and "is from ledger" in report.problems[0]


def test_seeded_spends_are_marked(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=50.0))
        seeded = acc.spend(GaussianEvent(sigma=60.0), seeded=True)
        assert seeded.seeded
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        assert [r.seeded for r in acc.history()] == [False, True]
    assert verify_ledger(path).ok
    with sqlite3.connect(path) as conn:  # flipping the marker breaks the chain
        conn.execute("UPDATE spends SET seeded = 0 WHERE id = 2")
    conn.close()
    assert "chain breaks at spend 2" in verify_ledger(path).problems[0]


def test_schema_2_ledger_is_upgraded_keeping_every_row(tmp_path: Path) -> None:
    """tests/accounting/data/ledger_v2.sqlite was written by the schema-2 code (before the
    chain): Gaussian, Laplace, (ε, δ), subsampled-Gaussian, composed and discrete-Gaussian
    spends under budget (2, 1e-5) with composition='auto'."""
    path = tmp_path / "v2.sqlite"
    shutil.copy(DATA / "ledger_v2.sqlite", path)
    columns = "id, created, event, rho, items, rule, delta_after"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        before = conn.execute(f"SELECT {columns} FROM spends ORDER BY id").fetchall()
        before_totals = conn.execute("SELECT * FROM totals").fetchall()
        before_pld = conn.execute("SELECT * FROM pld_events ORDER BY key").fetchall()
    conn.close()
    # a read-only view reads it as it is, without upgrading it
    # (as declared sequences: adaptivity='fixed', the user's decision for an old ledger whose
    # spends were fixed in advance; test_ledger_recertify covers the filter's re-certification)
    with PrivacyAccountant(BUDGET, ledger=path, read_only=True, adaptivity="fixed") as view:
        old_status = view.remaining()
        assert [r.chain_hash for r in view.history()] == [None] * 6
    report = verify_ledger(path)
    assert report.ok and not report.chained and report.schema_version == 2
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()
    acc = PrivacyAccountant(BUDGET, ledger=path, adaptivity="fixed")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert conn.execute(f"SELECT {columns} FROM spends ORDER BY id").fetchall() == before
        assert conn.execute("SELECT * FROM totals").fetchall() == before_totals
        assert conn.execute("SELECT * FROM pld_events ORDER BY key").fetchall() == before_pld
        assert conn.execute("SELECT COUNT(*) FROM spends WHERE seeded = 0").fetchone()[0] == 6
    conn.close()
    assert acc.remaining() == old_status
    records = acc.history()
    assert records[0].event.label == "count [schema 2]"  # type: ignore[attr-defined]
    receipts = [r.receipt for r in records]
    assert all(r is not None for r in receipts)
    acc.spend(LaplaceEvent(scale=50.0))  # and it keeps chaining
    acc.close()
    report = verify_ledger(path, [r for r in receipts if r is not None])
    assert report.ok and report.chained and report.spends == 7


def test_read_only_view_writes_nothing_and_refuses_to_spend(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    _ledger(path, 2)
    before = path.read_bytes()
    view = PrivacyAccountant(BUDGET, ledger=path, read_only=True)
    assert len(view.history()) == 2 and view.remaining().count == 2
    with pytest.raises(LedgerError, match="read-only; nothing was spent"):
        view.spend(GaussianEvent(sigma=10.0))
    view.close()
    assert verify_ledger(path).ok
    assert path.read_bytes() == before  # (SQLite's WAL side files may come and go)
    with pytest.raises(LedgerError, match="not found"):
        PrivacyAccountant(BUDGET, ledger=tmp_path / "none.sqlite", read_only=True)


_READER = """
import json, sys
from approxdp.accounting import PrivacyAccountant, read_ledger_settings, verify_ledger
path = sys.argv[1]
settings = read_ledger_settings(path)
with PrivacyAccountant(settings.budget, ledger=path, read_only=True) as view:
    out = {"count": view.remaining().count, "spends": len(view.history())}
out["ok"] = verify_ledger(path).ok
print(json.dumps(out))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_file_the_user_may_only_read() -> None:
    """The ledger in a folder the user may not write, the file itself read-only: its view and
    verification work (run as an unprivileged user when the tests run as root)."""
    with tempfile.TemporaryDirectory() as top:  # not under pytest's private (0700) folder
        Path(top).chmod(0o755)
        folder = Path(top) / "ro"
        folder.mkdir()
        path = folder / "l.sqlite"
        _ledger(path, 3)
        path.chmod(0o444)
        folder.chmod(0o555)
        user = {"user": 65534} if os.geteuid() == 0 else {}  # nobody
        try:
            if user:  # nobody must reach the venv's files
                probe = subprocess.run([sys.executable, "-c", "import approxdp"], user=65534,
                                       capture_output=True, check=False)
                if probe.returncode != 0:
                    pytest.skip("the test environment is not readable by an unprivileged user")
            done = subprocess.run([sys.executable, "-c", _READER, str(path)],
                                  capture_output=True, text=True, check=False,
                                  **user)  # type: ignore[call-overload]
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == {"count": 3, "spends": 3, "ok": True}
            assert read_ledger_settings(path).budget == BUDGET
        finally:
            folder.chmod(0o755)
            path.chmod(0o644)


def test_a_schema_3_filter_ledger_is_upgraded_to_the_chain(tmp_path: Path) -> None:
    """tests/accounting/data/ledger_v3_filter.sqlite was written by the schema-3 code (the
    privacy filter, before the hash chain): budget (2, 1e-5), basic share (0, 1e-6), a DP-SGD
    plan committed and closed early, three spends. The 3 → 4 upgrade keeps every row, the
    filter's state and the plans, and chains the rows."""
    path = tmp_path / "v3.sqlite"
    shutil.copy(DATA / "ledger_v3_filter.sqlite", path)
    columns = "id, created, event, rho, items, rule, delta_after, charge"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
        before = conn.execute(f"SELECT {columns} FROM spends ORDER BY id").fetchall()
        state = conn.execute("SELECT state FROM filter_state").fetchone()
        plans = conn.execute("SELECT * FROM commitments ORDER BY id").fetchall()
    conn.close()
    report = verify_ledger(path)  # read-only: not upgraded, not chained, the filter audited
    assert report.ok and not report.chained and report.schema_version == 3
    with PrivacyAccountant(ledger=path) as acc:
        assert (acc.composition, acc.adaptivity, acc.basic_share) == ("gdp", "full",
                                                                      (0.0, 1e-6))
        assert acc.remaining().count == 3 and len(acc.commitments()) == 1
        acc.spend(GaussianEvent(sigma=40.0))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert conn.execute(f"SELECT {columns} FROM spends ORDER BY id").fetchall()[:3] == before
        kept = "id, created, kind, commitment, label, pricing, events, charge"
        assert conn.execute(f"SELECT {kept} FROM commitments ORDER BY id").fetchall() == plans
        assert conn.execute("SELECT state FROM filter_state").fetchone() != state  # one more
    conn.close()
    report = verify_ledger(path)
    assert report.ok and report.chained and report.spends == 4


def test_a_rewrite_is_caught_by_the_filters_totals(tmp_path: Path) -> None:
    """Under a privacy filter (the default) the filter's state is a second running total:
    a forger who rechains the rows but leaves the filter's state is caught without receipts."""
    path = tmp_path / "l.sqlite"
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        for i in range(4):
            acc.spend(GaussianEvent(sigma=50.0 + i))
    assert verify_ledger(path).ok
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM spends WHERE id = 2")
        _rechain(conn)
    conn.close()
    report = verify_ledger(path)
    assert not report.ok and any("filter state" in p for p in report.problems)
