"""The Gaussian mechanism A(D) = f(D) + N(0, σ² I) (SPEC §2), with a secure default release.

σ comes from :func:`approxdp.calibration.calibrate_gaussian` (default ``method="optimal"``,
the least σ with the exact profile δ_DP(ε; σ, Δ) ≤ δ of lecture-wang Thm 5.18 / BW18 Thm 8).

The default release does not add floating-point Gaussian noise (whose low bits leak the query:
Mironov 2012, Jin et al. 2022). It rounds the query to the lattice gZ and adds exact discrete
Gaussian noise N_Z(0, σ_L²) per coordinate (CKS20). g is the largest power of two with
σ/g ≥ 2^12 and Δ/g ≥ 2^10·√d (rounding inflates the sensitivity by at most 2^-10 relative).
σ_L is at least σ·Δ_L/(Δ/g) — the continuous noise multiplier, for the rounded sensitivity
Δ_L of :class:`~approxdp.mechanisms.lattice.Lattice` — and large enough that the discrete
mechanism is itself (ε, δ)-DP (exact profile of CKS20 Thm 7 for one coordinate, the ρ-zCDP
bound of CKS20 Prop. 5/Cor. 13 for more). Because σ_L/Δ_L ≥ σ/Δ, the secure release's Rényi
divergences never exceed those of :meth:`GaussianMechanism.event` (CKS20 Prop. 5).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

from scipy import special

from approxdp.errors import NotPrivateError, ParameterTypeError
from approxdp.events import GaussianEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_delta,
    check_epsilon,
    check_sensitivity,
    choose_path,
    prepare_value,
)
from approxdp.mechanisms.discrete_gaussian_calibration import (
    calibrate_discrete_gaussian,
    discrete_gaussian_satisfies,
)
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.lattice import Lattice, power_of_two_at_most
from approxdp.mechanisms.outputs import mark_simulated
from approxdp.mechanisms.randomness import SecureBits

__all__ = ["GaussianMechanism", "SecureGaussianNoise", "secure_gaussian_noise"]

LATTICE_BITS = 12  # σ/g ≥ 2^12
SENSITIVITY_BITS = 10  # Δ/g ≥ 2^10·√d: rounding inflates Δ by at most 2^-10 relative


@dataclass(frozen=True, slots=True)
class SecureGaussianNoise:
    """Parameters of the secure lattice release for ``dimension`` coordinates."""

    lattice: Lattice
    sensitivity: float  # Δ_L in lattice units
    sampler: DiscreteGaussianSampler
    dimension: int

    @property
    def sigma(self) -> float:
        """Standard deviation parameter of the noise in the query's units (σ_L·g)."""
        return self.sampler.sigma * self.lattice.g


@lru_cache(maxsize=256)
def secure_gaussian_noise(
    epsilon: float, delta: float, sensitivity: float, sigma: float, dimension: int
) -> SecureGaussianNoise:
    """Lattice, rounded sensitivity and exact sampler for the secure Gaussian release."""
    g = power_of_two_at_most(
        min(
            sigma / 2.0**LATTICE_BITS,
            sensitivity / (2.0**SENSITIVITY_BITS * math.sqrt(dimension)),
        )
    )
    lattice = Lattice(g)
    sens_l = lattice.sensitivity_l2(sensitivity, dimension)
    matched = sigma / g * sens_l / (sensitivity / g)
    sigma_l = calibrate_discrete_gaussian(
        epsilon, delta, sens_l, dimension=dimension, at_least=matched
    )
    sampler = DiscreteGaussianSampler.at_least(sigma_l)
    if not discrete_gaussian_satisfies(epsilon, delta, sampler.sigma, sens_l, dimension):
        raise NotPrivateError(
            f"secure Gaussian noise failed verification at sigma={sampler.sigma!r}"
        )
    return SecureGaussianNoise(lattice, sens_l, sampler, dimension)


def _calibrate_gaussian() -> Callable[..., Any]:
    module = importlib.import_module("approxdp.calibration")
    return cast(Callable[..., Any], module.calibrate_gaussian)


@dataclass(frozen=True, slots=True)
class GaussianMechanism:
    """f(D) + N(0, σ² I) with σ calibrated for (ε, δ)-DP at ℓ2-sensitivity Δ (SPEC §2).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: ℓ2-sensitivity Δ > 0 of the query (scalar or vector).
        method: a calibration method name of ``approxdp.calibration.CALIBRATION_METHODS``.

    Attributes:
        sigma: the calibrated σ (``scale`` is the same number).
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    method: str = "optimal"
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        if not isinstance(self.method, str):
            raise ParameterTypeError(f"method must be a string, got {self.method!r}")
        sigma = _calibrate_gaussian()(self.epsilon, self.delta, self.sensitivity, self.method)
        object.__setattr__(self, "sigma", float(sigma))

    @property
    def scale(self) -> float:
        """The noise standard deviation σ."""
        return self.sigma

    def privacy_profile(self, epsilon: Any) -> Any:
        """Exact δ(ε) of this mechanism's continuous noise (lecture-wang Thm 5.18)."""
        gaussian = importlib.import_module("approxdp.profiles.gaussian")
        return gaussian.gaussian_delta(epsilon, self.sigma, self.sensitivity)

    def confidence_interval(self, alpha: float) -> float:
        """Half-width h with P[|N(0, σ²)| > h] = α: h = σ Φ⁻¹(1 − α/2) (per coordinate)."""
        a = check_alpha(alpha)
        return float(self.sigma * special.ndtri(1.0 - a / 2.0))

    def event(self) -> GaussianEvent:
        """The release as a :class:`~approxdp.events.GaussianEvent` (σ, Δ)."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity)

    def secure_noise(self, dimension: int = 1) -> SecureGaussianNoise:
        """The lattice parameters the secure release uses for ``dimension`` coordinates."""
        return secure_gaussian_noise(
            self.epsilon, self.delta, self.sensitivity, self.sigma, int(dimension)
        )

    def release(self, value: Any, rng: Any = None, *, secure: bool | None = None) -> Any:
        """Release ``value`` (scalar or array of any shape) with calibrated noise.

        Args:
            value: the true answer; an array is one vector query with ℓ2-sensitivity Δ.
            rng: None (default) for the secure release from the OS CSPRNG; a
                ``numpy.random.Generator`` for a reproducible float simulation.
            secure: ``False`` asks for the fast float path without a seed.

        Returns:
            A float or float64 array (secure), or a SimulatedFloat/SimulatedArray.
        """
        path, gen = choose_path(rng, secure)
        arr, scalar = prepare_value(value)
        if path != "secure" and gen is not None:
            noisy = arr + gen.normal(0.0, self.sigma, size=arr.shape)
            return mark_simulated(noisy, scalar)
        noise = self.secure_noise(max(arr.size, 1))
        index = noise.lattice.to_integers(arr)
        draws = noise.sampler.sample(SecureBits(), index.size).reshape(index.shape)
        out = noise.lattice.to_reals(index + draws)
        return float(out) if scalar else out
