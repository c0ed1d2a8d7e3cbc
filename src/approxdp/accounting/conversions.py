"""Conversions of a guarantee: subsampling, group privacy, DP ⇒ pDP, zCDP ⇒ DP.

Sources: D. Wang's notes (subsampling, Thm 5.4), Dwork & Roth 2014 (group privacy, Thm 2.2;
https://doi.org/10.1561/0400000042), Zhao et al. 2019 (DP ⇒ pDP, Lemma 4;
https://arxiv.org/abs/1911.12060), Bun & Steinke 2016 (zCDP ⇒ DP, Prop. 1.3;
https://arxiv.org/abs/1605.02065); see the bibliography of the documentation.

All are closed forms, vectorized over their arguments, and return an upper bound.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_probability
from approxdp.accounting.composition import check_steps
from approxdp.accounting.guarantees import Guarantee, to_output

__all__ = ["amplify_by_subsampling", "dp_to_pdp", "group_privacy", "zcdp_to_dp"]


def amplify_by_subsampling(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, q: npt.ArrayLike
) -> Guarantee:
    """Privacy amplification by Poisson subsampling (D. Wang's notes, Thm 5.4).

    Running an (ε, δ)-DP algorithm on a subsample that keeps each record independently with
    probability q gives (ln(1 + q(e^ε − 1)), qδ)-DP, for add/remove neighbours.

    Args:
        epsilon: ε ≥ 0 of the algorithm (finite).
        delta: δ ∈ [0, 1).
        q: sampling probability in (0, 1].

    Returns:
        Guarantee (upper bound) (log1p(q·expm1(ε)), qδ).

    Example:
        >>> eps, delta = amplify_by_subsampling(1.0, 1e-6, 0.01)
        >>> round(eps, 6), delta
        (0.017037, 1e-08)
    """
    eps = check_interval("epsilon", epsilon, 0.0, math.inf, high_open=True)
    dlt = check_probability("delta", delta, allow_zero=True)
    rate = check_interval("q", q, 0.0, 1.0, low_open=True)
    return Guarantee(
        to_output(np.log1p(rate * np.expm1(eps))),
        to_output(rate * dlt),
        "upper bound",
        "Poisson subsampling amplification (D. Wang's notes, Thm 5.4)",
    )


def group_privacy(epsilon: npt.ArrayLike, delta: npt.ArrayLike, k: int) -> Guarantee:
    """Group privacy: (ε, δ)-DP gives (kε, k e^((k−1)ε) δ)-DP for groups of k records.

    (Dwork & Roth 2014, Thm 2.2, and its (ε, δ) extension.) δ is capped at 1 (a vacuous but
    true statement).

    Args:
        epsilon: ε ≥ 0 (finite).
        delta: δ ∈ [0, 1).
        k: group size, integer ≥ 1.

    Returns:
        Guarantee (upper bound).

    Example:
        >>> eps, d = group_privacy(0.5, 1e-6, 2)
        >>> eps, round(d, 12)
        (1.0, 3.297443e-06)
    """
    eps = check_interval("epsilon", epsilon, 0.0, math.inf, high_open=True)
    dlt = check_probability("delta", delta, allow_zero=True)
    size = check_steps("k", k)
    with np.errstate(over="ignore"):
        log_d = np.log(size) + (size - 1) * eps + np.log(np.where(dlt > 0, dlt, 1.0))
        new_delta = np.where(dlt > 0, np.minimum(1.0, np.exp(np.minimum(log_d, 1.0))), 0.0)
    return Guarantee(
        to_output(size * eps),
        to_output(new_delta),
        "upper bound",
        "group privacy (Dwork-Roth Thm 2.2)",
    )


def dp_to_pdp(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, epsilon_star: npt.ArrayLike
) -> Guarantee:
    """(ε, δ)-DP ⇒ (ε*, δ(1 + e^(−ε*)) / (1 − e^(ε − ε*)))-pDP for ε* > ε (Zhao et al. Lemma 4).

    The converse, pDP ⇒ DP with the same (ε, δ), is Zhao et al. Lemma 3 (no conversion needed).

    Args:
        epsilon: ε ≥ 0 of the DP guarantee.
        delta: δ ∈ [0, 1).
        epsilon_star: the pDP ε*, strictly greater than ``epsilon`` (finite).

    Returns:
        Guarantee (upper bound) in the pDP sense: (ε*, min(1, δ*)).

    Raises:
        InvalidParameterError: if ε* ≤ ε.

    Example:
        >>> eps_star, d = dp_to_pdp(1.0, 1e-6, 2.0)
        >>> eps_star, round(d, 12)
        (2.0, 1.796074e-06)
    """
    eps = check_interval("epsilon", epsilon, 0.0, math.inf, high_open=True)
    dlt = check_probability("delta", delta, allow_zero=True)
    star = check_interval(
        "epsilon_star", epsilon_star, 0.0, math.inf, low_open=True, high_open=True
    )
    gap = np.broadcast_to(star - eps, np.broadcast(star, eps).shape)
    check_interval("epsilon_star - epsilon", gap, 0.0, math.inf, low_open=True)
    pdp_delta = dlt * (1.0 + np.exp(-star)) / -np.expm1(-gap)
    return Guarantee(
        to_output(np.broadcast_to(star, pdp_delta.shape).astype(np.float64)),
        to_output(np.minimum(1.0, pdp_delta)),
        "upper bound",
        "DP implies pDP (Zhao et al. Lemma 4)",
    )


def zcdp_to_dp(rho: npt.ArrayLike, delta: npt.ArrayLike) -> Guarantee:
    """ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP (Bun & Steinke 2016, Prop. 1.3).

    A Gaussian release with sensitivity Δ and noise σ is ρ = Δ²/(2σ²)-zCDP; for Gaussians the
    exact profile (:func:`compose_gaussian`) is tighter and should be preferred.

    Args:
        rho: ρ ≥ 0 (finite).
        delta: δ ∈ (0, 1).

    Returns:
        Guarantee (upper bound).

    Example:
        >>> round(zcdp_to_dp(0.5, 1e-5).epsilon, 6)
        5.298526
    """
    r = check_interval("rho", rho, 0.0, math.inf, high_open=True)
    dlt = check_probability("delta", delta)
    eps = r + 2.0 * np.sqrt(r * -np.log(dlt))
    return Guarantee(
        to_output(eps),
        to_output(np.broadcast_to(dlt, eps.shape).astype(np.float64)),
        "upper bound",
        "zCDP to DP (Bun-Steinke 2016, Prop. 1.3)",
    )
