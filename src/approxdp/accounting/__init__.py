"""Privacy accounting: composition, amplification, conversions, budget splitting, the ledger.

Every function returns a labelled :class:`Guarantee` (``exact``, ``upper bound`` or
``approximation``); the :class:`PrivacyAccountant` consumes :mod:`approxdp.events`.

The package is organised by concept, each a subpackage (imports run downwards only):

- :mod:`approxdp.accounting.composition`: closed-form composition rules (basic, advanced,
  optimal, exact Gaussian), conversions and amplification, budget splitting;
- :mod:`approxdp.accounting.pld`: certified privacy-loss-distribution accounting;
- :mod:`approxdp.accounting.rdp`: Rényi-DP accounting and RDP ⇒ (ε, δ);
- :mod:`approxdp.accounting.dpsgd`: DP-SGD accountants and calibration;
- :mod:`approxdp.accounting.budget`: event costs, the ledgers and the
  :class:`PrivacyAccountant`.

Every public name is importable from here.
"""

from __future__ import annotations

from approxdp.accounting.budget.accountant import BudgetStatus, PlanResult, PrivacyAccountant
from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.ledger import SpendRecord
from approxdp.accounting.budget.protocols import Accountant
from approxdp.accounting.budget.rules import COMPOSITION_RULES
from approxdp.accounting.budget.sqlite_ledger import LedgerSettings, read_ledger_settings
from approxdp.accounting.budget.verify import LedgerVerification, verify_ledger
from approxdp.accounting.composition.closed_form import (
    advanced_composition,
    basic_composition,
    simplified_advanced_composition,
)
from approxdp.accounting.composition.conversions import (
    amplify_by_subsampling,
    dp_to_pdp,
    group_privacy,
    zcdp_to_dp,
)
from approxdp.accounting.composition.gaussian import ComposedGaussian, compose_gaussian
from approxdp.accounting.composition.optimal import optimal_composition
from approxdp.accounting.composition.splitting import SPLIT_RULES, BudgetSplit, split_budget
from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    AccountantResult,
    DPSGDPhase,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    dpsgd_delta,
    dpsgd_epsilon,
    dpsgd_schedule_delta,
    dpsgd_schedule_epsilon,
)
from approxdp.accounting.dpsgd.gdp_clt import (
    gdp_clt_delta,
    gdp_clt_epsilon,
    gdp_clt_mu,
    gdp_to_delta,
    gdp_to_epsilon,
)
from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.pld.subsampled_gaussian import (
    subsampled_gaussian_delta,
    subsampled_gaussian_epsilon,
)
from approxdp.accounting.rdp.conversion import (
    rdp_dpsgd_delta,
    rdp_dpsgd_epsilon,
    rdp_schedule_delta,
    rdp_schedule_epsilon,
    rdp_to_delta,
    rdp_to_epsilon,
)
from approxdp.accounting.rdp.subsampled_gaussian import DEFAULT_RDP_ORDERS, rdp_subsampled_gaussian
from approxdp.accounting.rdp.without_replacement import rdp_sampled_without_replacement_gaussian

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
    "DPSGDPhase",
    "Guarantee",
    "LedgerSettings",
    "LedgerVerification",
    "PlanResult",
    "PrivacyAccountant",
    "Receipt",
    "SpendRecord",
    "TrainingAccountant",
    "advanced_composition",
    "amplify_by_subsampling",
    "basic_composition",
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "compose_gaussian",
    "dp_to_pdp",
    "dpsgd_delta",
    "dpsgd_epsilon",
    "dpsgd_schedule_delta",
    "dpsgd_schedule_epsilon",
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
    "rdp_schedule_delta",
    "rdp_schedule_epsilon",
    "rdp_subsampled_gaussian",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "read_ledger_settings",
    "simplified_advanced_composition",
    "split_budget",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
    "verify_ledger",
    "zcdp_to_dp",
]
