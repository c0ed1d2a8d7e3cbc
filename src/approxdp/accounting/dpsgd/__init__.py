"""Accounting for DP-SGD: the ε of a training run and the noise multiplier for a target ε.

- :mod:`.accountants`: :func:`dpsgd_epsilon`, :func:`dpsgd_delta` (arrays of targets too), the
  same for schedules of phases (:func:`dpsgd_schedule_epsilon`, :func:`dpsgd_schedule_delta`),
  :func:`calibrate_dpsgd` and the comparison of accountants (PLD, RDP, GDP-CLT,
  amplify+compose).
- :mod:`.phases`: :class:`DPSGDPhase` (σ, q, T) and the validation of DP-SGD's parameters.
- :mod:`.bounds`: each accountant's ε at δ and δ at ε for one target.
- :mod:`.gdp_clt`: the Gaussian-DP central-limit approximation (labelled, never certified).
- :mod:`.training`: :class:`TrainingAccountant`, the accountant of a training loop (O(1) per
  step, phases of equal (σ, q), (ε, δ) on demand, checkpoints).
"""

from __future__ import annotations

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

__all__ = [
    "DPSGD_ACCOUNTANTS",
    "AccountantResult",
    "DPSGDPhase",
    "TrainingAccountant",
    "calibrate_dpsgd",
    "compare_dpsgd_accountants",
    "dpsgd_delta",
    "dpsgd_epsilon",
    "dpsgd_schedule_delta",
    "dpsgd_schedule_epsilon",
    "gdp_clt_delta",
    "gdp_clt_epsilon",
    "gdp_clt_mu",
    "gdp_to_delta",
    "gdp_to_epsilon",
]
