"""Rényi-DP accounting of the subsampled Gaussian mechanism (DP-SGD), and RDP ⇒ (ε, δ).

One step of DP-SGD with Poisson sampling releases, for neighbours that differ by adding or
removing one record, the mixture μ = (1 - q) N(0, σ²) + q N(1, σ²) against μ₀ = N(0, σ²)
(noise multiplier σ = noise std / clipping norm, sampling rate q). Its Rényi divergence of
order α is (Mironov, Talwar, Zhang 2019, https://arxiv.org/abs/1908.10530, §3)

    ε(α) = log A_α / (α - 1),   A_α = E_{z~μ₀}[(μ(z)/μ₀(z))^α],

and A_α >= B_α = E_{z~μ}[(μ₀(z)/μ(z))^α] (shown in Mironov et al. 2019, and confirmed with mpmath at
every point of the tests' reference table), so ε(α) covers both directions. Composition over T
steps adds RDP: T·ε(α).

- **Integer α**, the binomial expansion of A_α (their §3), summed as
  A_α - 1 = Σ_{k>=2} C(α, k) (1-q)^(α-k) q^k (e^{k(k-1)/(2σ²)} - 1), whose terms are all
  positive (the k = 0, 1 terms and the 1 cancel exactly), so log A_α = log1p(A_α - 1) keeps its
  full relative precision even when A_α - 1 is 1e-12.
- **Fractional α**, the two-series method of their §3.3 (as in Opacus and TF-privacy's
  ``_compute_log_a_frac``): split the integral at z₀ = σ² log(1/q - 1) + 1/2 and expand each
  side binomially. Past k = ⌈α⌉ the terms alternate in sign with decreasing magnitude, so a
  partial sum that ends on a positive term is an *upper bound* on A_α; we sum signed terms (not
  their absolute values, which TF-privacy adds: a looser bound) and stop on a positive one.
- **q = 1** is the Gaussian mechanism: ε(α) = α/(2σ²).

Sampling *without replacement* of a fixed batch (substitution neighbours,
:mod:`approxdp.accounting.rdp.without_replacement`) uses the general upper
bound of Wang, Balle, Kasiviswanathan 2019 (https://arxiv.org/abs/1808.00087, Thm 9) with the
Gaussian's ε(j) = j/(2σ²), at integer orders; fractional orders interpolate (α - 1)ε(α)
linearly between the neighbouring integers (their Cor. 10, valid by convexity). Its noise
multiplier is relative to the substitution sensitivity (dp_accounting's convention); for DP-SGD,
where replacing a record moves the clipped-gradient sum by up to 2C, :func:`rdp_dpsgd_epsilon`
evaluates it at σ/2.

Conversion to (ε, δ), in :mod:`approxdp.accounting.rdp.conversion`: Balle, Barthe, Gaboardi,
Hsu, Sato 2020 (https://arxiv.org/abs/1905.09982,
Thm 21), in the form of Canonne, Kamath, Steinke 2020 (https://arxiv.org/abs/2004.00010,
Prop. 12):

    ε = ε_RDP(α) + log1p(-1/α) - (log δ + log α)/(α - 1),

minimized over the orders, together with (0, δ)-DP whenever δ >= sqrt(1 - e^{-ε_RDP(α)})
(KL ≤ D_α and the Bretagnolle–Huber bound on total variation). :func:`rdp_dpsgd_epsilon`
refines the best grid order by a bounded search between its neighbours (any order is a valid
bound): a few 1e-6 on the DP-SGD example, up to ~50 % where dp_accounting's grid is coarse
(orders 64–1024, e.g. one step at σ = 4, q = 1e-3).

Every RDP value is rounded up: each log-space term carries a running bound on its
floating-point error (a few ulp per unit of the magnitudes that formed it), which is added to
log A_α. The tests check the values against mpmath quadrature at 40 digits.
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp._validation import check_interval, check_parameter
from approxdp.errors import InvalidParameterError, UnknownMethodError

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "MAX_RDP_ORDER",
    "SAMPLINGS",
    "Sampling",
    "rdp_subsampled_gaussian",
]

FloatArray: TypeAlias = npt.NDArray[np.float64]
Sampling: TypeAlias = Literal["poisson", "without-replacement"]
SAMPLINGS: tuple[Sampling, ...] = ("poisson", "without-replacement")

#: The orders searched by default: dp_accounting's ``DEFAULT_RDP_ORDERS`` (1.1, 1.2, ..., 10.9,
#: then 11, ..., 63 and 128, 256, 512, 1024), so that the grid minimum is comparable.
DEFAULT_RDP_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)
#: The largest order accepted (the integer expansion has α + 1 terms).
MAX_RDP_ORDER = 65536.0

_EPS = float(np.finfo(np.float64).eps)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_TINY = float(np.nextafter(0.0, 1.0))
# Terms of one block of the integer expansion (orders x terms), to bound memory.
_BLOCK = 1 << 17
# Fractional series: alternating terms past ⌈α⌉ in the first round (x4 per round), at most.
_FRAC_FIRST = 64
_FRAC_MAX = 1 << 14
# Stop adding alternating terms once the bound's slack is below this fraction of log A.
_FRAC_RTOL = 1e-10
# The same, for the rough curve that the search for the best order runs on.
_FRAC_RTOL_ROUGH = 1e-7


# -- validation ------------------------------------------------------------------------------


def _check_noise(noise_multiplier: Any) -> float:
    arr = check_parameter("noise_multiplier", noise_multiplier, "sigma")
    if arr.ndim != 0:
        raise InvalidParameterError(
            f"noise_multiplier must be a single number, got an array of shape {arr.shape}"
        )
    return float(arr)


def _check_rate(sample_rate: Any) -> float:
    arr = check_parameter("sample_rate", sample_rate)
    if arr.ndim != 0:
        raise InvalidParameterError(
            f"sample_rate must be a single number, got an array of shape {arr.shape}"
        )
    return float(arr)


def _check_orders(orders: Any) -> FloatArray:
    arr = check_interval("orders", orders, 1.0, MAX_RDP_ORDER, low_open=True)
    if arr.ndim > 1 or arr.size == 0:
        raise InvalidParameterError(
            f"orders must be a non-empty 1-D sequence of numbers in (1, {MAX_RDP_ORDER:g}], "
            f"got shape {arr.shape}"
        )
    return np.atleast_1d(arr)


def _check_sampling(sampling: Any) -> Sampling:
    if sampling == "poisson":
        return "poisson"
    if sampling == "without-replacement":
        return "without-replacement"
    raise UnknownMethodError(f"sampling must be one of {SAMPLINGS}, got sampling={sampling!r}")


def _check_rdp(rdp: Any, orders: FloatArray) -> FloatArray:
    arr = np.atleast_1d(check_interval("rdp", rdp, 0.0, math.inf))
    if arr.shape != orders.shape:
        raise InvalidParameterError(
            f"rdp must have one value per order, got shape {arr.shape} for {orders.size} orders"
        )
    return arr


# -- small log-space helpers -----------------------------------------------------------------


def _log_expm1(y: FloatArray) -> FloatArray:
    """log(e^y - 1) for y > 0, without overflow."""
    with np.errstate(divide="ignore"):
        big = y > 30.0
        return np.where(big, y + np.log1p(-np.exp(-np.where(big, y, 30.0))),
                        np.log(np.expm1(np.where(big, 1.0, y))))


def _log_sum(
    log_mag: FloatArray, sign: FloatArray, err: FloatArray, exact: bool = False
) -> tuple[FloatArray, FloatArray]:
    """Row-wise log Σ sign·e^{log_mag} (the sum must be positive) and a bound on its absolute
    error: the terms' own errors ``err`` (absolute, in log) weighted by their share, plus the
    rounding of the sum: pairwise (numpy's, ~log2(n) ulp of the magnitudes) or, with
    ``exact``, correctly rounded (``math.fsum``; for sums near 1 whose log is tiny). Entries
    with log_mag = -inf are ignored."""
    top = np.max(log_mag, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore"):
        scaled = np.exp(log_mag - top)
        signed = sign * scaled
        magnitude = np.sum(scaled, axis=1)
        spread = np.sum(scaled * err, axis=1) + _EPS * magnitude  # + rounding of exp
    if exact:
        total = np.array([math.fsum(row) for row in signed.tolist()])
        rounding = _EPS * np.abs(total)
    else:
        total = np.sum(signed, axis=1)
        n = np.count_nonzero(log_mag > -np.inf, axis=1)
        rounding = 2.0 * _EPS * (np.log2(n + 1.0) + 8.0) * magnitude
    with np.errstate(divide="ignore", invalid="ignore"):
        log_total = np.log(total) + top[:, 0]
        bound = (spread + rounding) / total + 4.0 * _EPS * np.abs(log_total)
    return log_total, bound


def _round_up_rdp(
    log_a: FloatArray, err: FloatArray, orders: FloatArray, positive: npt.NDArray[np.bool_]
) -> FloatArray:
    """RDP = (log A + error bound) / (α - 1), clamped at 0 and nudged up. Where A > 1 is known
    (``positive``) but the value underflowed to 0, the smallest positive float (an upper bound,
    since then A - 1 < e^-745)."""
    with np.errstate(over="ignore", invalid="ignore"):
        up = np.maximum(log_a + err, 0.0)
        rdp = up / (orders - 1.0) * (1.0 + 4.0 * _EPS)
    rdp = np.where(np.isnan(rdp), np.inf, rdp)
    return np.where((rdp == 0.0) & positive, _TINY, rdp)


# -- Poisson subsampling: integer orders ------------------------------------------------------


def _blocks(orders: FloatArray) -> list[npt.NDArray[np.intp]]:
    """Indices of the integer orders grouped for one (orders x terms) matrix each: sorted, a
    new group once an order would more than double the group's width (little padding) or the
    matrix would pass :data:`_BLOCK` entries."""
    order_idx = np.argsort(orders)
    groups: list[npt.NDArray[np.intp]] = []
    start = 0
    while start < order_idx.size:
        first = orders[order_idx[start]] + 1.0
        stop = start + 1
        while stop < order_idx.size:
            width = orders[order_idx[stop]] + 1.0
            if width > max(2.0 * first, 64.0) or (stop - start + 1) * width > _BLOCK:
                break
            stop += 1
        groups.append(order_idx[start:stop])
        start = stop
    return groups


def _log_a_minus_1_int(
    q: float, sigma: float, orders: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """log(A_α - 1) and its error bound for integer orders α >= 2 (Mironov et al. §3).

    A_α - 1 = Σ_{k=2}^{α} C(α, k) (1-q)^(α-k) q^k expm1(k(k-1)/(2σ²)), all terms positive.
    """
    out = np.empty(orders.shape)
    err = np.empty(orders.shape)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    inv = 0.5 / (sigma * sigma)
    for idx in _blocks(orders):
        a = orders[idx][:, None]
        width = int(a[-1, 0]) + 1
        k = np.arange(2, width, dtype=np.float64)[None, :]
        valid = k <= a
        kk = np.where(valid, k, 2.0)
        g_a = special.gammaln(a + 1.0)
        g_k = special.gammaln(kk + 1.0)
        g_ak = special.gammaln(np.where(valid, a - kk, 0.0) + 1.0)
        y = kk * (kk - 1.0) * inv
        log_e = _log_expm1(y)
        parts = (g_a - g_k - g_ak, kk * log_q, (a - kk) * log_1mq, log_e)
        log_mag = np.where(valid, parts[0] + parts[1] + parts[2] + parts[3], -np.inf)
        scale = (np.abs(g_a) + np.abs(g_k) + np.abs(g_ak) + np.abs(parts[1])
                 + np.abs(parts[2]) + np.abs(log_e) + y + 1.0)
        l_total, bound = _log_sum(log_mag, np.ones_like(log_mag), 8.0 * _EPS * scale)
        out[idx] = l_total
        err[idx] = bound
    return out, err


def _rdp_poisson_int(q: float, sigma: float, orders: FloatArray) -> FloatArray:
    log_am1, err = _log_a_minus_1_int(q, sigma, orders)
    with np.errstate(over="ignore", under="ignore"):
        log_a = np.logaddexp(0.0, log_am1)
        # d log A = (A-1)/A d log(A-1)
        share = np.exp(log_am1 - log_a)
    return _round_up_rdp(log_a, err * share + 4.0 * _EPS * log_a, orders, log_am1 > -np.inf)


# -- Poisson subsampling: fractional orders ---------------------------------------------------


def _mills(x: FloatArray, log_ndtr_x: FloatArray) -> FloatArray:
    """d log Φ(x)/dx = φ(x)/Φ(x) for x >= 0 (how much an error in x moves log Φ)."""
    return np.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_ndtr_x)


def _frac_terms(
    q: float, sigma: float, a: FloatArray, k: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """log-magnitudes, signs and error bounds of the two series' terms (Mironov et al. §3.3)
    for orders ``a`` (a column) and term indices ``k`` = 0, 1, 2, ... (a row).

    Series 1 (z <= z₀): C(α,k) (1-q)^(α-k) q^k e^{(k²-k)/(2σ²)} Φ((z₀ - k)/σ); series 2
    (z >= z₀): C(α,k) (1-q)^k q^(α-k) e^{(j²-j)/(2σ²)} Φ((j - z₀)/σ) with j = α - k. Where the
    Φ argument is negative the Gaussian factor is combined with the exponent analytically
    (both become (1-q)^α e^{-z₀²/(2σ²)} erfcx(·)/2), so nothing large cancels. The error
    bounds are 4 machine epsilons per unit of each magnitude that went into a term, and of the
    propagated rounding of z₀.
    """
    s2 = sigma * sigma
    log_q, log_1mq = math.log(q), math.log1p(-q)
    u = log_1mq - log_q  # log((1-q)/q)
    z0 = s2 * u + 0.5
    # log|C(α, k)| = Σ_{i<k} log|α - i| - log(i + 1), summed along k (exact 0 at k = 0, and
    # the dominant small-k terms carry only their own few roundings); error: each log's, plus
    # the running sum's rounding, k ulp of the largest partial sum
    i = k[:, :-1] if k.shape[1] > 1 else k[:, :0]
    steps = np.log(np.abs(a - i)) - np.log(i + 1.0)
    zeros = np.zeros((a.shape[0], 1))
    log_c = np.concatenate([zeros, np.cumsum(steps, axis=1)], axis=1)
    step_err = np.abs(np.log(np.abs(a - i))) + np.log(i + 1.0) + 1.0
    e_c = np.concatenate([zeros, np.cumsum(step_err, axis=1)], axis=1) + k * (
        np.maximum.accumulate(np.abs(log_c), axis=1))
    ceil_a = np.ceil(a)
    sign = np.where(k <= ceil_a, 1.0, np.where(np.mod(k - ceil_a, 2.0) == 0.0, 1.0, -1.0))
    head = a * log_1mq - z0 * z0 / (2.0 * s2)
    e_head = np.abs(a * log_1mq) + z0 * z0 / s2
    root2 = math.sqrt(2.0)

    x1 = (z0 - k) / sigma
    near1 = x1 >= 0.0
    e_x1 = (abs(z0) + k) / sigma
    ln1 = special.log_ndtr(np.where(near1, x1, 0.0))
    t1_near = a * log_1mq - k * u + (k * k - k) / (2.0 * s2) + ln1
    e1_near = np.abs(a * log_1mq) + np.abs(k * u) + (k * k + k) / (2.0 * s2) + _mills(
        np.where(near1, x1, 0.0), ln1) * e_x1
    t1_far = head + np.log(0.5 * special.erfcx(np.where(near1, 0.0, -x1) / root2))
    e1_far = e_head + (1.0 + np.abs(x1)) * e_x1
    t1 = log_c + np.where(near1, t1_near, t1_far)
    e1 = 4.0 * _EPS * (e_c + np.where(near1, e1_near, e1_far) + 1.0)

    j = a - k
    x2 = (j - z0) / sigma
    near2 = x2 >= 0.0
    e_x2 = (abs(z0) + np.abs(j) + k) / sigma
    ln2 = special.log_ndtr(np.where(near2, x2, 0.0))
    t2_near = a * log_q + k * u + (j * j - j) / (2.0 * s2) + ln2
    e2_near = np.abs(a * log_q) + np.abs(k * u) + (j * j + np.abs(j)) / (2.0 * s2) + _mills(
        np.where(near2, x2, 0.0), ln2) * e_x2
    t2_far = head + np.log(0.5 * special.erfcx(np.where(near2, 0.0, -x2) / root2))
    e2_far = e_head + (1.0 + np.abs(x2)) * e_x2
    t2 = log_c + np.where(near2, t2_near, t2_far)
    e2 = 4.0 * _EPS * (e_c + np.where(near2, e2_near, e2_far) + 1.0)
    return t1, t2, sign, e1, e2


def _frac_round(
    q: float, sigma: float, a: FloatArray, extra: int, rtol: float
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """One round for the orders ``a`` (a column): both series summed to k = ⌈α⌉ + ``extra``
    (even, so the last kept term is positive); log A, its error bound, and whether the bound's
    slack (the first omitted terms) is within ``rtol`` of log A."""
    ceil_a = np.ceil(a)
    n_terms = int(np.max(ceil_a)) + extra + 2  # includes the first term left out
    k = np.arange(n_terms, dtype=np.float64)[None, :]
    last = ceil_a + extra
    keep = k <= last
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        t1, t2, sign, e1, e2 = _frac_terms(q, sigma, a, k)
        mags = np.concatenate([np.where(keep, t1, -np.inf), np.where(keep, t2, -np.inf)], axis=1)
        signs = np.concatenate([sign, sign], axis=1)
        errs = np.concatenate([e1, e2], axis=1)
        total, bound = _log_sum(mags, signs, errs, exact=True)
        nxt = k == last + 1.0
        omitted = np.logaddexp(np.max(np.where(nxt, t1, -np.inf), axis=1),
                               np.max(np.where(nxt, t2, -np.inf), axis=1))
        slack = np.exp(omitted - total)
    done = (slack <= rtol * np.maximum(total, 0.0)) | (extra >= _FRAC_MAX) | ~np.isfinite(total)
    return total, bound, done


def _rdp_poisson_frac(
    q: float, sigma: float, orders: FloatArray, rtol: float = _FRAC_RTOL
) -> FloatArray:
    """RDP at non-integer orders by the two series, each summed up to a positive term, with
    more terms (x4 per round, up to :data:`_FRAC_MAX` past ⌈α⌉) for the orders whose bound is
    not yet within ``rtol``; orders are processed in chunks of at most :data:`_BLOCK` terms."""
    log_a = np.empty(orders.shape)
    err = np.empty(orders.shape)
    todo = np.argsort(orders)
    extra = _FRAC_FIRST
    while todo.size:
        finished = np.zeros(todo.size, dtype=bool)
        start = 0
        while start < todo.size:
            rows = 1  # widest last (sorted): grow the chunk while it stays within _BLOCK
            while start + rows < todo.size and (rows + 1) * (
                math.ceil(float(orders[todo[start + rows]])) + extra + 2
            ) <= _BLOCK:
                rows += 1
            chunk = todo[start:start + rows]
            total, bound, done = _frac_round(q, sigma, orders[chunk][:, None], extra, rtol)
            log_a[chunk[done]] = total[done]
            err[chunk[done]] = bound[done]
            finished[start:start + rows] = done
            start += rows
        todo = todo[~finished]
        extra *= 4
    return _round_up_rdp(log_a, err, orders, np.ones(orders.shape, dtype=bool))


# -- public RDP curves ------------------------------------------------------------------------


def _rdp_poisson(
    q: float, sigma: float, orders: FloatArray, rough: bool = False
) -> FloatArray:
    if math.isinf(sigma):
        return np.zeros(orders.shape)
    cap = _gaussian_rdp(sigma, orders)
    cap = np.where(cap == 0.0, _TINY, cap)
    if q == 1.0 or sigma > 1e100:  # the cap below; the series would overflow (σ² log(1/q − 1))
        return cap
    out = np.empty(orders.shape)
    is_int = orders == np.floor(orders)
    if np.any(is_int):
        out[is_int] = _rdp_poisson_int(q, sigma, orders[is_int])
    if np.any(~is_int):
        rtol = _FRAC_RTOL_ROUGH if rough else _FRAC_RTOL
        out[~is_int] = _rdp_poisson_frac(q, sigma, orders[~is_int], rtol)
    # Subsampling never hurts: (qA + (1-q)B, B) and (B, qA + (1-q)B) are garblings of (A, B)
    # and (B, A) (keep the draw with probability q, else draw afresh from B), so the plain
    # Gaussian's α/(2σ²) caps both (and alone answers beyond σ = 1e100, where the series'
    # z₀ = σ² log(1/q - 1) overflows); where even α/(2σ²) underflows, the
    # smallest positive float is still above the truth.
    return np.minimum(np.where(np.isnan(out), np.inf, out), cap)


def _gaussian_rdp(sigma: float, orders: FloatArray) -> FloatArray:
    with np.errstate(over="ignore"):
        return orders / (2.0 * sigma * sigma) * (1.0 + 4.0 * _EPS)


def rdp_subsampled_gaussian(noise_multiplier: Any, sample_rate: Any, orders: Any = None) -> Any:
    """Rényi DP of one step of the Poisson-subsampled Gaussian mechanism (add/remove neighbours).

    ε(α) = log A_α / (α - 1) with A_α = E_{z~N(0,σ²)}[((1-q) + q e^{(2z-1)/(2σ²)})^α]
    (Mironov, Talwar, Zhang 2019, https://arxiv.org/abs/1908.10530, §3: the binomial expansion
    at integer α, the two-series method of §3.3 at fractional α; q = 1 gives the
    Gaussian's α/(2σ²)). Each value is an upper bound, rounded up to cover floating point.
    Over T steps the RDP is T times this (RDP composes additively).

    Args:
        noise_multiplier: σ > 0, the noise standard deviation over the ℓ2-sensitivity
            (clipping norm); ``inf`` gives 0.
        sample_rate: q ∈ (0, 1], the Poisson sampling probability of each record.
        orders: Rényi orders α ∈ (1, 65536] (default :data:`DEFAULT_RDP_ORDERS`).

    Returns:
        ε(α) for each order, a float64 array (``inf`` where it overflows).

    Raises:
        InvalidParameterError: σ ≤ 0 or NaN, q ∉ (0, 1], an order outside (1, 65536].

    Example:
        >>> rdp = rdp_subsampled_gaussian(1.1, 256 / 60000, [2, 8.5, 32])
        >>> tuple(f"{x:.6e}" for x in rdp)
        ('2.339578e-05', '1.049606e-04', '7.590188e+00')
    """
    sigma = _check_noise(noise_multiplier)
    q = _check_rate(sample_rate)
    alphas = _check_orders(DEFAULT_RDP_ORDERS if orders is None else orders)
    return _rdp_poisson(q, sigma, alphas)
