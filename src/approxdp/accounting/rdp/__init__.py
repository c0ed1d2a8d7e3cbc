"""Rényi-DP accounting of the subsampled Gaussian mechanism, and RDP ⇒ (ε, δ).

- :mod:`.subsampled_gaussian`: the RDP curve of Poisson subsampling (Mironov, Talwar, Zhang 2019).
- :mod:`.without_replacement`: sampling without replacement (Wang, Balle, Kasiviswanathan 2019).
- :mod:`.conversion`: RDP ⇒ (ε, δ) (Balle et al. 2020) and the RDP accountant for DP-SGD.
"""

from __future__ import annotations

from approxdp.accounting.rdp.conversion import (
    rdp_dpsgd_delta,
    rdp_dpsgd_epsilon,
    rdp_schedule_delta,
    rdp_schedule_epsilon,
    rdp_to_delta,
    rdp_to_epsilon,
)
from approxdp.accounting.rdp.subsampled_gaussian import (
    DEFAULT_RDP_ORDERS,
    rdp_subsampled_gaussian,
)
from approxdp.accounting.rdp.without_replacement import (
    rdp_sampled_without_replacement_gaussian,
)

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "rdp_dpsgd_delta",
    "rdp_dpsgd_epsilon",
    "rdp_sampled_without_replacement_gaussian",
    "rdp_schedule_delta",
    "rdp_schedule_epsilon",
    "rdp_subsampled_gaussian",
    "rdp_to_delta",
    "rdp_to_epsilon",
]
