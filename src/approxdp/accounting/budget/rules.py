"""Moved to :mod:`approxdp.accounting.composition.rules` (the privacy of a whole history under a
composition rule), below both the ledger and :mod:`~approxdp.accounting.composition.comparison`,
which use it; this old import path re-exports it.
"""

from __future__ import annotations

from approxdp.accounting.composition.rules import (
    AUTO_PLD_MAX_EVENTS,
    CLOSED_FORM_RULES,
    COMPOSITION_RULES,
    CompositionRule,
    delta_at,
    epsilon_at,
)

__all__ = ["AUTO_PLD_MAX_EVENTS", "CLOSED_FORM_RULES", "COMPOSITION_RULES",
           "CompositionRule", "delta_at", "epsilon_at"]
