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

Schema (version 2): ``meta(key, value)``; ``spends(id, created, event, rho, items, rule,
delta_after)``; ``totals(id = 1, rho, count)``; ``groups(epsilon, delta, count)``;
``pld_events(key, count)``, the multiset of non-Gaussian event descriptions from which the PLD
rule re-accounts the history. Every spend row keeps its event's full description (``event``),
so any history can be re-accounted under any rule.

**Migration.** A version-1 file (written before the PLD rule) is upgraded in place the first
time it is opened: in one ``BEGIN IMMEDIATE`` transaction the ``pld_events`` table is built from
the events stored in its spend rows, and the version is set to 2. Nothing else changes; a
failure rolls back and leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.costs import Contribution, LedgerState, contribution
from approxdp.accounting.budget.ledger import Check, SpendRecord
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
SCHEMA_VERSION = 2
_MIGRATABLE = (1,)  # older versions this code upgrades in place
_HEADER = b"SQLite format 3\x00"
_BUSY_TIMEOUT_MS = 60_000
_INHERITED: list[sqlite3.Connection] = []  # connections inherited across fork, never touched

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE spends (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    event TEXT NOT NULL,
    rho REAL NOT NULL,
    items TEXT NOT NULL,
    rule TEXT NOT NULL,
    delta_after REAL NOT NULL
);
CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), rho REAL NOT NULL,
                     count INTEGER NOT NULL);
CREATE TABLE groups (epsilon REAL NOT NULL, delta REAL NOT NULL, count INTEGER NOT NULL,
                     PRIMARY KEY (epsilon, delta));
CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL);
INSERT INTO totals (id, rho, count) VALUES (1, 0.0, 0);
"""


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
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=rw", uri=True)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {file}: {exc}") from exc
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
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise LedgerError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self._path = Path(path)
        self._budget = (float(budget[0]), float(budget[1]))
        self._composition = composition
        self._synchronous = synchronous
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._connect()

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
        if version != SCHEMA_VERSION and version not in _MIGRATABLE:
            raise LedgerError(
                f"ledger {self._path} has schema version {version}; this approxdp reads "
                f"version {SCHEMA_VERSION} and upgrades {', '.join(map(str, _MIGRATABLE))}"
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
        """Upgrade a version-1 file to version 2 in one transaction (see the module docstring):
        the event descriptions the PLD rule needs are rebuilt from the stored spend rows."""
        conn.execute("BEGIN IMMEDIATE")
        with _committed(conn, f"cannot upgrade ledger {self._path}"):
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version == 1:  # (another process may have just upgraded it)
                counts: dict[str, int] = {}
                for (payload,) in conn.execute("SELECT event FROM spends ORDER BY id"):
                    for key in contribution(event_from_json(payload)).pld:
                        counts[key] = counts.get(key, 0) + 1
                conn.execute(
                    "CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL)"
                )
                conn.executemany(
                    "INSERT INTO pld_events (key, count) VALUES (?, ?)", counts.items()
                )
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _initialise(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
            ).fetchone()
            if exists is None:
                if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                    raise LedgerError(f"{self._path} is a SQLite database with foreign tables")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                meta = {
                    "format": "approxdp-ledger",
                    "budget_epsilon": repr(self._budget[0]),
                    "budget_delta": repr(self._budget[1]),
                    "composition": self._composition,
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

    def records(self) -> tuple[SpendRecord, ...]:
        """Every spend, oldest first."""
        with self._lock:
            conn = self._connection()
            try:
                rows = conn.execute(
                    "SELECT id, created, event, rule, delta_after FROM spends ORDER BY id"
                ).fetchall()
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc
        return tuple(
            SpendRecord(int(i), float(t), event_from_json(ev), str(rule), float(d))
            for i, t, ev, rule, d in rows
        )

    # -- the one write ---------------------------------------------------------------------

    def append(self, event: PrivacyEvent, contrib: Contribution, check: Check) -> SpendRecord:
        """Atomically check and record one spend (one BEGIN IMMEDIATE transaction)."""
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
                cur = conn.execute(
                    "INSERT INTO spends (created, event, rho, items, rule, delta_after) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (created, payload, contrib.rho, items, rule, delta_after),
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
        index = int(cur.lastrowid) if cur.lastrowid is not None else new_state.count
        return SpendRecord(index, created, event, rule, delta_after)

    def verify(self) -> LedgerState:
        """Recompute the totals from the spend rows and compare (LedgerError if they differ).

        Returns:
            The verified state.
        """
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                state = self._read_state(conn)
                rows = conn.execute(
                    "SELECT rho, items, event FROM spends ORDER BY id"
                ).fetchall()
            finally:
                conn.execute("COMMIT")
        rebuilt = LedgerState()
        for rho, items, payload in rows:
            rebuilt = rebuilt.add(Contribution(
                float(rho),
                tuple((float(e), float(d)) for e, d in json.loads(items)),
                contribution(event_from_json(payload)).pld,
            ))
        same_rho = math.isclose(rebuilt.rho, state.rho, rel_tol=1e-12, abs_tol=0.0)
        if (rebuilt.count != state.count or rebuilt.groups != state.groups or not same_rho
                or rebuilt.pld != state.pld):
            raise LedgerError(
                f"ledger {self._path} is inconsistent: totals {state} but rows give {rebuilt}"
            )
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
