"""RDP ⇒ (ε, δ), and the RDP accountant for DP-SGD (T steps of the subsampled Gaussian).

Conversion: Balle, Barthe, Gaboardi, Hsu, Sato 2020 (https://arxiv.org/abs/1905.09982, Thm 21),
in the form of Canonne, Kamath, Steinke 2020 (https://arxiv.org/abs/2004.00010, Prop. 12):

    ε = ε_RDP(α) + log1p(-1/α) - (log δ + log α)/(α - 1),

minimized over the orders, with (0, δ)-DP wherever the total-variation bound already covers δ.
The RDP curves themselves are in :mod:`approxdp.accounting.rdp.subsampled_gaussian`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import optimize

from approxdp._validation import check_parameter
from approxdp.accounting.composition.closed_form import check_steps
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.rdp.subsampled_gaussian import (
    _EPS,
    DEFAULT_RDP_ORDERS,
    FloatArray,
    Sampling,
    _check_noise,
    _check_orders,
    _check_rate,
    _check_rdp,
    _check_sampling,
    _rdp_poisson,
)
from approxdp.accounting.rdp.without_replacement import _rdp_wor

__all__ = [
    "rdp_dpsgd_delta",
    "rdp_dpsgd_epsilon",
    "rdp_schedule_delta",
    "rdp_schedule_epsilon",
    "rdp_to_delta",
    "rdp_to_epsilon",
]


def _epsilons(rdp: FloatArray, orders: FloatArray, delta: float) -> FloatArray:
    """ε at each order (Balle et al. 2020 Thm 21; Canonne et al. 2020 Prop. 12), 0 where the
    KL bound gives (0, δ),
    rounded up by the evaluation error; ``inf`` where the RDP is infinite."""
    log_d = math.log(delta)
    with np.errstate(over="ignore", invalid="ignore"):
        corr = np.log1p(-1.0 / orders)
        tail = (log_d + np.log(orders)) / (orders - 1.0)
        eps = rdp + corr - tail
        eps = eps + 8.0 * _EPS * (np.abs(rdp) + np.abs(corr) + np.abs(tail))
        eps = np.where(np.isnan(eps) | np.isinf(rdp), np.inf, np.maximum(eps, 0.0))
        # TV <= sqrt(1 - e^{-KL}) <= sqrt(1 - e^{-rdp}) (Bretagnolle-Huber; KL <= D_α)
        zero = delta * delta > -np.expm1(-rdp) * (1.0 + 8.0 * _EPS)
    return np.where(zero, 0.0, eps)


def rdp_to_epsilon(rdp: Any, orders: Any, delta: Any) -> tuple[float, float]:
    """The least ε over the orders for which an RDP curve implies (ε, δ)-DP.

    ε = min_α [ε_RDP(α) + log1p(-1/α) - (log δ + log α)/(α - 1)] (Balle, Barthe, Gaboardi,
    Hsu, Sato 2020, https://arxiv.org/abs/1905.09982, Thm 21; in the form of Canonne, Kamath,
    Steinke 2020, https://arxiv.org/abs/2004.00010, Prop. 12), and ε = 0 at an order where
    δ >= sqrt(1 - e^{-ε_RDP(α)}) (total variation ≤ δ). Rounded up by its evaluation error.

    Args:
        rdp: ε_RDP(α) >= 0 for each order (``inf`` allowed: that order is skipped), e.g. T times
            :func:`rdp_subsampled_gaussian`.
        orders: the orders α > 1, same length as ``rdp``.
        delta: δ ∈ (0, 1).

    Returns:
        ``(epsilon, order)``: the bound and the order that attains it (``inf`` and the first
        order when every order is infinite).

    Example:
        >>> orders = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> eps, order = rdp_to_epsilon([a / 2 for a in orders], orders, 1e-5)
        >>> round(eps, 6), order
        (5.087862, 4.0)
    """
    alphas = _check_orders(orders)
    values = _check_rdp(rdp, alphas)
    d = float(check_parameter("delta", delta))
    eps = _epsilons(values, alphas, d)
    best = int(np.argmin(eps))
    return float(eps[best]), float(alphas[best])


def _log_deltas(rdp: FloatArray, orders: FloatArray, epsilon: float) -> FloatArray:
    """log δ at each order (the inverse of :func:`_epsilons`), rounded up, capped at 0."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        corr = np.log1p(-1.0 / orders)
        log_alpha = np.log(orders)
        log_d = (orders - 1.0) * (rdp - epsilon + corr) - log_alpha
        log_d = log_d + 8.0 * _EPS * (
            (orders - 1.0) * (np.abs(rdp) + epsilon + np.abs(corr)) + log_alpha)
        log_d = np.where(np.isnan(log_d), np.inf, log_d)
        # TV <= sqrt(1 - e^{-rdp}) (Bretagnolle-Huber)
        log_tv = 0.5 * np.log(-np.expm1(-rdp)) + 8.0 * _EPS
    return np.minimum(np.minimum(log_d, log_tv), 0.0)


def rdp_to_delta(rdp: Any, orders: Any, epsilon: Any) -> tuple[float, float]:
    """The least δ over the orders for which an RDP curve implies (ε, δ)-DP.

    δ = min_α min(exp((α - 1)(ε_RDP(α) - ε + log1p(-1/α)) - log α), sqrt(1 - e^{-ε_RDP(α)}))
    (the inverse of :func:`rdp_to_epsilon`: BBGHS20 Thm 21 / Canonne et al. 2020 Prop. 12, and the
    Bretagnolle–Huber bound on total variation), capped at 1 and rounded up.

    Args:
        rdp: ε_RDP(α) >= 0 for each order (``inf`` allowed).
        orders: the orders α > 1, same length as ``rdp``.
        epsilon: ε >= 0 (finite).

    Returns:
        ``(delta, order)``: the bound and the order that attains it.

    Example:
        >>> orders = [2.0, 4.0, 8.0, 16.0, 32.0]
        >>> delta, order = rdp_to_delta([a / 2 for a in orders], orders, 5.087862)
        >>> f"{delta:.4e}", order
        ('1.0000e-05', 4.0)
    """
    alphas = _check_orders(orders)
    values = _check_rdp(rdp, alphas)
    e = float(check_parameter("epsilon", epsilon))
    log_d = _log_deltas(values, alphas, e)
    best = int(np.argmin(log_d))
    return math.exp(float(log_d[best])), float(alphas[best])


# -- DP-SGD -----------------------------------------------------------------------------------


def _schedule_curve(
    phases: Sequence[tuple[float, float, int]], how: Sampling
) -> Callable[[FloatArray, bool], FloatArray]:
    """The total RDP curve (α, rough) ↦ Σ_i T_i·ε_i(α) of validated phases (σ_i, q_i, T_i)
    (RDP composes additively; ``rough`` sums the fractional series less far, for the order
    search only). Phases with σ = ∞ add nothing."""
    # T·ε(α) overflows to inf for astronomically many steps, not an error
    live = [(s, q, float(t) if t < 2**1023 else math.inf) for s, q, t in phases if math.isfinite(s)]

    def curve(orders: FloatArray, rough: bool = False) -> FloatArray:
        total = np.zeros(orders.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            for sigma, q, t in live:
                if how == "poisson":
                    rdp = _rdp_poisson(q, sigma, orders, rough)
                else:
                    rdp = _rdp_wor(q, sigma / 2.0, orders)
                total = total + np.where(rdp == 0.0, 0.0, t * rdp)
        return total

    return curve


def _dpsgd_curve(
    noise_multiplier: Any, sample_rate: Any, steps: Any, sampling: Any
) -> tuple[Callable[[FloatArray, bool], FloatArray], Sampling]:
    """The total RDP curve (α, rough) ↦ T·ε(α) after validation (DP-SGD's noise multiplier;
    ``rough`` sums the fractional series less far, for the order search only)."""
    sigma = _check_noise(noise_multiplier)
    q = _check_rate(sample_rate)
    t = check_steps("steps", steps)
    how = _check_sampling(sampling)
    return _schedule_curve([(sigma, q, t)], how), how


def _refine(
    curve: Callable[[FloatArray, bool], FloatArray], orders: FloatArray, values: FloatArray,
    objective: Callable[[FloatArray, FloatArray], FloatArray],
) -> tuple[float, float]:
    """Grid minimum of ``objective(rdp, orders)``, then a bounded scalar search (Brent) between
    the neighbours of the best order. Any order gives a valid bound, so the search runs on a
    cheaper curve (fractional series summed to 1e-7 instead of 1e-10) and only the order it
    finds is evaluated in full and kept if it beats the grid: this only tightens, most where
    the grid is coarse (64 to 1024)."""
    scores = objective(values, orders)
    best = int(np.argmin(scores))
    value, order = float(scores[best]), float(orders[best])
    if not math.isfinite(value) or value == 0.0 or orders.size < 2:
        return value, order
    srt = np.sort(orders)
    pos = int(np.searchsorted(srt, order))
    lo = float(srt[max(pos - 1, 0)])
    hi = float(srt[min(pos + 1, srt.size - 1)])

    def rough(alpha: float) -> float:
        a = np.array([alpha])
        return float(objective(curve(a, True), a)[0])

    found = optimize.minimize_scalar(
        rough, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6 * order}
    )
    a = np.array([float(found.x)])
    cand = float(objective(curve(a, False), a)[0])
    if cand < value:
        return cand, float(a[0])
    return value, order


def _best_order(
    curve: Any, alphas: FloatArray, objective: Any, *, refine: bool
) -> tuple[float, float]:
    """(min over orders of ``objective``, the order): on the grid, refined between the best
    grid order's neighbours when the grid is the default one (orders given are used as is)."""
    values = curve(alphas, False)
    if refine:
        best_value, order = _refine(curve, alphas, values, objective)
        return float(best_value), float(order)
    scores = objective(values, alphas)
    best = int(np.argmin(scores))
    return float(scores[best]), float(alphas[best])


def rdp_dpsgd_epsilon(
    noise_multiplier: Any,
    sample_rate: Any,
    steps: Any,
    delta: Any,
    sampling: Sampling = "poisson",
    orders: Any = None,
) -> Guarantee:
    """ε of DP-SGD by the RDP accountant: T steps of the subsampled Gaussian, then RDP ⇒ DP.

    ε = min_α [T ε_step(α) + log1p(-1/α) - (log δ + log α)/(α - 1)], with ε_step from
    :func:`rdp_subsampled_gaussian` (``sampling="poisson"``, add/remove neighbours; Mironov,
    Talwar, Zhang 2019, https://arxiv.org/abs/1908.10530) or
    :func:`rdp_sampled_without_replacement_gaussian` (``"without-replacement"``, substitution
    neighbours; Wang, Balle, Kasiviswanathan 2019, https://arxiv.org/abs/1808.00087, Thm 9),
    and the conversion of Balle et al. 2020 (https://arxiv.org/abs/1905.09982, Thm 21). With
    the default orders the grid minimum is refined by a bounded search between the best
    order's neighbours. Cost is independent of T.

    An upper bound, but not a tight one: the conversion from RDP loses ~5–10 % in ε for
    typical DP-SGD settings (and more at few steps) against the exact privacy profile.

    Args:
        noise_multiplier: σ > 0, DP-SGD's noise std over the clipping norm C. Without
            replacement, replacing one record moves the clipped-gradient sum by up to 2C, so the
            bound is evaluated at σ/2 relative to that substitution sensitivity.
        sample_rate: q ∈ (0, 1]: the Poisson rate, or batch size / dataset size.
        steps: T, an integer >= 1 (10⁹ is as fast as 1).
        delta: δ ∈ (0, 1).
        sampling: ``"poisson"`` (default) or ``"without-replacement"``.
        orders: Rényi orders in (1, 65536] to search (default: :data:`DEFAULT_RDP_ORDERS`
            and the refinement; given orders are searched exactly as given).

    Returns:
        Guarantee (upper bound) with ``epsilon`` and ``delta``; ``rule`` names the order used.

    Example:
        >>> g = rdp_dpsgd_epsilon(1.1, 256 / 60000, 14063, 1e-5)
        >>> round(g.epsilon, 4), g.kind
        (2.5966, 'upper bound')
    """
    curve, how = _dpsgd_curve(noise_multiplier, sample_rate, steps, sampling)
    d = float(check_parameter("delta", delta))
    alphas = _check_orders(DEFAULT_RDP_ORDERS if orders is None else orders)

    def objective(rdp: FloatArray, a: FloatArray) -> FloatArray:
        return _epsilons(rdp, a, d)

    eps, order = _best_order(curve, alphas, objective, refine=orders is None)
    return Guarantee(eps, d, "upper bound", _rule(how, order))


def rdp_dpsgd_delta(
    noise_multiplier: Any,
    sample_rate: Any,
    steps: Any,
    epsilon: Any,
    sampling: Sampling = "poisson",
    orders: Any = None,
) -> Guarantee:
    """δ of DP-SGD at a given ε by the RDP accountant (the inverse of
    :func:`rdp_dpsgd_epsilon`; :func:`rdp_to_delta` on the composed curve, refined likewise).

    Args:
        noise_multiplier: σ > 0, DP-SGD's noise std over the clipping norm (see
            :func:`rdp_dpsgd_epsilon` for sampling without replacement).
        sample_rate: q ∈ (0, 1].
        steps: T, an integer >= 1.
        epsilon: ε >= 0 (finite).
        sampling: ``"poisson"`` (default) or ``"without-replacement"``.
        orders: Rényi orders to search (default: :data:`DEFAULT_RDP_ORDERS` and refinement).

    Returns:
        Guarantee (upper bound) ``(epsilon, delta)``.

    Example:
        >>> g = rdp_dpsgd_delta(1.1, 256 / 60000, 14063, 2.6)
        >>> f"{g.delta:.3e}"
        '9.764e-06'
    """
    curve, how = _dpsgd_curve(noise_multiplier, sample_rate, steps, sampling)
    e = float(check_parameter("epsilon", epsilon))
    alphas = _check_orders(DEFAULT_RDP_ORDERS if orders is None else orders)

    def objective(rdp: FloatArray, a: FloatArray) -> FloatArray:
        return _log_deltas(rdp, a, e)

    log_d, order = _best_order(curve, alphas, objective, refine=orders is None)
    return Guarantee(e, math.exp(log_d), "upper bound", _rule(how, order))


def rdp_schedule_epsilon(
    phases: Sequence[tuple[float, float, int]], delta: float, sampling: Sampling = "poisson"
) -> Guarantee:
    """ε at δ of a DP-SGD schedule by the RDP accountant: the phases' curves Σ_i T_i ε_i(α)
    (each as in :func:`rdp_dpsgd_epsilon`) converted once (Balle et al. 2020 Thm 21,
    https://arxiv.org/abs/1905.09982), the best order refined as there.

    Args:
        phases: validated (σ, q, T) triples (σ = ∞ allowed: no loss).
        delta: δ ∈ (0, 1).
        sampling: ``"poisson"`` or ``"without-replacement"``.
    """
    how = _check_sampling(sampling)
    curve = _schedule_curve(phases, how)
    d = float(check_parameter("delta", delta))
    alphas = _check_orders(DEFAULT_RDP_ORDERS)

    def objective(rdp: FloatArray, a: FloatArray) -> FloatArray:
        return _epsilons(rdp, a, d)

    eps, order = _best_order(curve, alphas, objective, refine=True)
    return Guarantee(eps, d, "upper bound", _rule(how, order))


def rdp_schedule_delta(
    phases: Sequence[tuple[float, float, int]], epsilon: float, sampling: Sampling = "poisson"
) -> Guarantee:
    """δ at ε of a DP-SGD schedule by the RDP accountant (the inverse of
    :func:`rdp_schedule_epsilon`, by :func:`rdp_to_delta` on the summed curve)."""
    how = _check_sampling(sampling)
    curve = _schedule_curve(phases, how)
    e = float(check_parameter("epsilon", epsilon))
    alphas = _check_orders(DEFAULT_RDP_ORDERS)

    def objective(rdp: FloatArray, a: FloatArray) -> FloatArray:
        return _log_deltas(rdp, a, e)

    log_d, order = _best_order(curve, alphas, objective, refine=True)
    return Guarantee(e, math.exp(log_d), "upper bound", _rule(how, order))


def _rule(how: Sampling, order: float) -> str:
    if how == "poisson":
        source = "Poisson-subsampled Gaussian RDP (Mironov-Talwar-Zhang 2019, arXiv:1908.10530)"
    else:
        source = ("Gaussian RDP under sampling without replacement (Wang-Balle-Kasiviswanathan "
                  "2019 Thm 9, arXiv:1808.00087)")
    return (f"{source}; RDP to DP by Balle et al. 2020 Thm 21 (arXiv:1905.09982) at order "
            f"{order:.6g}")
