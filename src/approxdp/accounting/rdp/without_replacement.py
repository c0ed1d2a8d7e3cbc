"""Rényi DP of the Gaussian mechanism on a fixed batch sampled without replacement.

Substitution neighbours; the general upper bound of Wang, Balle, Kasiviswanathan 2019
(https://arxiv.org/abs/1808.00087, Thm 9) with the Gaussian's ε(j) = j/(2σ²) at integer orders,
fractional orders by linear interpolation of (α - 1)ε(α) between neighbouring integers (their
Cor. 10, valid by convexity), capped at the plain Gaussian's α/(2σ²). The noise multiplier is
relative to the substitution sensitivity (dp_accounting's convention). The Poisson case and the
shared numerics are in :mod:`approxdp.accounting.rdp.subsampled_gaussian`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from approxdp.accounting.rdp.subsampled_gaussian import (
    _EPS,
    DEFAULT_RDP_ORDERS,
    FloatArray,
    _blocks,
    _check_noise,
    _check_orders,
    _check_rate,
    _gaussian_rdp,
    _log_expm1,
    _log_sum,
    _round_up_rdp,
)

__all__ = ["rdp_sampled_without_replacement_gaussian"]


def _rdp_wor_int(q: float, sigma: float, orders: FloatArray) -> FloatArray:
    """Wang, Balle, Kasiviswanathan Thm 9 for the Gaussian (ε(j) = j/(2σ²), ε(∞) = ∞), α >= 2:

    (α-1) ε(α) <= log(1 + q² C(α,2) min(4(e^{1/σ²} - 1), 2 e^{1/σ²})
                      + Σ_{j=3}^{α} 2 q^j C(α, j) e^{j(j-1)/(2σ²)}).
    """
    inv = 0.5 / (sigma * sigma)
    log_q = math.log(q)
    out = np.empty(orders.shape)
    err = np.empty(orders.shape)
    for idx in _blocks(orders):
        a = orders[idx][:, None]
        width = int(a[-1, 0]) + 1
        j = np.arange(2, width, dtype=np.float64)[None, :]
        valid = j <= a
        jj = np.where(valid, j, 2.0)
        g_a = special.gammaln(a + 1.0)
        g_j = special.gammaln(jj + 1.0)
        g_aj = special.gammaln(np.where(valid, a - jj, 0.0) + 1.0)
        two = 2.0 * inv  # ε(2) = 1/σ²
        first = min(math.log(4.0) + float(_log_expm1(np.array(two))), math.log(2.0) + two)
        y = np.where(jj == 2.0, first, math.log(2.0) + jj * (jj - 1.0) * inv)
        log_mag = np.where(valid, g_a - g_j - g_aj + jj * log_q + y, -np.inf)
        scale = np.abs(g_a) + np.abs(g_j) + np.abs(g_aj) + np.abs(jj * log_q) + np.abs(y) + 2.0
        total, bound = _log_sum(log_mag, np.ones_like(log_mag), 8.0 * _EPS * scale)
        out[idx] = total
        err[idx] = bound
    with np.errstate(over="ignore", under="ignore"):
        log_a = np.logaddexp(0.0, out)
        share = np.exp(out - log_a)
    return _round_up_rdp(log_a, err * share + 4.0 * _EPS * log_a, orders, out > -np.inf)


def rdp_sampled_without_replacement_gaussian(
    noise_multiplier: Any, sample_rate: Any, orders: Any = None
) -> Any:
    """Rényi DP (upper bound) of one step of the Gaussian on a batch sampled without
    replacement, for substitution (replace-one) neighbours.

    Wang, Balle, Kasiviswanathan 2019 (https://arxiv.org/abs/1808.00087), Thm 9 with the
    Gaussian's ε(j) = j/(2σ²) and ε(∞) = ∞, at integer α >= 2:

        (α-1) ε(α) <= log(1 + q² C(α,2) min(4(e^{1/σ²} - 1), 2e^{1/σ²})
                          + Σ_{j=3}^{α} 2 q^j C(α,j) e^{j(j-1)/(2σ²)});

    at a fractional α, (α - 1)ε(α) is interpolated linearly between ⌊α⌋ and ⌈α⌉ (their
    Cor. 10; (α - 1)ε is 0 at α = 1); never above the Gaussian's α/(2σ²) (which q = 1 gives:
    the subsamples of neighbours differ in at most one record). This is Thm 9, not the tighter
    Thm 27 that dp_accounting evaluates by forward differences for α ≤ 256: it agrees with
    dp_accounting at α ≤ 2 and α > 256 and is above it in between.

    ``noise_multiplier`` is the noise std over the ℓ2-sensitivity **under substitution**, as in
    dp_accounting's ``SampledWithoutReplacementDpEvent``: for DP-SGD with clipping norm C,
    replacing one record moves the gradient sum by up to 2C, so pass (DP-SGD noise
    multiplier)/2 (:func:`rdp_dpsgd_epsilon` does this for you).

    Args:
        noise_multiplier: σ > 0 relative to the substitution sensitivity; ``inf`` gives 0.
        sample_rate: q = batch size / dataset size, in (0, 1].
        orders: Rényi orders α ∈ (1, 65536] (default :data:`DEFAULT_RDP_ORDERS`).

    Returns:
        the upper bound on ε(α) for each order, a float64 array.

    Example:
        >>> rdp = rdp_sampled_without_replacement_gaussian(1.1, 256 / 60000, [2, 32])
        >>> tuple(f"{x:.6e}" for x in rdp)
        ('8.319753e-05', '7.612548e+00')
    """
    sigma = _check_noise(noise_multiplier)
    q = _check_rate(sample_rate)
    alphas = _check_orders(DEFAULT_RDP_ORDERS if orders is None else orders)
    return _rdp_wor(q, sigma, alphas)


def _rdp_wor(q: float, sigma: float, orders: FloatArray) -> FloatArray:
    if math.isinf(sigma):
        return np.zeros(orders.shape)
    if q == 1.0:
        return _gaussian_rdp(sigma, orders)
    lo = np.floor(orders)
    hi = np.ceil(orders)
    ints = np.unique(np.concatenate([lo, hi]))
    ints = ints[ints >= 2.0]
    # (α-1) ε(α), rounded up already; never above the Gaussian's own α/(2σ²): with the natural
    # coupling the two subsamples differ in at most one record (joint convexity of e^{(α-1)D_α})
    gauss = _gaussian_rdp(sigma, ints)
    vals = np.minimum(_rdp_wor_int(q, sigma, ints), gauss) * (ints - 1.0)
    cgf = dict(zip(ints.tolist(), vals.tolist(), strict=True))
    cgf[1.0] = 0.0
    c_lo = np.array([cgf[x] for x in lo.tolist()])
    c_hi = np.array([cgf[x] for x in hi.tolist()])
    t = orders - lo
    with np.errstate(invalid="ignore", over="ignore"):
        mixed = np.where(t == 0.0, c_lo, (1.0 - t) * c_lo + t * c_hi)
        rdp = mixed / (orders - 1.0) * (1.0 + 8.0 * _EPS)
        rdp = np.minimum(rdp, _gaussian_rdp(sigma, orders))
    return np.where(np.isnan(rdp), np.inf, rdp)


# -- RDP => (epsilon, delta) ------------------------------------------------------------------
