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
from approxdp.accounting.dpsgd import (
    DPSGD_ACCOUNTANTS,
    AccountantResult,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    dpsgd_epsilon,
)
from approxdp.accounting.gaussian_composition import ComposedGaussian, compose_gaussian
from approxdp.accounting.gdp_clt import (
    gdp_clt_delta,
    gdp_clt_epsilon,
    gdp_clt_mu,
    gdp_to_delta,
    gdp_to_epsilon,
)
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.ledger import SpendRecord
from approxdp.accounting.mixed_composition import COMPOSITION_RULES
from approxdp.accounting.optimal import optimal_composition
from approxdp.accounting.pld_accounting import pld_delta, pld_epsilon
from approxdp.accounting.protocols import Accountant
from approxdp.accounting.rdp import DEFAULT_RDP_ORDERS, rdp_subsampled_gaussian
from approxdp.accounting.rdp_conversion import (
    rdp_dpsgd_delta,
    rdp_dpsgd_epsilon,
    rdp_to_delta,
    rdp_to_epsilon,
)
from approxdp.accounting.rdp_wor import rdp_sampled_without_replacement_gaussian
from approxdp.accounting.splitting import SPLIT_RULES, BudgetSplit, split_budget
from approxdp.accounting.sqlite_ledger import LedgerSettings, read_ledger_settings
from approxdp.accounting.subsampled_gaussian import (
    subsampled_gaussian_delta,
    subsampled_gaussian_epsilon,
)

__all__ = [
    "COMPOSITION_RULES",
    "DEFAULT_RDP_ORDERS",
    "DPSGD_ACCOUNTANTS",
    "SPLIT_RULES",
    "Accountant",
    "AccountantResult",
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
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "compose_gaussian",
    "dp_to_pdp",
    "dpsgd_epsilon",
    "gdp_clt_delta",
    "gdp_clt_epsilon",
    "gdp_clt_mu",
    "gdp_to_delta",
    "gdp_to_epsilon",
    "group_privacy",
    "optimal_composition",
    "pld_delta",
    "pld_epsilon",
    "rdp_dpsgd_delta",
    "rdp_dpsgd_epsilon",
    "rdp_sampled_without_replacement_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "read_ledger_settings",
    "simplified_advanced_composition",
    "split_budget",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "zcdp_to_dp",
]
