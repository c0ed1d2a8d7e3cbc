"""The SQLite ledger's file and connection: open, create, reopen after a fork, close.

:class:`LedgerFile` is the part of :class:`~approxdp.accounting.budget.sqlite_ledger.
SQLiteLedger` that owns the connection: it checks an existing file before anything is written
(header, then ``application_id``, ``quick_check``, schema version, totals against rows, stored
budget, mode and rule), creates a new one, upgrades an older one in one ``BEGIN IMMEDIATE``
transaction (:func:`~approxdp.accounting.budget.sqlite_schema.upgrade`), and reopens the file
in a forked child instead of sharing the parent's connection. The checks and writes on the
file's content (validation, creation, upgrade with re-certification, the stored settings
against the opener's, re-declaration) are :class:`~approxdp.accounting.budget.sqlite_setup.
LedgerSetup`'s.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.filter import replay
from approxdp.accounting.budget.sqlite_files import (
    BUSY_TIMEOUT_MS,
    HEADER,
    SubLedgerRecord,
    check_ledger_path,
    closed_on_failure,
    committed,
    dump_sub_records,
    filter_kind,
    open_read_only,
    settings_from_meta,
)
from approxdp.accounting.budget.sqlite_schema import FILTER_VERSION, SCHEMA_VERSION
from approxdp.accounting.budget.sqlite_setup import LedgerSetup
from approxdp.accounting.composition.filter_state import FilterState, RdpShare
from approxdp.accounting.serialization import event_from_json
from approxdp.errors import LedgerError

__all__ = ["LedgerFile"]

_INHERITED: list[sqlite3.Connection] = []  # connections inherited across fork, never touched



def enter_wal(conn: sqlite3.Connection, timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another connection holds a write lock.

    Switching a rollback-journal file to WAL needs an exclusive lock. While another process
    holds a RESERVED lock (e.g. a concurrent creator initialising the file), SQLite answers
    SQLITE_BUSY at once *without* calling the busy handler (it would deadlock otherwise:
    https://www.sqlite.org/c3ref/busy_handler.html), so ``busy_timeout`` does not help here.
    The statement is retried with backoff up to ``timeout_ms``; each failure releases this
    connection's shared lock, so the other writer can commit."""
    deadline = time.monotonic() + timeout_ms / 1000
    delay = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.05)

class LedgerFile(LedgerSetup):
    """The file and connection under a :class:`~approxdp.accounting.budget.sqlite_ledger.
    SQLiteLedger` (its arguments are documented there)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        budget: tuple[float, float],
        composition: str,
        adaptivity: str = "fixed",
        basic_share: tuple[float, float] | None = None,
        synchronous: str = "FULL",
        read_only: bool = False,
        rdp: RdpShare | None = None,
        subs: tuple[SubLedgerRecord, ...] | None = None,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise LedgerError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self._path = Path(path)
        self._budget = (float(budget[0]), float(budget[1]))
        self._composition = composition
        self._adaptivity = adaptivity
        self._share = basic_share
        self._rdp = rdp
        self._subs_asked = subs
        self._sub_records: tuple[SubLedgerRecord, ...] = ()
        self._subs_ready = False
        self._kind = filter_kind(composition, adaptivity)
        self._replayed: FilterState | None = None  # an older file's filter, read-only
        self._synchronous = synchronous
        self._read_only = bool(read_only)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._version = SCHEMA_VERSION
        self._ledger_id: str | None = None
        self._connect()

    @property
    def path(self) -> Path:
        """The ledger file."""
        return self._path

    @property
    def read_only(self) -> bool:
        """Whether this ledger was opened only to read."""
        return self._read_only

    @property
    def schema_version(self) -> int:
        """The file's schema version (older than the current one only when read-only)."""
        return self._version

    @property
    def ledger_id(self) -> str | None:
        """The file's random identity, named by its receipts (None before schema 4)."""
        return self._ledger_id

    @property
    def sub_records(self) -> tuple[SubLedgerRecord, ...]:
        """The sub-budgets' files this ledger records (empty: none)."""
        return self._sub_records

    @property
    def sub_files_ready(self) -> bool:
        """Whether the sub-budgets' files were all created and their identities recorded."""
        return self._subs_ready

    def complete_sub_files(
        self, create: Callable[[tuple[SubLedgerRecord, ...]], tuple[SubLedgerRecord, ...]],
    ) -> bool:
        """Create the sub-budgets' files, once, under this file's write lock: ``create`` gets
        the stored records and returns them with each file's ``ledger_id``, which are stored
        with the mark that the files are complete, in one transaction (an interruption rolls
        it back: the files created so far have no spend and are adopted by the next opener).
        False (``create`` not called) if another opener completed them first."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            with committed(conn, f"cannot record the sub-budget files of ledger {self._path}"):
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                stored = settings_from_meta(meta, self._version, str(self._path))
                self._sub_records = stored.sub_budgets or ()
                if meta.get("sub_files_ready") == "1":
                    self._subs_ready = True
                    return False
                done = create(self._sub_records)
                conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 [("sub_budgets", dump_sub_records(done)),
                                  ("sub_files_ready", "1")])
            self._sub_records, self._subs_ready = done, True
            return True

    # -- connection management -------------------------------------------------------------

    def _check_header(self) -> bool:
        """True if the file exists and is non-empty; LedgerError if it is not SQLite, is a
        directory, cannot be read, or cannot be created (its folder does not exist)."""
        check_ledger_path(self._path)
        try:
            size = self._path.stat().st_size
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {str(self._path)!r}: {exc.strerror}") from exc
        if size == 0:
            return False
        try:
            with open(self._path, "rb") as fh:
                head = fh.read(len(HEADER))
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {str(self._path)!r}: {exc.strerror}") from exc
        if head != HEADER:
            raise LedgerError(f"{self._path} is not a SQLite file, so not an approxdp ledger")
        return True

    def _connect(self) -> None:
        if self._read_only:
            self._connect_read_only()
            return
        existed = self._check_header()
        try:
            conn = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {self._path}: {exc}") from exc
        with closed_on_failure(conn, self._path):
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if existed and self._is_blank(conn):
                existed = False  # another process is creating it right now, or it is empty
            if existed:
                version = self._validate(conn)
                if version != SCHEMA_VERSION:
                    self._migrate(conn)
            enter_wal(conn)
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            if not existed:
                self._initialise(conn)
            self._check_meta(conn)
        self._conn = conn
        self._pid = os.getpid()

    def _connect_read_only(self) -> None:
        """Open an existing file without writing anything (:func:`open_read_only`)."""
        if not self._check_header():
            raise LedgerError(f"ledger file not found or empty: {str(self._path)!r}")
        conn = open_read_only(self._path)
        with closed_on_failure(conn, self._path):
            self._version = self._validate(conn)
            self._check_meta(conn)
            if self._version < FILTER_VERSION and self._kind is not None:
                # re-certified in memory, as opening it for writing would (nothing is written)
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                events = [event_from_json(ev) for (ev,) in
                          conn.execute("SELECT event FROM spends ORDER BY id")]
                self._replayed, _ = replay(self._kind, self._budget, self._share, events,
                                           legacy_rule=meta.get("composition"))
        self._conn = conn
        self._pid = os.getpid()

    @staticmethod
    def _is_blank(conn: sqlite3.Connection) -> bool:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        return bool(app_id == 0 and tables == 0)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LedgerError(f"ledger {self._path} is closed")
        if self._pid != os.getpid():
            # Forked: never use (or close) the parent's connection in the child — closing it
            # could checkpoint or unlink the parent's WAL. Keep it referenced and reopen.
            _INHERITED.append(self._conn)
            self._conn = None
            self._connect()
        conn = self._conn
        if conn is None:
            raise LedgerError(f"ledger {self._path} could not be reopened")
        return conn

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __del__(self) -> None:
        conn: Any = getattr(self, "_conn", None)
        if conn is not None and getattr(self, "_pid", -1) == os.getpid():
            with contextlib.suppress(Exception):
                conn.close()

