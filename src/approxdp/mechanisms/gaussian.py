"""The Gaussian mechanism A(D) = f(D) + N(0, σ² I), with a secure default release.

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Thm 2: its exact privacy profile.

σ comes from :func:`approxdp.calibration.calibrate_gaussian` (default ``method="optimal"``, the
least σ with the exact profile δ_DP(ε; σ, Δ) ≤ δ of D. Wang's notes, Thm 5.18 / Balle & Wang 2018
Thm 8), or from a caller that calibrated it already (:meth:`GaussianMechanism.from_sigma`: a
release plan, whose accountant records that σ).

The default release does not add floating-point Gaussian noise (whose low bits leak the query:
Mironov 2012, Jin et al. 2022). It rounds the query to the lattice gZ and adds exact discrete
Gaussian noise N_Z(0, s²) per coordinate (Canonne et al. 2020). g is the largest power of two with
σ/g ≥ 2^12 and Δ/g ≥ 2^10·√d, so rounding inflates the ℓ2-sensitivity, in lattice units, from
Δ/g to at most Δ_L = Δ/g + √d (⌊Δ/g⌋ + 1 for d = 1), a relative 2^-10 at most.

s is chosen so that the secure release is *dominated* by the continuous Gaussian mechanism
with noise multiplier σ/Δ (the tradeoff-function order of Dong et al. 2022): by the
smoothing lemma (:mod:`approxdp.profiles.discrete_gaussian_smoothing`), N_Z(0, s²)^d under
integer shifts of ℓ2-norm ≤ Δ_L is dominated by N(0, 1) vs N(μ, 1) once
μ = Δ/σ exceeds Δ_L/√(s² − b²) by a margin that absorbs a factor e^(±ζ), ζ ≲ 1e-20. We take
√(s² − b²) = (σ/Δ)·Δ_L·(1 + 2^-30) and verify the certificate. Consequences:

* the secure release is (ε, δ)-DP wherever the continuous mechanism is (same profile bound);
* :meth:`GaussianMechanism.event` — a :class:`~approxdp.events.GaussianEvent` (σ, Δ) — is a
  correct description for the accountant, whose exact Gaussian composition (Zhao et al. Lemma 15)
  stays valid for dominated pairs;
* the noise actually added is g·(Y + e), Y ~ N_Z(0, s²), |e| ≤ 1/2 from the rounding of the
  query, with s·g ≈ σ·Δ_L·g/Δ ≤ σ(1 + 2^-10) (up to the 2^-30 margin and a relative b²/(2s²)
  below 1e-6). :meth:`GaussianMechanism.confidence_interval` describes that noise, not the
  continuous one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp._validation import check_parameter
from approxdp.calibration import calibrate_gaussian, get_method
from approxdp.errors import NotPrivateError, ParameterTypeError
from approxdp.events import GaussianEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_delta,
    check_dimension,
    check_epsilon,
    check_sensitivity,
)
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.lattice import Lattice, LatticeMechanism, power_of_two_at_most
from approxdp.mechanisms.randomness import SecureBits
from approxdp.profiles.discrete_gaussian_smoothing import (
    SmoothingBound,
    dominated_by_gaussian,
    smoothing_widths,
)
from approxdp.profiles.gaussian import gaussian_delta

__all__ = ["GaussianMechanism", "SecureGaussianNoise", "secure_gaussian_noise"]

LATTICE_BITS = 12  # σ/g ≥ 2^12
SENSITIVITY_BITS = 10  # Δ/g ≥ 2^10·√d: rounding inflates Δ by at most 2^-10 relative
DOMINANCE_MARGIN = 2.0**-30  # relative margin of √(s² − b²) over (σ/Δ)·Δ_L


@dataclass(frozen=True, slots=True)
class SecureGaussianNoise:
    """Parameters of the secure lattice release for ``dimension`` coordinates.

    Attributes:
        lattice: the lattice gZ the query is rounded to.
        sensitivity: Δ_L, the ℓ2-sensitivity of the rounded query in lattice units.
        sampler: the exact N_Z(0, s²) sampler (s in lattice units).
        dimension: number of coordinates d.
        certificate: the smoothing bound proving domination by N(0, 1) vs N(Δ/σ, 1).
    """

    lattice: Lattice
    sensitivity: float
    sampler: DiscreteGaussianSampler
    dimension: int
    certificate: SmoothingBound

    def draw(self, n: int) -> npt.NDArray[np.int64]:
        """``n`` exact N_Z(0, s²) draws from the OS CSPRNG (lattice units)."""
        return np.asarray(self.sampler.sample(SecureBits(), n), dtype=np.int64)

    @property
    def sigma(self) -> float:
        """Standard deviation parameter of the noise in the query's units (s·g)."""
        return self.sampler.sigma * self.lattice.g

    def half_width(self, alpha: float) -> float:
        """h with P[|noise + rounding| > h] ≤ α per coordinate, conservatively.

        With k = ⌈s·Φ⁻¹(1 − α/2)⌉: P[|Y| > k] = 2·Σ_{y>k} e^(−y²/(2s²))/Z ≤ 2Q(k/s) ≤ α
        (the sum is below ∫_k^∞ e^(−x²/(2s²))dx and Z ≥ s√(2π) by Poisson summation), and the
        rounding adds at most g/2, so h = g·(k + 1/2).
        """
        a = check_alpha(alpha)
        s = self.sampler.sigma
        k = math.ceil(s * float(special.ndtri(1.0 - a / 2.0)))
        while 2.0 * float(special.ndtr(-k / s)) > a:  # guard against rounding of ndtri
            k += 1
        return (k + 0.5) * self.lattice.g


@lru_cache(maxsize=256)
def secure_gaussian_noise(sensitivity: float, sigma: float, dimension: int) -> SecureGaussianNoise:
    """Lattice, rounded sensitivity, exact sampler and domination certificate for the secure
    release of ``dimension`` coordinates of a query with ℓ2-sensitivity Δ and continuous σ.

    Raises:
        NotPrivateError: if no certificate can be found (only for σ/Δ below about 0.025,
            i.e. ε in the thousands).
    """
    d = check_dimension(dimension)
    g = power_of_two_at_most(
        min(sigma / 2.0**LATTICE_BITS, sensitivity / (2.0**SENSITIVITY_BITS * math.sqrt(d)))
    )
    lattice = Lattice(g)
    sens_l = lattice.sensitivity_l2(sensitivity, d)
    mu = sensitivity / sigma
    t = sens_l / mu * (1.0 + DOMINANCE_MARGIN)
    for b in smoothing_widths(d):
        sampler = DiscreteGaussianSampler.at_least(math.sqrt(t * t + b * b))
        certificate = dominated_by_gaussian(sampler.sigma, sens_l, d, mu)
        if certificate is not None:
            return SecureGaussianNoise(lattice, sens_l, sampler, d, certificate)
    raise NotPrivateError(
        f"no domination certificate for the secure Gaussian release at sigma={sigma!r}, "
        f"sensitivity={sensitivity!r}, dimension={d} (sigma/sensitivity too small); use "
        "a larger sigma"
    )


@dataclass(frozen=True, slots=True)
class GaussianMechanism(LatticeMechanism):
    """f(D) + N(0, σ² I) with σ calibrated for (ε, δ)-DP at ℓ2-sensitivity Δ (Zhao et al. Thm 2).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: ℓ2-sensitivity Δ > 0 of the query (scalar or vector).
        method: a calibration method name of ``approxdp.calibration.CALIBRATION_METHODS``.

    Attributes:
        sigma: the calibrated σ (``scale`` is the same number).

    >>> m = GaussianMechanism(1.0, 1e-5)
    >>> round(m.sigma, 6)
    3.730632
    >>> m.privacy_profile(1.0) <= 1e-5
    True
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    method: str = "optimal"
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        self._set_budget(self.epsilon, self.delta, self.sensitivity, self.method)
        sigma = calibrate_gaussian(self.epsilon, self.delta, self.sensitivity, self.method)
        object.__setattr__(self, "sigma", float(sigma))

    def _set_budget(self, epsilon: Any, delta: Any, sensitivity: Any, method: Any) -> None:
        """Validate and store ε, δ, Δ and the method's name."""
        object.__setattr__(self, "epsilon", check_epsilon(epsilon))
        object.__setattr__(self, "delta", check_delta(delta))
        object.__setattr__(self, "sensitivity", check_sensitivity(sensitivity))
        if not isinstance(method, str):
            raise ParameterTypeError(
                f"method must be a string, got {type(method).__name__} {method!r}"
            )
        object.__setattr__(self, "method", method)

    @classmethod
    def from_sigma(
        cls,
        sigma: float,
        sensitivity: float = 1.0,
        *,
        epsilon: float,
        delta: float,
        method: str = "optimal",
    ) -> GaussianMechanism:
        """The mechanism with a σ already calibrated for (ε, δ) at Δ, without calibrating again.

        A release plan calibrates σ once for all its queries (Zhao et al. Lemma 15) and the
        accountant records that σ; a mechanism built from it adds exactly the noise the ledger
        describes, where ``GaussianMechanism(ε, δ, Δ)`` would calibrate a second σ that nothing
        ties to the first. The guarantee is checked, not trusted: the exact profile (Zhao et
        al. Thm 2) must give δ(ε; σ, Δ) ≤ δ. With σ from ``calibrate_gaussian(ε, δ, Δ,
        method)`` the result equals ``GaussianMechanism(ε, δ, Δ, method)``.

        Args:
            sigma: The noise standard deviation σ, in (0, ∞).
            sensitivity: ℓ2-sensitivity Δ > 0 the noise was calibrated to.
            epsilon: ε > 0 of the guarantee σ was calibrated for.
            delta: δ in (0, 1) of that guarantee.
            method: Name of the calibration method that gave σ (kept as a label).

        Raises:
            InvalidParameterError: σ, Δ, ε or δ out of range.
            ParameterTypeError: A non-numeric argument or a method that is not a string.
            UnknownMethodError: A method name that is not a calibration method.
            NotPrivateError: σ is too small for (ε, δ) at Δ.

        >>> m = GaussianMechanism(1.0, 1e-5, 2.0)
        >>> GaussianMechanism.from_sigma(m.sigma, 2.0, epsilon=1.0, delta=1e-5) == m
        True
        """
        mech = object.__new__(cls)
        mech._set_budget(epsilon, delta, sensitivity, method)
        get_method(method)
        sig = float(check_parameter("sigma", sigma, "sigma_finite"))
        achieved = float(gaussian_delta(mech.epsilon, sig, mech.sensitivity))
        if not achieved <= mech.delta:
            raise NotPrivateError(
                f"sigma={sig!r} at sensitivity={mech.sensitivity!r} is not "
                f"({mech.epsilon:g}, {mech.delta:g})-DP: its exact profile gives "
                f"delta={achieved:.6g} at epsilon={mech.epsilon:g}; use "
                "GaussianMechanism(epsilon, delta, sensitivity) to calibrate sigma"
            )
        object.__setattr__(mech, "sigma", sig)
        return mech

    @property
    def scale(self) -> float:
        """The noise standard deviation σ."""
        return self.sigma

    def privacy_profile(self, epsilon: npt.ArrayLike) -> Any:
        """Exact δ(ε) of the continuous mechanism (D. Wang's notes, Thm 5.18); an upper bound for
        the secure release, which it dominates (module docstring)."""
        return gaussian_delta(epsilon, self.sigma, self.sensitivity)

    def confidence_interval(
        self, alpha: float, *, dimension: int = 1, secure: bool = True
    ) -> float:
        """Half-width h of the noise of one coordinate: P[|noise| > h] ≤ α.

        Args:
            alpha: miss probability in (0, 1).
            dimension: the number of coordinates of the release (the secure noise depends on
                it through the lattice).
            secure: True (default) for the secure release — discrete Gaussian noise on the
                lattice plus the rounding of the query, bounded conservatively by
                :meth:`SecureGaussianNoise.half_width`; False for the float path, where
                h = σ Φ⁻¹(1 − α/2) exactly.
        """
        a = check_alpha(alpha)
        if not isinstance(secure, bool):
            raise ParameterTypeError(f"secure must be True or False, got secure={secure!r}")
        if secure:
            return self.secure_noise(dimension).half_width(a)
        return float(self.sigma * special.ndtri(1.0 - a / 2.0))

    def event(self) -> GaussianEvent:
        """The release as a :class:`~approxdp.events.GaussianEvent` (σ, Δ): exact for the float
        path, and a valid (dominating) description of the secure release."""
        return GaussianEvent(sigma=self.sigma, sensitivity=self.sensitivity)

    def secure_noise(self, dimension: int = 1) -> SecureGaussianNoise:
        """The lattice parameters the secure release uses for ``dimension`` coordinates."""
        return secure_gaussian_noise(self.sensitivity, self.sigma, check_dimension(dimension))

    def _simulated_noise(
        self, generator: np.random.Generator, shape: tuple[int, ...]
    ) -> npt.NDArray[np.float64]:
        return generator.normal(0.0, self.sigma, size=shape)
