"""Empirical privacy audits of every mechanism (the hockey-stick characterisation of Balle &
Wang 2018, Thm 5: https://arxiv.org/abs/1805.06530).

The audit: estimate the hockey-stick divergence of two output samples.

Given samples of M(D) and M(D') for neighbours D ~ D', the audit picks a threshold event
E = {z ≤ c} or {z ≥ c} on the first half of the samples (the likelihood-ratio events of
one-dimensional shift mechanisms), then estimates δ(E) = P[M(D) ∈ E] − e^ε P[M(D') ∈ E] on
the second half, independent of the choice. ``lower`` is a one-sided normal lower confidence
bound with z = 5.2 (miss probability ≈ 1e-7): a mechanism that is (ε, δ)-DP has
P[lower > δ] ≤ 1e-7, so ``violated`` is a false alarm at most that often. The file runs 6
audits that must pass, so it fails by chance with probability below 1e-6 (the seeded ones are
deterministic; the rest read the OS CSPRNG). The 3 audits that must *fail* (under-noised
mechanisms) are seeded and have true δ far above the claim (estimated gap > 20 standard errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

Z_ONE_SIDED = 5.2  # P[N(0,1) > 5.2] ≈ 1.0e-7


@dataclass(frozen=True)
class AuditResult:
    estimate: float
    lower: float
    claimed_delta: float

    @property
    def violated(self) -> bool:
        return self.lower > self.claimed_delta


def audit_hockey_stick(
    out_d: npt.ArrayLike, out_dprime: npt.ArrayLike, epsilon: float, delta: float
) -> AuditResult:
    x = np.asarray(out_d, dtype=np.float64).ravel()
    y = np.asarray(out_dprime, dtype=np.float64).ravel()
    hx, hy = x.size // 2, y.size // 2
    x1, x2, y1, y2 = x[:hx], x[hx:], y[:hy], y[hy:]
    e = math.exp(epsilon)
    grid = np.quantile(np.concatenate([x1, y1]), np.linspace(0.001, 0.999, 400))
    xs, ys = np.sort(x1), np.sort(y1)
    below_x = np.searchsorted(xs, grid, side="right") / x1.size
    below_y = np.searchsorted(ys, grid, side="right") / y1.size
    above_x = 1 - np.searchsorted(xs, grid, side="left") / x1.size
    above_y = 1 - np.searchsorted(ys, grid, side="left") / y1.size
    lo_gap = below_x - e * below_y
    hi_gap = above_x - e * above_y
    if lo_gap.max() >= hi_gap.max():
        c = grid[int(lo_gap.argmax())]
        p, q = np.mean(x2 <= c), np.mean(y2 <= c)
    else:
        c = grid[int(hi_gap.argmax())]
        p, q = np.mean(x2 >= c), np.mean(y2 >= c)
    est = float(p - e * q)
    se = math.sqrt(p * (1 - p) / x2.size + e * e * q * (1 - q) / y2.size)
    return AuditResult(estimate=est, lower=est - Z_ONE_SIDED * se, claimed_delta=delta)


N = 200_000  # samples per neighbour; se of the estimate ≈ 0.004 at ε = 1


def _optimal_sigma(eps, delta):
    """Test oracle: least σ (Δ = 1) with Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) ≤ δ (Balle &
    Wang 2018, Thm 8)."""
    from scipy import optimize, stats

    def gap(s):
        return (
            stats.norm.cdf(0.5 / s - eps * s)
            - math.exp(eps) * stats.norm.cdf(-0.5 / s - eps * s)
            - delta
        )

    return optimize.brentq(gap, 1e-3, 1e3, xtol=1e-14) * (1 + 1e-9)


def test_gaussian_secure_lattice_release_passes_audit():
    from approxdp.mechanisms.gaussian import secure_gaussian_noise

    noise = secure_gaussian_noise(1.0, _optimal_sigma(1.0, 0.05), 1)
    a, b = _scalar_lattice_samples(noise)
    result = audit_hockey_stick(a, b, 1.0, 0.05)
    assert not result.violated, result


def test_gaussian_mechanism_release_passes_audit():
    from approxdp import GaussianMechanism

    mech = GaussianMechanism(1.0, 0.05, 1.0)
    assert mech.sigma == pytest.approx(_optimal_sigma(1.0, 0.05), rel=1e-6)
    # Scalar releases through the public API (the bulk audit of the same noise is above).
    a = np.array([mech.release(0.0) for _ in range(10_000)])
    b = np.array([mech.release(1.0) for _ in range(10_000)])
    result = audit_hockey_stick(a, b, 1.0, 0.05)
    assert not result.violated, result


def _scalar_lattice_samples(noise, n=N):
    from approxdp.mechanisms.randomness import SecureBits

    base = noise.lattice.to_integers(np.array([0.0]))[0]
    shifted = noise.lattice.to_integers(np.array([1.0]))[0]
    a = noise.lattice.to_reals(base + noise.sampler.sample(SecureBits(), n))
    b = noise.lattice.to_reals(shifted + noise.sampler.sample(SecureBits(), n))
    return a, b


def test_laplace_secure_release_passes_audit():
    from approxdp import LaplaceMechanism

    mech = LaplaceMechanism(1.0, 1.0)
    a = np.array([mech.release(0.0) for _ in range(2000)])  # the public scalar API
    assert a.dtype == np.float64
    noise = mech.secure_noise(1)
    from approxdp.mechanisms.randomness import SecureBits

    x = noise.lattice.to_reals(noise.sampler.sample(SecureBits(), N))
    y = noise.lattice.to_reals(
        noise.lattice.to_integers(np.array([1.0]))[0] + noise.sampler.sample(SecureBits(), N)
    )
    result = audit_hockey_stick(x, y, 1.0, 0.0)
    assert not result.violated, result


def test_truncated_laplace_secure_release_passes_audit():
    from approxdp import TruncatedLaplaceMechanism
    from approxdp.mechanisms.randomness import SecureBits

    mech = TruncatedLaplaceMechanism(1.0, 0.05, 1.0)
    noise = mech.secure_noise(1)
    x = noise.lattice.to_reals(noise.sampler.sample(SecureBits(), N, bound=noise.bound))
    shift = noise.lattice.to_integers(np.array([1.0]))[0]
    y = noise.lattice.to_reals(shift + noise.sampler.sample(SecureBits(), N, bound=noise.bound))
    result = audit_hockey_stick(x, y, 1.0, 0.05)
    assert not result.violated, result


def test_discrete_gaussian_release_passes_audit():
    from approxdp import DiscreteGaussianMechanism

    mech = DiscreteGaussianMechanism(1.0, 0.05, 1)
    a = mech.release(np.zeros(N, dtype=np.int64), rng=np.random.default_rng(11))
    b = mech.release(np.ones(N, dtype=np.int64), rng=np.random.default_rng(12))
    result = audit_hockey_stick(a, b, 1.0, 0.05)
    assert not result.violated, result


def test_audit_catches_an_under_noised_mechanism():
    """Half the calibrated σ is not (1, 0.05)-DP (true δ ≈ 0.3): the audit must say so."""
    from approxdp import DiscreteGaussianMechanism
    from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
    from approxdp.mechanisms.randomness import GeneratorBits
    from approxdp.profiles.discrete_gaussian import discrete_gaussian_delta

    mech = DiscreteGaussianMechanism(1.0, 0.05, 1)
    weak = DiscreteGaussianSampler.at_least(mech.sigma / 2)
    assert discrete_gaussian_delta(1.0, weak.sigma, 1) > 0.1
    bits = GeneratorBits(np.random.default_rng(13))
    a = weak.sample(bits, N)
    b = 1 + weak.sample(bits, N)
    result = audit_hockey_stick(a, b, 1.0, 0.05)
    assert result.violated, result


def test_audit_catches_under_noised_lattice_gaussian():
    from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
    from approxdp.mechanisms.lattice import Lattice
    from approxdp.mechanisms.randomness import GeneratorBits

    # σ = 0.6 for Δ = 1 at ε = 1 (the optimal σ for δ = 0.05 is about 1.3).
    lattice = Lattice(2.0**-12)
    sampler = DiscreteGaussianSampler.at_least(0.6 / lattice.g)
    bits = GeneratorBits(np.random.default_rng(14))
    x = lattice.to_reals(sampler.sample(bits, N))
    y = lattice.to_reals(4096 + sampler.sample(bits, N))
    assert audit_hockey_stick(x, y, 1.0, 0.05).violated


def test_vector_discrete_gaussian_passes_audit():
    """Shift (1, 1) (ℓ2-norm √2): the likelihood ratio depends on y only through y₁ + y₂, so
    auditing the projection loses nothing (the optimal events are half-spaces)."""
    from approxdp import DiscreteGaussianMechanism

    mech = DiscreteGaussianMechanism(1.0, 0.05, math.sqrt(2.0))
    a = mech.release(np.zeros((N, 2), dtype=np.int64), rng=np.random.default_rng(15))
    b = mech.release(np.ones((N, 2), dtype=np.int64), rng=np.random.default_rng(16))
    result = audit_hockey_stick(a.sum(axis=1), b.sum(axis=1), 1.0, 0.05)
    assert not result.violated, result


def test_audit_catches_under_noised_laplace():
    """Laplace noise of scale b/2 claimed as ε-DP at scale b: true δ(1) ≈ 0.39 > 0."""
    from approxdp import LaplaceMechanism

    weak = LaplaceMechanism(2.0, 1.0)
    rng = np.random.default_rng(17)
    x = np.asarray(weak.release(np.zeros(N), rng=rng))
    y = np.asarray(weak.release(np.ones(N), rng=rng))
    assert audit_hockey_stick(x, y, 1.0, 0.0).violated
