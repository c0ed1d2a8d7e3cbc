"""Accounting for DP-SGD: the ε of a training run and the noise multiplier for a target ε.

- :mod:`.accountants`: :func:`dpsgd_epsilon`, :func:`calibrate_dpsgd` and the comparison of
  accountants (PLD, RDP, GDP-CLT, amplify+compose).
- :mod:`.gdp_clt`: the Gaussian-DP central-limit approximation (labelled, never certified).
- :mod:`.training`: :class:`TrainingAccountant`, the accountant of a training loop (O(1) per
  step, phases of equal (σ, q), (ε, δ) on demand, checkpoints).
"""

from __future__ import annotations

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    AccountantResult,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    dpsgd_epsilon,
)
from approxdp.accounting.dpsgd.gdp_clt import (
    gdp_clt_delta,
    gdp_clt_epsilon,
    gdp_clt_mu,
    gdp_to_delta,
    gdp_to_epsilon,
)
from approxdp.accounting.dpsgd.phases import Phase
from approxdp.accounting.dpsgd.training import TrainingAccountant

__all__ = [
    "DPSGD_ACCOUNTANTS",
    "AccountantResult",
    "Phase",
    "TrainingAccountant",
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "dpsgd_epsilon",
    "gdp_clt_delta",
    "gdp_clt_epsilon",
    "gdp_clt_mu",
    "gdp_to_delta",
    "gdp_to_epsilon",
]
