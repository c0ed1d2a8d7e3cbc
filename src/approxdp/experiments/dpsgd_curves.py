"""ε of a DP-SGD run as it trains: every accountant over a grid of steps (data for the plot)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.accounting.dpsgd.accountants import DPSGD_ACCOUNTANTS, dpsgd_epsilon

__all__ = ["DPSGDCurves", "dpsgd_curves"]


@dataclass(frozen=True, slots=True)
class DPSGDCurves:
    """ε(T) for each accountant at one (σ, q, δ).

    Attributes:
        steps: the step counts, increasing.
        epsilons: accountant name → ε at each step count.
        kinds: accountant name → "exact", "upper bound" or "approximation" (at the last T).
        noise_multiplier, sample_rate, delta, sampling: the setting.
    """

    steps: npt.NDArray[np.int64]
    epsilons: dict[str, npt.NDArray[np.float64]]
    kinds: dict[str, str]
    noise_multiplier: float
    sample_rate: float
    delta: float
    sampling: str


def dpsgd_curves(
    *,
    noise_multiplier: float = 1.1,
    sample_rate: float = 256 / 60000,
    max_steps: int = 14063,
    delta: float = 1e-5,
    points: int = 24,
    sampling: str = "poisson",
    accountants: tuple[str, ...] = DPSGD_ACCOUNTANTS,
) -> DPSGDCurves:
    """ε at ``points`` step counts, log-spaced from 1 to ``max_steps``, for each accountant."""
    steps = np.unique(np.geomspace(1, max_steps, points).round().astype(np.int64))
    eps: dict[str, npt.NDArray[np.float64]] = {}
    kinds: dict[str, str] = {}
    for name in accountants:
        values = []
        for t in steps:
            g = dpsgd_epsilon(
                noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=int(t),
                delta=delta, sampling=sampling, accountant=name,
            )
            values.append(float(g.epsilon))
            kinds[name] = g.kind
        eps[name] = np.asarray(values)
    return DPSGDCurves(steps, eps, kinds, noise_multiplier, sample_rate, delta, sampling)
