"""The ledger protocol, spend records, and the in-memory ledger.

A ledger stores spends and their sufficient statistic (:class:`LedgerState`). Its one write
operation, :meth:`Ledger.append`, is atomic: it reads the current state, asks the caller's
``check`` whether the new state fits the budget (``check`` raises to refuse), and only then
records the spend. The SQLite ledger (:mod:`approxdp.accounting.budget.sqlite_ledger`) does this
inside one ``BEGIN IMMEDIATE`` transaction, across threads and processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.costs import Contribution, LedgerState
from approxdp.events import PrivacyEvent

__all__ = ["Ledger", "MemoryLedger", "SpendRecord"]

@dataclass(frozen=True, slots=True)
class SpendRecord:
    """One accepted spend.

    Attributes:
        index: 1-based position in the ledger.
        timestamp: seconds since the epoch when it was recorded.
        event: the event spent.
        rule: the composition rule that admitted it.
        delta_after: δ of the whole history at the budget's ε, after this spend.
        seeded: True for the spend of a seeded release (a reproducible simulation, NOT
            private), recorded only where the caller opted in; ledgers and their views mark it
            "seeded, not private".
        chain_hash: The row's hash in a SQLite ledger's hash chain
            (:mod:`~approxdp.accounting.budget.chain`); None in memory or in a file written
            before schema 3 that was only read.
        ledger_id: The identity of the SQLite ledger that holds it (None in memory).
    """

    index: int
    timestamp: float
    event: PrivacyEvent
    rule: str
    delta_after: float
    seeded: bool = False
    chain_hash: str | None = None
    ledger_id: str | None = None

    @property
    def receipt(self) -> Receipt | None:
        """Proof of this spend in its ledger file (None for an in-memory ledger)."""
        if self.chain_hash is None or self.ledger_id is None:
            return None
        return Receipt(self.ledger_id, self.index, self.chain_hash)


# check(state_before, state_after) -> (rule, delta_after); raises BudgetExceededError to
# refuse the spend.
Check = Callable[[LedgerState, LedgerState], tuple[str, float]]


class Ledger(Protocol):
    """What the accountant needs from a ledger."""

    def state(self) -> LedgerState:
        """The current sufficient statistic (no side effects)."""
        ...

    def records(self) -> tuple[SpendRecord, ...]:
        """Every accepted spend, oldest first (no side effects)."""
        ...

    def append(
        self, event: PrivacyEvent, contrib: Contribution, check: Check, *, seeded: bool = False,
    ) -> SpendRecord:
        """Atomically: new = state + contrib; check(state, new); record (``seeded`` marks the
        spend of a seeded simulation). Nothing changes on error."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class MemoryLedger:
    """An in-process ledger (a list and a lock); lost when the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = LedgerState()
        self._records: list[SpendRecord] = []

    def state(self) -> LedgerState:
        with self._lock:
            return self._state

    def records(self) -> tuple[SpendRecord, ...]:
        with self._lock:
            return tuple(self._records)

    def append(
        self, event: PrivacyEvent, contrib: Contribution, check: Check, *, seeded: bool = False,
    ) -> SpendRecord:
        with self._lock:
            new_state = self._state.add(contrib)
            rule, delta_after = check(self._state, new_state)
            record = SpendRecord(len(self._records) + 1, time.time(), event, rule, delta_after,
                                 seeded=seeded)
            self._records.append(record)
            self._state = new_state
            return record

    def close(self) -> None:
        """Nothing to release."""
