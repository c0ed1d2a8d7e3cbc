"""Moved to :mod:`approxdp.accounting.composition.filter_state` (the privacy filter's stored
state), next to :mod:`~approxdp.accounting.composition.costs`, whose ``LedgerState`` names it;
this old import path re-exports it.
"""

from __future__ import annotations

from approxdp.accounting.composition.filter_state import (
    FILTERS,
    ZERO,
    Commitment,
    FilterKind,
    FilterState,
    Pricing,
    RdpShare,
)

__all__ = ["FILTERS", "ZERO", "Commitment", "FilterKind", "FilterState", "Pricing", "RdpShare"]
