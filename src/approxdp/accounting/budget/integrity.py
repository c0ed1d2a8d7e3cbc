"""The integrity checks of a ledger's rows: totals, indices and hash chain.

Used by :meth:`SQLiteLedger.verify <approxdp.accounting.budget.sqlite_ledger.SQLiteLedger.
verify>` (first problem raised) and :func:`~approxdp.accounting.budget.verify.verify_ledger`
(every problem reported).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from approxdp.accounting.budget.costs import Contribution, LedgerState, contribution
from approxdp.accounting.budget.sqlite_schema import chain_rows
from approxdp.accounting.serialization import event_from_json

__all__ = ["check_rows"]


def check_rows(
    state: LedgerState, rows: Sequence[Sequence[Any]], genesis: str | None,
) -> list[str]:
    """Problems of a ledger's spend ``rows`` (id, created, event, rho, items, rule,
    delta_after, seeded, hash; oldest first) against its totals ``state`` and, with a
    ``genesis`` hash, its chain."""
    problems = []
    ids = [int(r[0]) for r in rows]
    if ids != list(range(1, len(ids) + 1)):
        gaps = sorted(set(range(1, (max(ids) if ids else 0) + 1)) - set(ids))
        where = f"spend(s) {gaps[:5]}{'…' if len(gaps) > 5 else ''} missing" if gaps else (
            f"indices {ids[:5]}… out of order")
        problems.append(f"the spend indices are not 1 to {len(ids)}: {where}")
    rebuilt = LedgerState()
    for row in rows:
        rebuilt = rebuilt.add(Contribution(
            float(row[3]), tuple((float(e), float(d)) for e, d in json.loads(row[4])),
            contribution(event_from_json(row[2])).pld,
        ))
    same_rho = math.isclose(rebuilt.rho, state.rho, rel_tol=1e-12, abs_tol=0.0)
    if (rebuilt.count != state.count or rebuilt.groups != state.groups or not same_rho
            or rebuilt.pld != state.pld):
        problems.append(
            f"the totals ({state.count} spend(s)) are not what the {len(rows)} spend row(s) add "
            "up to: rows or totals were edited"
        )
    if genesis is not None:
        expected = chain_rows([tuple(r[:8]) for r in rows], genesis)
        broken = next((r for r, want in zip(rows, expected, strict=True) if r[8] != want), None)
        if broken is not None:
            problems.append(
                f"the hash chain breaks at spend {broken[0]}: a row was changed, inserted or "
                "deleted at or before it"
            )
    return problems
