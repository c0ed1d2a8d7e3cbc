"""Moved to :mod:`approxdp.accounting.composition.costs` (what an event costs and the sufficient
statistic of a history), below both the ledger and
:mod:`~approxdp.accounting.composition.comparison`, which use it; this old import path
re-exports it.
"""

from __future__ import annotations

from approxdp.accounting.composition.costs import (
    Contribution,
    LedgerState,
    add_up,
    check_cost,
    contribution,
    is_pld_only,
)

__all__ = ["Contribution", "LedgerState", "add_up", "check_cost", "contribution", "is_pld_only"]
