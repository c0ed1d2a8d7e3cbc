"""Privacy profiles δ(ε) and their inverses, one module per family of mechanisms."""

from approxdp.profiles.gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_log_pdp_delta,
    gaussian_pdp_delta,
)

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_log_pdp_delta",
    "gaussian_pdp_delta",
]
