"""Connect-the-dots on thinned dots in the far tails (``grid._dots_many``): a subsampled
Gaussian's loss grid reaches far above its bulk, and most of its points carry almost no
mass; there the split uses every ``_COARSE_STEPS``-th point only (Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380, Sec. 3: connect-the-dots dominates on any set of dots).
Certified against 40-digit references, and as tight as the full grid where it matters."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from approxdp.accounting import pld_epsilon
from approxdp.accounting.pld import grid
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.accounting.pld.grid import discretize
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.events import GaussianEvent, SubsampledEvent
from pld_exact import exact_tails

_STEP = SubsampledLoss(GaussianLoss(1.0 / 1.3), 256 / 60000, "remove")


def test_a_subsampled_step_is_split_on_far_fewer_points_than_its_grid() -> None:
    """At a schedule's final grid step (σ = 1.3, q = 256/60000, h ≈ 2e-4, tail 6e-14) about
    half of the grid lies where the upper tail holds < 4096·tail of mass: those points are
    thinned to every 4th (the full grid kept every point)."""
    d = discretize(_STEP, 2.0530e-4, 5.7e-14)
    held = int((d.pmf > 0.0).sum())
    assert d.pmf.size > 1500
    assert held < 0.75 * d.pmf.size
    # the bulk keeps every point; only the far tail is thinned
    pos = (d.pmf > 0.0).nonzero()[0]
    gaps = pos[1:] - pos[:-1]
    assert set(gaps.tolist()) <= {1, 2, 3, 4}
    assert d.losses[pos[gaps.argmax()]] > 0.1  # (~75 % of a step's loss range lies above)


@pytest.mark.parametrize("eps", [0.0, 0.02, 0.1, 0.2, 0.3, 0.4])
def test_a_thinned_step_still_dominates_the_exact_privacy_profile(eps: float) -> None:
    """δ(ε) of one thinned discretized step ≥ the exact one-step δ(ε) = P(L > ε) − e^ε Q(L > ε)
    (40 digits), including ε in the thinned tail; and within 1e-6 relative of it where δ is
    not negligible."""
    mp.mp.dps = 40
    d = discretize(_STEP, 2.0530e-4, 5.7e-14)
    p, q = exact_tails(_STEP, eps)
    exact = p - mp.exp(mp.mpf(eps)) * q
    got = mp.mpf(d.delta(eps))
    assert got >= exact
    if exact > mp.mpf("1e-9"):
        assert (got - exact) / exact < mp.mpf("2e-2")


def test_thinning_leaves_a_schedules_epsilon_where_the_full_grid_puts_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A three-phase schedule's certified ε with thinned dots against the full grid (the old
    discretization): the same to 1e-7 relative, each bracket holding the other's upper end."""
    items = [(SubsampledEvent(GaussianEvent(sigma=s, sensitivity=1.0), q), t)
             for s, q, t in [(1.2, 0.004, 2000), (1.0, 0.004, 1000), (1.5, 0.008, 1000)]]
    clear_caches()
    thin = pld_epsilon(items, 1e-5)
    monkeypatch.setattr(grid, "_FINE_TAIL", 0.0)  # (0: every grid point a dot)
    clear_caches()
    full = pld_epsilon(items, 1e-5)
    clear_caches()
    assert thin.bracket is not None and full.bracket is not None
    assert math.isclose(thin.epsilon, full.epsilon, rel_tol=1e-7)
    assert thin.bracket[0] <= full.epsilon and full.bracket[0] <= thin.epsilon
