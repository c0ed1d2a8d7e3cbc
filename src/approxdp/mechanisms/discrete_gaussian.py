"""The discrete Gaussian mechanism q(D) + N_Z(0, σ²) for integer-valued queries.

σ is the least value (to 1e-9 relative) that
:func:`~approxdp.calibration.calibrate_discrete_gaussian` proves (ε, δ)-DP with the discrete
Gaussian's own profile — not the continuous calibration — then rounded up onto the exact
sampler's grid σ² = t·c/L and re-verified. A scalar release uses the exact profile
(Canonne et al. 2020, Thm 7; https://arxiv.org/abs/2004.00010); a vector release of d
coordinates (integer difference vectors of ℓ2-norm ≤ Δ) uses the smaller of the smoothing bound
(within about b²/(2σ²) of the continuous Gaussian's exact profile) and the ρ-zCDP bound
(Canonne et al. 2020, Prop. 5 / Cor. 13).
Noise is drawn exactly (:class:`~approxdp.mechanisms.exact_sampling.DiscreteGaussianSampler`)
from the OS CSPRNG; with ``rng=np.random.Generator`` the same exact sampler is fed by that
generator's bits and the output is marked as a simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from approxdp._validation import as_float_array, check_parameter
from approxdp.calibration.discrete_gaussian import (
    calibrate_discrete_gaussian,
    discrete_gaussian_satisfies,
)
from approxdp.errors import InvalidParameterError, NotPrivateError
from approxdp.events import DiscreteGaussianEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_delta,
    check_dimension,
    check_epsilon,
    choose_path,
)
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.outputs import mark_simulated
from approxdp.mechanisms.randomness import GeneratorBits, RandomBits, SecureBits
from approxdp.profiles.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_tail,
    discrete_gaussian_vector_log_delta,
)

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


def _check_sensitivity(sensitivity: Any) -> float:
    sens = float(as_float_array("sensitivity", sensitivity))
    if not (math.isfinite(sens) and 1.0 <= sens <= 2.0**30):
        raise InvalidParameterError(
            f"sensitivity must be in [1, 2^30] for the discrete Gaussian (the ℓ2-norm bound of "
            f"the integer difference between neighbouring answers), got "
            f"sensitivity={sensitivity!r}"
        )
    return sens


@dataclass(frozen=True, slots=True)
class DiscreteGaussianMechanism:
    """q(D) + N_Z(0, σ²) per coordinate for integer-valued queries, (ε, δ)-DP (Canonne et al. 2020).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: Δ ≥ 1, the ℓ2-norm bound of the integer difference vector between
            neighbouring answers (e.g. √k for k counting queries). A scalar query's answers
            then differ by at most ⌊Δ⌋.

    Attributes:
        sigma: σ of the noise of a scalar release (exactly sqrt(t·c/L), see the sampler);
            a release of d coordinates uses ``sampler(d).sigma``.

    >>> m = DiscreteGaussianMechanism(1.0, 1e-5, 1)
    >>> m.privacy_profile(1.0) <= 1e-5
    True
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "sensitivity", _check_sensitivity(self.sensitivity))
        object.__setattr__(self, "sigma", self.sampler(1).sigma)

    @property
    def scale(self) -> float:
        """Same as :attr:`sigma`."""
        return self.sigma

    def sampler(self, dimension: int = 1) -> DiscreteGaussianSampler:
        """The exact sampler used for a ``dimension``-coordinate release."""
        d = check_dimension(dimension)
        return _sampler(self.epsilon, self.delta, self.sensitivity, d)

    def privacy_profile(self, epsilon: npt.ArrayLike, *, dimension: int = 1) -> Any:
        """δ(ε) of a release of ``dimension`` coordinates: exact for a scalar (Canonne et al.
        2020, Thm 7 at ⌊Δ⌋); for vectors the proven upper bound the calibration uses (smaller of
        the smoothing and zCDP bounds).

        >>> m = DiscreteGaussianMechanism(1.0, 1e-5, 2.0)
        >>> bool(m.privacy_profile(1.0, dimension=4) <= 1e-5)
        True
        """
        d = check_dimension(dimension)
        if d == 1:
            return discrete_gaussian_delta(epsilon, self.sigma, self.sensitivity)
        eps = check_parameter("epsilon", epsilon)
        sigma = self.sampler(d).sigma
        flat = [
            math.exp(discrete_gaussian_vector_log_delta(float(e), sigma, self.sensitivity, d))
            for e in eps.ravel()
        ]
        out = np.array(flat).reshape(eps.shape)
        return float(out) if out.ndim == 0 else out

    def confidence_interval(self, alpha: float, *, dimension: int = 1) -> float:
        """Least integer h with P[|Y| > h] ≤ α for the noise Y ~ N_Z(0, σ²) of one coordinate
        of a ``dimension``-coordinate release (exact tail sums)."""
        a = check_alpha(alpha)
        sigma = self.sampler(dimension).sigma
        h = max(0, math.floor(sigma * 0.5))
        while 2.0 * discrete_gaussian_tail(h, sigma) > a:
            h = max(h + 1, math.ceil(h * 1.01))
        while h > 0 and 2.0 * discrete_gaussian_tail(h - 1, sigma) <= a:
            h -= 1
        return float(h)

    def event(self) -> DiscreteGaussianEvent:
        """The release as a :class:`~approxdp.events.DiscreteGaussianEvent`: its (ε, δ)
        guarantee, which holds for a release of any dimension."""
        return DiscreteGaussianEvent(
            sigma=self.sigma, sensitivity=self.sensitivity, epsilon=self.epsilon, delta=self.delta
        )

    @overload
    def release(
        self, value: float, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> int: ...
    @overload
    def release(
        self, value: npt.ArrayLike, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> npt.NDArray[np.int64]: ...

    def release(
        self, value: npt.ArrayLike, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> Any:
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
            bad = ~(np.isfinite(farr) & (farr == np.floor(farr)))
            if bool(np.any(bad)):
                raise InvalidParameterError(
                    f"value must be integer-valued for the discrete Gaussian mechanism, got "
                    f"value={float(farr[bad].flat[0])!r}; round real queries with "
                    "GaussianMechanism (secure lattice release) instead"
                )
            arr = farr
        big = np.abs(arr.astype(np.float64)) >= 2.0**62
        if bool(np.any(big)):
            raise InvalidParameterError(
                f"value must satisfy |value| < 2^62, got value={arr[big].flat[0]!r}"
            )
        ints = arr.astype(np.int64)
        source: RandomBits = SecureBits() if gen is None else GeneratorBits(gen)
        draws = self.sampler(max(ints.size, 1)).sample(source, ints.size).reshape(ints.shape)
        out = ints + draws
        if path != "secure":
            return mark_simulated(out, out.ndim == 0)
        return int(out) if out.ndim == 0 else out
