"""A schedule's stacked supports (``supports._Stacked``): each row's exponents shifted by a
precomputed bound on their largest (no per-call maximum or repeat) give the moments of the
exact shift, and a row whose bound overshoots by more than 100 nats is computed exactly."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.pld.grid import discretize
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.supports import Support, _Stacked


def _schedule(tail: float, alike: bool) -> list[tuple[Support, int]]:
    sigmas = [1.5 - 0.01 * i for i in range(6)] if alike else [5.0, 1.5, 0.9, 3.0]
    return [(Support(discretize(SubsampledLoss(GaussianLoss(1.0 / s), 0.004, d), 2e-3, tail)),
             100 + j) for j, s in enumerate(sigmas) for d in ("remove", "add")]


@pytest.mark.parametrize("alike", [True, False])
@pytest.mark.parametrize("u", [-300.0, -40.0, -3.0, -0.2, 0.0, 0.5, 3.0, 40.0, 300.0])
def test_shifted_moments_are_the_exact_ones(alike: bool, u: float) -> None:
    st = _Stacked(_schedule(1e-14, alike))
    assert st.fast
    got, want = st._shifted(u), st._exact(u)
    assert got is not None
    assert math.isclose(got.k, want.k, rel_tol=1e-13, abs_tol=1e-9)
    assert math.isclose(got.mean, want.mean, rel_tol=1e-11, abs_tol=1e-12)
    assert math.isclose(got.var, want.var, rel_tol=1e-8, abs_tol=1e-15)
    assert st.moments(u) == got


def test_a_bound_far_above_a_rows_largest_exponent_falls_back_to_the_exact_shift() -> None:
    """Tails of 1e-80: at u = 2000 the largest loss's exponent sits ~180 nats below the
    bound (largest log-mass + u·largest loss): the shifted sums would lose their terms to the
    floor, so the exact shift answers."""
    st = _Stacked(_schedule(1e-80, False))
    assert st._shifted(2000.0) is None
    assert st.moments(2000.0) == st._exact(2000.0)
    assert math.isfinite(st.moments(2000.0).k)
