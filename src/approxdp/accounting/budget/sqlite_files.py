"""Opening a SQLite ledger file: what it is, what it was created for, how to read it.

The pieces of :mod:`~approxdp.accounting.budget.sqlite_ledger` that concern the file rather
than its rows: the SQLite header and ``application_id`` that mark an approxdp ledger, the
settings a file stores (:class:`LedgerSettings`, read without writing by
:func:`read_ledger_settings`), opening a file the user may only read (:func:`open_read_only`),
and the transaction helpers every write goes through (:func:`committed`: COMMIT or ROLLBACK,
nothing half-written stays).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from approxdp.accounting.budget.filter_state import FilterKind
from approxdp.accounting.budget.sqlite_schema import FILTER_VERSION, SCHEMA_VERSION
from approxdp.errors import LedgerError

__all__ = [
    "APPLICATION_ID",
    "BUSY_TIMEOUT_MS",
    "HEADER",
    "LedgerSettings",
    "check_ledger_path",
    "closed_on_failure",
    "committed",
    "filter_kind",
    "open_read_only",
    "read_ledger_settings",
    "settings_from_meta",
]

APPLICATION_ID = 0x41445044  # "ADPD"
HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 60_000


@contextlib.contextmanager
def closed_on_failure(conn: sqlite3.Connection, path: Path) -> Iterator[None]:
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
def committed(conn: sqlite3.Connection, failure: str) -> Iterator[None]:
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
        rdp_share: the ``"gdp"`` filter's Rényi share (ε_R, δ_R), or None.
        rdp_orders: its orders, or None.
    """

    budget: tuple[float, float]
    composition: str
    adaptivity: str | None = None
    basic_share: tuple[float, float] | None = None
    legacy_composition: str | None = None
    schema: int = SCHEMA_VERSION
    rdp_share: tuple[float, float] | None = None
    rdp_orders: tuple[float, ...] | None = None


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
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
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
            head = fh.read(len(HEADER))
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {str(file)!r}: {exc.strerror}") from exc
    if head != HEADER:
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
    return settings_from_meta(meta, version, str(file))


def settings_from_meta(meta: dict[str, str], version: int, where: str) -> LedgerSettings:
    if meta.get("format") != "approxdp-ledger":
        raise LedgerError(f"{where} is not an approxdp ledger")
    try:
        budget = (float(meta["budget_epsilon"]), float(meta["budget_delta"]))
        composition = str(meta["composition"])
        share = None
        if "basic_share_epsilon" in meta:
            share = (float(meta["basic_share_epsilon"]), float(meta["basic_share_delta"]))
        rdp, orders = None, None
        if "rdp_share_epsilon" in meta:
            rdp = (float(meta["rdp_share_epsilon"]), float(meta["rdp_share_delta"]))
            orders = tuple(float(a) for a in json.loads(meta["rdp_orders"]))
    except (KeyError, ValueError) as exc:
        raise LedgerError(f"{where} is not an approxdp ledger (bad meta table: {exc})") from exc
    if version < FILTER_VERSION:  # written before privacy filters: no mode declared
        return LedgerSettings(budget, composition, None, None, composition, version)
    return LedgerSettings(budget, composition, meta.get("adaptivity"), share,
                          meta.get("legacy_composition"), version, rdp, orders)


def filter_kind(composition: str, adaptivity: str) -> FilterKind | None:
    """The privacy filter a ledger of this rule and mode is: ``"gdp"`` for the ``gdp`` rule,
    ``"basic"`` for ``basic`` under full adaptivity, else None (a declared-sequence rule)."""
    if composition == "gdp":
        return "gdp"
    if composition == "basic" and adaptivity == "full":
        return "basic"
    return None

