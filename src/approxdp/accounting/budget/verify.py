"""Checking a ledger file: its totals, its hash chain, and receipts kept outside it.

:func:`verify_ledger` opens the file read-only and reports every problem it finds (the CLI's
``approxdp ledger verify FILE [--receipt ...]``):

- the totals are not what the spend rows add up to (rows deleted or totals edited);
- the spend indices are not 1, 2, …, n (a row deleted from the middle or the end);
- a row's hash is not the chain's hash of it and of every row before it
  (:mod:`~approxdp.accounting.budget.chain`);
- a receipt names another ledger, a spend that is gone, or a spend whose hash differs from
  the receipt's (the ledger was rewritten at or before it, however consistently).

What it cannot see is stated in ``docs/security.md``: a consistent rewrite that recomputes the
chain is evident only through receipts (or a copy of the last hash) kept elsewhere, and only for
spends at or before the newest receipt.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.integrity import check_rows
from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger, read_ledger_settings
from approxdp.errors import LedgerError

__all__ = ["LedgerVerification", "verify_ledger"]


@dataclass(frozen=True, slots=True)
class LedgerVerification:
    """What :func:`verify_ledger` found.

    Attributes:
        path: The file checked.
        ledger_id: Its identity (None before schema 4).
        schema_version: Its schema version.
        spends: Number of spend rows.
        chained: Whether the file has a hash chain (schema 4 on).
        receipts: Number of receipts checked.
        problems: One sentence per problem found (empty: the file is intact as far as these
            checks and these receipts can tell).
    """

    path: str
    ledger_id: str | None
    schema_version: int
    spends: int
    chained: bool
    receipts: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """As a JSON object (its fields and ``ok``)."""
        return {"path": self.path, "ledger_id": self.ledger_id,
                "schema_version": self.schema_version, "spends": self.spends,
                "chained": self.chained, "receipts": self.receipts, "ok": self.ok,
                "problems": list(self.problems)}


def _receipt_problems(
    receipts: Sequence[Receipt], ledger_id: str | None, rows: Sequence[Sequence[Any]],
) -> list[str]:
    by_index = {int(r[0]): str(r[8]) for r in rows}
    problems = []
    for receipt in receipts:
        if ledger_id is None:
            problems.append(f"receipt {receipt.index} cannot be checked: this file has no hash "
                            "chain (schema before 3)")
        elif receipt.ledger_id != ledger_id:
            problems.append(f"receipt for spend {receipt.index} is from ledger "
                            f"{receipt.ledger_id}, not this one ({ledger_id})")
        elif receipt.index not in by_index:
            problems.append(f"spend {receipt.index}, named by a receipt, is gone from the ledger")
        elif by_index[receipt.index] != receipt.chain_hash:
            problems.append(
                f"spend {receipt.index} is not the one its receipt names (its chain hash "
                "differs): the ledger was rewritten at or before that spend"
            )
    return problems


def verify_ledger(
    path: str | os.PathLike[str], receipts: Iterable[Receipt] = (),
) -> LedgerVerification:
    """Check the ledger file at ``path`` (read-only; nothing is written) and ``receipts``.

    Raises:
        LedgerError: The file is missing, not an approxdp ledger, corrupt, or unreadable.
    """
    settings = read_ledger_settings(path)
    ledger = SQLiteLedger(path, budget=settings.budget, composition=settings.composition,
                          adaptivity=settings.adaptivity or "fixed",
                          basic_share=settings.basic_share, read_only=True)
    filter_problem: list[str] = []
    try:
        state, rows, genesis = ledger.snapshot()
        if settings.adaptivity is not None:  # a privacy filter's totals against its charges
            try:
                ledger.verify_filter(state)
            except LedgerError as exc:
                filter_problem.append(str(exc))
    finally:
        ledger.close()
    checked = tuple(receipts)
    problems = check_rows(state, rows, genesis) + filter_problem
    problems += _receipt_problems(checked, ledger.ledger_id, rows)
    return LedgerVerification(
        path=str(Path(path)), ledger_id=ledger.ledger_id, schema_version=ledger.schema_version,
        spends=len(rows), chained=genesis is not None, receipts=len(checked),
        problems=tuple(problems),
    )
