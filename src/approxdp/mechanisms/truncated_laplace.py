"""The truncated Laplace mechanism (D. Wang's notes, Thm 5.6; Wu's notes, §1.2; Geng et al. 2018).

Noise with density ∝ e^(−|y|/λ) on |y| ≤ τ, λ = Δ/ε, τ = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)):
(ε, δ)-DP when Δ ≤ τ, which holds exactly when δ ≤ 1/2 (so larger δ is refused). The noise
is bounded: every output is within :attr:`TruncatedLaplaceMechanism.tau` of the truth.

Vector queries (d coordinates, ℓ1-sensitivity Δ) use the same λ and τ on every coordinate,
by the Good/Bad-set argument of Thm 5.6 (D. Wang's notes, Lemma 5.5) applied to the whole vector:
if the coordinates move by Δ_j with Σ|Δ_j| ≤ Δ, then on outputs that the neighbour can also
produce the likelihood ratio is at most Π e^(|Δ_j|/λ) ≤ e^ε, and the other outputs (the Bad
set) have probability at most Σ_j β(Δ_j) with β(x) = e^(−τ/λ)(e^(x/λ) − 1)/(2(1 − e^(−τ/λ))).
β is convex with β(0) = 0, hence superadditive: Σ_j β(Δ_j) ≤ β(Δ) = δ. So the vector release
is (ε, δ)-DP with the one-coordinate τ — no split of (ε, δ) across coordinates.

Secure default release: round to the lattice gZ (g a power of two with Δ/g in
[2^12·d, 2^13·d)), so the rounded query has integer ℓ1-sensitivity Δ_L = ⌊Δ/g⌋ + d; add exact
discrete Laplace noise with rate r = s/t ≤ ε/Δ_L conditioned on |k| ≤ T. The same argument
with w = e^(−r) and Z = 1 + 2w(1 − w^T)/(1 − w): on the Good set the ratio is
≤ e^(rΔ_L) ≤ e^ε, and the Bad set has probability at most
δ_T = w^(T−Δ_L+1)(1 − w^(Δ_L))/((1 − w)Z) (again superadditive in the shift); T is the least
integer ≥ Δ_L with δ_T(1 + 1e-9) ≤ δ. Output bound per coordinate: (T + 1/2)g (rounding moves
the query by ≤ g/2); :meth:`TruncatedLaplaceMechanism.tau_for` gives the larger of it and τ.

:meth:`TruncatedLaplaceMechanism.privacy_profile` is the exact profile for every ε ≥ 0 (larger
than δ below ε, see :mod:`approxdp.profiles.laplace`): the larger of the continuous mechanism's
and the secure discrete one's, so it holds for every release path.

See https://arxiv.org/abs/1810.00877 (Geng et al. 2018).
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
from approxdp.events import EpsilonDeltaEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_delta,
    check_dimension,
    check_epsilon,
    check_sensitivity,
)
from approxdp.mechanisms.exact_sampling import DiscreteLaplaceSampler
from approxdp.mechanisms.laplace import discrete_laplace_sampler
from approxdp.mechanisms.lattice import Lattice, LatticeMechanism, power_of_two_at_most
from approxdp.mechanisms.randomness import SecureBits
from approxdp.profiles.laplace import (
    discrete_truncated_laplace_delta,
    truncated_laplace_delta,
    truncated_laplace_tau,
)

__all__ = ["SecureTruncatedLaplaceNoise", "TruncatedLaplaceMechanism"]

LATTICE_BITS = 12
_MARGIN = 1e-9


@dataclass(frozen=True, slots=True)
class SecureTruncatedLaplaceNoise:
    """Lattice, integer sensitivity, sampler and integer bound T of the secure release."""

    lattice: Lattice
    sensitivity: int
    sampler: DiscreteLaplaceSampler
    bound: int

    def draw(self, n: int) -> npt.NDArray[np.int64]:
        """``n`` exact discrete Laplace draws truncated to ±``bound`` (lattice units)."""
        return np.asarray(self.sampler.sample(SecureBits(), n, bound=self.bound),
                          dtype=np.int64)

    @property
    def tau(self) -> float:
        """Largest distance of any output from the truth: (T + 1/2)·g."""
        return (self.bound + 0.5) * self.lattice.g

    def log_delta(self) -> float:
        """ln δ_T of the discrete truncated Laplace (module docstring)."""
        return _log_delta_t(float(self.sampler.rate), self.sensitivity, self.bound)

    def half_width(self, alpha: float) -> float:
        """Least h = g·(k + 1/2) with P[|K| > k] ≤ α for the truncated discrete Laplace K
        (P[|K| > k] = 2(w^(k+1) − w^(T+1))/(1 + w − 2w^(T+1)), w = e^(−rate)); the rounding of
        the query adds at most g/2. Never more than :attr:`tau`."""
        a = check_alpha(alpha)
        r = float(self.sampler.rate)
        t = self.bound
        denom = -math.expm1(-r) + 2.0 * math.exp(-r) * -math.expm1(-r * t)

        def miss(k: int) -> float:
            if k >= t:
                return 0.0
            return 2.0 * math.exp(-r * (k + 1)) * -math.expm1(-r * (t - k)) / denom

        lo, hi = 0, t
        while lo < hi:  # miss is non-increasing in k: least k with miss(k) ≤ α
            mid = (lo + hi) // 2
            if miss(mid) <= a:
                hi = mid
            else:
                lo = mid + 1
        return (lo + 0.5) * self.lattice.g


def _log_delta_t(rate: float, sens: int, t_bound: int) -> float:
    log_w = -rate
    one_minus_w = -math.expm1(log_w)
    z = 1.0 + 2.0 * math.exp(log_w) * (-math.expm1(t_bound * log_w)) / one_minus_w
    return (
        (t_bound - sens + 1) * log_w
        + math.log(-math.expm1(sens * log_w))
        - math.log(one_minus_w)
        - math.log(z)
    )


@lru_cache(maxsize=256)
def secure_truncated_laplace_noise(
    epsilon: float, delta: float, sensitivity: float, dimension: int
) -> SecureTruncatedLaplaceNoise:
    """Parameters of the secure release of ``dimension`` coordinates at (ε, δ, Δ)."""
    lattice = Lattice(power_of_two_at_most(sensitivity / dimension) / 2.0**LATTICE_BITS)
    sens_l = lattice.sensitivity_l1(sensitivity, dimension)
    sampler = discrete_laplace_sampler(Fraction(epsilon) / sens_l)
    rate = float(sampler.rate)
    target = math.log(delta) - math.log1p(_MARGIN)

    def ok(t_bound: int) -> bool:
        return _log_delta_t(rate, sens_l, t_bound) <= target

    # δ_T decreases in T: the least T ≥ Δ_L with δ_T ≤ δ, by doubling then bisection.
    lo, hi = sens_l - 1, sens_l
    while not ok(hi):
        lo, hi = hi, sens_l + 2 * (hi - sens_l + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    t_bound = hi
    return SecureTruncatedLaplaceNoise(lattice, sens_l, sampler, t_bound)


@dataclass(frozen=True, slots=True)
class TruncatedLaplaceMechanism(LatticeMechanism):
    """f(D) + TLap(λ, τ): (ε, δ)-DP with bounded noise (D. Wang's notes, Thm 5.6).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1/2] (the proof needs Δ ≤ τ, i.e. δ ≤ 1/2).
        sensitivity: Δ > 0 (ℓ1 for vectors).

    Attributes:
        scale: λ = Δ/ε.
        tau: bound on |output − truth| of every scalar release (secure or not); for a
            vector release see :meth:`tau_for`.

    >>> m = TruncatedLaplaceMechanism(1.0, 1e-5)
    >>> abs(m.release(10.0) - 10.0) <= m.tau
    True
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    scale: float = field(init=False)
    tau: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta, high=0.5, high_open=False))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity))
        object.__setattr__(self, "scale", self.sensitivity / self.epsilon)
        object.__setattr__(self, "tau", self.tau_for(1))

    def theorem_tau(self) -> float:
        """τ = λ ln(1 + (e^ε − 1)/(2δ)) of Thm 5.6: the bound of the float path."""
        return truncated_laplace_tau(self.epsilon, self.delta, self.sensitivity)

    def secure_noise(self, dimension: int = 1) -> SecureTruncatedLaplaceNoise:
        """Parameters of the secure release of ``dimension`` coordinates."""
        d = check_dimension(dimension)
        return secure_truncated_laplace_noise(self.epsilon, self.delta, self.sensitivity, d)

    def tau_for(self, dimension: int) -> float:
        """Bound on every coordinate's |output − truth| for a ``dimension``-coordinate release,
        on every path: max(τ, (T + 1/2)g of the secure release)."""
        return max(self.theorem_tau(), self.secure_noise(dimension).tau)

    def privacy_profile(self, epsilon: npt.ArrayLike) -> Any:
        """Exact δ(ε') of a scalar release for every ε' ≥ 0 (profiles.laplace): the larger of
        the continuous mechanism's profile (λ = Δ/ε, τ of Thm 5.6) and the secure discrete
        one's. At ε' ≥ ε it is the Bad-set mass, at most δ (equal to δ for the continuous
        mechanism); below ε it is larger than δ but finite.

        >>> m = TruncatedLaplaceMechanism(1.0, 1e-3)
        >>> bool(m.privacy_profile(1.0) <= 1e-3 < m.privacy_profile(0.5))
        True
        """
        noise = self.secure_noise(1)
        continuous = truncated_laplace_delta(
            epsilon, self.scale, self.theorem_tau(), self.sensitivity
        )
        discrete = discrete_truncated_laplace_delta(
            epsilon, float(noise.sampler.rate), noise.sensitivity, noise.bound
        )
        out = np.maximum(continuous, discrete)
        return float(out) if out.ndim == 0 else out

    def confidence_interval(
        self, alpha: float, *, dimension: int = 1, secure: bool = True
    ) -> float:
        """Half-width h of the noise of one coordinate: P[|noise| > h] ≤ α; never more than
        the bound :meth:`tau_for` (``dimension``).

        Args:
            alpha: miss probability in (0, 1).
            dimension: number of coordinates of the release (the secure lattice depends on it).
            secure: True (default) for the secure release (truncated discrete Laplace on the
                lattice plus the rounding, :meth:`SecureTruncatedLaplaceNoise.half_width`);
                False for the float path, h = −λ ln(α(1 − e^(−τ/λ)) + e^(−τ/λ)) exactly.
        """
        a = check_alpha(alpha)
        if not isinstance(secure, bool):
            raise ParameterTypeError(f"secure must be True or False, got secure={secure!r}")
        if secure:
            return self.secure_noise(dimension).half_width(a)
        check_dimension(dimension)
        lam = self.scale
        tail = math.exp(-self.theorem_tau() / lam)
        return float(-lam * math.log(a * (1.0 - tail) + tail))

    def event(self) -> EpsilonDeltaEvent:
        """The release as an :class:`~approxdp.events.EpsilonDeltaEvent` (ε, δ)."""
        return EpsilonDeltaEvent(epsilon=self.epsilon, delta=self.delta, label="truncated-laplace")

    def _simulated_noise(
        self, generator: np.random.Generator, shape: tuple[int, ...]
    ) -> npt.NDArray[np.float64]:
        """Inverse-CDF float noise, clipped to τ."""
        lam, tau = self.scale, self.theorem_tau()
        mass = -math.expm1(-tau / lam)
        u = generator.random(size=shape)
        magnitude = np.minimum(-lam * np.log1p(-u * mass), tau)
        sign = np.where(generator.random(size=shape) < 0.5, -1.0, 1.0)
        return np.asarray(sign * magnitude, dtype=np.float64)
