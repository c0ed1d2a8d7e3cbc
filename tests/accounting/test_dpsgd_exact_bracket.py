"""The one-step and full-batch δ are exact profiles rounded up by their relative error (1e-12):
the bracket's lower end must be rounded down by as much, or it sits above the truth."""

from __future__ import annotations

import math

import mpmath
import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta


def _exact_one_step(sigma: float, q: float, eps: float) -> mpmath.mpf:
    """max over add/remove of the one-step hockey-stick divergence of the Poisson-subsampled
    Gaussian (sensitivity 1, noise σ), at 50 digits: P = (1−q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²)."""
    mpmath.mp.dps = 50
    s, qq, e = mpmath.mpf(sigma), mpmath.mpf(q), mpmath.mpf(eps)

    def phi(x: mpmath.mpf) -> mpmath.mpf:  # P(N(0,1) > x)
        return mpmath.erfc(x / mpmath.sqrt(2)) / 2

    # remove: L(x) = log(1 − q + q e^((2x−1)/(2σ²))) > ε  ⇔  x > x_r
    a = (mpmath.exp(e) - (1 - qq)) / qq
    x_r = s**2 * mpmath.log(a) + mpmath.mpf(1) / 2
    remove = (1 - qq) * phi(x_r / s) + qq * phi((x_r - 1) / s) - mpmath.exp(e) * phi(x_r / s)
    # add: the same pair swapped, L(x) = −log(1 − q + q e^(...)) > ε  ⇔  x < x_a (if reachable)
    b = (mpmath.exp(-e) - (1 - qq)) / qq
    add = mpmath.mpf(0)
    if b > 0:
        x_a = s**2 * mpmath.log(b) + mpmath.mpf(1) / 2
        add = (1 - phi(x_a / s)) - mpmath.exp(e) * ((1 - qq) * (1 - phi(x_a / s))
                                                    + qq * (1 - phi((x_a - 1) / s)))
    return max(remove, add, mpmath.mpf(0))


@pytest.mark.parametrize(("sigma", "q", "eps"), [
    (1.0, 0.01, 0.05), (1.1, 256 / 60000, 0.01), (0.8, 0.5, 1.0), (2.0, 0.2, 0.3),
    (0.5, 0.9, 3.0), (1.0, 0.01, 1e-3),
])
def test_one_step_bracket_holds_the_exact_delta(sigma: float, q: float, eps: float) -> None:
    got = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=1, epsilon=eps)
    exact = _exact_one_step(sigma, q, eps)
    low, up = got.bracket
    assert got.kind == "exact"
    assert mpmath.mpf(low) <= exact <= mpmath.mpf(up)
    assert low < up == got.delta and up <= low * math.exp(3e-12)
