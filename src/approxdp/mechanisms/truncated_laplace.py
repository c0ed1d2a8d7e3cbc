"""The truncated Laplace mechanism (lecture-wang Thm 5.6; lecture-wu §1.2; Geng et al. 2018).

Noise with density ∝ e^(−|y|/λ) on |y| ≤ τ, λ = Δ/ε, τ = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)):
(ε, δ)-DP when Δ ≤ τ, which holds exactly when δ ≤ 1/2 (so larger δ is refused). The noise
is bounded: every output is within :attr:`TruncatedLaplaceMechanism.tau` of the truth.

Secure default release (one coordinate): round to the lattice gZ (Δ/g in [2^12, 2^13)),
integer sensitivity Δ_L = ⌊Δ/g⌋ + 1, exact discrete Laplace noise with rate r = s/t ≤ ε/Δ_L
conditioned on |k| ≤ T. For this discrete version the proof of Thm 5.6 gives, with w = e^(−r),
Z = 1 + 2w(1 − w^T)/(1 − w): every output the neighbour can also produce has likelihood ratio
≤ e^(rΔ_L) ≤ e^ε, and the others (the "Bad" set) have probability
δ_T = w^(T−Δ_L+1)(1 − w^(Δ_L))/((1 − w)Z); T is the least integer ≥ Δ_L with
δ_T(1 + 1e-9) ≤ δ. Output bound: (T + 1/2)g (rounding moves the query by ≤ g/2).

Vector queries (d coordinates, ℓ1-sensitivity Δ, so each coordinate moves by ≤ Δ): each
coordinate gets the one-coordinate mechanism at (ε/d, δ/d), (ε, δ)-DP by basic composition
(lecture-wang Lemma 5.3). Bounds then come from :meth:`TruncatedLaplaceMechanism.tau_for`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from approxdp.events import EpsilonDeltaEvent
from approxdp.mechanisms.base import (
    check_alpha,
    check_delta,
    check_epsilon,
    check_sensitivity,
    choose_path,
    prepare_value,
)
from approxdp.mechanisms.exact_sampling import DiscreteLaplaceSampler
from approxdp.mechanisms.laplace import discrete_laplace_sampler
from approxdp.mechanisms.lattice import Lattice, power_of_two_at_most
from approxdp.mechanisms.outputs import mark_simulated
from approxdp.mechanisms.randomness import SecureBits
from approxdp.profiles.laplace import truncated_laplace_tau

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

    @property
    def tau(self) -> float:
        """Largest distance of any output from the truth: (T + 1/2)·g."""
        return (self.bound + 0.5) * self.lattice.g

    def log_delta(self) -> float:
        """ln δ_T of the discrete truncated Laplace (module docstring)."""
        return _log_delta_t(float(self.sampler.rate), self.sensitivity, self.bound)


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
    epsilon: float, delta: float, sensitivity: float
) -> SecureTruncatedLaplaceNoise:
    """Parameters of the one-coordinate secure release at (ε, δ, Δ)."""
    lattice = Lattice(power_of_two_at_most(sensitivity) / 2.0**LATTICE_BITS)
    sens_l = math.floor(sensitivity / lattice.g) + 1
    sampler = discrete_laplace_sampler(Fraction(epsilon) / sens_l)
    rate = float(sampler.rate)
    target = math.log(delta) - math.log1p(_MARGIN)
    # δ_T falls by the factor w per step of T (up to Z): start from the T that solves it.
    guess = sens_l - 1 + (target - _log_delta_t(rate, sens_l, sens_l - 1)) / -rate
    t_bound = max(sens_l, math.floor(guess) - 2)
    while t_bound > sens_l and _log_delta_t(rate, sens_l, t_bound - 1) <= target:
        t_bound -= 1
    while _log_delta_t(rate, sens_l, t_bound) > target:
        t_bound += 1
    return SecureTruncatedLaplaceNoise(lattice, sens_l, sampler, t_bound)


@dataclass(frozen=True, slots=True)
class TruncatedLaplaceMechanism:
    """f(D) + TLap(λ, τ): (ε, δ)-DP with bounded noise (lecture-wang Thm 5.6).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1/2] (the proof needs Δ ≤ τ, i.e. δ ≤ 1/2).
        sensitivity: Δ > 0 (ℓ1 for vectors).

    Attributes:
        scale: λ = Δ/ε.
        tau: bound on |output − truth| of every scalar release (secure or not).
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

    def theorem_tau(self, dimension: int = 1) -> float:
        """τ of Thm 5.6 at (ε/d, δ/d): the bound of the float path."""
        d = int(dimension)
        return truncated_laplace_tau(self.epsilon / d, self.delta / d, self.sensitivity)

    def secure_noise(self, dimension: int = 1) -> SecureTruncatedLaplaceNoise:
        """Per-coordinate parameters of the secure release of ``dimension`` coordinates."""
        d = int(dimension)
        return secure_truncated_laplace_noise(self.epsilon / d, self.delta / d, self.sensitivity)

    def tau_for(self, dimension: int) -> float:
        """Bound on every coordinate's |output − truth| for a ``dimension``-coordinate release."""
        return max(self.theorem_tau(dimension), self.secure_noise(dimension).tau)

    def privacy_profile(self, epsilon: Any) -> Any:
        """δ(ε') for ε' ≥ ε: the Bad-set mass, which equals δ (lecture-wang Thm 5.6 proof);
        NaN below ε, where this mechanism has no closed-form profile here."""
        eps = np.asarray(epsilon, dtype=np.float64)
        out = np.where(eps >= self.epsilon, self.delta, np.nan)
        return float(out) if out.ndim == 0 else out

    def confidence_interval(self, alpha: float) -> float:
        """Half-width h with P[|Y| > h] = α for the truncated noise (per coordinate, d = 1):
        h = −λ ln(α(1 − e^(−τ/λ)) + e^(−τ/λ)); never more than τ."""
        a = check_alpha(alpha)
        lam = self.scale
        tail = math.exp(-self.theorem_tau(1) / lam)
        return float(-lam * math.log(a * (1.0 - tail) + tail))

    def event(self) -> EpsilonDeltaEvent:
        """The release as an :class:`~approxdp.events.EpsilonDeltaEvent` (ε, δ)."""
        return EpsilonDeltaEvent(epsilon=self.epsilon, delta=self.delta, label="truncated-laplace")

    def release(self, value: Any, rng: Any = None, *, secure: bool | None = None) -> Any:
        """Release ``value`` with bounded noise; see the module docstring for vectors.

        ``rng=None``: exact lattice noise from the OS CSPRNG. A Generator or ``secure=False``:
        float inverse-CDF noise, clipped to τ, marked as a simulation.
        """
        path, gen = choose_path(rng, secure)
        arr, scalar = prepare_value(value)
        d = max(arr.size, 1)
        if path != "secure" and gen is not None:
            lam = self.scale
            tau = self.theorem_tau(d)
            mass = -math.expm1(-tau / lam)
            u = gen.random(size=arr.shape)
            magnitude = np.minimum(-lam * np.log1p(-u * mass), tau)
            sign = np.where(gen.random(size=arr.shape) < 0.5, -1.0, 1.0)
            return mark_simulated(arr + sign * magnitude, scalar)
        noise = self.secure_noise(d)
        index = noise.lattice.to_integers(arr)
        draws = noise.sampler.sample(SecureBits(), index.size, bound=noise.bound)
        out = noise.lattice.to_reals(index + draws.reshape(index.shape))
        return float(out) if scalar else np.asarray(out)
