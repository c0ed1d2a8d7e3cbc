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
5. + ``spends.seq`` and ``commitments.seq``, ``commitments.hash``: spends and commitments form
   one chain in the order they were recorded, and every entry's hash covers the filter's
   ``charge`` (format 2 of :mod:`~approxdp.accounting.budget.chain`). The upgrade keeps every
   row and every format-1 hash as it is (receipts already handed out still verify; a chain
   already broken stays broken: nothing is re-hashed), numbers the spends ``seq = id``, records
   ``meta.sealed_at`` (the last format-1 position: the next entry chains to the seal over the
   format-1 spends' charges) and chains the commitments already there after it, oldest first;
   ``meta.upgraded_to_5`` says when, how many rows, and whether the format-1 chain was intact.

Each upgrade runs inside the caller's ``BEGIN IMMEDIATE`` transaction (a failure rolls the
file back to what it was). A file of a later version is refused, never downgraded. A version
added on top of 5 appends one function to :data:`UPGRADES` and keeps a small file written by
the code before it in ``tests/accounting/data/`` for its upgrade test.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import uuid
from collections.abc import Callable, Mapping

from approxdp.accounting.budget.chain import commitment_hash, genesis_hash, row_hash, seal_hash
from approxdp.accounting.composition.costs import contribution
from approxdp.accounting.serialization import event_from_json

__all__ = [
    "CHAIN_VERSION",
    "ENTRIES_VERSION",
    "FILTER_VERSION",
    "SCHEMA",
    "SCHEMA_VERSION",
    "UPGRADES",
    "chain_head",
    "chain_rows",
    "new_ledger_id",
    "upgrade",
]

SCHEMA_VERSION = 5
#: The first version with privacy filters (older files declared no mode: re-certified).
FILTER_VERSION = 3
#: The first version with the hash chain and the seeded marker.
CHAIN_VERSION = 4
#: The first version whose chain covers charges and commitments (format 2).
ENTRIES_VERSION = 5

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
    hash TEXT NOT NULL DEFAULT '',
    seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), rho REAL NOT NULL,
                     count INTEGER NOT NULL);
CREATE TABLE groups (epsilon REAL NOT NULL, delta REAL NOT NULL, count INTEGER NOT NULL,
                     PRIMARY KEY (epsilon, delta));
CREATE TABLE pld_events (key TEXT PRIMARY KEY, count INTEGER NOT NULL);
INSERT INTO totals (id, rho, count) VALUES (1, 0.0, 0);
""" + FILTER_TABLES + """
ALTER TABLE commitments ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE commitments ADD COLUMN hash TEXT NOT NULL DEFAULT '';
""" + """
CREATE INDEX spends_seq ON spends (seq);
CREATE INDEX commitments_seq ON commitments (seq);
"""


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


def _to_5(conn: sqlite3.Connection) -> None:
    """4 → 5: one chain over spends and commitments that covers charges. Every format-1 hash
    is kept (never re-hashed: a broken chain stays broken, receipts still verify); the spends
    are numbered ``seq = id``; the commitments already there are chained after the seal,
    oldest first; what was upgraded is recorded in ``meta.upgraded_to_5``."""
    conn.execute("ALTER TABLE spends ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE commitments ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE commitments ADD COLUMN hash TEXT NOT NULL DEFAULT ''")
    conn.execute("UPDATE spends SET seq = id")
    conn.execute("CREATE INDEX spends_seq ON spends (seq)")
    conn.execute("CREATE INDEX commitments_seq ON commitments (seq)")
    meta = _meta(conn)
    rows = conn.execute(
        "SELECT id, created, event, rho, items, rule, delta_after, seeded, hash FROM spends "
        "ORDER BY id"
    ).fetchall()
    intact = [str(r[8]) for r in rows] == chain_rows([tuple(r[:8]) for r in rows],
                                                     genesis_of(meta))
    sealed_at = int(rows[-1][0]) if rows else 0
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('sealed_at', ?)",
                 (str(sealed_at),))
    seq, previous = chain_head(conn)
    commitments = conn.execute(
        "SELECT id, created, kind, commitment, label, pricing, events, charge FROM commitments "
        "ORDER BY id"
    ).fetchall()
    for row in commitments:
        previous = commitment_hash(previous, seq, *row)
        conn.execute("UPDATE commitments SET seq = ?, hash = ? WHERE id = ?",
                     (seq, previous, row[0]))
        seq += 1
    record = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "spends": len(rows), "commitments": len(commitments), "chain_intact": intact}
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('upgraded_to_5', ?)",
                 (json.dumps(record),))


def chain_head(conn: sqlite3.Connection) -> tuple[int, str]:
    """The position the next entry takes in a schema-5 chain and the hash it chains to: the
    newest entry's hash (the genesis hash for none), or the seal over the format-1 spends'
    charges when the newest entry is the last format-1 spend (``meta.sealed_at``)."""
    meta = _meta(conn)
    newest = [conn.execute(f"SELECT seq, hash FROM {table} WHERE seq > 0 ORDER BY seq DESC "
                           "LIMIT 1").fetchone() for table in ("spends", "commitments")]
    last = max((row for row in newest if row is not None), key=lambda r: int(r[0]),
               default=None)
    seq, previous = (0, genesis_of(meta)) if last is None else (int(last[0]), str(last[1]))
    sealed_at = meta.get("sealed_at")
    if sealed_at is not None and seq == int(sealed_at):
        charges = [str(c) for (c,) in conn.execute(
            "SELECT charge FROM spends WHERE seq <= ? ORDER BY seq", (seq,))]
        previous = seal_hash(previous, charges)
    return seq + 1, previous


#: ``UPGRADES[v]`` brings a version-``v`` file to version ``v + 1``.
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _to_2, 2: _to_3, 3: _to_4, 4: _to_5,
}


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the file on ``conn`` to :data:`SCHEMA_VERSION`, one version at a time, inside the
    caller's open transaction (re-reading the version: another process may have upgraded it)."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    while version < SCHEMA_VERSION:
        UPGRADES[version](conn)
        version += 1
        conn.execute(f"PRAGMA user_version = {version}")
