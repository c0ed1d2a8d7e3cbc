"""Privacy profiles δ(ε) and their inverses, one module per family of mechanisms.

- :mod:`.gaussian` — the Gaussian mechanism's exact profile (Zhao et al. 2019, Thm 2; pDP:
  Thm 6) and its inverse, in log space;
- :mod:`.laplace` — the Laplace, truncated Laplace and their discrete versions' profiles;
- :mod:`.discrete_gaussian` — the discrete Gaussian's profile (Canonne et al. 2020) and zCDP.
"""

from approxdp.profiles.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_log_delta,
    zcdp_delta,
)
from approxdp.profiles.gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_log_pdp_delta,
    gaussian_pdp_delta,
)
from approxdp.profiles.laplace import (
    discrete_laplace_delta,
    laplace_delta,
    truncated_laplace_delta,
    truncated_laplace_tau,
)

__all__ = [
    "discrete_gaussian_delta",
    "discrete_gaussian_log_delta",
    "discrete_laplace_delta",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_log_pdp_delta",
    "gaussian_pdp_delta",
    "laplace_delta",
    "truncated_laplace_delta",
    "truncated_laplace_tau",
    "zcdp_delta",
]
