"""Checking a ledger file: its totals, its hash chain, and receipts kept outside it.

:func:`verify_ledger` opens the file read-only and reports every problem it finds (the CLI's
``approxdp ledger verify FILE [--receipt ...]``):

- the totals are not what the spend rows add up to (rows deleted or totals edited);
- the spend indices are not 1, 2, …, n (a row deleted from the middle or the end);
- an entry's hash is not the chain's hash of it and of every entry before it
  (:mod:`~approxdp.accounting.budget.chain`; from schema 5 on the chain runs over spends and
  the commitments of plans, and covers each one's charge), or a position of the chain is
  missing (a spend or a commitment deleted);
- a receipt names another ledger, a spend that is gone, or a spend whose hash differs from
  the receipt's (the ledger was rewritten at or before it, however consistently);
- for a ledger with sub-budgets (:mod:`~approxdp.accounting.budget.sub_budgets`): every sub
  file is checked as above, and must be there, be the ledger the parent records (its
  ``ledger_id``, its budget, its mark naming the parent), and the parent's filter must have
  been created with the recorded split.

What it cannot see is stated in ``docs/security.md``: a consistent rewrite that recomputes the
chain is evident only through receipts (or a copy of the last hash) kept elsewhere, and only for
spends at or before the newest receipt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.integrity import LedgerSnapshot, check_rows
from approxdp.accounting.budget.sqlite_files import LedgerSettings
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
        notes: What the checks cover in this file and what they cannot (an older schema read
            as it is; an upgrade from schema 4 and what it could not vouch for).
        sub_budgets: The verification of each sub-budget's file that could be read (its
            problems are also in ``problems``, prefixed ``"sub-budget 'name' (path): "``,
            with those of a sub file missing or not the one recorded).
    """

    path: str
    ledger_id: str | None
    schema_version: int
    spends: int
    chained: bool
    receipts: int
    problems: tuple[str, ...]
    notes: tuple[str, ...] = ()
    sub_budgets: tuple[LedgerVerification, ...] = ()

    @property
    def ok(self) -> bool:
        """No problem found (in the file and its sub-budgets' files)."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """As a JSON object (its fields and ``ok``)."""
        return {"path": self.path, "ledger_id": self.ledger_id,
                "schema_version": self.schema_version, "spends": self.spends,
                "chained": self.chained, "receipts": self.receipts, "ok": self.ok,
                "problems": list(self.problems), "notes": list(self.notes),
                "sub_budgets": [v.to_dict() for v in self.sub_budgets]}


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
    """Check the ledger file at ``path`` (read-only; nothing is written) and ``receipts``, and
    the files of its sub-budgets, if any.

    Raises:
        LedgerError: The file is missing, not an approxdp ledger, corrupt, or unreadable.
    """
    settings = read_ledger_settings(path)
    ledger = SQLiteLedger(path, budget=settings.budget, composition=settings.composition,
                          adaptivity=settings.adaptivity or "fixed",
                          basic_share=settings.basic_share, read_only=True)
    filter_problem: list[str] = []
    try:
        snap = ledger.snapshot()
        if settings.adaptivity is not None:  # a privacy filter's totals against its charges
            try:
                ledger.verify_filter(snap.state)
            except LedgerError as exc:
                filter_problem.append(str(exc))
    finally:
        ledger.close()
    checked = tuple(receipts)
    problems = check_rows(snap) + filter_problem
    problems += _receipt_problems(checked, ledger.ledger_id, snap.spends)
    subs, sub_problems = _verify_subs(Path(path), settings, snap)
    return LedgerVerification(
        path=str(Path(path)), ledger_id=ledger.ledger_id, schema_version=ledger.schema_version,
        spends=len(snap.spends), chained=snap.genesis is not None, receipts=len(checked),
        problems=tuple(problems + sub_problems), notes=_notes(snap), sub_budgets=subs,
    )


def _verify_subs(path: Path, settings: LedgerSettings, snap: LedgerSnapshot) -> \
        tuple[tuple[LedgerVerification, ...], list[str]]:
    """The verification of each sub-budget's file, and every problem found with the sub
    files (prefixed with the sub-budget and its path)."""
    records = settings.sub_budgets or ()
    if not records:
        return (), []
    problems = []
    f = snap.state.filter
    split = sorted((r.name, Fraction(r.budget[0]), Fraction(r.budget[1])) for r in records)
    if f is None or sorted(f.subs) != split:
        problems.append(
            "the sub-budgets recorded in the meta table ("
            + ", ".join(f"{n!r}: ({float(e):g}, {float(d):g})" for n, e, d in split)
            + ") are not the ones its filter state was created with ("
            + ("none" if f is None or not f.subs else ", ".join(
                f"{n!r}: ({float(e):g}, {float(d):g})" for n, e, d in sorted(f.subs)))
            + ")"
        )
    results = []
    for r in records:
        sub_path = r.path(path)
        where = f"sub-budget {r.name!r} ({str(sub_path)!r})"
        if r.ledger_id is None:
            problems.append(f"{where}: the sub-budget files were never completed (the "
                            "ledger's creation was interrupted); open it once for writing")
            continue
        try:
            sub_settings = read_ledger_settings(sub_path)
            checked = verify_ledger(sub_path)
        except LedgerError as exc:
            problems.append(f"{where}: {exc}")
            continue
        results.append(checked)
        problems += [f"{where}: {p}" for p in checked.problems]
        if checked.ledger_id != r.ledger_id:
            problems.append(f"{where}: it is ledger {checked.ledger_id}, not the one the parent "
                            f"records ({r.ledger_id})")
        if sub_settings.budget != r.budget:
            problems.append(f"{where}: its budget {sub_settings.budget} is not the recorded "
                            f"{r.budget}")
        if sub_settings.sub_budget_of != (settings.ledger_id, r.name):
            problems.append(f"{where}: it is not marked as sub-budget {r.name!r} of this ledger "
                            f"(its mark: {sub_settings.sub_budget_of})")
    return tuple(results), problems


def _notes(snap: LedgerSnapshot) -> tuple[str, ...]:
    """What this file's chain covers, where it covers less than a schema-5 file's."""
    if snap.genesis is None:
        return ("no hash chain (written before schema 4): only the totals are checked; open "
                "it once for writing to chain it",)
    if not snap.entries:
        return ("schema 4: the chain covers the spends but not their charges nor the "
                "commitments of plans; open it once for writing to upgrade it to schema 5",)
    if snap.upgraded is None:
        return ()
    try:
        info = json.loads(snap.upgraded)
        at, spends, commits = str(info["at"]), int(info["spends"]), int(info["commitments"])
        intact = bool(info["chain_intact"])
    except (ValueError, KeyError, TypeError):
        return ("upgraded from schema 4 (its upgrade record is unreadable)",)
    note = (f"upgraded from schema 4 to 5 at {at}: spends 1 to {spends} keep their schema-4 "
            f"hashes; their charges and the {commits} commitment(s) recorded before the "
            "upgrade are covered from the upgrade on (edits made before it cannot be seen)")
    if not intact:
        note += "; the schema-4 chain was already broken then, and is left as it was"
    return (note,)
