"""What a release needs of an accountant: the :class:`Accountant` protocol.

:class:`~approxdp.accounting.budget.accountant.PrivacyAccountant` implements it; releases
(:mod:`approxdp.releases`) accept any object that does, e.g. an accountant composing by
another rule, sharing one budget across tables.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from approxdp.accounting.budget.accountant import BudgetStatus
from approxdp.accounting.budget.ledger import SpendRecord
from approxdp.events import PrivacyEvent

__all__ = ["Accountant"]


@runtime_checkable
class Accountant(Protocol):
    """Charges privacy events against a budget, all or nothing."""

    def spend(self, event: PrivacyEvent, *, seeded: bool = False) -> SpendRecord:
        """Debit ``event`` BEFORE the noise is drawn; raise
        :class:`~approxdp.errors.BudgetExceededError` (recording nothing) if it does not fit.
        ``seeded`` marks the spend of a seeded simulation (NOT private) in the record."""
        ...

    def remaining(self) -> BudgetStatus:
        """The budget's current status (no side effects)."""
        ...
