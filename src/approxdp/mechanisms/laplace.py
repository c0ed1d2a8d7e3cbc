"""The Laplace mechanism f(D) + Lap(Δ₁/ε) per coordinate: ε-DP for ℓ1-sensitivity Δ₁.

See https://doi.org/10.1561/0400000042 (Dwork & Roth 2014), Thm 3.6.

Secure default release: the query is rounded to the lattice gZ (g a power of two with
Δ₁/g in [2^12·d, 2^13·d) for d coordinates), so the rounded query has integer ℓ1-sensitivity
Δ_L = ⌊Δ₁/g⌋ + d; exact discrete Laplace noise P[k] ∝ e^(−r|k|) with a rational rate
r = s/t ≤ ε/Δ_L (Canonne et al. 2020, Alg. 2) makes it (rΔ_L)-DP with rΔ_L ≤ ε — the geometric
mechanism (Ghosh et al. 2009) — and the float result is post-processing.

The noise actually added by the secure release is g·(K + e), K the discrete Laplace draw and
|e| ≤ 1/2 the rounding of the query; :meth:`LaplaceMechanism.confidence_interval` and
:meth:`LaplaceMechanism.privacy_profile` describe it (the profile is the larger of the
continuous and the discrete one, so it holds for every release path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.errors import ParameterTypeError
from approxdp.events import LaplaceEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_dimension,
    check_epsilon,
    check_sensitivity,
)
from approxdp.mechanisms.exact_sampling import DiscreteLaplaceSampler
from approxdp.mechanisms.lattice import Lattice, LatticeMechanism, power_of_two_at_most
from approxdp.mechanisms.randomness import SecureBits
from approxdp.profiles.laplace import discrete_laplace_delta, laplace_delta

__all__ = ["LaplaceMechanism", "SecureLaplaceNoise", "secure_laplace_noise"]

LATTICE_BITS = 12


@dataclass(frozen=True, slots=True)
class SecureLaplaceNoise:
    """Lattice, integer ℓ1-sensitivity and exact sampler of the secure Laplace release."""

    lattice: Lattice
    sensitivity: int
    sampler: DiscreteLaplaceSampler

    def draw(self, n: int) -> npt.NDArray[np.int64]:
        """``n`` exact discrete Laplace draws from the OS CSPRNG (lattice units)."""
        return np.asarray(self.sampler.sample(SecureBits(), n), dtype=np.int64)

    @property
    def epsilon(self) -> float:
        """The exact pure-DP level rate·Δ_L (≤ the mechanism's ε)."""
        return float(self.sampler.rate * self.sensitivity)

    def half_width(self, alpha: float) -> float:
        """Least h = g·(k + 1/2) with P[|K| > k] = 2w^(k+1)/(1 + w) ≤ α, w = e^(−rate): then
        P[|noise + rounding| > h] ≤ α per coordinate (the rounding moves by ≤ g/2)."""
        a = check_alpha(alpha)
        r = float(self.sampler.rate)
        log_w1 = math.log1p(math.exp(-r))

        def miss(k: int) -> float:
            return math.log(2.0) - r * (k + 1) - log_w1

        k = max(0, math.ceil((math.log(2.0 / a) - log_w1) / r) - 1)
        while k > 0 and miss(k - 1) <= math.log(a):
            k -= 1
        while miss(k) > math.log(a):
            k += 1
        return (k + 0.5) * self.lattice.g


def discrete_laplace_sampler(rate: Fraction) -> DiscreteLaplaceSampler:
    """The exact sampler with rate s/t ≤ ``rate``, s ≥ 2^20 (relative rounding ≤ 2^-20)."""
    bits = min(52, 21 + max(0, -math.floor(math.log2(rate))))
    return DiscreteLaplaceSampler.with_rate_at_most(rate, denominator_bits=bits)


@lru_cache(maxsize=256)
def secure_laplace_noise(epsilon: float, sensitivity: float, dimension: int) -> SecureLaplaceNoise:
    """Parameters of the secure Laplace release of ``dimension`` coordinates."""
    lattice = Lattice(power_of_two_at_most(sensitivity / dimension) / 2.0**LATTICE_BITS)
    sens_l = lattice.sensitivity_l1(sensitivity, dimension)
    sampler = discrete_laplace_sampler(Fraction(epsilon) / sens_l)
    return SecureLaplaceNoise(lattice, sens_l, sampler)


@dataclass(frozen=True, slots=True)
class LaplaceMechanism(LatticeMechanism):
    """f(D) + Lap(b) per coordinate with b = Δ₁/ε: ε-DP (Dwork & Roth 2014, Thm 3.6).

    Args:
        epsilon: ε > 0.
        sensitivity: ℓ1-sensitivity Δ₁ > 0.

    Attributes:
        scale: b = Δ₁/ε.
    """

    epsilon: float
    sensitivity: float = 1.0
    scale: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        object.__setattr__(self, "scale", self.sensitivity / self.epsilon)

    def privacy_profile(self, epsilon: npt.ArrayLike) -> Any:
        """δ(ε) of a scalar release on every path: the larger of the continuous Laplace profile
        max(0, 1 − e^((ε − ε₀)/2)), ε₀ = Δ/b, and the exact profile of the secure discrete
        Laplace for the lattice shift Δ_L (profiles.laplace). 0 for ε ≥ the mechanism's ε."""
        noise = self.secure_noise(1)
        continuous = laplace_delta(epsilon, self.scale, self.sensitivity)
        discrete = discrete_laplace_delta(epsilon, float(noise.sampler.rate), noise.sensitivity)
        out = np.maximum(continuous, discrete)
        return float(out) if out.ndim == 0 else out

    def confidence_interval(
        self, alpha: float, *, dimension: int = 1, secure: bool = True
    ) -> float:
        """Half-width h of the noise of one coordinate: P[|noise| > h] ≤ α.

        Args:
            alpha: miss probability in (0, 1).
            dimension: number of coordinates of the release (the lattice depends on it).
            secure: True (default) for the secure release (discrete Laplace on the lattice plus
                the rounding, :meth:`SecureLaplaceNoise.half_width`); False for the float path,
                h = b ln(1/α) exactly.
        """
        a = check_alpha(alpha)
        if not isinstance(secure, bool):
            raise ParameterTypeError(f"secure must be True or False, got secure={secure!r}")
        if secure:
            return self.secure_noise(dimension).half_width(a)
        return float(self.scale * -math.log(a))

    def event(self) -> LaplaceEvent:
        """The release as a :class:`~approxdp.events.LaplaceEvent` (b, Δ)."""
        return LaplaceEvent(scale=self.scale, sensitivity=self.sensitivity)

    def secure_noise(self, dimension: int = 1) -> SecureLaplaceNoise:
        """Parameters of the secure release of ``dimension`` coordinates."""
        return secure_laplace_noise(self.epsilon, self.sensitivity, check_dimension(dimension))

    def _simulated_noise(
        self, generator: np.random.Generator, shape: tuple[int, ...]
    ) -> npt.NDArray[np.float64]:
        return generator.laplace(0.0, self.scale, size=shape)
