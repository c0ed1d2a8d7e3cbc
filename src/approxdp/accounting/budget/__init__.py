"""The budget: what events cost, the ledger that records spends, and the accountant.

- What an event costs and the sufficient statistic of a history
  (:class:`~approxdp.accounting.composition.costs.LedgerState`), the privacy of a whole history
  under a composition rule, and the filter's stored state live below the ledger, in
  :mod:`approxdp.accounting.composition` (:mod:`~approxdp.accounting.composition.costs`,
  :mod:`~approxdp.accounting.composition.rules`,
  :mod:`~approxdp.accounting.composition.filter_state`; their old paths here re-export them).
- :mod:`.ledger`: the ledger protocol, spend records and the in-memory ledger.
- :mod:`.sqlite_ledger`: the persistent SQLite ledger (its file and connection:
  :mod:`.sqlite_connection`; its content's checks, creation, upgrade and re-declaration:
  :mod:`.sqlite_setup`; a file's settings and read-only opening: :mod:`.sqlite_files`);
  :mod:`.sqlite_schema`: its schema and upgrades; :mod:`.chain`: its hash chain and spend
  receipts; :mod:`.verify`: checking a file.
- :mod:`.filter`: the privacy filter's admissions (the residue argument); :mod:`.filter_parts`:
  what each part of an event costs; :mod:`.filter_rooms`: the Gaussian-DP rooms;
  :mod:`.filter_declare`: the block declared before the first spend; :mod:`.filter_commit`:
  committing and closing plans; :mod:`.filter_charge`: charges and refusals;
  :mod:`.filter_rdp`: the Rényi share.
- :mod:`.accountant`: :class:`PrivacyAccountant`, which never lets spends exceed the budget;
  :mod:`.admission`: how it asks its filter or rule inside a ledger transaction;
  :mod:`.opening`: how it opens its ledger (in memory or a file) with its sub-budgets';
  :mod:`.status`: :class:`BudgetStatus` and how it is read; :mod:`.arguments`: its checks;
  :mod:`.sub_budgets`: its sub-budgets.
- :mod:`.protocols`: the :class:`Accountant` protocol that releases need.
"""

from __future__ import annotations

from approxdp.accounting.budget.accountant import BudgetStatus, PlanResult, PrivacyAccountant
from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.ledger import SpendRecord
from approxdp.accounting.budget.protocols import Accountant
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings, read_ledger_settings
from approxdp.accounting.budget.verify import LedgerVerification, verify_ledger
from approxdp.accounting.composition.rules import COMPOSITION_RULES

__all__ = [
    "COMPOSITION_RULES",
    "Accountant",
    "BudgetStatus",
    "LedgerSettings",
    "LedgerVerification",
    "PlanResult",
    "PrivacyAccountant",
    "Receipt",
    "SpendRecord",
    "read_ledger_settings",
    "verify_ledger",
]
