"""Composition rules and conversions for (ε, δ)-DP steps, and their inverse (budget splitting).

- :mod:`.closed_form`: basic and advanced composition (Dwork & Roth 2014, Thms 3.16, 3.20).
- :mod:`.optimal`: the optimal composition of k (ε, δ) steps (Kairouz, Oh, Viswanath 2017).
- :mod:`.gaussian`: the exact composition of Gaussian releases (Zhao et al. 2019, Lemma 15).
- :mod:`.conversions`: amplification by subsampling, group privacy, zCDP and pDP conversions.
- :mod:`.splitting`: the per-step budget that composes to a total.
- :mod:`.costs`: what an event costs, and the sufficient statistic of a history;
  :mod:`.rules`: the privacy of a whole history under a rule (the accountant's ``auto``, ``pld``,
  ``optimal``, ``advanced``, ``basic``); :mod:`.filter_state`: a privacy filter's stored state
  (its rules: :mod:`approxdp.accounting.budget.filter`).
- :mod:`.comparison`: the rules side by side for a list of steps (``approxdp compose``).
"""

from __future__ import annotations

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

__all__ = [
    "SPLIT_RULES",
    "BudgetSplit",
    "ComposedGaussian",
    "advanced_composition",
    "amplify_by_subsampling",
    "basic_composition",
    "compose_gaussian",
    "dp_to_pdp",
    "group_privacy",
    "optimal_composition",
    "simplified_advanced_composition",
    "split_budget",
    "zcdp_to_dp",
]
