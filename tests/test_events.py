"""Mechanisms meet the accountant and report the noise they actually add.

* every mechanism's ``.event()`` is consumed by :class:`approxdp.PrivacyAccountant` and costs
  what the mechanism guarantees;
* ``confidence_interval`` describes the secure lattice noise (discrete noise plus rounding),
  conservatively: checked exactly where it can be, and by coverage on fresh secure releases.

The three coverage checks read the OS CSPRNG (not seedable by design); each rejects with
probability below 5e-8 when the interval is right (binomial count, z = 5.45), so the file
fails by chance with probability below 1.5e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from approxdp import (
    BudgetExceededError,
    DiscreteGaussianEvent,
    DiscreteGaussianMechanism,
    EpsilonDeltaEvent,
    GaussianEvent,
    GaussianMechanism,
    LaplaceEvent,
    LaplaceMechanism,
    PrivacyAccountant,
    TruncatedLaplaceMechanism,
)
from approxdp.profiles.discrete_gaussian import discrete_gaussian_tail
from approxdp.profiles.gaussian import gaussian_delta

Z_BINOMIAL = 5.45  # one-sided P[N(0,1) > 5.45] ≈ 2.5e-8


def test_gaussian_event_costs_its_exact_profile():
    mech = GaussianMechanism(1.0, 1e-5)
    assert mech.event() == GaussianEvent(sigma=mech.sigma, sensitivity=1.0)
    acc = PrivacyAccountant(budget=(1.0, 1e-5))
    acc.spend(mech.event())
    status = acc.remaining()
    assert status.spent_delta == pytest.approx(gaussian_delta(1.0, mech.sigma, 1.0), rel=1e-9)
    assert status.spent_delta <= 1e-5
    with pytest.raises(BudgetExceededError):
        acc.spend(mech.event())
    assert acc.remaining().count == 1  # the refused spend changed nothing


def test_two_gaussian_events_compose_exactly():
    mech = GaussianMechanism(1.0, 1e-6, 2.0)
    acc = PrivacyAccountant(budget=(3.0, 1e-3))
    acc.spend(mech.event())
    acc.spend(mech.event())
    # Zhao et al. Lemma 15: two releases are one Gaussian with σ* = σ/√2 (Δ = 2).
    expected = gaussian_delta(3.0, mech.sigma / math.sqrt(2.0), 2.0)
    assert acc.remaining().spent_delta == pytest.approx(expected, rel=1e-9)


def test_pure_and_approximate_events_cost_their_guarantee():
    lap = LaplaceMechanism(0.3, 2.0)
    assert lap.event() == LaplaceEvent(scale=lap.scale, sensitivity=2.0)
    acc = PrivacyAccountant(budget=(1.0, 0.0))
    acc.spend(lap.event())
    assert acc.remaining().spent_epsilon == pytest.approx(0.3, rel=1e-9)
    assert acc.remaining().spent_delta == 0.0
    # The secure release is at least as private as the event says.
    assert lap.secure_noise(1).epsilon <= 0.3

    tl = TruncatedLaplaceMechanism(0.5, 1e-6)
    dg = DiscreteGaussianMechanism(0.5, 1e-6, 3)
    assert tl.event() == EpsilonDeltaEvent(epsilon=0.5, delta=1e-6)
    assert isinstance(dg.event(), DiscreteGaussianEvent)
    for event in (tl.event(), dg.event()):
        acc = PrivacyAccountant(budget=(0.5, 1e-6))
        acc.spend(event)
        status = acc.remaining()
        assert status.spent_delta == pytest.approx(1e-6, rel=1e-9)
        assert status.spent_delta <= 1e-6


def test_all_mechanisms_in_one_ledger():
    mechs = [
        GaussianMechanism(0.5, 1e-6),
        LaplaceMechanism(0.3),
        TruncatedLaplaceMechanism(0.2, 1e-7),
        DiscreteGaussianMechanism(0.5, 1e-6),
    ]
    # the truncated Laplace and discrete Gaussian have δ > 0 that no Gaussian dominates: after
    # the first spend the filter admits them from a basic share fixed at creation
    acc = PrivacyAccountant(budget=(3.0, 1e-4), basic_share=(0.75, 2.5e-6))
    for mech in mechs:
        acc.spend(mech.event())
    status = acc.remaining()
    assert status.count == 4 and status.spent_epsilon <= 3.0
    assert status.basic_share_used == pytest.approx((0.7, 1.1e-6))  # the two with δ > 0
    # as a declared sequence: never more than basic composition of the four guarantees
    fixed = PrivacyAccountant(budget=(3.0, 1e-4), adaptivity="fixed")
    for mech in mechs:
        fixed.spend(mech.event())
    status = fixed.remaining()
    assert status.spent_epsilon <= 0.5 + 0.3 + 0.2 + 0.5 + 1e-9
    assert status.spent_delta <= 1e-6 + 1e-7 + 1e-6 + 1e-6


# --- confidence intervals of the secure noise -------------------------------------------------


def test_gaussian_secure_interval_covers_discrete_noise_and_rounding():
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    noise = mech.secure_noise(1)
    s, g = noise.sampler.sigma, noise.lattice.g
    for alpha in [0.5, 0.05, 1e-6]:
        h = mech.confidence_interval(alpha)
        k = math.floor(h / g - 0.5)  # h = g(k + 1/2)
        assert h == (k + 0.5) * g
        assert 2.0 * discrete_gaussian_tail(k, s) <= alpha  # exact tail of the discrete noise
        continuous = mech.confidence_interval(alpha, secure=False)
        assert continuous == pytest.approx(mech.sigma * special.ndtri(1 - alpha / 2))
        assert continuous <= h <= noise.sigma * special.ndtri(1 - alpha / 2) + 2 * g


def test_laplace_and_truncated_intervals_are_exact_on_the_lattice():
    lap = LaplaceMechanism(1.0, 1.0).secure_noise(1)
    r, g = float(lap.sampler.rate), lap.lattice.g
    w = math.exp(-r)
    for alpha in [0.3, 0.01, 1e-9]:
        k = round(lap.half_width(alpha) / g - 0.5)
        assert 2 * w ** (k + 1) / (1 + w) <= alpha < 2 * w**k / (1 + w)  # least such k
    tl_mech = TruncatedLaplaceMechanism(1.0, 1e-3)
    tl = tl_mech.secure_noise(1)
    r, g, t = float(tl.sampler.rate), tl.lattice.g, tl.bound
    w = math.exp(-r)
    z = 1 + 2 * w * (1 - w**t) / (1 - w)

    def miss(k):
        return 2 * (w ** (k + 1) - w ** (t + 1)) / ((1 - w) * z)

    for alpha in [0.3, 0.01, 1e-9]:
        k = round(tl.half_width(alpha) / g - 0.5)
        assert miss(k) <= alpha * (1 + 1e-9)
        assert k == 0 or miss(k - 1) > alpha * (1 - 1e-9)
        assert tl_mech.confidence_interval(alpha) <= tl_mech.tau


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(1.0, 1e-5, 1.0),
        LaplaceMechanism(1.0, 1.0),
        TruncatedLaplaceMechanism(1.0, 1e-3),
    ],
    ids=["gaussian", "laplace", "truncated-laplace"],
)
def test_secure_release_coverage(mech):
    """Releases of 50,000 coordinates at random true values: at most α of them miss by more
    than the half-width for that dimension (up to the binomial tolerance)."""
    n, alpha = 50_000, 0.1
    truth = np.random.default_rng(21).uniform(-100, 100, size=n)
    released = mech.release(truth)
    h = mech.confidence_interval(alpha, dimension=n)
    misses = int(np.sum(np.abs(released - truth) > h))
    assert misses <= alpha * n + Z_BINOMIAL * math.sqrt(alpha * (1 - alpha) * n)
