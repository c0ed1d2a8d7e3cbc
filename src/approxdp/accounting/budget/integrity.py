"""The integrity checks of a ledger's rows: totals, indices and hash chain.

Used by :meth:`SQLiteLedger.verify <approxdp.accounting.budget.sqlite_ledger.SQLiteLedger.
verify>` (first problem raised) and :func:`~approxdp.accounting.budget.verify.verify_ledger`
(every problem reported). The chain is the one of :mod:`~approxdp.accounting.budget.chain`
(Haber & Stornetta 1991, https://doi.org/10.1007/BF00196791): from schema 5 on, spends and the
commitments of plans in one chain, each entry's hash covering its charge; the spends of a file
upgraded from schema 4 keep their format-1 hashes, and the seal after them covers their charges.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from approxdp.accounting.budget.chain import commitment_hash, row_hash, seal_hash, spend_hash
from approxdp.accounting.budget.sqlite_schema import chain_rows
from approxdp.accounting.composition.costs import Contribution, LedgerState, contribution
from approxdp.accounting.serialization import event_from_json

__all__ = ["LedgerSnapshot", "check_rows"]


@dataclass(frozen=True, slots=True)
class LedgerSnapshot:
    """A ledger file's rows and totals, read in one transaction.

    Attributes:
        state: The stored totals.
        spends: Every spend row (id, created, event, rho, items, rule, delta_after, seeded,
            hash, charge, seq), oldest first.
        commitments: Every commitment row (id, created, kind, commitment, label, pricing,
            events, charge, seq, hash), oldest first.
        genesis: The chain's genesis hash (None before schema 4: no chain).
        entries: Whether spends and commitments form one format-2 chain (schema 5 on).
        sealed_at: For a file upgraded from schema 4: the chain position of its last
            format-1 spend (the seal follows it); None for a file created at schema 5.
        upgraded: ``meta.upgraded_to_5`` (JSON: when, how many rows, whether the format-1
            chain was intact), or None.
    """

    state: LedgerState
    spends: list[tuple[Any, ...]]
    commitments: list[tuple[Any, ...]]
    genesis: str | None
    entries: bool = False
    sealed_at: int | None = None
    upgraded: str | None = None


def _totals_problem(state: LedgerState, rows: Sequence[Sequence[Any]]) -> list[str]:
    rebuilt = LedgerState()
    for row in rows:
        rebuilt = rebuilt.add(Contribution(
            float(row[3]), tuple((float(e), float(d)) for e, d in json.loads(row[4])),
            contribution(event_from_json(row[2])).pld,
        ))
    same_rho = math.isclose(rebuilt.rho, state.rho, rel_tol=1e-12, abs_tol=0.0)
    if (rebuilt.count != state.count or rebuilt.groups != state.groups or not same_rho
            or rebuilt.pld != state.pld):
        return [f"the totals ({state.count} spend(s)) are not what the {len(rows)} spend "
                "row(s) add up to: rows or totals were edited"]
    return []


def _name(kind: str, row: Sequence[Any]) -> str:
    if kind == "spend":
        return f"spend {row[0]}"
    return f"commitment {row[0]} ({row[2]} of plan {row[3]}, {str(row[4])!r})"


def _entry_problems(snap: LedgerSnapshot) -> list[str]:
    """The format-2 chain (schema 5) over spends and commitments, in ``seq`` order."""
    assert snap.genesis is not None
    by_seq: dict[int, tuple[str, Sequence[Any]]] = {}
    problems = []
    tagged: list[tuple[str, Sequence[Any], int]] = [("spend", r, int(r[10])) for r in snap.spends]
    tagged += [("commitment", r, int(r[8])) for r in snap.commitments]
    for kind, row, seq in tagged:
        if seq in by_seq or seq < 1:
            problems.append(f"{_name(kind, row)} has position {seq} in the chain, which is "
                            "not its own: a row was inserted or renumbered")
        by_seq[seq] = (kind, row)
    top = max(by_seq, default=0)
    gaps = sorted(set(range(1, top + 1)) - set(by_seq))
    if gaps:
        after = next((by_seq[s] for s in range(gaps[0] + 1, top + 1) if s in by_seq), None)
        where = "" if after is None else f", just before {_name(*after)}"
        problems.append(f"position(s) {gaps[:5]}{'…' if len(gaps) > 5 else ''} of the chain "
                        f"are missing{where}: a spend or a commitment was deleted")
    sealed = snap.sealed_at
    legacy = [] if sealed is None else [
        str(r[9]) for r in sorted(snap.spends, key=lambda r: int(r[10])) if int(r[10]) <= sealed]
    previous, at_seal = snap.genesis, sealed is None
    for seq in sorted(by_seq):
        kind, row = by_seq[seq]
        if not at_seal and sealed is not None and seq > sealed:
            previous, at_seal = seal_hash(previous, legacy), True
        if kind == "spend" and sealed is not None and seq <= sealed:  # format 1 (schema 4)
            want = row_hash(previous, int(row[0]), row[1], row[2], row[3], row[4], row[5],
                            row[6], bool(row[7]))
            stored = str(row[8])
        elif kind == "spend":
            want = spend_hash(previous, seq, int(row[0]), row[1], row[2], row[3], row[4],
                              row[5], row[6], bool(row[7]), str(row[9]))
            stored = str(row[8])
        else:
            want = commitment_hash(previous, seq, int(row[0]), row[1], row[2], int(row[3]),
                                   row[4], row[5], row[6], str(row[7]))
            stored = str(row[9])
        if stored != want:
            first_after_seal = sealed is not None and seq == sealed + 1
            extra = (f" (or a charge of the spends hashed before schema 5, 1 to {sealed}, "
                     "that the seal covers)") if first_after_seal else ""
            problems.append(f"the hash chain breaks at {_name(kind, row)}: it, or an entry "
                            f"before it, was changed, inserted or deleted{extra}")
            break
        previous = stored
    return problems


def check_rows(snap: LedgerSnapshot) -> list[str]:
    """Problems of a ledger's rows against its totals and, where it has one, its chain."""
    rows = snap.spends
    problems = []
    ids = [int(r[0]) for r in rows]
    if ids != list(range(1, len(ids) + 1)):
        gaps = sorted(set(range(1, (max(ids) if ids else 0) + 1)) - set(ids))
        where = f"spend(s) {gaps[:5]}{'…' if len(gaps) > 5 else ''} missing" if gaps else (
            f"indices {ids[:5]}… out of order")
        problems.append(f"the spend indices are not 1 to {len(ids)}: {where}")
    problems += _totals_problem(snap.state, rows)
    if snap.genesis is not None and snap.entries:
        problems += _entry_problems(snap)
    elif snap.genesis is not None:  # schema 4, read as it is: format 1 over the spends only
        expected = chain_rows([tuple(r[:8]) for r in rows], snap.genesis)
        broken = next((r for r, want in zip(rows, expected, strict=True) if r[8] != want), None)
        if broken is not None:
            problems.append(
                f"the hash chain breaks at spend {broken[0]}: a row was changed, inserted or "
                "deleted at or before it"
            )
    return problems
