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

- **Tamper evidence.** Spends and the commitments of plans form one hash chain, each entry's
  hash covering its recorded fields and its filter charge
  (:mod:`~approxdp.accounting.budget.chain`), and each record carries its :class:`Receipt
  <approxdp.accounting.budget.chain.Receipt>`; :func:`~approxdp.accounting.budget.verify.
  verify_ledger` checks the chain, the totals and receipts kept elsewhere.
- **Read-only views.** ``read_only=True`` opens a file the user may only read (SQLite's
  ``mode=ro``, or ``immutable=1`` where even that cannot take its locks) and never writes;
  a file of an older schema is read as it is, not upgraded.

- **A privacy filter's state is stored with every spend** (schema 3): ``filter_state``, the
  filter's state as JSON (:class:`~approxdp.accounting.composition.filter_state.FilterState`: every
  number its certificate rests on, as decided; NULL for ``adaptivity="fixed"``), each spend's
  ``charge`` (how the filter charged it) and ``commitments``, every commit and close of a plan;
  :meth:`SQLiteLedger.verify` audits the filter's totals against the charges.

Schema and upgrades: :mod:`~approxdp.accounting.budget.sqlite_schema` (version 5: spends with
their seeded marker, filter charge, chain position and hash, totals, groups, pld_events, meta,
filter_state, commitments with their chain position and hash). Every spend row keeps its event's
full description (``event``), so any history can be re-accounted under any rule. An older file
is upgraded in place, one version at a time, the first time it is opened for writing: in one
``BEGIN IMMEDIATE`` transaction; a failure rolls back and leaves the file as it was.

The file itself — opening, validation, creation, upgrades and re-certification of a file from
before privacy filters — is :mod:`~approxdp.accounting.budget.sqlite_connection`; the settings
a file stores and read-only opening are :mod:`~approxdp.accounting.budget.sqlite_files`.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from typing import Any

from approxdp.accounting.budget.chain import commitment_hash, spend_hash
from approxdp.accounting.budget.integrity import LedgerSnapshot, check_rows
from approxdp.accounting.budget.ledger import Check, FilterLogEntry, FilterUpdate, SpendRecord
from approxdp.accounting.budget.sqlite_connection import LedgerFile
from approxdp.accounting.budget.sqlite_files import (
    APPLICATION_ID,
    LedgerSettings,
    committed,
    read_ledger_settings,
)
from approxdp.accounting.budget.sqlite_schema import (
    CHAIN_VERSION,
    ENTRIES_VERSION,
    FILTER_VERSION,
    SCHEMA_VERSION,
    chain_head,
    genesis_of,
)
from approxdp.accounting.composition.costs import Contribution, LedgerState
from approxdp.accounting.composition.filter_state import FilterState
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


class SQLiteLedger(LedgerFile):
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
        """Every spend row (id, created, event, rho, items, rule, delta_after, seeded, hash,
        charge, seq), oldest first; a file read before schema 4 has no seeded marker (0) or
        hash (''), before schema 3 no charge (''), before schema 5 no seq (its id)."""
        seeded = "seeded, hash" if self._version >= CHAIN_VERSION else "0, ''"
        charge = "charge" if self._version >= FILTER_VERSION else "''"
        seq = "seq" if self._version >= ENTRIES_VERSION else "id"
        return conn.execute(
            f"SELECT id, created, event, rho, items, rule, delta_after, {seeded}, {charge}, "
            f"{seq} FROM spends ORDER BY id"
        ).fetchall()

    def _commitment_rows(self, conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        """Every commitment row (id, created, kind, commitment, label, pricing, events, charge,
        seq, hash), oldest first (none before schema 3; seq 0 and hash '' before schema 5)."""
        if self._version < FILTER_VERSION:
            return []
        chain = "seq, hash" if self._version >= ENTRIES_VERSION else "0, ''"
        return conn.execute(
            f"SELECT id, created, kind, commitment, label, pricing, events, charge, {chain} "
            "FROM commitments ORDER BY id"
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
            for i, t, ev, _rho, _items, rule, d, seeded, h, _charge, _seq in rows
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
            with committed(conn, f"spend not recorded in {self._path}"):
                old_state = self._read_state(conn)
                new_state = old_state.add(contrib)
                decision = check(old_state, new_state)  # raises to refuse
                rule, delta_after = decision.rule, decision.delta_after
                created = time.time()
                index = int(conn.execute(
                    "SELECT COALESCE(MAX(id), 0) + 1 FROM spends").fetchone()[0])
                seq, previous = chain_head(conn)
                chained = spend_hash(previous, seq, index, created, payload, contrib.rho, items,
                                     rule, delta_after, seeded, decision.charge)
                conn.execute(
                    "INSERT INTO spends (id, created, event, rho, items, rule, delta_after, "
                    "seeded, hash, charge, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (index, created, payload, contrib.rho, items, rule, delta_after,
                     int(seeded), chained, decision.charge, seq),
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
            with committed(conn, f"commitment not recorded in {self._path}"):
                new_filter, audit = update(self._read_state(conn))  # raises to refuse
                conn.execute("UPDATE filter_state SET state = ? WHERE id = 1",
                             (new_filter.to_json(),))
                if audit is not None:
                    index = int(conn.execute(
                        "SELECT COALESCE(MAX(id), 0) + 1 FROM commitments").fetchone()[0])
                    seq, previous = chain_head(conn)
                    row = (index, time.time(), audit["kind"], int(audit["commitment"]),
                           audit["label"], audit["pricing"], audit["events"], audit["charge"])
                    conn.execute(
                        "INSERT INTO commitments (id, created, kind, commitment, label, pricing, "
                        "events, charge, seq, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (*row, seq, commitment_hash(previous, seq, *row)),
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

    def snapshot(self) -> LedgerSnapshot:
        """The totals, every spend and commitment row and what their chain starts from, read
        in one consistent snapshot."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                try:
                    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                    chained = self._version >= CHAIN_VERSION
                    sealed = meta.get("sealed_at")
                    return LedgerSnapshot(
                        state=self._read_state(conn), spends=self._rows(conn),
                        commitments=self._commitment_rows(conn),
                        genesis=genesis_of(meta) if chained else None,
                        entries=self._version >= ENTRIES_VERSION,
                        sealed_at=None if sealed is None else int(sealed),
                        upgraded=meta.get("upgraded_to_5"),
                    )
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
        snap = self.snapshot()
        problems = check_rows(snap)
        if problems:
            raise LedgerError(f"ledger {self._path} is inconsistent: {problems[0]}")
        self.verify_filter(snap.state)
        return snap.state

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
