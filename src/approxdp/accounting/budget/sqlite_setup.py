"""A ledger file's content: validate an existing file, create a new one, upgrade an older one,
check the stored settings against the opener's and re-declare an upgraded file's mode.

:class:`LedgerSetup` holds the steps :class:`~approxdp.accounting.budget.sqlite_connection.
LedgerFile` runs on a connection it has opened (the connection, its locking and reopening after
a fork stay there); every step reads the opener's settings from the file object.

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

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

from approxdp.accounting.budget.filter import new_filter, replay
from approxdp.accounting.budget.sqlite_files import (
    APPLICATION_ID,
    SubLedgerRecord,
    check_sub_split,
    committed,
    dump_sub_records,
    settings_from_meta,
)
from approxdp.accounting.budget.sqlite_schema import (
    FILTER_VERSION,
    SCHEMA,
    SCHEMA_VERSION,
    new_ledger_id,
    upgrade,
)
from approxdp.accounting.composition.filter_state import FilterKind, RdpShare
from approxdp.accounting.serialization import event_from_json
from approxdp.errors import LedgerError

__all__ = ["LedgerSetup"]


class LedgerSetup:
    """The checks and writes that set up a ledger file's content, on a connection
    :class:`~approxdp.accounting.budget.sqlite_connection.LedgerFile` opened (the attributes
    are LedgerFile's: the opener's settings and what was read from the file)."""

    _path: Path
    _budget: tuple[float, float]
    _composition: str
    _adaptivity: str
    _share: tuple[float, float] | None
    _rdp: RdpShare | None
    _subs_asked: tuple[SubLedgerRecord, ...] | None
    _sub_records: tuple[SubLedgerRecord, ...]
    _subs_ready: bool
    _kind: FilterKind | None
    _read_only: bool
    _version: int
    _ledger_id: str | None

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
