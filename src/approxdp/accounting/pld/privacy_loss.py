"""Privacy-loss distributions of single mechanisms, as cumulative distribution functions.

A mechanism's privacy is described by a *dominating pair* (P, Q) of distributions (Zhu, Dong,
Wang 2022, https://arxiv.org/abs/2106.08567, Def. 7): its privacy profile is the hockey-stick
divergence δ(ε) = sup_S P(S) − e^ε Q(S). The *privacy loss* is L = log(dP/dQ) under P
(Koskela, Jälkö, Honkela 2020, https://arxiv.org/abs/1906.03049, Sec. 3); δ(ε) =
E_P[(1 − e^(ε−L))₊] + P(L = ∞).

Each source here answers one question, vectorized over sorted loss values e:
``cdfs(e) -> LossCDF(FP, SP, FQ, SQ)``, with FP = P(L ≤ e), SP = P(L > e) and the same under
Q. Both tails are returned because each is computed directly (never as 1 − the other), so
interval masses in either tail keep their relative accuracy. That is all that the pessimistic
discretization (:mod:`approxdp.accounting.pld.compose`) needs.

Sources:

- :class:`GaussianLoss`: N(μ, 1) vs N(0, 1), μ = Δ/σ (loss μx − μ²/2; symmetric).
- :class:`LaplaceLoss`: Lap(1, 1/ε₀) vs Lap(0, 1/ε₀) (loss in [−ε₀, ε₀]; symmetric).
- :class:`DiscreteGaussianLoss`: N_Z(Δ, σ²) vs N_Z(0, σ²) for an integer Δ (Canonne, Kamath,
  Steinke 2020, https://arxiv.org/abs/2004.00010).
- :class:`EpsilonDeltaLoss`: the dominating pair of every (ε, δ)-DP mechanism (Kairouz, Oh,
  Viswanath 2017, https://arxiv.org/abs/1311.0776, Thm 2.1's four-point distributions).
- :class:`SubsampledLoss`: Poisson subsampling with rate q of a pair (A, B): the *remove*
  direction (qA + (1−q)B, B) and the *add* direction (B, qA + (1−q)B) (Zhu, Dong, Wang 2022,
  Thm 9); sampling without replacement under substitution uses the remove-direction pair alone
  (ibid. Thm 10; Balle, Barthe, Gaboardi 2018, https://arxiv.org/abs/1807.01647, Thm 9).

The outer loss of a subsampled pair is f(l) = log(1 − q + q e^l), a monotone function of the
inner loss l, so its CDFs follow from the inner ones at l = f⁻¹(e).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = [
    "DiscreteGaussianLoss",
    "EpsilonDeltaLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "LossCDF",
    "LossSource",
    "SubsampledLoss",
    "loss_interval",
    "normal_interval",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class LossCDF:
    """P(L ≤ e), P(L > e), Q(L ≤ e), Q(L > e) at each loss value e (arrays of one shape)."""

    fp: FloatArray
    sp: FloatArray
    fq: FloatArray
    sq: FloatArray


class LossSource(Protocol):
    """A privacy-loss distribution known through its CDFs under P and under Q."""

    def cdfs(self, edges: FloatArray) -> LossCDF:
        """The four tail functions at the sorted loss values ``edges`` (±inf allowed)."""
        ...

    @property
    def key(self) -> tuple[object, ...]:
        """A hashable identity (for caching discretizations)."""
        ...

    def __hash__(self) -> int:
        """Sources are frozen values: equal sources share cached discretizations."""
        ...


_U = float(np.finfo(np.float64).eps) / 2  # unit round-off


def loss_interval(f: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The mass of each interval between consecutive edges from a CDF ``f`` and its survival
    function ``s`` at the edges, taken from whichever tail is smaller there (full relative
    accuracy in both tails), and the size of the values subtracted (its error is a few ulps
    of that)."""
    use_f = f[1:] <= s[:-1]
    mass = np.where(use_f, f[1:] - f[:-1], s[:-1] - s[1:])
    scale = np.where(use_f, f[1:], s[:-1])
    return np.maximum(mass, 0.0), scale


def _normal_tails(z: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Φ(z) and Φ(−z) = 1 − Φ(z), each computed directly (full relative accuracy)."""
    return special.ndtr(z), special.ndtr(-z)


#: Terms of the Taylor series in :func:`normal_interval` (where it is used, d(|c| + 1) ≤ 1/4,
#: the remainder's bound is below 1e-18 of the mass for |c| ≤ 8; it is added to the error).
_SERIES_TERMS = 9
#: Cramér's bound |He_n(x)| ≤ κ √(n!) e^(x²/4), κ < 1.086435 (Abramowitz, Stegun 1964,
#: eq. 22.14.17, https://personal.math.ubc.ca/~cbm/aands/page_787.htm).
_CRAMER = 1.086435
_TWO_PI = "6.283185307179586476925286766559005768394"


def normal_interval(c: Any, d: Any) -> tuple[Any, Any]:
    """N(0, 1)'s mass of [c − d, c + d], to full *relative* accuracy where d is small, and a
    bound on its error (infinite where the series is not used: d(|c| + 1) > 1/4, or not
    finite), computed in the precision of ``c`` and ``d`` (float64 or long double, u its
    unit round-off).

    Φ(c + d) − Φ(c − d) = 2φ(c) Σ_j He_2j(c) d^(2j+1)/(2j+1)! (Taylor series of Φ about c,
    whose n-th derivative is (−1)^(n−1) He_(n−1) φ; He the probabilists' Hermite
    polynomials, He_(n+1) = x He_n − n He_(n−1)). Written as a difference of two CDF values
    near ½ it errs by u·½ absolute, i.e. u/(2φ(c)·2d) relative: at d = 0.01 that is ~10^-14,
    which 10^12 composed steps turn into 1 % of the mass. The error bound here: the series'
    remainder after the last term by Cramér's inequality (the terms then fall by ≥ d² each),
    the recurrence's rounding (≤ 4n·u of the same recurrence on |c|), the additions' (each
    at most the smaller of u·|sum| and the term added), φ(c)'s (3 + c²/2)u and the
    products', each doubled: ~(12 + 2c²)u relative where the mass matters."""
    dtype = np.result_type(c, d)
    dt = dtype.type
    u = float(np.finfo(dtype).eps) / 2
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        ok = np.isfinite(c) & np.isfinite(d) & (d > 0) & (d * (np.abs(c) + 1) <= 0.25)
        cc = np.where(ok, c, 0).astype(dtype)
        dd = np.where(ok, d, 0).astype(dtype)
        he_prev, he = np.ones_like(cc), cc.copy()  # He_0, He_1
        ab_prev, ab = np.ones_like(cc), np.abs(cc)  # the same recurrence on |c|
        d2 = dd * dd
        power = dd.copy()  # d^(2j+1)/(2j+1)!
        total = power.copy()  # j = 0: He_0 d
        rounding = np.zeros_like(cc)
        n = 1
        for j in range(1, _SERIES_TERMS):
            for _ in range(2):  # He_(n+1) from He_n, He_(n−1)
                he_prev, he = he, cc * he - n * he_prev
                ab_prev, ab = ab, np.abs(cc) * ab + n * ab_prev
                n += 1
            power = power * d2 / ((2 * j) * (2 * j + 1))
            term = he_prev * power  # he_prev is He_(2j) now
            total = total + term
            rounding = (rounding + 8 * n * u * ab_prev * power
                        + np.minimum(u * np.abs(total), np.abs(term)))
        root = np.sqrt(dt(_TWO_PI))  # (2π from its digits: float64's π is off by 4e-17)
        phi = np.exp(-cc * cc / 2) / root
        mass = 2 * phi * total
        k = 2 * _SERIES_TERMS  # the remainder: j ≥ _SERIES_TERMS, |He_2j| by Cramér
        tail = (2 * _CRAMER / root) * np.exp(-cc * cc / 4) * dd ** (
            k + 1
        ) / (math.sqrt(math.factorial(k)) * (k + 1) * (1 - d2))
        err = 2 * (2 * phi * rounding + np.abs(mass) * u * (4 + cc * cc) + tail)
        bad = ~ok | ~np.isfinite(mass) | ~np.isfinite(err) | (mass <= 0)
    return np.where(bad, 0, mass).astype(dtype), np.where(bad, np.inf, err).astype(dtype)


def _down(x: Any) -> FloatArray:
    """float64 values ≤ x (nonnegative; rounded toward 0, NaN to 0)."""
    y = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        y = np.where(np.asarray(y, dtype=x.dtype) > x, np.nextafter(y, 0.0), y)
        return np.where(np.isfinite(y) & (y > 0.0), y, 0.0)


def _up(x: Any) -> FloatArray:
    """float64 values ≥ x (rounded toward +∞, NaN to +∞)."""
    y = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        y = np.where(np.asarray(y, dtype=x.dtype) < x, np.nextafter(y, np.inf), y)
        return np.where(np.isnan(y), np.inf, y)


@dataclass(frozen=True, slots=True)
class GaussianLoss:
    """N(μ, 1) vs N(0, 1): the Gaussian mechanism with μ = Δ/σ (Balle, Wang 2018,
    https://arxiv.org/abs/1805.06530, Thm 8). The loss at x is μx − μ²/2, so L ~ N(μ²/2, μ²)
    under P and N(−μ²/2, μ²) under Q."""

    mu: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("gaussian", self.mu)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        mu = self.mu
        with np.errstate(invalid="ignore", over="ignore"):
            x = edges / mu + 0.5 * mu  # loss ≤ e ⟺ x ≤ e/μ + μ/2 (μ² is never formed)
        fp, sp = _normal_tails(x - mu)
        fq, sq = _normal_tails(x)
        return LossCDF(fp, sp, fq, sq)


@dataclass(frozen=True, slots=True)
class LaplaceLoss:
    """Lap(1, b) vs Lap(0, b) with ε₀ = 1/b: the Laplace mechanism at ε₀ = Δ/b (Dwork, Roth
    2014, https://doi.org/10.1561/0400000042, Thm 3.6). The loss is −ε₀ for x ≤ 0, ε₀(2x − 1)
    on [0, 1] and ε₀ for x ≥ 1: atoms of mass ½e^(−ε₀) and ½ at the ends under P."""

    epsilon: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("laplace", self.epsilon)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        e0 = self.epsilon
        inside = (edges >= -e0) & (edges < e0)
        below = edges < -e0
        t = np.where(inside, edges, 0.0)
        # inside: P(L <= e) = ½ e^((e − ε₀)/2), Q(L > e) = ½ e^(−(e + ε₀)/2)
        fp_in = 0.5 * np.exp(0.5 * (t - e0))
        sq_in = 0.5 * np.exp(-0.5 * (t + e0))
        fp = np.where(inside, fp_in, np.where(below, 0.0, 1.0))
        sp = np.where(inside, 1.0 - fp_in, np.where(below, 1.0, 0.0))
        sq = np.where(inside, sq_in, np.where(below, 1.0, 0.0))
        fq = np.where(inside, 1.0 - sq_in, np.where(below, 0.0, 1.0))
        return LossCDF(fp, sp, fq, sq)


@dataclass(frozen=True, slots=True)
class EpsilonDeltaLoss:
    """The dominating pair of all (ε, δ)-DP mechanisms (Kairouz, Oh, Viswanath 2017,
    https://arxiv.org/abs/1311.0776, Thm 2.1; Zhu, Dong, Wang 2022, Prop. 11).

    Under P: loss +∞ with mass δ, ε with (1−δ)e^ε/(1+e^ε), −ε with (1−δ)/(1+e^ε); Q is the
    mirror image (mass δ at loss −∞)."""

    epsilon: float
    delta: float

    @property
    def key(self) -> tuple[object, ...]:
        return ("epsilon-delta", self.epsilon, self.delta)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        eps, delta = self.epsilon, self.delta
        hi = (1.0 - delta) / (1.0 + math.exp(-eps))  # P-mass at +ε
        lo = (1.0 - delta) - hi  # P-mass at −ε
        # Q-masses: at +ε: lo, at −ε: hi, at −∞: δ
        fp = np.where(edges < -eps, 0.0, np.where(edges < eps, lo, lo + hi))
        sp = np.where(edges < -eps, 1.0, np.where(edges < eps, hi + delta, delta))
        fq = np.where(edges < -eps, delta, np.where(edges < eps, delta + hi, 1.0))
        sq = np.where(edges < -eps, 1.0 - delta, np.where(edges < eps, lo, 0.0))
        if eps == 0.0:  # the two atoms coincide at 0
            fp = np.where(edges < 0.0, 0.0, 1.0 - delta)
            sp = np.where(edges < 0.0, 1.0, delta)
            fq = np.where(edges < 0.0, delta, 1.0)
            sq = np.where(edges < 0.0, 1.0 - delta, 0.0)
        return LossCDF(fp, sp, fq, sq)


@dataclass(frozen=True, slots=True)
class DiscreteGaussianLoss:
    """N_Z(Δ, σ²) vs N_Z(0, σ²) for an integer Δ ≥ 1 (Canonne, Kamath, Steinke 2020,
    https://arxiv.org/abs/2004.00010, Thm 7): atoms at the losses (2kΔ − Δ²)/(2σ²), k ∈ Z.

    The support is enumerated over k within 40σ + Δ of the centres (the rest, below 1e-300,
    is placed on the pessimistic side: at loss +∞ under P). The PLD accountant uses it up to
    σ = 1e4 (an 8e5-atom table) and the event's certified (ε, δ) above."""

    sigma: float
    sensitivity: int

    @property
    def key(self) -> tuple[object, ...]:
        return ("discrete-gaussian", self.sigma, self.sensitivity)

    def cdfs(self, edges: FloatArray) -> LossCDF:
        losses, cum_p, tail_p, cum_q, tail_q = _discrete_gaussian_table(
            self.sigma, self.sensitivity
        )
        idx = np.searchsorted(losses, edges, side="right")  # atoms with loss <= e
        missing_p = max(0.0, 1.0 - float(cum_p[-1]))
        return LossCDF(cum_p[idx], tail_p[idx] + missing_p, cum_q[idx], tail_q[idx])


@lru_cache(maxsize=32)
def _discrete_gaussian_table(
    sig: float, d: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Losses and both cumulative tails of the two discrete Gaussians, built once per (σ, Δ)
    (the discretization asks for the CDFs many times)."""
    half = math.ceil(40.0 * sig) + 1
    k = np.arange(-half, d + half + 1, dtype=np.float64)
    logw_q = -(k * k) / (2.0 * sig * sig)
    logw_p = -((k - d) ** 2) / (2.0 * sig * sig)
    # both normalizers are the same sum over Z (shift by an integer); use Q's
    log_z = float(special.logsumexp(logw_q))
    wp, wq = np.exp(logw_p - log_z), np.exp(logw_q - log_z)
    losses = (2.0 * k * d - d * d) / (2.0 * sig * sig)
    cum_p = np.concatenate(([0.0], np.cumsum(wp)))
    cum_q = np.concatenate(([0.0], np.cumsum(wq)))
    tail_p = np.concatenate((np.cumsum(wp[::-1])[::-1], [0.0]))
    tail_q = np.concatenate((np.cumsum(wq[::-1])[::-1], [0.0]))
    return losses, cum_p, tail_p, cum_q, tail_q


@dataclass(frozen=True, slots=True)
class SubsampledLoss:
    """Poisson subsampling with rate q of an inner pair (A, B), one direction.

    ``direction="remove"``: (qA + (1−q)B, B), loss f(l) = log(1 − q + q e^l) ≥ log(1 − q).
    ``direction="add"``: (B, qA + (1−q)B), loss −f(l) ≤ −log(1 − q).
    (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9; Mironov, Talwar, Zhang
    2019, https://arxiv.org/abs/1908.10530, Sec. 3.)
    """

    inner: LossSource
    q: float
    direction: str = "remove"

    @property
    def key(self) -> tuple[object, ...]:
        return ("subsampled", self.inner.key, self.q, self.direction)

    def _inner_edges(self, e: FloatArray) -> FloatArray:
        """f⁻¹(e) = log((e^e − 1 + q)/q), −inf at and below log(1 − q), stably."""
        q = self.q
        log1mq = math.log1p(-q)
        t = np.asarray(e - log1mq, dtype=np.float64)  # e^e − (1−q) = (1−q)·expm1(t)
        out = np.full(t.shape, -np.inf)
        big = t > 1.0
        small = (t > 0.0) & ~big
        # log(expm1(t)): t + log(−expm1(−t)) above 1, the direct form below (both stable)
        out[big] = t[big] + np.log(-np.expm1(-t[big]))
        out[small] = np.log(np.expm1(t[small]))
        finite = big | small
        out[finite] += log1mq - math.log(q)
        return out

    def split_numerators(self, edges: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """For each interval (e_{k−1}, e_k] of the sorted outer losses ``edges``: p_k −
        e^(e_{k−1})·r_k (P- and Q-mass of the interval, as :meth:`cdfs` gives them), and a
        bound on its floating-point error — what the connect-the-dots split divides by
        1 − e^(−h) (:func:`~approxdp.accounting.pld.grid.discretize`).

        Written as p − e^e·r, the (1 − q)-part of the mixture cancels between two numbers of
        the interval's size: an error of the CDFs' size, divided by h (which grows to a mean
        shift that adds up over 10^12 steps). With e^e = 1 − q + q·c, c = e^(f⁻¹(e)) =
        (1 − q)·expm1(e − log(1 − q))/q, it is exactly q·(A_k − c·B_k) for the remove
        direction and q·e^e·(c'·B_k − A_k), c' = e^(f⁻¹(−e)), for the add direction, A_k and
        B_k the inner pair's masses of the interval: the (1 − q)-part is gone, and the error
        is q times smaller. For a Gaussian inner pair (None otherwise: the caller splits as
        usual), whose tails' error includes their argument's rounding: Φ(−z) moves by a
        relative z·δz for δz ≈ u·|z| (so 4z²u is added to the few ulps of the CDF).

        Returns:
            (numerators, error bounds), one per interval; an infinite bound where the
            numerator could not be formed (far out of float range).
        """
        if not isinstance(self.inner, GaussianLoss):
            return None
        q, mu = self.q, self.inner.mu
        log1mq = math.log1p(-q)
        left = edges[:-1]
        with np.errstate(over="ignore", invalid="ignore"):
            if self.direction == "remove":
                g = self._inner_edges(edges)
                c = self.inner.cdfs(g)
                a_mass, a_scale = loss_interval(c.fp, c.sp)
                b_mass, b_scale = loss_interval(c.fq, c.sq)
                t = left - log1mq
                outer = np.full(left.shape, q)
            else:
                g = self._inner_edges(-edges)
                c = self.inner.cdfs(g)
                a_mass, a_scale = loss_interval(c.sp, c.fp)
                b_mass, b_scale = loss_interval(c.sq, c.fq)
                t = -left - log1mq
                outer = q * np.exp(left)
            # the Gaussian's arguments (as GaussianLoss.cdfs forms them): z = x − μ under A,
            # x under B, x = g/μ + μ/2; the larger |z| of each interval's two ends
            x = np.where(np.isfinite(g), g / mu + 0.5 * mu, 0.0)
            za = np.maximum(np.abs(x[1:] - mu), np.abs(x[:-1] - mu))
            zb = np.maximum(np.abs(x[1:]), np.abs(x[:-1]))
            ulps_a = _U * (16.0 + 4.0 * za * za)
            ulps_b = _U * (16.0 + 4.0 * zb * zb)
            coef = (1.0 - q) * np.expm1(t) / q
            # coef's error: its own rounding, and t's (a rounded difference) times dcoef/dt
            err_coef = 8.0 * _U * np.abs(coef) + 2.0 * _U * (1.0 - q) * np.exp(t) / q * (
                np.abs(t) + 2.0 * abs(log1mq)
            )
            diff = a_mass - coef * b_mass
            if self.direction != "remove":
                diff = -diff
            num = outer * diff
            err = outer * (
                ulps_a * a_scale
                + np.abs(coef) * ulps_b * b_scale
                + err_coef * b_mass
                + 4.0 * _U * (a_mass + np.abs(coef) * b_mass)
            ) + 4.0 * _U * np.abs(num)
        bad = ~(np.isfinite(num) & np.isfinite(err))
        return np.where(bad, 0.0, num), np.where(bad, np.inf, err)

    def bin_bounds(self, edges: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """Certified (lower bounds on the P-masses, upper bounds on the Q-masses) of the
        outer-loss bins (e_{k−1}, e_k] between the sorted ``edges``, to nearly full relative
        accuracy where a bin is narrow in the inner Gaussian's coordinate x
        (:func:`normal_interval`, in extended precision where the platform has it, the
        results rounded outwards to float64): for the rounded loss of the lower bound
        (:func:`~approxdp.accounting.pld.grid.discretize_rounded`), whose CDF differences
        near the centre would lose ~u/(bin mass) each — over 10^12 steps, percent of the
        mass; this loses ~2u (the final rounding). The bin is the set of x between the
        edges' preimages x = f⁻¹(±e)/μ + μ/2 exactly as :meth:`GaussianLoss.cdfs` forms them
        in float64 (rounded: the bins are still a partition of the outcomes, which is all a
        test needs); its centre and half-width are taken in extended precision, their
        rounding (relative u_x on each, moving the mass by ≤ u_x(|c|(|c| + d) + 1)) added.
        None for a non-Gaussian inner pair; 0 and +∞ where the series is not used."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        q, mu = self.q, self.inner.mu
        g = self._inner_edges(edges if self.direction == "remove" else -edges)
        with np.errstate(invalid="ignore", over="ignore"):
            x = g / mu + 0.5 * mu
            lo, hi = (x[:-1], x[1:]) if self.direction == "remove" else (x[1:], x[:-1])
            dt = np.longdouble
            ux = float(np.finfo(dt).eps) / 2
            lo_x, hi_x = lo.astype(dt), hi.astype(dt)
            half = (hi_x - lo_x) / 2
            mid = (hi_x + lo_x) / 2
            mid_a = mid - dt(mu)
            a, a_err = normal_interval(mid_a, half)
            b, b_err = normal_interval(mid, half)
            # the centre's and half-width's rounding (relative ux each, twice for A's centre)
            a_err = a_err + a * 4 * ux * (
                (np.abs(mid) + dt(mu)) * (np.abs(mid_a) + half) + 1)
            b_err = b_err + b * 4 * ux * (np.abs(mid) * (np.abs(mid) + half) + 1)
            mix = dt(q) * a + (1 - dt(q)) * b
            mix_err = dt(q) * a_err + (1 - dt(q)) * b_err + 8 * ux * mix
            bad = ~(np.isfinite(a_err) & np.isfinite(b_err) & np.isfinite(mix_err))
            if self.direction == "remove":
                p, p_err, r, r_err = mix, mix_err, b, b_err
            else:
                p, p_err, r, r_err = b, b_err, mix, mix_err
            # (the last subtraction or addition and product round by ≤ ux each: 3ux covers
            # both, then the cast to float64 is rounded outwards)
            p_low = np.where(bad, 0.0, _down((p - p_err) * (1 - 3 * ux)))
            r_high = np.where(bad, np.inf, _up((r + r_err) * (1 + 3 * ux)))
        return p_low, r_high

    def cdfs(self, edges: FloatArray) -> LossCDF:
        q = self.q
        log1mq = math.log1p(-q)
        if self.direction == "remove":
            g = self._inner_edges(edges)
            c = self.inner.cdfs(g)
            fp = q * c.fp + (1.0 - q) * c.fq
            sp = q * c.sp + (1.0 - q) * c.sq
            fq, sq = c.fq, c.sq
            below = edges < log1mq  # every outer loss is >= log(1 − q)
            return LossCDF(
                np.where(below, 0.0, fp),
                np.where(below, 1.0, sp),
                np.where(below, 0.0, fq),
                np.where(below, 1.0, sq),
            )
        # add: outer loss −f(l) <= e  <=>  l >= f⁻¹(−e). Atoms exactly on an edge fall on the
        # same side under P and Q, which is all the discretization needs.
        g = self._inner_edges(-edges)
        c = self.inner.cdfs(g)
        fp = c.sq
        sp = c.fq
        fq = q * c.sp + (1.0 - q) * c.sq
        sq = q * c.fp + (1.0 - q) * c.fq
        above = edges >= -log1mq  # every outer loss is <= −log(1 − q)
        return LossCDF(
            np.where(above, 1.0, fp),
            np.where(above, 0.0, sp),
            np.where(above, 1.0, fq),
            np.where(above, 0.0, sq),
        )
