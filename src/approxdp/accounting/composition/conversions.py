"""Conversions of a guarantee: subsampling, group privacy, DP ⇒ pDP, zCDP ⇒ DP.

Sources: D. Wang's notes (subsampling, Thm 5.4), Dwork & Roth 2014 (group privacy, Thm 2.2;
https://doi.org/10.1561/0400000042), Zhao et al. 2019 (DP ⇒ pDP, Lemma 4;
https://arxiv.org/abs/1911.12060), Bun & Steinke 2016 (zCDP ⇒ DP, Prop. 1.3;
https://arxiv.org/abs/1605.02065); see the bibliography of the documentation.

All are closed forms, vectorized over their arguments, and return an upper bound. Each is
evaluated without intermediate overflow (e^ε overflows float64 above ε ≈ 709.8): a result is
``inf`` only where the true value itself exceeds the largest float, and never with a warning.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_parameter
from approxdp.accounting.composition.closed_form import check_steps
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
        Guarantee (upper bound) (log1p(q·expm1(ε)), qδ), for ε > 700 evaluated in log space
        as log(1 + e^a), a = ln q + ε + log1p(−e^(−ε)), so large ε keeps its digits:
        ε = 1000, q = 0.01 gives 1000 + ln 0.01 ≈ 995.395, not ``inf``. Rounded up by a few
        ulps (the private side).

    Example:
        >>> eps, delta = amplify_by_subsampling(1.0, 1e-6, 0.01)
        >>> round(eps, 6), delta
        (0.017037, 1e-08)
    """
    eps = check_parameter("epsilon", epsilon)
    dlt = check_parameter("delta", delta, "delta_cost")
    rate = check_parameter("q", q, "sample_rate")
    return Guarantee(
        to_output(_log1p_q_expm1(eps, rate)),
        to_output(rate * dlt),
        "upper bound",
        "Poisson subsampling amplification (D. Wang's notes, Thm 5.4)",
    )


def _log1p_q_expm1(eps: npt.ArrayLike, rate: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """log(1 + q(e^ε − 1)) for ε ≥ 0, q ∈ (0, 1], without overflow, rounded up.

    Up to ε = 700 the direct log1p(q·expm1(ε)) is exact to a few ulps (rounded up by 4). Above,
    q·(e^ε − 1) is e^a with a = ln q + ε + log1p(−e^(−ε)) and log(1 + e^a) = logaddexp(0, a),
    exact up to the rounding of the sum a, i.e. a few ulps of ε (added: the private side).
    """
    eps, rate = np.broadcast_arrays(np.asarray(eps, dtype=np.float64),
                                    np.asarray(rate, dtype=np.float64))
    small = np.minimum(eps, _DIRECT_MAX)
    direct = np.log1p(rate * np.expm1(small))
    for _ in range(4):
        direct = np.nextafter(direct, np.inf)
    big = np.maximum(eps, _DIRECT_MAX)
    log_terms = np.log(rate) + big + np.log1p(-np.exp(-big))
    logged = np.logaddexp(0.0, log_terms) + 4.0 * np.spacing(big)
    return np.where(eps <= _DIRECT_MAX, np.where(eps > 0, direct, 0.0), logged)


_DIRECT_MAX = 700.0  # e^700 ≈ 1e304: q·expm1(ε) is still finite


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
    eps = check_parameter("epsilon", epsilon)
    dlt = check_parameter("delta", delta, "delta_cost")
    size = check_steps("k", k)
    with np.errstate(over="ignore"):  # kε beyond the largest float is inf (a true bound)
        log_d = np.log(size) + (size - 1) * eps + np.log(np.where(dlt > 0, dlt, 1.0))
        new_delta = np.where(dlt > 0, np.minimum(1.0, np.exp(np.minimum(log_d, 1.0))), 0.0)
        group_eps = size * eps
    return Guarantee(
        to_output(group_eps),
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
    eps = check_parameter("epsilon", epsilon)
    dlt = check_parameter("delta", delta, "delta_cost")
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
    r = check_parameter("rho", rho)
    dlt = check_parameter("delta", delta)
    with np.errstate(over="ignore"):  # √ρ·√ln(1/δ): no overflow of ρ·ln(1/δ) itself
        eps = r + 2.0 * np.sqrt(r) * np.sqrt(-np.log(dlt))
    return Guarantee(
        to_output(eps),
        to_output(np.broadcast_to(dlt, eps.shape).astype(np.float64)),
        "upper bound",
        "zCDP to DP (Bun-Steinke 2016, Prop. 1.3)",
    )
