"""Opening a ledger while another process holds a write lock on a rollback-journal file:
SQLite refuses the switch to WAL at once (SQLITE_BUSY without the busy handler), which made
concurrent creators fail now and then with "not a usable approxdp ledger: database is
locked". The switch is retried until the writer commits."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from approxdp.accounting.budget.sqlite_connection import enter_wal


def _holder(path: Path) -> sqlite3.Connection:
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


def test_a_held_write_lock_makes_the_plain_pragma_fail_at_once(tmp_path: Path) -> None:
    """(the SQLite behaviour the retry exists for: busy_timeout does not wait here)"""
    path = tmp_path / "l.sqlite"
    holder = _holder(path)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        conn.execute("PRAGMA journal_mode = WAL")
    holder.execute("COMMIT")


def test_enter_wal_waits_for_the_writer_to_commit(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    holder = _holder(path)
    threading.Timer(0.2, lambda: holder.execute("COMMIT")).start()
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    enter_wal(conn, timeout_ms=10_000)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1


def test_enter_wal_gives_up_after_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    holder = _holder(path)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enter_wal(conn, timeout_ms=100)
    holder.execute("COMMIT")
