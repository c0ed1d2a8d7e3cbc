"""What a careful forger does to a ledger file after editing rows (for the tamper tests): renumber
the spends, put every entry back in one gap-free chain order, recompute every hash from the
genesis hash (nothing in the chain is secret) and fix the totals.

Imported by tests/accounting/test_ledger_chain.py, test_ledger_schema5.py and
tests/cli/test_cli_publish.py (pytest puts tests/, the folder of the root conftest, on the path).
"""

from __future__ import annotations

import sqlite3

from approxdp.accounting.budget.chain import commitment_hash, spend_hash
from approxdp.accounting.budget.sqlite_schema import genesis_of


def rechain(conn: sqlite3.Connection, *, fix_totals: bool = True) -> None:
    """Rewrite a schema-5 file created at schema 5 (no seal) into a self-consistent one."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert "sealed_at" not in meta, "only for files created at schema 5"
    spends = conn.execute("SELECT seq, id, created, event, rho, items, rule, delta_after, "
                          "seeded, charge FROM spends ORDER BY id").fetchall()
    commits = conn.execute("SELECT seq, id, created, kind, commitment, label, pricing, events, "
                           "charge FROM commitments ORDER BY id").fetchall()
    entries = sorted([("spend", r) for r in spends] + [("commitment", r) for r in commits],
                     key=lambda e: e[1][0])
    conn.execute("DELETE FROM spends")
    conn.execute("DELETE FROM commitments")
    previous, spend_id = genesis_of(meta), 0
    for seq, (kind, row) in enumerate(entries, start=1):
        if kind == "spend":
            spend_id += 1
            fields = (spend_id, *row[2:])
            previous = spend_hash(previous, seq, *fields[:7], bool(fields[7]), fields[8])
            conn.execute("INSERT INTO spends (id, created, event, rho, items, rule, delta_after, "
                         "seeded, charge, seq, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (*fields, seq, previous))
        else:
            previous = commitment_hash(previous, seq, *row[1:])
            conn.execute("INSERT INTO commitments (id, created, kind, commitment, label, "
                         "pricing, events, charge, seq, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?)", (*row[1:], seq, previous))
    if fix_totals:
        rho = sum(float(r[4]) for r in spends)
        conn.execute("UPDATE totals SET rho = ?, count = ?", (rho, spend_id))
        conn.execute("DELETE FROM groups")
        conn.execute("DELETE FROM pld_events")
