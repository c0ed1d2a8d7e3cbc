"""The SQLite ledger's schema, and the upgrades that bring an older file to it.

Versions (``PRAGMA user_version``), each an upgrade of the one before — linear, applied in
order, every row kept:

1. ``meta(key, value)``; ``spends(id, created, event, rho, items, rule, delta_after)``;
   ``totals(id = 1, rho, count)``; ``groups(epsilon, delta, count)``.
2. + ``pld_events(key, count)``: the multiset of non-Gaussian event descriptions from which
   the PLD rule re-accounts the history, rebuilt from the stored spend rows.
3. + ``spends.seeded`` (1 for the spend of a seeded simulation recorded on the caller's
   explicit opt-in: "seeded, not private"; 0 otherwise) and ``spends.hash``, the row's hash in
   the chain of :mod:`~approxdp.accounting.budget.chain`; + ``meta.ledger_id``, the file's
   random identity that receipts name. The upgrade chains the rows already there, oldest
   first (it cannot vouch for edits made before it).

Each upgrade runs inside the caller's ``BEGIN IMMEDIATE`` transaction (a failure rolls the
file back to what it was). A file of a later version is refused, never downgraded. A version
added on top of 3 appends one function to :data:`UPGRADES` and keeps a small file written by
the code before it in ``tests/accounting/data/`` for its upgrade test.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Mapping

from approxdp.accounting.budget.chain import genesis_hash, row_hash
from approxdp.accounting.budget.costs import contribution
from approxdp.accounting.serialization import event_from_json

__all__ = ["SCHEMA", "SCHEMA_VERSION", "UPGRADES", "chain_rows", "new_ledger_id", "upgrade"]

SCHEMA_VERSION = 3

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
    seeded INTEGER NOT NULL DEFAULT 0,
    hash TEXT NOT NULL DEFAULT ''
);
CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), rho REAL NOT NULL,
                     count INTEGER NOT NULL);
CREATE TABLE groups (epsilon REAL NOT NULL, delta REAL NOT NULL, count INTEGER NOT NULL,
                     PRIMARY KEY (epsilon, delta));
CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL);
INSERT INTO totals (id, rho, count) VALUES (1, 0.0, 0);
"""


def new_ledger_id() -> str:
    """A fresh random identity for a ledger file (what its receipts name)."""
    return uuid.uuid4().hex


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def genesis_of(meta: Mapping[str, str]) -> str:
    """The genesis hash of a ledger from its ``meta`` table."""
    return genesis_hash(meta["ledger_id"], (float(meta["budget_epsilon"]),
                                            float(meta["budget_delta"])), meta["composition"])


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
    """2 → 3: the seeded marker (0 for every old row: seeded releases could not be told apart
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
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {1: _to_2, 2: _to_3}


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the file on ``conn`` to :data:`SCHEMA_VERSION`, one version at a time, inside the
    caller's open transaction (re-reading the version: another process may have upgraded it)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    while version < SCHEMA_VERSION:
        UPGRADES[version](conn)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")
