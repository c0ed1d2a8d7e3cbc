"""What the pessimistic discretization reads from a privacy-loss source: its four CDFs
(:class:`LossCDF`, the :class:`LossSource` protocol) and certified bounds on their
floating-point error.

``cdfs(e)`` values are rounded; the discretization's upper and lower bounds stay valid only if
that rounding is bounded and added (upper) or subtracted (lower). :class:`CDFError` carries the
bound per edge: a relative error of each CDF value (for the Gaussian sources SciPy's ``ndtr``
errs by ~z²u in the tails, :func:`_ndtr_error`, after the accuracy tables of Moshier 1989,
Cephes) and the effect of evaluating at a rounded preimage of the edge (:func:`sliver_guard`).
:func:`_moved_error` bounds the effect of a moved argument (Birnbaum 1942's Mills-ratio
bound); :func:`normal_interval` gives a normal interval mass to full relative accuracy with
a bound on its error (a Taylor series whose remainder Cramér's inequality bounds). The sources
themselves are in
:mod:`approxdp.accounting.pld.privacy_loss`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.accounting.pld.quiet import quiet

__all__ = [
    "CDFError",
    "LossCDF",
    "LossSource",
    "cdf_errors",
    "cdfs_with_errors",
    "loss_interval",
    "normal_cdf",
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


def _pinned(
    mask: npt.NDArray[np.bool_], low: float,
    fp: FloatArray, sp: FloatArray, fq: FloatArray, sq: FloatArray,
) -> LossCDF:
    """The CDFs (fp, sp, fq, sq), set where ``mask`` holds to F = ``low``, S = 1 − ``low``
    under both P and Q: at edges beyond which the loss never goes (a subsampled loss's
    log(1 − q) floor, low = 0, or −log(1 − q) ceiling, low = 1)."""
    high = 1.0 - low
    return LossCDF(
        np.where(mask, low, fp),
        np.where(mask, high, sp),
        np.where(mask, low, fq),
        np.where(mask, high, sq),
    )


def loss_interval(f: FloatArray, s: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The mass of each interval between consecutive edges from a CDF ``f`` and its survival
    function ``s`` at the edges, taken from whichever tail is smaller there (full relative
    accuracy in both tails), and the size of the values subtracted (its error is a few ulps
    of that)."""
    use_f = f[1:] <= s[:-1]
    mass = np.where(use_f, f[1:] - f[:-1], s[:-1] - s[1:])
    scale = np.where(use_f, f[1:], s[:-1])
    return np.maximum(mass, 0.0), scale


#: Smallest positive float64 (subnormal) times 16: the absolute error of a subnormal CDF value
#: (|z| ≳ 37.5, :func:`normal_cdf`: rounded to a subnormal, ≤ ½ ulp(0)), added to every CDF value's
#: error bound.
_TINY = 16.0 * 2.0**-1074


def normal_cdf(z: FloatArray) -> FloatArray:
    """Φ(z): SciPy's ``special.ndtr``, its underflow mended. Cephes' erfc returns 0 once
    x² = z²/2 exceeds log(DBL_MAX) (|z| > 37.68), where Φ(z) is still up to 5.9e-311 (measured
    against 40-digit mpmath: 1.2e13 ulp(0), which :data:`_TINY` does not cover; a test's
    Q-tail ~1e-309 at δ = 1e-300 lost 1e-4 of itself, and σ = 2, q = 0.05, T = 2, δ = 1e-300
    certified a lower ε above the truth). Those values are e^(log Φ(z)) (SciPy's
    ``log_ndtr``, asymptotic series there): within :func:`_ndtr_error` of the value plus the
    final rounding to a subnormal (measured on 340,000 z ∈ [−38.7, −37]). Every value that
    ``ndtr`` does not flush to 0 is kept as it is."""
    out = np.asarray(special.ndtr(z))
    zero = out == 0.0
    if zero.any():
        out = out.copy() if out.ndim == 0 else out
        with np.errstate(divide="ignore"):
            out[zero] = np.exp(special.log_ndtr(np.asarray(z)[zero]))
    return out


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
    with quiet():
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
    """Φ(z) and Φ(−z) = 1 − Φ(z), each computed directly (full relative accuracy:
    :func:`normal_cdf`)."""
    return normal_cdf(z), normal_cdf(-z)


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
    with quiet():
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
    with quiet():
        y = np.where(np.asarray(y, dtype=x.dtype) > x, np.nextafter(y, 0.0), y)
        return np.where(np.isfinite(y) & (y > 0.0), y, 0.0)


def _up(x: Any) -> FloatArray:
    """float64 values ≥ x (rounded toward +∞, NaN to +∞)."""
    y = np.asarray(x, dtype=np.float64)
    with quiet():
        y = np.where(np.asarray(y, dtype=x.dtype) < x, np.nextafter(y, np.inf), y)
        return np.where(np.isnan(y), np.inf, y)
