"""The SQLite ledger's file and connection: open, validate, create, upgrade, re-declare.

:class:`LedgerFile` is the part of :class:`~approxdp.accounting.budget.sqlite_ledger.
SQLiteLedger` that owns the connection: it checks an existing file before anything is written
(header, ``application_id``, ``quick_check``, schema version, totals against rows, stored
budget, mode and rule), creates a new one, upgrades an older one in one ``BEGIN IMMEDIATE``
transaction (:func:`~approxdp.accounting.budget.sqlite_schema.upgrade`), and reopens the file
in a forked child instead of sharing the parent's connection.

**Re-certification.** A file from before privacy filters (schema 2 or older) declared no mode.
Its upgrade to schema 3 re-certifies the stored history under the mode the opener asks for (the
default: the ``"gdp"`` filter, fully adaptive) by spending its events again, in order, from a new
filter (:func:`~approxdp.accounting.budget.filter.replay`). If it exceeds the budget, the filter
state says so and every further spend is refused until the user decides (the accountant warns
with :class:`~approxdp.errors.LedgerRecertificationWarning`). The old rule is kept as
``legacy_composition``. Until its next spend, such a file may be re-declared under another mode
by opening it with that mode (``adaptivity="fixed"`` states that every stored spend's parameters
were fixed before any noise was drawn).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.filter import new_filter, replay
from approxdp.accounting.budget.filter_state import FilterState, RdpShare
from approxdp.accounting.budget.sqlite_files import (
    APPLICATION_ID,
    BUSY_TIMEOUT_MS,
    HEADER,
    SubLedgerRecord,
    check_ledger_path,
    check_sub_split,
    closed_on_failure,
    committed,
    dump_sub_records,
    filter_kind,
    open_read_only,
    settings_from_meta,
)
from approxdp.accounting.budget.sqlite_schema import (
    FILTER_VERSION,
    SCHEMA,
    SCHEMA_VERSION,
    new_ledger_id,
    upgrade,
)
from approxdp.accounting.serialization import event_from_json
from approxdp.errors import LedgerError

__all__ = ["LedgerFile"]

_INHERITED: list[sqlite3.Connection] = []  # connections inherited across fork, never touched


class LedgerFile:
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
            conn.execute("PRAGMA journal_mode = WAL")
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

    def _validate(self, conn: sqlite3.Connection) -> int:
        """Read-only checks of an existing file (nothing is written before they pass); returns
        its schema version (the current one, or one :meth:`_migrate` upgrades)."""
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise LedgerError(
                f"{self._path} is a SQLite database but not an approxdp ledger "
                f"(application_id={app_id})"
            )
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise LedgerError(f"ledger {self._path} is corrupt: {check}")
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if not 1 <= version <= SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self._path} has schema version {version}; this approxdp reads "
                f"version {SCHEMA_VERSION} and upgrades versions 1 to {SCHEMA_VERSION - 1}"
            )
        rows, totals_count = conn.execute(
            "SELECT (SELECT COUNT(*) FROM spends), (SELECT count FROM totals WHERE id = 1)"
        ).fetchone()
        if rows != totals_count:
            raise LedgerError(
                f"ledger {self._path} is inconsistent: {rows} spends but totals say "
                f"{totals_count}"
            )
        return version

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Upgrade an older file to the current schema in one transaction, one version at a
        time (:func:`~approxdp.accounting.budget.sqlite_schema.upgrade`)."""
        conn.execute("BEGIN IMMEDIATE")
        with committed(conn, f"cannot upgrade ledger {self._path}"):
            before = int(conn.execute("PRAGMA user_version").fetchone()[0])
            upgrade(conn)
            if before < FILTER_VERSION:  # (another process may have just upgraded it)
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                self._declare_mode(conn, legacy_rule=meta.get("legacy_composition"))

    def _declare_mode(self, conn: sqlite3.Connection, *, legacy_rule: str | None) -> None:
        """Store this ledger's mode and rule, and (for a filter) re-certify the stored history
        under it: every spend row gets the charge the filter gives it (inside the caller's
        transaction)."""
        meta = {"adaptivity": self._adaptivity, "composition": self._composition}
        conn.execute("DELETE FROM meta WHERE key IN ('basic_share_epsilon', "
                     "'basic_share_delta')")
        if self._share is not None:
            meta["basic_share_epsilon"] = repr(float(self._share[0]))
            meta["basic_share_delta"] = repr(float(self._share[1]))
        conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta.items())
        if self._kind is None:
            conn.execute("UPDATE filter_state SET state = NULL WHERE id = 1")
            conn.execute("UPDATE spends SET charge = ''")
            return
        rows = conn.execute("SELECT id, event FROM spends ORDER BY id").fetchall()
        state, charges = replay(self._kind, self._budget, self._share,
                                [event_from_json(ev) for _, ev in rows], legacy_rule=legacy_rule)
        conn.executemany("UPDATE spends SET charge = ? WHERE id = ?",
                         [(c, i) for (i, _), c in zip(rows, charges, strict=True)])
        conn.execute("UPDATE filter_state SET state = ? WHERE id = 1", (state.to_json(),))

    def _initialise(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if exists is None:
                if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                    raise LedgerError(f"{self._path} is a SQLite database with foreign tables")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                meta = {
                    "format": "approxdp-ledger",
                    "budget_epsilon": repr(self._budget[0]),
                    "budget_delta": repr(self._budget[1]),
                    "composition": self._composition,
                    "ledger_id": new_ledger_id(),
                    "adaptivity": self._adaptivity,
                }
                if self._share is not None:
                    meta["basic_share_epsilon"] = repr(float(self._share[0]))
                    meta["basic_share_delta"] = repr(float(self._share[1]))
                if self._rdp is not None:
                    meta["rdp_share_epsilon"] = repr(float(self._rdp.epsilon))
                    meta["rdp_share_delta"] = repr(float(self._rdp.delta))
                    meta["rdp_orders"] = json.dumps(list(self._rdp.orders))
                subs: tuple[tuple[str, Fraction, Fraction], ...] = ()
                if self._subs_asked:
                    meta["sub_budgets"] = dump_sub_records(self._subs_asked)
                    subs = tuple((r.name, Fraction(r.budget[0]), Fraction(r.budget[1]))
                                 for r in self._subs_asked)
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
                if self._kind is not None:
                    start = new_filter(self._kind, self._budget, self._share, rdp=self._rdp,
                                       subs=subs)
                    conn.execute("UPDATE filter_state SET state = ? WHERE id = 1",
                                 (start.to_json(),))
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            raise LedgerError(f"{self._path} is a SQLite database but not an approxdp ledger")

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        stored = settings_from_meta(meta, self._version, str(self._path))
        if stored.budget != self._budget:
            raise LedgerError(
                f"ledger {self._path} was created for budget {stored.budget}; open it with "
                f"the same budget (asked for {self._budget})"
            )
        self._ledger_id = meta.get("ledger_id")
        if self._rdp is not None and (
                stored.rdp_share != (float(self._rdp.epsilon), float(self._rdp.delta))
                or stored.rdp_orders != self._rdp.orders):
            raise LedgerError(
                f"ledger {self._path} was created with rdp_share={stored.rdp_share}, "
                f"rdp_orders={stored.rdp_orders}; open it with the same, or leave them out to "
                "use the stored ones (a Rényi share is fixed when the ledger is created)"
            )
        check_sub_split(self._subs_asked, stored.sub_budgets, self._path)
        self._sub_records = stored.sub_budgets or ()
        self._subs_ready = meta.get("sub_files_ready") == "1"
        if self._read_only and self._version < FILTER_VERSION:
            return  # read as it is: an older file declared no mode (nothing is written)
        share = None if self._share is None else (float(self._share[0]), float(self._share[1]))
        same = (stored.composition == self._composition and stored.adaptivity ==
                self._adaptivity and stored.basic_share == share)
        if same:
            return
        if not self._read_only and self._may_redeclare(conn, meta):
            conn.execute("BEGIN IMMEDIATE")
            with committed(conn, f"cannot re-declare ledger {self._path}"):
                self._declare_mode(conn, legacy_rule=stored.legacy_composition)
            return
        raise LedgerError(
            f"ledger {self._path} was created with adaptivity={stored.adaptivity!r}, "
            f"composition={stored.composition!r}, basic_share={stored.basic_share}; open it "
            f"with the same (asked for adaptivity={self._adaptivity!r}, composition="
            f"{self._composition!r}, basic_share={share}), or leave them out to use the "
            "stored ones"
        )

    @staticmethod
    def _may_redeclare(conn: sqlite3.Connection, meta: dict[str, str]) -> bool:
        """A file upgraded from before privacy filters may change its mode until its next
        spend: nothing has been spent (or committed) under the mode it was upgraded to."""
        if "legacy_spends" not in meta:
            return False
        count = int(conn.execute("SELECT COUNT(*) FROM spends").fetchone()[0])
        commits = int(conn.execute("SELECT COUNT(*) FROM commitments").fetchone()[0])
        return count == int(meta["legacy_spends"]) and commits == 0

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

