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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.sqlite_schema import FILTER_VERSION, SCHEMA_VERSION
from approxdp.accounting.composition.filter_state import FilterKind
from approxdp.errors import LedgerError

__all__ = [
    "APPLICATION_ID",
    "BUSY_TIMEOUT_MS",
    "HEADER",
    "LedgerSettings",
    "SubLedgerRecord",
    "being_created",
    "check_ledger_path",
    "check_sub_split",
    "claim_sub_file",
    "closed_on_failure",
    "committed",
    "dump_sub_records",
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
class SubLedgerRecord:
    """A sub-budget's ledger file as its parent ledger records it (the parent's meta key
    ``sub_budgets``, written when the parent is created): a reopen checks the same split.

    Attributes:
        name: the sub-budget's name (``acc.sub(name)``).
        budget: its (ε_i, δ_i).
        file: its file's name, in the parent's folder (:meth:`path`).
        ledger_id: the sub file's ``ledger_id``, recorded when the sub files are first
            created (None until then).
        options: the sub-budget's other options as given (``composition``,
            ``basic_share``, ``rdp_share``, ``rdp_orders``), JSON-shaped.
    """

    name: str
    budget: tuple[float, float]
    file: str
    ledger_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict, hash=False)

    def path(self, parent: str | os.PathLike[str]) -> Path:
        """The sub file of the parent ledger file ``parent``."""
        return Path(parent).parent / self.file

    def same_split(self, other: SubLedgerRecord) -> bool:
        """The same sub-budget (name, budget, file, options), whatever the ``ledger_id``."""
        return (self.name, self.budget, self.file, self.options) == \
            (other.name, other.budget, other.file, other.options)

    def to_json(self) -> dict[str, Any]:
        """As stored in the parent's meta."""
        return {"name": self.name, "budget": list(self.budget), "file": self.file,
                "ledger_id": self.ledger_id, "options": self.options}

    @classmethod
    def from_json(cls, obj: Any) -> SubLedgerRecord:
        """From :meth:`to_json` (ValueError/KeyError/TypeError if malformed)."""
        eps, delta = obj["budget"]
        lid = obj.get("ledger_id")
        options = obj.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError("sub-budget options must be an object")
        return cls(str(obj["name"]), (float(eps), float(delta)), str(obj["file"]),
                   None if lid is None else str(lid), dict(options))


def dump_sub_records(records: tuple[SubLedgerRecord, ...]) -> str:
    """The parent's ``sub_budgets`` meta value."""
    return json.dumps([r.to_json() for r in records], sort_keys=True)


def check_sub_split(asked: tuple[SubLedgerRecord, ...] | None,
                    stored: tuple[SubLedgerRecord, ...] | None, path: Path) -> None:
    """LedgerError unless the sub-budgets ``asked`` for (None: whatever is stored) are the
    split ``stored`` in the ledger file ``path`` (fixed when it was created), in any order."""
    if asked is None:
        return
    have = sorted(stored or (), key=lambda r: r.name)
    if len(have) != len(asked) or not all(
            a.same_split(b) for a, b in zip(sorted(asked, key=lambda r: r.name), have,
                                            strict=True)):
        raise LedgerError(
            f"ledger {path} was created with sub_budgets={_split(stored)}; open it with the "
            "same split, or leave sub_budgets out to use the stored one (sub-budgets are "
            f"fixed when a ledger is created; asked for {_split(asked)})"
        )


def _split(records: tuple[SubLedgerRecord, ...] | None) -> str:
    if not records:
        return "None"
    return "{" + ", ".join(f"{r.name!r}: (budget={r.budget}, file={r.file!r}"
                           + "".join(f", {k}={v!r}" for k, v in sorted(r.options.items()))
                           + ")" for r in records) + "}"


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
        ledger_id: the file's random identity (None before schema 4; not compared: two
            files created for the same settings compare equal).
        sub_budgets: the sub-budgets fixed when it was created, each a ledger file of its own
            (:class:`SubLedgerRecord`), or None.
        sub_budget_of: on a sub-budget's file: (its parent's ``ledger_id``, its name), or
            None.
    """

    budget: tuple[float, float]
    composition: str
    adaptivity: str | None = None
    basic_share: tuple[float, float] | None = None
    legacy_composition: str | None = None
    schema: int = SCHEMA_VERSION
    rdp_share: tuple[float, float] | None = None
    rdp_orders: tuple[float, ...] | None = None
    ledger_id: str | None = field(default=None, compare=False)
    sub_budgets: tuple[SubLedgerRecord, ...] | None = None
    sub_budget_of: tuple[str, str] | None = None


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


def being_created(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite file with nothing committed in it yet (no tables, no
    ``application_id``): another process is creating a ledger there right now (its creation
    is one transaction). False if it cannot be read so."""
    try:
        conn = open_read_only(Path(path))
    except LedgerError:
        return False
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        return bool(app_id == 0 and tables == 0)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


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
        subs = None
        if "sub_budgets" in meta:
            subs = tuple(SubLedgerRecord.from_json(r) for r in json.loads(meta["sub_budgets"]))
        parent = None
        if "sub_budget_of" in meta:
            parent_id, name = json.loads(meta["sub_budget_of"])
            parent = (str(parent_id), str(name))
    except (KeyError, ValueError, TypeError) as exc:
        raise LedgerError(f"{where} is not an approxdp ledger (bad meta table: {exc})") from exc
    if version < FILTER_VERSION:  # written before privacy filters: no mode declared
        return LedgerSettings(budget, composition, None, None, composition, version,
                              ledger_id=meta.get("ledger_id"))
    return LedgerSettings(budget, composition, meta.get("adaptivity"), share,
                          meta.get("legacy_composition"), version, rdp, orders,
                          meta.get("ledger_id"), subs, parent)


def claim_sub_file(path: Path, parent_id: str | None, name: str) -> None:
    """Mark the ledger file ``path`` as sub-budget ``name`` of the ledger ``parent_id`` (its
    meta key ``sub_budget_of``), or check that it is one.

    Raises:
        LedgerError: it is marked as a sub-budget of another ledger, or cannot be written.
    """
    value = json.dumps([parent_id, name])
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("BEGIN IMMEDIATE")
        with committed(conn, f"cannot mark {path} as a sub-budget"):
            row = conn.execute("SELECT value FROM meta WHERE key = 'sub_budget_of'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta (key, value) VALUES ('sub_budget_of', ?)",
                             (value,))
            elif row[0] != value:
                raise LedgerError(
                    f"{path} is a sub-budget of another ledger ({row[0]}), not sub-budget "
                    f"{name!r} of ledger {parent_id}: give this sub-budget another file"
                )
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot mark {path} as a sub-budget: {exc}") from exc
    finally:
        conn.close()


def filter_kind(composition: str, adaptivity: str) -> FilterKind | None:
    """The privacy filter a ledger of this rule and mode is: ``"gdp"`` for the ``gdp`` rule,
    ``"basic"`` for ``basic`` under full adaptivity, else None (a declared-sequence rule)."""
    if composition == "gdp":
        return "gdp"
    if composition == "basic" and adaptivity == "full":
        return "basic"
    return None

