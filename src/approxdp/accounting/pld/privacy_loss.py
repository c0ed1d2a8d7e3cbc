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
    "CDFError",
    "DiscreteGaussianLoss",
    "EpsilonDeltaLoss",
    "GaussianLoss",
    "LaplaceLoss",
    "LossCDF",
    "LossSource",
    "SubsampledLoss",
    "cdf_errors",
    "cdfs_with_errors",
    "loss_interval",
    "normal_interval",
    "sliver_guard",
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


#: Smallest positive float64 (subnormal) times 16: the absolute error SciPy's ``ndtr`` may make
#: where its value underflows (|z| ≳ 37.5), added to every CDF value's error bound.
_TINY = 16.0 * 2.0**-1074


def _ndtr_error(z: FloatArray) -> FloatArray:
    """A bound on the relative error of SciPy's ``special.ndtr`` (Cephes) at an argument of
    magnitude |z|, for the value itself (at its float argument): u·min(2 + 9z², 20 + 3z²).

    Cephes computes Φ(−|z|) for |z| ≥ √2 as erfc(x)/2, x = |z|/√2 rounded, erfc(x) =
    e^(−x²)·R(x): the rounding of x and x² is multiplied by x² in the exponential, a relative
    ~(3/2)z²u; for |z| < √2 as ½ + ½·erf(x), whose error (erf: 3.7e-16 peak) is divided by
    Φ(−|z|) ≥ Φ(−√2): ~u near 0, ≲ 19u at √2 (Moshier 1989, *Methods and Programs for
    Mathematical Functions*; the Cephes ``ndtr``/``erf``/``erfc`` accuracy tables). Measured
    against 40-digit mpmath on 130,000 arguments in [−37.5, 8], both tails: 1.1u at 0, at
    most 15.3u (near |z| = 1.35), 12.8u at 2.5 and u·(16 + 1.97z²) in the far tails; each of
    the two expressions bounds every measurement (by ≥ 1.2×), so their minimum does. Below
    z ≈ −37.5 the value is subnormal: :data:`_TINY` covers it (absolute)."""
    z2 = z * z
    return np.asarray(_U * np.minimum(2.0 + 9.0 * z2, 20.0 + 3.0 * z2))


def _moved_error(z: FloatArray, dz: FloatArray) -> FloatArray:
    """A bound on |Φ(z′)/Φ(z) − 1| for |z′ − z| ≤ dz, either tail (Φ(z) or Φ(−z)): the
    hazard φ(w)/Φ(w) is at most |w| + 1 for every w (φ(w)/Φ(−w) < (w + √(w² + 4))/2 for
    w ≥ 0: Birnbaum 1942, https://doi.org/10.1214/aoms/1177731611; ≤ φ(0)/Φ(0) < 0.8 on the
    other side), so |log Φ(z′) − log Φ(z)| ≤
    y = (|z| + dz + 1)·dz (mean value theorem) and the ratio is within expm1(y) ≤ y(1 + y)
    for y ≤ 1 (+∞ beyond)."""
    with np.errstate(over="ignore", invalid="ignore"):
        y = (np.abs(z) + dz + 1.0) * dz
        return np.asarray(np.where(y <= 1.0, y * (1.0 + y), np.inf))


@dataclass(frozen=True, slots=True)
class CDFError:
    """Error bounds of the four values a source's ``cdfs(edges)`` returns, per loss edge e.

    The CDFs are evaluated at a float preimage x̃ of e (the Gaussians': x = f⁻¹(e)/μ + μ/2,
    rounded on the way), not at the exact one x*: they are the masses of *cells* of the
    outcome space whose boundaries are within δx of the exact ones. Two errors follow.

    A partition into cells is all a test (the lower bound) needs: it uses ``value`` and
    ``tiny`` only. The connect-the-dots split (the upper bound) assumes each cell's losses
    lie in their grid interval: of the *sliver* between x̃ and x* (losses within ``shift`` of
    e), a share of at most expm1(shift)/(1 − e^(−h)) belongs across the edge and is moved up
    (:func:`sliver_guard`).

    Attributes:
        value: κ per edge: each value is within κ·(value) + ``tiny`` of the exact mass of
            its cell (the special function's own error; for a mixture, the rounding of the
            other component's argument and of the mixing).
        tiny: τ, absolute (subnormal values).
        moved: ρ: at every edge not listed in ``near``, the sliver holds at most ρ·(the
            smaller tail at e) of P-mass (Q likewise)...
        shift: ...and its losses are within ``shift`` of e.
        near: edges (indices) with their own bounds, where the preimage is ill-conditioned
            (the end of a subsampled pair's support): ``near_moved``, ``near_shift`` as
            above (+∞ where not known), and ``near_mass``, the P-mass of the whole region
            the sliver may span (sent to +∞ when the sliver may reach past a grid step).
    """

    value: FloatArray
    tiny: float = 0.0
    moved: float = 0.0
    shift: float = 0.0
    near: npt.NDArray[np.intp] | None = None
    near_moved: FloatArray | None = None
    near_shift: FloatArray | None = None
    near_mass: FloatArray | None = None


def sliver_guard(ce: CDFError, small: FloatArray, h: float) -> tuple[FloatArray | float, float]:
    """For connect-the-dots on the grid of step h
    (:func:`~approxdp.accounting.pld.grid.discretize`): per interval (e_k, e_(k+1)], the
    P-mass to add to its upper share for the sliver at its lower edge, and the P-mass to send
    to +∞ (the top edge's sliver, and any that may reach past a grid step).

    The sliver at edge e has mass m ≤ ρ·(smaller tail at e) and losses within δe of e. Only
    its cell is wrong; connect-the-dots is linear in the measure, and moving an atom at
    ℓ ∈ (e, e + δe] from the interval below e to the one above changes the split by at most
    m·expm1(δe)/(1 − e^(−h)) of mass that belongs one grid point higher (an atom on the
    other side of e likewise): moving that much up across e dominates (δe < h/2).

    Args:
        ce: the source's bounds at the edges.
        small: the smaller computed tail min(P(L ≤ e), P(L > e)) at each edge.
        h: the grid step.
    """
    denom = -math.expm1(-h)
    grow = 1.0 + float(ce.value.max(initial=0.0))
    lost = ce.moved * float(small[-1]) * grow + ce.tiny if small.size else 0.0
    guard: FloatArray | float = 0.0
    if ce.moved > 0.0:
        if ce.shift >= 0.5 * h:
            return math.inf, 1.0
        guard = (ce.moved * math.expm1(ce.shift) / denom) * (small[:-1] * grow + ce.tiny)
    if ce.near is not None and ce.near.size:
        assert ce.near_moved is not None and ce.near_shift is not None
        assert ce.near_mass is not None
        guard = np.asarray(guard + np.zeros(max(small.size - 1, 0)))
        for k, rho, dl, far in zip(ce.near.tolist(), ce.near_moved.tolist(),
                                   ce.near_shift.tolist(), ce.near_mass.tolist(), strict=True):
            if k < small.size - 1 and dl < 0.5 * h and math.isfinite(rho):
                guard[k] += rho * math.expm1(dl) / denom * (float(small[k]) * grow + ce.tiny)
            else:
                lost += far
    return guard, lost


def _gaussian_value_error(g_over_mu: FloatArray, mu: float, extra: float = 0.0) -> FloatArray:
    """κ per edge for Φ(±x) and Φ(±(x − μ)) as :meth:`GaussianLoss.cdfs` forms them at
    x = g/μ + μ/2 (``g_over_mu`` = x − μ/2, any sign, ±∞ allowed; overwritten): ``ndtr``'s
    own error (:func:`_ndtr_error`) and z = x − μ's rounding, A's cell against B's (relative
    expm1((Z + 1 + uZ)·uZ) ≤ u·Z(Z + 1)(1 + 10^-9)), together with a 10^-6 margin (cross
    terms, and x − μ/2 vs g/μ), Z = max(|x|, |x − μ|) = |x − μ/2| + μ/2; plus
    ``extra``·u (a mixture's own rounding). Z is capped at 40 + μ/2: beyond, both arguments
    exceed 38.5 and the values are subnormal (absolute error, :data:`_TINY`) or 1."""
    z = np.abs(g_over_mu, out=g_over_mu)
    np.minimum(z, 40.0, out=z)
    z += 0.5 * mu
    z2 = z * z
    out = 9.0 * z2
    out += 2.0
    np.minimum(out, 3.0 * z2 + 20.0, out=out)  # ndtr's own
    out += z2  # the rounding of z = x − μ: Z(Z + 1)
    out += z
    out += extra
    out *= _U * (1.0 + 1e-6)
    return out


def _sliver(zmax: float, dx: float, mu: float) -> tuple[float, float]:
    """(ρ, δe) for cells whose x is within ``dx`` of the exact preimage, |x| ≤ ``zmax``
    (:func:`_moved_error`; the losses μx − μ²/2, or a subsampled pair's outer loss, move by
    ≤ μ·dx)."""
    rho = float(_moved_error(np.array([min(zmax, 40.0 + mu)]), np.array([dx]))[0])
    return rho, mu * dx * (1.0 + 4.0 * _U)


def _ends(a: FloatArray) -> float:
    """max |a| over the finite entries of a sorted (either way) array."""
    if a.size and math.isfinite(float(a[0])) and math.isfinite(float(a[-1])):
        return max(abs(float(a[0])), abs(float(a[-1])))
    finite = a[np.isfinite(a)]
    return float(np.abs(finite).max(initial=0.0))


def cdf_errors(source: LossSource, edges: FloatArray) -> CDFError:
    """Per edge, the error bounds (:class:`CDFError`) of ``source.cdfs(edges)``.

    Sources with a ``cdf_error`` method give them (the Gaussian ones, whose ``ndtr`` errs by
    ~z²u — at z ≈ 7 up to 100u, where a flat few-ulp allowance would not cover it — and
    whose preimages of the edges are rounded); for the others a few ulps of the values
    (κ = 8u; their CDFs are elementary functions of the edge or table look-ups) and no
    sliver."""
    bound = getattr(source, "cdf_error", None)
    out = bound(edges) if bound is not None else None
    if isinstance(out, CDFError):
        return out
    return CDFError(np.full(edges.shape, 8.0 * _U))


def cdfs_with_errors(source: LossSource, edges: FloatArray) -> tuple[LossCDF, CDFError]:
    """``source.cdfs(edges)`` and :func:`cdf_errors` together (sources that can share the
    work give both from one evaluation of the preimages: ``cdfs_and_error``)."""
    both = getattr(source, "cdfs_and_error", None)
    if both is not None:
        out = both(edges)
        if out is not None:
            return out  # type: ignore[no-any-return]
    return source.cdfs(edges), cdf_errors(source, edges)


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

    def cdf_error(self, edges: FloatArray) -> CDFError:
        """Per edge, the error bounds of :meth:`cdfs` (:class:`CDFError`): x = e/μ + μ/2
        rounds twice, by ≤ u·(|e/μ| + |x|) ≤ u·(2|e|/μ + μ/2)."""
        return self.cdfs_and_error(edges)[1]

    def cdfs_and_error(self, edges: FloatArray) -> tuple[LossCDF, CDFError]:
        """:meth:`cdfs` and :meth:`cdf_error` from one evaluation of x."""
        mu = self.mu
        with np.errstate(invalid="ignore", over="ignore"):
            e_mu = edges / mu
            x = e_mu + 0.5 * mu
            value = _gaussian_value_error(e_mu, mu)
        fp, sp = _normal_tails(x - mu)
        fq, sq = _normal_tails(x)
        top = _ends(edges) / mu
        dx = _U * (2.0 * top + 0.5 * mu) * (1.0 + 8.0 * _U)
        rho, shift = _sliver(top + mu, dx, mu)
        return LossCDF(fp, sp, fq, sq), CDFError(value, _TINY, rho, shift)


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

    def _inner_error(self, e: FloatArray, g: FloatArray, extra: float = 0.0) -> CDFError:
        """:class:`CDFError` per outer edge e (sorted either way; already negated for the add
        direction) of the inner Gaussian's four CDF values at x = g/μ + μ/2, g = f⁻¹(e) as
        :meth:`_inner_edges` forms it (the sliver's outer losses are within μ·δx of e:
        |f′| ≤ 1); ``extra``·u is added to ``value`` (a mixture's rounding).

        x's error, first order in u with a margin (factors 1 + 8u): t = e − log(1 − q) errs
        by δt ≤ u(|t| + 2|log(1 − q)|) (log1p within 2u); G(t) = log(expm1(t)), evaluated
        within 4u + 2u|G|, moves by ≤ δt/(1 − e^(−(t − δt))) ≤ δt·(1 + 1/(t − δt))
        (|G′| = 1/(1 − e^(−t)), decreasing); the constant log(1 − q) − log q and the two
        additions add u(3|g| + 5|log(1 − q)| + 5|log q|); then x = g/μ + μ/2 adds
        u(|g/μ| + |x|). One bound (ρ, δe) serves every edge with t − δt ≥ |log(1 − q)|/256
        (the largest |e| and |g| among them); the edges nearer the end of the support get
        their own, and the mass of the region their sliver may span: Φ(x_hi), x_hi from
        t + δt with generous slack (for t ≤ δt the preimage is not known to exist at all)."""
        q, mu = self.q, self.inner.mu  # type: ignore[attr-defined]
        log1mq = math.log1p(-q)
        consts = 4.0 + 5.0 * abs(log1mq) + 5.0 * abs(math.log(q))
        ut = _U * (1.0 + 8.0 * _U)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            value = _gaussian_value_error(g / mu, mu, extra)
            t = e - log1mq  # monotone, as e
            dt_max = ut * (_ends(t) + 2.0 * abs(log1mq))
            floor = abs(log1mq) / 256.0
            # the regular edges: t ≥ floor + δt_max, one end of the (monotone) array
            rising = t.size < 2 or float(t[-1]) >= float(t[0])
            key = t if rising else t[::-1]
            cut = int(np.searchsorted(key, floor + dt_max, side="left"))
            start = int(np.searchsorted(key, -ut * 2.0 * abs(log1mq), side="right"))
            reg = g[cut:] if rising else g[::-1][cut:]
            g_top = _ends(reg)
            dg = (dt_max * (1.0 + 1.0 / floor) + _U * (3.0 * g_top + consts)) * (1.0 + 8.0 * _U)
            dx = (dg / mu + _U * (2.0 * g_top / mu + 0.5 * mu)) * (1.0 + 8.0 * _U)
            rho, shift = _sliver(g_top / mu + mu, dx, mu)
            near = np.arange(start, cut)
            if not rising:
                near = t.size - 1 - near
            near = near[np.isfinite(t[near])]
            if not near.size:
                return CDFError(value, _TINY, rho, shift)
            tn, gn = t[near], g[near]
            dtn = ut * (np.abs(tn) + 2.0 * abs(log1mq))
            low = tn - dtn
            slope = np.where(low > 0.0, 1.0 / -np.expm1(-np.maximum(low, 1e-300)), np.inf)
            dgn = (dtn * slope + _U * (3.0 * np.abs(gn) + consts)) * (1.0 + 8.0 * _U)
            dxn = np.where(
                np.isfinite(gn),
                (dgn / mu + _U * (2.0 * np.abs(gn) / mu + 0.5 * mu)) * (1.0 + 8.0 * _U),
                np.inf,
            )
            zn = np.minimum(np.where(np.isfinite(gn), np.abs(gn) / mu, np.inf), 40.0) + mu
            near_moved = _moved_error(zn, dxn)
            near_shift = mu * dxn * (1.0 + 4.0 * _U)
            g_hi = np.log(np.expm1(tn + dtn)) + (log1mq - math.log(q))
            x_hi = (g_hi + 1e-6 * (1.0 + np.abs(g_hi))) / mu + 0.5 * mu + 1e-6
            near_mass = 2.0 * special.ndtr(x_hi) + _TINY
        return CDFError(value, _TINY, rho, shift, near, near_moved, near_shift, near_mass)

    def cdf_error(self, edges: FloatArray) -> CDFError | None:
        """Per edge, the error bounds of :meth:`cdfs` (:class:`CDFError`): the inner
        Gaussian's (:meth:`_inner_error`) and the mixture's products, 1 − q and sum (4u) in
        ``value``. None for a non-Gaussian inner pair."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        e = edges if self.direction == "remove" else -edges
        return self._inner_error(e, self._inner_edges(e), 4.0)

    def cdfs_and_error(self, edges: FloatArray) -> tuple[LossCDF, CDFError] | None:
        """:meth:`cdfs` and :meth:`cdf_error` from one evaluation of the preimages (None
        for a non-Gaussian inner pair)."""
        if not isinstance(self.inner, GaussianLoss):
            return None
        e = edges if self.direction == "remove" else -edges
        g = self._inner_edges(e)
        return self._outer(edges, g), self._inner_error(e, g, 4.0)

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
        usual). The inner masses' errors are those of the masses of their cells
        (:meth:`_inner_error`'s value part: ``ndtr``'s own ~z²u, and z = x − μ's rounding,
        which moves Φ(−z) by a relative ~z·δz); the cells' offsets from the exact preimages
        of the edges are guarded by the caller, as for the plain split.

        Returns:
            (numerators, error bounds), one per interval; an infinite bound where the
            numerator could not be formed (far out of float range).
        """
        if not isinstance(self.inner, GaussianLoss):
            return None
        q = self.q
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
            # the inner CDF values' errors as masses of their cells (ndtr's own, z = x − μ's
            # rounding: :meth:`_inner_error`'s value part; the cells' offsets from the exact
            # preimages are the caller's sliver guard): each interval's mass errs by
            # ≤ 2·max(κ)·scale + 2·max(τ), plus its subtraction
            cells = self._inner_error(edges if self.direction == "remove" else -edges, g)
            kap = np.maximum(cells.value[1:], cells.value[:-1])
            tau = 2.0 * cells.tiny
            ulps_a = ulps_b = 4.0 * _U + 2.0 * kap
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
                + tau * (1.0 + np.abs(coef))
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
        return self._outer(
            edges, self._inner_edges(edges if self.direction == "remove" else -edges)
        )

    def _outer(self, edges: FloatArray, g: FloatArray) -> LossCDF:
        """The outer CDFs at ``edges`` from the inner preimages ``g`` (of ``edges``, or of
        ``-edges`` for the add direction)."""
        q = self.q
        log1mq = math.log1p(-q)
        if self.direction == "remove":
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
