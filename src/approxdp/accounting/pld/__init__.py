"""Certified privacy-loss-distribution (PLD) accounting.

- :mod:`.privacy_loss`: the loss distributions of single mechanisms (as CDFs).
- :mod:`.subsampled_gaussian`: the exact one-step profile of the Poisson-subsampled Gaussian.
- :mod:`.grid`: one mechanism's loss distribution discretized pessimistically or optimistically.
- :mod:`.compose`: composition in the Fourier domain, with every error term bounded.
- :mod:`.composed`: the composed distribution on its window, and the bounds read off it.
- :mod:`.event_losses`: privacy events as pairs of loss distributions.
- :mod:`.plan`: a history as per-direction (loss, count) pairs; input checks.
- :mod:`.refine`: the grid step, guessed from the history and refined.
- :mod:`.accounting`: events → certified (ε, δ): :func:`pld_epsilon`, :func:`pld_delta`.
"""

from __future__ import annotations

from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.pld.subsampled_gaussian import (
    subsampled_gaussian_delta,
    subsampled_gaussian_epsilon,
)

__all__ = [
    "pld_delta",
    "pld_epsilon",
    "subsampled_gaussian_delta",
    "subsampled_gaussian_epsilon",
]
