"""The discrete Gaussian mechanism q(D) + N_Z(0, σ²) for integer-valued queries (CKS20).

σ is the least value (to 1e-9 relative) whose exact discrete profile (CKS20 Thm 7, SPEC §4)
is ≤ δ at ε — not the continuous calibration — then rounded up onto the exact sampler's grid
σ² = t·c/L and re-verified. Vector queries (d coordinates, ℓ2-sensitivity over integer
difference vectors) are calibrated with the ρ-zCDP bound of CKS20 Prop. 5 / Cor. 13.
Noise is drawn exactly (:class:`~approxdp.mechanisms.exact_sampling.DiscreteGaussianSampler`)
from the OS CSPRNG; with ``rng=np.random.Generator`` the same exact sampler is fed by that
generator's bits and the output is marked as a simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from approxdp._validation import as_float_array
from approxdp.errors import InvalidParameterError, NotPrivateError
from approxdp.events import DiscreteGaussianEvent
from approxdp.mechanisms.base import check_alpha, check_delta, check_epsilon, choose_path
from approxdp.mechanisms.discrete_gaussian_calibration import (
    calibrate_discrete_gaussian,
    discrete_gaussian_satisfies,
)
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.outputs import mark_simulated
from approxdp.mechanisms.randomness import GeneratorBits, RandomBits, SecureBits
from approxdp.profiles.discrete_gaussian import discrete_gaussian_delta, discrete_gaussian_tail

__all__ = ["DiscreteGaussianMechanism"]


@lru_cache(maxsize=256)
def _sampler(
    epsilon: float, delta: float, sensitivity: float, dimension: int
) -> DiscreteGaussianSampler:
    sigma = calibrate_discrete_gaussian(epsilon, delta, sensitivity, dimension=dimension)
    sampler = DiscreteGaussianSampler.at_least(sigma)
    if not discrete_gaussian_satisfies(epsilon, delta, sampler.sigma, sensitivity, dimension):
        raise NotPrivateError(f"discrete Gaussian failed verification at sigma={sampler.sigma!r}")
    return sampler


@dataclass(frozen=True, slots=True)
class DiscreteGaussianMechanism:
    """q(D) + N_Z(0, σ²) per coordinate, (ε, δ)-DP by its exact profile (CKS20 Thm 7).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: integer Δ ≥ 1 (ℓ2-norm bound of the integer difference for vectors).

    Attributes:
        sigma: σ of the noise for a scalar query (exactly sqrt(t·c/L), see the sampler).

    >>> m = DiscreteGaussianMechanism(1.0, 1e-5, 1)
    >>> m.privacy_profile(1.0) <= 1e-5
    True
    """

    epsilon: float
    delta: float
    sensitivity: int = 1
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        sens = float(as_float_array("sensitivity", self.sensitivity))
        if not (math.isfinite(sens) and sens >= 1 and sens == math.floor(sens) and sens <= 2**30):
            raise InvalidParameterError(
                f"sensitivity must be an integer in [1, 2^30] for the discrete Gaussian, got "
                f"sensitivity={self.sensitivity!r}"
            )
        object.__setattr__(self, "sensitivity", int(sens))
        object.__setattr__(self, "sigma", self.sampler(1).sigma)

    @property
    def scale(self) -> float:
        """Same as :attr:`sigma`."""
        return self.sigma

    def sampler(self, dimension: int = 1) -> DiscreteGaussianSampler:
        """The exact sampler used for a ``dimension``-coordinate release."""
        return _sampler(self.epsilon, self.delta, float(self.sensitivity), int(dimension))

    def privacy_profile(self, epsilon: Any) -> Any:
        """δ(ε) of a scalar release (CKS20 Thm 7, SPEC §4)."""
        return discrete_gaussian_delta(epsilon, self.sigma, self.sensitivity)

    def confidence_interval(self, alpha: float) -> float:
        """Least integer h with P[|Y| > h] ≤ α for Y ~ N_Z(0, σ²) (scalar release)."""
        a = check_alpha(alpha)
        h = max(0, math.floor(self.sigma * 0.5))
        while 2.0 * discrete_gaussian_tail(h, self.sigma) > a:
            h = max(h + 1, math.ceil(h * 1.01))
        while h > 0 and 2.0 * discrete_gaussian_tail(h - 1, self.sigma) <= a:
            h -= 1
        return float(h)

    def event(self) -> DiscreteGaussianEvent:
        """The release as a :class:`~approxdp.events.DiscreteGaussianEvent`."""
        return DiscreteGaussianEvent(
            sigma=self.sigma, sensitivity=self.sensitivity, epsilon=self.epsilon, delta=self.delta
        )

    def release(self, value: Any, rng: Any = None, *, secure: bool | None = None) -> Any:
        """Release an integer ``value`` (scalar or any-shape array) with exact noise.

        Returns:
            int / int64 array (secure), or SimulatedInt / SimulatedArray for a Generator rng.

        Raises:
            InvalidParameterError: non-integer or out-of-range (|value| ≥ 2^62) entries.
        """
        path, gen = choose_path(rng, secure)
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu":
            farr = as_float_array("value", value)
            if not bool(np.all(np.isfinite(farr) & (farr == np.floor(farr)))):
                raise InvalidParameterError(
                    "value must be integer-valued for the discrete Gaussian mechanism; round "
                    "real queries with GaussianMechanism (secure lattice release) instead"
                )
            arr = farr
        if bool(np.any(np.abs(arr.astype(np.float64)) >= 2.0**62)):
            raise InvalidParameterError("value must satisfy |value| < 2^62")
        ints = arr.astype(np.int64)
        source: RandomBits = SecureBits() if gen is None else GeneratorBits(gen)
        draws = self.sampler(max(ints.size, 1)).sample(source, ints.size).reshape(ints.shape)
        out = ints + draws
        if path != "secure":
            return mark_simulated(out, out.ndim == 0)
        return int(out) if out.ndim == 0 else out
