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

- **A privacy filter's state is stored with every spend** (schema 3): ``filter_state``, the
  filter's state as JSON (:class:`~approxdp.accounting.budget.filter_state.FilterState`: every
  number its certificate rests on, as decided; NULL for ``adaptivity="fixed"``), each spend's
  ``charge`` (how the filter charged it) and ``commitments``, every commit and close of a plan;
  :meth:`SQLiteLedger.verify` audits the filter's totals against the charges.

Schema and upgrades: :mod:`~approxdp.accounting.budget.sqlite_schema` (version 4: spends with
their seeded marker, chain hash and filter charge, totals, groups, pld_events, meta,
filter_state, commitments). Every spend row keeps its event's full description (``event``), so
any history can be re-accounted under any rule. An older file is upgraded in place, one version
at a time, the first time it is opened for writing: in one ``BEGIN IMMEDIATE`` transaction; a
failure rolls back and leaves the file as it was.

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
import math
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
from approxdp.accounting.budget.filter import new_filter, replay
from approxdp.accounting.budget.filter_state import FilterKind, FilterState
from approxdp.accounting.budget.integrity import check_rows
from approxdp.accounting.budget.ledger import Check, FilterLogEntry, FilterUpdate, SpendRecord
from approxdp.accounting.budget.sqlite_schema import (
    CHAIN_VERSION,
    FILTER_VERSION,
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
def _closed_on_failure(conn: sqlite3.Connection, path: Path) -> Iterator[None]:
    """Setting up a freshly opened connection: on failure close it, and report an SQLite error
    as the file not being a usable ledger (a :class:`LedgerError` passes through unchanged)."""
    try:
        yield
    except sqlite3.Error as exc:
        conn.close()
        raise LedgerError(f"{path} is not a usable approxdp ledger: {exc}") from exc
    except LedgerError:
        conn.close()
        raise


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
        composition: the ledger's rule stored in the file (for a file written before privacy
            filters and not yet upgraded: its old rule).
        adaptivity: ``"full"`` or ``"fixed"``; None for a file written before privacy filters
            (schema 2 or older), which declared none: opening it re-certifies it under the
            mode asked for (by default the ``"gdp"`` filter).
        basic_share: the ``"gdp"`` filter's basic share, or None.
        legacy_composition: for a file written before privacy filters, its old rule (kept
            after the upgrade); else None.
        schema: the file's schema version.
    """

    budget: tuple[float, float]
    composition: str
    adaptivity: str | None = None
    basic_share: tuple[float, float] | None = None
    legacy_composition: str | None = None
    schema: int = SCHEMA_VERSION


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
    # a file the user may write is read as any reader; the read-only modes are for one they
    # may not (tried on a writable but unreadable file, they would leave its WAL side file)
    modes = ("?mode=rw",) if writable else ("?mode=ro", "?mode=ro&immutable=1")
    for mode in modes:
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
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        raise LedgerError(f"{file} is not a usable approxdp ledger: {exc}") from exc
    finally:
        conn.close()
    return _settings(meta, version, str(file))


def _settings(meta: dict[str, str], version: int, where: str) -> LedgerSettings:
    if meta.get("format") != "approxdp-ledger":
        raise LedgerError(f"{where} is not an approxdp ledger")
    try:
        budget = (float(meta["budget_epsilon"]), float(meta["budget_delta"]))
        composition = str(meta["composition"])
        share = None
        if "basic_share_epsilon" in meta:
            share = (float(meta["basic_share_epsilon"]), float(meta["basic_share_delta"]))
    except (KeyError, ValueError) as exc:
        raise LedgerError(f"{where} is not an approxdp ledger (bad meta table: {exc})") from exc
    if version < FILTER_VERSION:  # written before privacy filters: no mode declared
        return LedgerSettings(budget, composition, None, None, composition, version)
    return LedgerSettings(budget, composition, meta.get("adaptivity"), share,
                          meta.get("legacy_composition"), version)


def filter_kind(composition: str, adaptivity: str) -> FilterKind | None:
    """The privacy filter a ledger of this rule and mode is: ``"gdp"`` for the ``gdp`` rule,
    ``"basic"`` for ``basic`` under full adaptivity, else None (a declared-sequence rule)."""
    if composition == "gdp":
        return "gdp"
    if composition == "basic" and adaptivity == "full":
        return "basic"
    return None


class SQLiteLedger:
    """A ledger file shared safely by threads and processes.

    Args:
        path: the ledger file; created (with its budget, mode and rule) if absent or empty.
        budget: the accountant's (ε, δ); must match the one stored in an existing file.
        composition: the accountant's rule; must match the stored one.
        adaptivity: ``"full"`` or ``"fixed"``; must match the stored one (a file from before
            privacy filters takes it when upgraded, and may be re-declared until its next
            spend).
        basic_share: the ``"gdp"`` filter's basic share (must match the stored one).
        synchronous: SQLite ``synchronous`` level, "FULL" (default: durable against power
            loss) or "NORMAL" (durable against process crashes only).
        read_only: Open an existing file only to read it (a file the user may only read,
            an older schema left as it is); :meth:`append` then refuses.

    Raises:
        LedgerError: the file is not a SQLite database, not an approxdp ledger, corrupt,
            inconsistent, or was made for another budget, mode or rule.
    """

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
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise LedgerError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self._path = Path(path)
        self._budget = (float(budget[0]), float(budget[1]))
        self._composition = composition
        self._adaptivity = adaptivity
        self._share = basic_share
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
        with _closed_on_failure(conn, self._path):
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
        self._conn = conn
        self._pid = os.getpid()

    def _connect_read_only(self) -> None:
        """Open an existing file without writing anything (:func:`open_read_only`)."""
        if not self._check_header():
            raise LedgerError(f"ledger file not found or empty: {str(self._path)!r}")
        conn = open_read_only(self._path)
        with _closed_on_failure(conn, self._path):
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
        with _committed(conn, f"cannot upgrade ledger {self._path}"):
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
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
                if self._kind is not None:
                    start = new_filter(self._kind, self._budget, self._share)
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
        stored = _settings(meta, self._version, str(self._path))
        if stored.budget != self._budget:
            raise LedgerError(
                f"ledger {self._path} was created for budget {stored.budget}; open it with "
                f"the same budget (asked for {self._budget})"
            )
        self._ledger_id = meta.get("ledger_id")
        if self._read_only and self._version < FILTER_VERSION:
            return  # read as it is: an older file declared no mode (nothing is written)
        share = None if self._share is None else (float(self._share[0]), float(self._share[1]))
        same = (stored.composition == self._composition and stored.adaptivity ==
                self._adaptivity and stored.basic_share == share)
        if same:
            return
        if not self._read_only and self._may_redeclare(conn, meta):
            conn.execute("BEGIN IMMEDIATE")
            with _committed(conn, f"cannot re-declare ledger {self._path}"):
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

    # -- reads --------------------------------------------------------------------------------

    def _read_state(self, conn: sqlite3.Connection) -> LedgerState:
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
        state = self._replayed
        if self._version >= FILTER_VERSION:
            (text,) = conn.execute("SELECT state FROM filter_state WHERE id = 1").fetchone()
            state = None if text is None else FilterState.from_json(str(text))
        return LedgerState(float(rho), groups, int(count), pld, state)

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
        oldest first; a file read before schema 4 has no seeded marker (0) or hash ('')."""
        extra = "seeded, hash" if self._version >= CHAIN_VERSION else "0, ''"
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
                decision = check(old_state, new_state)  # raises to refuse
                rule, delta_after = decision.rule, decision.delta_after
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
                    "seeded, hash, charge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (index, created, payload, contrib.rho, items, rule, delta_after,
                     int(seeded), chained, decision.charge),
                )
                if decision.filter is not None:
                    conn.execute("UPDATE filter_state SET state = ? WHERE id = 1",
                                 (decision.filter.to_json(),))
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

    def update_filter(self, update: FilterUpdate) -> FilterState:
        """Atomically change the filter's state (a plan committed or closed), with its audit
        row in ``commitments`` (one BEGIN IMMEDIATE transaction)."""
        if self._read_only:
            raise LedgerError(f"ledger {self._path} was opened read-only; nothing was recorded")
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot lock ledger {self._path}: {exc}") from exc
            with _committed(conn, f"commitment not recorded in {self._path}"):
                new_filter, audit = update(self._read_state(conn))  # raises to refuse
                conn.execute("UPDATE filter_state SET state = ? WHERE id = 1",
                             (new_filter.to_json(),))
                if audit is not None:
                    conn.execute(
                        "INSERT INTO commitments (created, kind, commitment, label, pricing, "
                        "events, charge) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (time.time(), audit["kind"], int(audit["commitment"]), audit["label"],
                         audit["pricing"], audit["events"], audit["charge"]),
                    )
        return new_filter

    def filter_log(self) -> tuple[FilterLogEntry, ...]:
        """Every commit and close, oldest first (none in a file read before schema 3)."""
        if self._version < FILTER_VERSION:
            return ()
        with self._lock:
            conn = self._connection()
            try:
                rows = conn.execute(
                    "SELECT created, kind, commitment, label, pricing, events, charge "
                    "FROM commitments ORDER BY id"
                ).fetchall()
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc
        return tuple(FilterLogEntry(float(t), str(k), int(c), str(la), str(p), str(e), str(ch))
                     for t, k, c, la, p, e, ch in rows)

    @staticmethod
    def _genesis(conn: sqlite3.Connection) -> str:
        return genesis_of(dict(conn.execute("SELECT key, value FROM meta").fetchall()))

    def snapshot(self) -> tuple[LedgerState, list[tuple[Any, ...]], str | None]:
        """The totals, every spend row (id, created, event, rho, items, rule, delta_after,
        seeded, hash) and the chain's genesis hash (None before schema 4), read in one
        consistent snapshot."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    return (self._read_state(conn), self._rows(conn),
                            self._genesis(conn) if self._version >= CHAIN_VERSION else None)
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
        self.verify_filter(state)
        return state

    def verify_filter(self, state: LedgerState) -> None:
        """A privacy filter's totals (room used, basic share used, declared block) against
        the sum of the charges stored with every spend and commitment (LedgerError if they
        differ; nothing to check for a declared-sequence rule or a re-certified overspend)."""
        if state.filter is not None and state.filter.over is None:
            self._verify_filter(state.filter, self._charges())

    def _charges(self) -> list[str]:
        """Every spend's and commitment's stored charge, oldest first."""
        with self._lock:
            conn = self._connection()
            try:
                spends = [c for (c,) in conn.execute("SELECT charge FROM spends ORDER BY id")]
                commits = [c for (c,) in conn.execute(
                    "SELECT charge FROM commitments ORDER BY id")]
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self._path}: {exc}") from exc
        return [str(c) for c in spends + commits]

    def _verify_filter(self, f: FilterState, charges: list[str]) -> None:
        """The filter's totals (room used, basic share used, declared block) against the sum of
        the stored charges (LedgerError if they differ)."""
        from fractions import Fraction

        gdp, eps, delta = 0.0, Fraction(0), Fraction(0)
        declared: dict[str, int] = {}
        for text in charges:
            try:
                obj = json.loads(text)
            except ValueError:
                raise LedgerError(
                    f"ledger {self._path} is inconsistent: a stored charge is not the "
                    f"filter's (got {text[:60]!r}); its filter state cannot be audited"
                ) from None
            if "not_charged" in obj:
                continue
            gdp += float(obj["gdp"])
            eps += Fraction(obj["basic"][0])
            delta += Fraction(obj["basic"][1])
            for key, count in obj["declared"]:
                declared[key] = declared.get(key, 0) + int(count)
        same = (math.isclose(gdp, f.gdp_used, rel_tol=1e-9, abs_tol=1e-300)
                and (eps, delta) == (f.share_used[0], f.share_used[1])
                and tuple(sorted(declared.items())) == f.declared)
        if not same:
            raise LedgerError(
                f"ledger {self._path} is inconsistent: its filter state says room used "
                f"{f.gdp_used!r}, basic share used {tuple(map(str, f.share_used))}, declared "
                f"{f.declared}, but the stored charges give {gdp!r}, ({eps}, {delta}), "
                f"{tuple(sorted(declared.items()))}"
            )

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
