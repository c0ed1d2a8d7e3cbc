"""Privacy accounting: composition, amplification, conversions, budget splitting, the ledger.

Every function returns a labelled :class:`Guarantee` (``exact``, ``upper bound`` or
``approximation``); the :class:`PrivacyAccountant` consumes :mod:`approxdp.events`.
"""

from __future__ import annotations

from approxdp.accounting.accountant import BudgetStatus, PlanResult, PrivacyAccountant
from approxdp.accounting.composition import (
    advanced_composition,
    basic_composition,
    simplified_advanced_composition,
)
from approxdp.accounting.conversions import (
    amplify_by_subsampling,
    dp_to_pdp,
    group_privacy,
    zcdp_to_dp,
)
from approxdp.accounting.gaussian_composition import ComposedGaussian, compose_gaussian
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.ledger import SpendRecord
from approxdp.accounting.mixed_composition import COMPOSITION_RULES
from approxdp.accounting.optimal import optimal_composition
from approxdp.accounting.protocols import Accountant
from approxdp.accounting.splitting import SPLIT_RULES, BudgetSplit, split_budget
from approxdp.accounting.sqlite_ledger import LedgerSettings, read_ledger_settings

__all__ = [
    "COMPOSITION_RULES",
    "SPLIT_RULES",
    "Accountant",
    "BudgetSplit",
    "BudgetStatus",
    "ComposedGaussian",
    "Guarantee",
    "LedgerSettings",
    "PlanResult",
    "PrivacyAccountant",
    "SpendRecord",
    "advanced_composition",
    "amplify_by_subsampling",
    "basic_composition",
    "compose_gaussian",
    "dp_to_pdp",
    "group_privacy",
    "optimal_composition",
    "read_ledger_settings",
    "simplified_advanced_composition",
    "split_budget",
    "zcdp_to_dp",
]
