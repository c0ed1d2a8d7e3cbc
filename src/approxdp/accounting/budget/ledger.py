"""The ledger protocol, spend records, and the in-memory ledger.

A ledger stores spends and their sufficient statistic (:class:`LedgerState`). Its write
operations are atomic: :meth:`Ledger.append` reads the current state, asks the caller's
``check`` whether the new state fits the budget (``check`` raises to refuse; for a privacy
filter it also returns the filter's next state), and only then records the spend;
:meth:`Ledger.update_filter` does the same for a change of the filter's state alone (a
committed plan, a closed one), with an audit record. The SQLite ledger
(:mod:`approxdp.accounting.budget.sqlite_ledger`) does each inside one ``BEGIN IMMEDIATE``
transaction, across threads and processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.composition.costs import Contribution, LedgerState
from approxdp.accounting.composition.filter_state import FilterState
from approxdp.events import PrivacyEvent

__all__ = [
    "Check",
    "Decision",
    "FilterLogEntry",
    "FilterUpdate",
    "Ledger",
    "MemoryLedger",
    "SpendRecord",
]

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
            before schema 4 that was only read.
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


@dataclass(frozen=True, slots=True)
class Decision:
    """A check's verdict on a spend it admits.

    Attributes:
        rule: what admitted it (stored with the spend).
        delta_after: δ of the history at the budget's ε after the spend (a filter: its reading).
        filter: the filter's next state (None for a ledger that is not a filter).
        charge: how the filter charged it, as JSON ("" when not a filter).
    """

    rule: str
    delta_after: float
    filter: FilterState | None = None
    charge: str = ""


@dataclass(frozen=True, slots=True)
class FilterLogEntry:
    """A plan committed to, or closed in, a privacy filter (what changes the filter besides
    spends; the SQLite ledger keeps them in its ``commitments`` table).

    Attributes:
        timestamp: seconds since the epoch.
        kind: ``"commit"`` or ``"close"``.
        commitment: the plan's id.
        label: the plan's label.
        pricing: ``"declared"`` or ``"prepaid"``.
        events: the plan's (event description, count) pairs, as JSON.
        charge: how the filter charged it (a close: the refund, negative), as JSON.
    """

    timestamp: float
    kind: str
    commitment: int
    label: str
    pricing: str
    events: str
    charge: str


#: check(state_before, state_after_without_filter) -> Decision; raises BudgetExceededError to
#: refuse the spend.
Check = Callable[[LedgerState, LedgerState], Decision]

#: update(state) -> (the filter's next state, an audit record or None); raises to refuse. An
#: audit record is a dict with "kind" ("commit" or "close"), "commitment" (its id), "label",
#: "pricing", "events" (JSON) and "charge" (JSON): a :class:`FilterLogEntry` without its time.
FilterUpdate = Callable[[LedgerState], tuple[FilterState, dict[str, str] | None]]


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

    def update_filter(self, update: FilterUpdate) -> FilterState:
        """Atomically: the filter's next state from ``update(state)``, stored with its audit
        record. Nothing changes on error."""
        ...

    def filter_log(self) -> tuple[FilterLogEntry, ...]:
        """Every commit and close, oldest first (no side effects)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class MemoryLedger:
    """An in-process ledger (a list and a lock); lost when the process ends."""

    def __init__(self, filter_state: FilterState | None = None) -> None:
        self._lock = threading.Lock()
        self._state = LedgerState(filter=filter_state)
        self._records: list[SpendRecord] = []
        self._log: list[FilterLogEntry] = []

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
            decision = check(self._state, new_state)
            if decision.filter is not None:
                new_state = new_state.with_filter(decision.filter)
            record = SpendRecord(len(self._records) + 1, time.time(), event, decision.rule,
                                 decision.delta_after, seeded=seeded)
            self._records.append(record)
            self._state = new_state
            return record

    def update_filter(self, update: FilterUpdate) -> FilterState:
        with self._lock:
            new_filter, audit = update(self._state)
            self._state = self._state.with_filter(new_filter)
            if audit is not None:
                self._log.append(_entry(time.time(), audit))
            return new_filter

    def filter_log(self) -> tuple[FilterLogEntry, ...]:
        with self._lock:
            return tuple(self._log)

    def close(self) -> None:
        """Nothing to release."""


def _entry(timestamp: float, audit: dict[str, str]) -> FilterLogEntry:
    return FilterLogEntry(timestamp, audit["kind"], int(audit["commitment"]), audit["label"],
                          audit["pricing"], audit["events"], audit["charge"])
