"""The SQLite ledger's schema, and the upgrades that bring an older file to it.

Versions (``PRAGMA user_version``), each an upgrade of the one before — linear, applied in
order, every row kept:

1. ``meta(key, value)``; ``spends(id, created, event, rho, items, rule, delta_after)``;
   ``totals(id = 1, rho, count)``; ``groups(epsilon, delta, count)``.
2. + ``pld_events(key, count)``: the multiset of non-Gaussian event descriptions from which
   the PLD rule re-accounts the history, rebuilt from the stored spend rows.
3. + the privacy filter: ``spends.charge`` (how the filter charged the spend, JSON),
   ``filter_state(id = 1, state)`` (the filter's state, JSON; NULL for ``adaptivity="fixed"``),
   ``commitments(id, created, kind, commitment, label, pricing, events, charge)`` (every commit
   and close of a plan) and ``meta.adaptivity`` (+ the basic share). The upgrade adds the tables
   and records the old rule (``legacy_composition``) and row count (``legacy_spends``); the
   ledger then re-certifies the stored history under the mode its opener asks for
   (:class:`~approxdp.accounting.budget.sqlite_ledger.SQLiteLedger`), in the same transaction.
4. + ``spends.seeded`` (1 for the spend of a seeded simulation recorded on the caller's
   explicit opt-in: "seeded, not private"; 0 otherwise) and ``spends.hash``, the row's hash in
   the chain of :mod:`~approxdp.accounting.budget.chain`; + ``meta.ledger_id``, the file's
   random identity that receipts name. The upgrade chains the rows already there, oldest
   first (it cannot vouch for edits made before it).

Each upgrade runs inside the caller's ``BEGIN IMMEDIATE`` transaction (a failure rolls the
file back to what it was). A file of a later version is refused, never downgraded. A version
added on top of 4 appends one function to :data:`UPGRADES` and keeps a small file written by
the code before it in ``tests/accounting/data/`` for its upgrade test.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Mapping

from approxdp.accounting.budget.chain import genesis_hash, row_hash
from approxdp.accounting.budget.costs import contribution
from approxdp.accounting.serialization import event_from_json

__all__ = [
    "CHAIN_VERSION",
    "FILTER_VERSION",
    "SCHEMA",
    "SCHEMA_VERSION",
    "UPGRADES",
    "chain_rows",
    "new_ledger_id",
    "upgrade",
]

SCHEMA_VERSION = 4
#: The first version with privacy filters (older files declared no mode: re-certified).
FILTER_VERSION = 3
#: The first version with the hash chain and the seeded marker.
CHAIN_VERSION = 4

#: The tables schema 3 adds for the privacy filter (also what the 2 → 3 upgrade creates).
FILTER_TABLES = """
CREATE TABLE filter_state (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT);
CREATE TABLE commitments (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    kind TEXT NOT NULL,
    commitment INTEGER NOT NULL,
    label TEXT NOT NULL,
    pricing TEXT NOT NULL,
    events TEXT NOT NULL,
    charge TEXT NOT NULL
);
INSERT INTO filter_state (id, state) VALUES (1, NULL);
"""

#: The current schema, for a new file.
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE spends (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    event TEXT NOT NULL,
    rho REAL NOT NULL,
    items TEXT NOT NULL,
    rule TEXT NOT NULL,
    delta_after REAL NOT NULL,
    charge TEXT NOT NULL DEFAULT '',
    seeded INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT ''
);
CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), rho REAL NOT NULL,
                     count INTEGER NOT NULL);
CREATE TABLE groups (epsilon REAL NOT NULL, delta REAL NOT NULL, count INTEGER NOT NULL,
                     PRIMARY KEY (epsilon, delta));
CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL);
INSERT INTO totals (id, rho, count) VALUES (1, 0.0, 0);
""" + FILTER_TABLES


def new_ledger_id() -> str:
    """A fresh random identity for a ledger file (what its receipts name)."""
    return uuid.uuid4().hex


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def genesis_of(meta: Mapping[str, str]) -> str:
    """The genesis hash of a ledger from its ``meta`` table (the rule it was created with: a
    file re-certified under a privacy filter keeps its old one as ``legacy_composition``)."""
    rule = meta.get("legacy_composition", meta["composition"])
    return genesis_hash(meta["ledger_id"], (float(meta["budget_epsilon"]),
                                            float(meta["budget_delta"])), rule)


def chain_rows(
    rows: list[tuple[int, float, str, float, str, str, float, int]], genesis: str,
) -> list[str]:
    """The chain hash of each of ``rows`` = (id, created, event, rho, items, rule, delta_after,
    seeded), oldest first, starting from ``genesis``."""
    hashes, previous = [], genesis
    for i, created, event, rho, items, rule, delta_after, seeded in rows:
        previous = row_hash(previous, i, created, event, rho, items, rule, delta_after,
                            bool(seeded))
        hashes.append(previous)
    return hashes


def _to_2(conn: sqlite3.Connection) -> None:
    """1 → 2: the PLD rule's event descriptions, rebuilt from the stored spend rows."""
    counts: dict[str, int] = {}
    for (payload,) in conn.execute("SELECT event FROM spends ORDER BY id"):
        for key in contribution(event_from_json(payload)).pld:
            counts[key] = counts.get(key, 0) + 1
    conn.execute("CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL)")
    conn.executemany("INSERT INTO pld_events (key, count) VALUES (?, ?)", counts.items())


def _to_3(conn: sqlite3.Connection) -> None:
    """2 → 3: the privacy filter's tables and each spend's charge; the old rule and row count
    are kept (the ledger re-certifies the history under its opener's mode next)."""
    meta = _meta(conn)
    conn.execute("ALTER TABLE spends ADD COLUMN charge TEXT NOT NULL DEFAULT ''")
    for statement in FILTER_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)
    count = int(conn.execute("SELECT COUNT(*) FROM spends").fetchone()[0])
    conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [
        ("legacy_composition", meta.get("composition", "auto")),
        ("legacy_spends", str(count)),
    ])


def _to_4(conn: sqlite3.Connection) -> None:
    """3 → 4: the seeded marker (0 for every old row: seeded releases could not be told apart
    before), the ledger's identity, and the hash chain over the rows already there."""
    conn.execute("ALTER TABLE spends ADD COLUMN seeded INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE spends ADD COLUMN hash TEXT NOT NULL DEFAULT ''")
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('ledger_id', ?)",
                 (new_ledger_id(),))
    rows = conn.execute(
        "SELECT id, created, event, rho, items, rule, delta_after, seeded FROM spends "
        "ORDER BY id"
    ).fetchall()
    hashes = chain_rows(rows, genesis_of(_meta(conn)))
    conn.executemany("UPDATE spends SET hash = ? WHERE id = ?",
                     [(h, row[0]) for h, row in zip(hashes, rows, strict=True)])


#: ``UPGRADES[v]`` brings a version-``v`` file to version ``v + 1``.
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {1: _to_2, 2: _to_3, 3: _to_4}


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the file on ``conn`` to :data:`SCHEMA_VERSION`, one version at a time, inside the
    caller's open transaction (re-reading the version: another process may have upgraded it)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    while version < SCHEMA_VERSION:
        UPGRADES[version](conn)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")
