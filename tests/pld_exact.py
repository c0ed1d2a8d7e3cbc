"""Exact references for the PLD tests: the loss sources' tails at a float loss e, from their
closed forms (40-digit mpmath), and integer convolution powers (Python integers, no round-off):
what the discretization and FFT-composition tests compare the float code against."""

from __future__ import annotations

import mpmath as mp
import numpy as np

from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    GaussianLoss,
    LaplaceLoss,
    LossSource,
    SubsampledLoss,
)

__all__ = ["exact_tails", "integer_power"]

_Tails = tuple[list[mp.mpf], list[mp.mpf], list[mp.mpf]]


def _discrete_gaussian_tails(src: DiscreteGaussianLoss) -> _Tails:
    """Atom losses and exact (40-digit) P- and Q-masses over k within 60σ + Δ."""
    sig, d = mp.mpf(src.sigma), src.sensitivity
    half = int(mp.ceil(60 * sig)) + 1
    ks = range(-half, d + half + 1)
    wq = [mp.exp(-mp.mpf(k) ** 2 / (2 * sig**2)) for k in ks]
    wp = [mp.exp(-mp.mpf(k - d) ** 2 / (2 * sig**2)) for k in ks]
    z = mp.fsum(wq)
    return [(2 * mp.mpf(k) * d - d * d) / (2 * sig**2) for k in ks], [w / z for w in wp], \
        [w / z for w in wq]


_DG: dict[object, _Tails] = {}


def exact_tails(src: LossSource, e: float) -> tuple[mp.mpf, mp.mpf]:
    """(P(L > e), Q(L > e)) at the float e, from the closed forms (40 digits)."""
    if isinstance(src, LaplaceLoss):
        e0, x = mp.mpf(src.epsilon), mp.mpf(e)
        if x < -e0:
            return mp.mpf(1), mp.mpf(1)
        if x >= e0:
            return mp.mpf(0), mp.mpf(0)
        return 1 - mp.exp((x - e0) / 2) / 2, mp.exp(-(x + e0) / 2) / 2
    if isinstance(src, EpsilonDeltaLoss):
        eps, dl, x = mp.mpf(src.epsilon), mp.mpf(src.delta), mp.mpf(e)
        hi, lo = (1 - dl) / (1 + mp.exp(-eps)), (1 - dl) / (1 + mp.exp(eps))
        if x < -eps:
            return mp.mpf(1), 1 - dl
        if x < eps:
            return hi + dl, lo
        return dl, mp.mpf(0)
    if isinstance(src, DiscreteGaussianLoss):
        losses, wp, wq = _DG.setdefault(src.key, _discrete_gaussian_tails(src))
        above = [i for i, l in enumerate(losses) if l > mp.mpf(e)]
        return mp.fsum(wp[i] for i in above), mp.fsum(wq[i] for i in above)
    if isinstance(src, GaussianLoss):
        mu = mp.mpf(src.mu)
        x = mp.mpf(e) / mu + mu / 2
        return mp.ncdf(-(x - mu)), mp.ncdf(-x)
    assert isinstance(src, SubsampledLoss) and isinstance(src.inner, GaussianLoss)
    mu, q = mp.mpf(src.inner.mu), mp.mpf(src.q)
    sign = 1 if src.direction == "remove" else -1
    arg = mp.exp(sign * mp.mpf(e)) - 1 + q
    if arg <= 0:  # beyond the support's end: remove, everything above; add, nothing
        return (mp.mpf(1), mp.mpf(1)) if sign == 1 else (mp.mpf(0), mp.mpf(0))
    x = mp.log(arg / q) / mu + mu / 2
    if sign == 1:  # (qA + (1 − q)B, B), loss increasing in x
        a_tail, b_tail = mp.ncdf(-(x - mu)), mp.ncdf(-x)
        return q * a_tail + (1 - q) * b_tail, b_tail
    a_low, b_low = mp.ncdf(x - mu), mp.ncdf(x)  # add: loss > e ⟺ x below the preimage of −e
    return b_low, q * a_low + (1 - q) * b_low


def integer_power(x: list[int], c: int) -> np.ndarray:
    """The c-fold convolution power of the integer sequence x, exactly (object-dtype Python
    integers, by repeated squaring)."""
    out, sq = np.array([1], dtype=object), np.array(x, dtype=object)
    while c:
        if c & 1:
            out = np.convolve(out, sq)
        c >>= 1
        if c:
            sq = np.convolve(sq, sq)
    return out
