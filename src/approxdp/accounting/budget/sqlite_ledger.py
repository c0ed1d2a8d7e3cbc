"""A durable privacy ledger in one SQLite file (standard library ``sqlite3``).

Guarantees:

- **No overspend across threads and processes.** Every spend is one ``BEGIN IMMEDIATE``
  transaction: it takes SQLite's write lock, reads the current totals, lets the accountant
  check the budget, and inserts the spend and the new totals before ``COMMIT``. Two writers
  can never both read the same totals.
- **Crash consistency.** WAL journal with ``synchronous=FULL``: a process killed at any
  instant leaves either the whole spend (row + totals) or none of it; a spend whose
  ``spend()`` returned is on disk.
- **Foreign or corrupt files are refused** with :class:`LedgerError` before anything is
  written: the SQLite header, ``application_id``, schema version, ``quick_check`` and the
  consistency of totals with rows are checked when a file is opened; a ledger made for a
  different budget or composition rule is refused too.
- **A failed call changes nothing**: a refused spend rolls back.

- **Tamper evidence.** Each spend row carries its hash in a chain over every row before it
  (:mod:`~approxdp.accounting.budget.chain`) and each record its :class:`Receipt
  <approxdp.accounting.budget.chain.Receipt>`; :func:`~approxdp.accounting.budget.verify.
  verify_ledger` checks the chain, the totals and receipts kept elsewhere.
- **Read-only views.** ``read_only=True`` opens a file the user may only read (SQLite's
  ``mode=ro``, or ``immutable=1`` where even that cannot take its locks) and never writes;
  a file of an older schema is read as it is, not upgraded.

Schema and upgrades: :mod:`~approxdp.accounting.budget.sqlite_schema` (version 3: spends with
their seeded marker and chain hash, totals, groups, pld_events, meta). Every spend row keeps
its event's full description (``event``), so any history can be re-accounted under any rule.
An older file is upgraded in place, one version at a time, the first time it is opened for
writing: in one ``BEGIN IMMEDIATE`` transaction; a failure rolls back and leaves the file as
it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.chain import row_hash
from approxdp.accounting.budget.costs import Contribution, LedgerState
from approxdp.accounting.budget.integrity import check_rows
from approxdp.accounting.budget.ledger import Check, SpendRecord
from approxdp.accounting.budget.sqlite_schema import (
    SCHEMA,
    SCHEMA_VERSION,
    genesis_of,
    new_ledger_id,
    upgrade,
)
from approxdp.accounting.serialization import event_from_json, event_to_json
from approxdp.errors import LedgerError
from approxdp.events import PrivacyEvent

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "LedgerSettings",
    "SQLiteLedger",
    "read_ledger_settings",
]

APPLICATION_ID = 0x41445044  # "ADPD"
_HEADER = b"SQLite format 3\x00"
_BUSY_TIMEOUT_MS = 60_000
_INHERITED: list[sqlite3.Connection] = []  # connections inherited across fork, never touched


@contextlib.contextmanager
def _committed(conn: sqlite3.Connection, failure: str) -> Iterator[None]:
    """The body of an open transaction: COMMIT after it, or ROLLBACK on any exception (an
    SQLite error becomes a LedgerError starting with ``failure``); nothing half-written stays."""
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise LedgerError(f"{failure}: {exc}") from exc
        raise


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """What an existing ledger file was created for (read without opening it for writing).

    Attributes:
        budget: the total (ε, δ) stored in the file.
        composition: the accountant's composition rule stored in the file.
    """

    budget: tuple[float, float]
    composition: str


def check_ledger_path(path: Path) -> None:
    """LedgerError unless ``path`` can name a ledger file: not a directory, in a folder that
    exists (SQLite would otherwise fail with "unable to open database file")."""
    if path.is_dir():
        raise LedgerError(
            f"ledger path {str(path)!r} is a directory; give the path of a file in it, e.g. "
            f"{str(path / 'budget.sqlite')!r}"
        )
    parent = path.parent
    if not parent.is_dir():
        raise LedgerError(
            f"cannot create ledger {str(path)!r}: folder {str(parent)!r} does not exist"
        )


def open_read_only(file: Path) -> sqlite3.Connection:
    """A connection through which the caller only reads ``file`` (never writes a spend or a
    setting). Where the user may write the file and its folder it is opened as any reader
    (``mode=rw``: SQLite's WAL side files come and go as usual); else with SQLite's
    ``mode=ro``, or, where even that fails (a WAL file in a folder the user may not write),
    ``immutable=1``, which reads the file as it is on disk (a spend being committed at that
    instant may be missed)."""
    uri = file.resolve().as_uri()
    last: sqlite3.Error | None = None
    writable = os.access(file, os.W_OK) and os.access(file.parent, os.W_OK | os.X_OK)
    modes = ("?mode=rw",) if writable else ()
    for mode in (*modes, "?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"{uri}{mode}", uri=True, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            last = exc
            continue
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # opens the WAL
        except sqlite3.Error as exc:
            conn.close()
            last = exc
            continue
        return conn
    raise LedgerError(f"cannot read ledger {file}: {last}")


def read_ledger_settings(path: str | os.PathLike[str]) -> LedgerSettings:
    """The budget and composition rule an existing ledger file was created with.

    Only reads: the file is never created, and no spend or setting is written (SQLite's own
    WAL side files come and go as with any reader). A tool can then show a ledger or reopen it
    through :class:`~approxdp.accounting.PrivacyAccountant` without being told its
    budget.

    Raises:
        LedgerError: the file does not exist, is not an approxdp ledger, or is unreadable.
    """
    file = Path(path)
    if file.is_dir():
        check_ledger_path(file)
    if not file.is_file():
        raise LedgerError(f"ledger file not found: {str(file)!r}")
    try:
        with open(file, "rb") as fh:
            head = fh.read(len(_HEADER))
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {str(file)!r}: {exc.strerror}") from exc
    if head != _HEADER:
        raise LedgerError(f"{file} is not a SQLite file, so not an approxdp ledger")
    conn = open_read_only(file)
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise LedgerError(
                f"{file} is a SQLite database but not an approxdp ledger (application_id={app_id})"
            )
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise LedgerError(f"{file} is not a usable approxdp ledger: {exc}") from exc
    finally:
        conn.close()
    try:
        budget = (float(meta["budget_epsilon"]), float(meta["budget_delta"]))
        composition = str(meta["composition"])
    except (KeyError, ValueError) as exc:
        raise LedgerError(f"{file} is not an approxdp ledger (bad meta table: {exc})") from exc
    if meta.get("format") != "approxdp-ledger":
        raise LedgerError(f"{file} is not an approxdp ledger")
    return LedgerSettings(budget, composition)


class SQLiteLedger:
    """A ledger file shared safely by threads and processes.

    Args:
        path: the ledger file; created (with its budget) if absent or empty.
        budget: the accountant's (ε, δ); must match the one stored in an existing file.
        composition: the accountant's rule; must match the stored one.
        synchronous: SQLite ``synchronous`` level, "FULL" (default: durable against power
            loss) or "NORMAL" (durable against process crashes only).
        read_only: Open an existing file only to read it (a file the user may only read,
            an older schema left as it is); :meth:`append` then refuses.

    Raises:
        LedgerError: the file is not a SQLite database, not an approxdp ledger, corrupt,
            inconsistent, or was made for another budget or rule.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        budget: tuple[float, float],
        composition: str,
        synchronous: str = "FULL",
        read_only: bool = False,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise LedgerError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self._path = Path(path)
        self._budget = (float(budget[0]), float(budget[1]))
        self._composition = composition
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
        """The file's random identity, named by its receipts (None before schema 3)."""
        return self._ledger_id

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
                head = fh.read(len(_HEADER))
        except OSError as exc:
            raise LedgerError(f"cannot read ledger {str(self._path)!r}: {exc.strerror}") from exc
        if head != _HEADER:
            raise LedgerError(f"{self._path} is not a SQLite file, so not an approxdp ledger")
        return True

    def _connect(self) -> None:
        if self._read_only:
            self._connect_read_only()
            return
        existed = self._check_header()
        try:
            conn = sqlite3.connect(
                self._path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {self._path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
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
        except sqlite3.Error as exc:
            conn.close()
            raise LedgerError(f"{self._path} is not a usable approxdp ledger: {exc}") from exc
        except LedgerError:
            conn.close()
            raise
        self._conn = conn
        self._pid = os.getpid()

    def _connect_read_only(self) -> None:
        """Open an existing file without writing anything (:func:`open_read_only`)."""
        if not self._check_header():
            raise LedgerError(f"ledger file not found or empty: {str(self._path)!r}")
        conn = open_read_only(self._path)
        try:
            self._version = self._validate(conn)
            self._check_meta(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise LedgerError(f"{self._path} is not a usable approxdp ledger: {exc}") from exc
        except LedgerError:
            conn.close()
            raise
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
        with _committed(conn, f"cannot upgrade ledger {self._path}"):
            upgrade(conn)

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
                }
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
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
        if meta.get("format") != "approxdp-ledger":
            raise LedgerError(f"{self._path} is not an approxdp ledger")
        stored = (float(meta["budget_epsilon"]), float(meta["budget_delta"]))
        if stored != self._budget or meta.get("composition") != self._composition:
            raise LedgerError(
                f"ledger {self._path} was created for budget {stored} with composition="
                f"{meta.get('composition')!r}; open it with the same budget and rule (asked "
                f"for {self._budget}, composition={self._composition!r})"
            )
        self._ledger_id = meta.get("ledger_id")

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

    # -- reads --------------------------------------------------------------------------------

    @staticmethod
    def _read_state(conn: sqlite3.Connection) -> LedgerState:
        rho, count = conn.execute("SELECT rho, count FROM totals WHERE id = 1").fetchone()
        groups = tuple(
            (float(e), float(d), int(c))
            for e, d, c in conn.execute(
                "SELECT epsilon, delta, count FROM groups ORDER BY epsilon, delta"
            )
        )
        pld = tuple(
            (str(k), int(c))
            for k, c in conn.execute("SELECT key, count FROM pld_events ORDER BY key")
        )
        return LedgerState(float(rho), groups, int(count), pld)

    def state(self) -> LedgerState:
        """The current totals, read in one consistent snapshot."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    return self._read_state(conn)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc

    def _rows(self, conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        """Every spend row (id, created, event, rho, items, rule, delta_after, seeded, hash),
        oldest first; a file read before schema 3 has no seeded marker (0) or hash ('')."""
        extra = "seeded, hash" if self._version >= 3 else "0, ''"
        return conn.execute(
            f"SELECT id, created, event, rho, items, rule, delta_after, {extra} FROM spends "
            "ORDER BY id"
        ).fetchall()

    def records(self) -> tuple[SpendRecord, ...]:
        """Every spend, oldest first."""
        with self._lock:
            conn = self._connection()
            try:
                rows = self._rows(conn)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc
        return tuple(
            SpendRecord(int(i), float(t), event_from_json(ev), str(rule), float(d),
                        seeded=bool(seeded), chain_hash=str(h) or None,
                        ledger_id=self._ledger_id if h else None)
            for i, t, ev, _rho, _items, rule, d, seeded, h in rows
        )

    # -- the one write ---------------------------------------------------------------------

    def append(
        self, event: PrivacyEvent, contrib: Contribution, check: Check, *, seeded: bool = False,
    ) -> SpendRecord:
        """Atomically check and record one spend (one BEGIN IMMEDIATE transaction), chained to
        the row before it (``seeded``: the spend of a seeded simulation, marked so)."""
        if self._read_only:
            raise LedgerError(f"ledger {self._path} was opened read-only; nothing was spent")
        payload = event_to_json(event)
        items = json.dumps([list(item) for item in contrib.items])
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot lock ledger {self._path}: {exc}") from exc
            with _committed(conn, f"spend not recorded in {self._path}"):
                old_state = self._read_state(conn)
                new_state = old_state.add(contrib)
                rule, delta_after = check(old_state, new_state)  # raises to refuse
                created = time.time()
                last = conn.execute(
                    "SELECT id, hash FROM spends ORDER BY id DESC LIMIT 1"
                ).fetchone()
                index, previous = ((1, self._genesis(conn)) if last is None
                                   else (int(last[0]) + 1, str(last[1])))
                chained = row_hash(previous, index, created, payload, contrib.rho, items, rule,
                                   delta_after, seeded)
                conn.execute(
                    "INSERT INTO spends (id, created, event, rho, items, rule, delta_after, "
                    "seeded, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (index, created, payload, contrib.rho, items, rule, delta_after,
                     int(seeded), chained),
                )
                conn.execute(
                    "UPDATE totals SET rho = ?, count = ? WHERE id = 1",
                    (new_state.rho, new_state.count),
                )
                for eps, delta in contrib.items:
                    conn.execute(
                        "INSERT INTO groups (epsilon, delta, count) VALUES (?, ?, 1) "
                        "ON CONFLICT (epsilon, delta) DO UPDATE SET count = count + 1",
                        (eps, delta),
                    )
                for key in contrib.pld:
                    conn.execute(
                        "INSERT INTO pld_events (key, count) VALUES (?, 1) "
                        "ON CONFLICT (key) DO UPDATE SET count = count + 1",
                        (key,),
                    )
        return SpendRecord(index, created, event, rule, delta_after, seeded=seeded,
                           chain_hash=chained, ledger_id=self._ledger_id)

    @staticmethod
    def _genesis(conn: sqlite3.Connection) -> str:
        return genesis_of(dict(conn.execute("SELECT key, value FROM meta").fetchall()))

    def snapshot(self) -> tuple[LedgerState, list[tuple[Any, ...]], str | None]:
        """The totals, every spend row (id, created, event, rho, items, rule, delta_after,
        seeded, hash) and the chain's genesis hash (None before schema 3), read in one
        consistent snapshot."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    return (self._read_state(conn), self._rows(conn),
                            self._genesis(conn) if self._version >= 3 else None)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc

    def verify(self) -> LedgerState:
        """Recompute the totals from the spend rows, and the hash chain over them; LedgerError
        naming the first problem (:func:`~approxdp.accounting.budget.verify.check_rows`).

        Returns:
            The verified state.
        """
        state, rows, genesis = self.snapshot()
        problems = check_rows(state, rows, genesis)
        if problems:
            raise LedgerError(f"ledger {self._path} is inconsistent: {problems[0]}")
        return state

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
