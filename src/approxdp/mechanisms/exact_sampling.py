"""Exact, vectorized samplers of the discrete Gaussian and discrete Laplace distributions.

Both follow Canonne et al. 2020 (https://arxiv.org/abs/2004.00010, Algorithms 2 and 3) but run
the rejection steps over whole NumPy int64 arrays at once instead of one Python loop per sample.
Requests of at most ``SMALL_BATCH`` values (scalar releases) run the same algorithm with Python
integers, one sample at a time, which avoids hundreds of tiny NumPy calls (about 30x faster for
one value).

Discrete Gaussian N_Z(0, σ²), P[Y = y] ∝ exp(−y²/(2σ²)) (Canonne et al., Alg. 3, merged)
    σ² is represented exactly as σ² = t·c/L with integers t ≥ 1, c ≥ 1 and L = 2^k. Propose
    U uniform on {0..t−1}, V with P[V = v] ∝ e^(−v), a fair sign S, and |Y| = tV + U; reject
    (S = −, |Y| = 0). Accept with probability exp(−(U/t + γ)), γ = (|Y| − σ²/t)²/(2σ²).
    Proposal × acceptance ∝ e^(−V − U/t − γ) = e^(−|y|/t − γ) = e^(−y²/(2σ²) − σ²/(2t²)), so
    accepted values are exactly N_Z(0, σ²) (their identity; folding their Bernoulli(e^(−U/t)) into
    the final test saves one round). In integers, U/t + γ = N/D with
        D = 2·L·t·c,   N = (|Y|·L − c)² + 2·U·L·c,
    and Bernoulli(e^(−N/D)) is :func:`~approxdp.mechanisms.bernoulli.bernoulli_exp_integer`
    (⌊N/D⌋ trials of e^(−1)) times :func:`~approxdp.mechanisms.bernoulli.bernoulli_exp_fraction`
    (N mod D over D). L is the largest power of two with 64·t·L ≤ 2^31, so for
    |Y| ≤ y_fast = (2^31 − c)/L every intermediate is below 2^63 (|A| ≤ 2^31, A² ≤ 2^62,
    D ≤ 2^52): the int64 arithmetic is exact. Candidates with |Y| > y_fast (probability about
    e^(−64) for σ ≤ 2^25) take a Python-integer path that runs the same test with unbounded
    integers. No float is used anywhere; acceptance ≈ (1 − e^(−1))√(2π)(σ/t)e^(−σ²/(2t²))/2 ≈ 0.48.

Discrete Laplace, P[Y = y] ∝ exp(−|y|·s/t) for integers s, t ≥ 1 (Canonne et al., Alg. 2)
    U uniform on {0..t−1}, keep with Bernoulli(e^(−U/t)); V as above; X = U + tV has
    P[X = x] ∝ e^(−x/t); Y = ⌊X/s⌋ has P ∝ e^(−ys/t); a fair sign, rejecting (−, 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError
from approxdp.mechanisms.bernoulli import (
    bernoulli_exp_fraction,
    bernoulli_exp_fraction_int,
    bernoulli_exp_integer,
    bernoulli_exp_integer_int,
    geometric_exp1,
    geometric_exp1_int,
)
from approxdp.mechanisms.randomness import RandomBits, uniform_below, uniform_below_int

__all__ = ["DiscreteGaussianSampler", "DiscreteLaplaceSampler"]

IntArray = npt.NDArray[np.int64]

_LIMIT_BITS = 31  # |A| ≤ 2^31 keeps A² + D below 2^63
SMALL_BATCH = 8  # at most this many values: the one-at-a-time Python-integer path
CHUNK = 1 << 16  # proposals per vectorized pass: keeps the temporaries in cache


@dataclass(frozen=True, slots=True)
class DiscreteGaussianSampler:
    """Exact sampler of N_Z(0, σ²) with σ² = t·c/L (integers; L a power of two).

    Build it with :meth:`at_least` from a float σ: σ² is rounded *up* onto the representable
    grid (relative change < 2^-24 for σ ≥ 1), so the noise is never smaller than asked.
    """

    t: int
    c: int
    L: int
    y_fast: int

    @classmethod
    def at_least(cls, sigma: float, *, y_fast: int | None = None) -> DiscreteGaussianSampler:
        """The sampler with the least representable σ' ≥ ``sigma`` (0 < sigma ≤ 2^30)."""
        if not (isinstance(sigma, (int, float)) and 0.0 < sigma <= 2.0**30):
            raise InvalidParameterError(f"sigma must be in (0, 2^30], got sigma={sigma!r}")
        t = max(1, round(sigma))
        shift = max(0, _LIMIT_BITS - (64 * t).bit_length())
        L = 1 << shift
        s2 = Fraction(sigma) ** 2
        c = max(1, math.ceil(s2 * L / t))
        fast = (2**_LIMIT_BITS - c) // L
        if y_fast is not None:
            fast = min(fast, y_fast)
        return cls(t=t, c=c, L=L, y_fast=max(fast, 0))

    @property
    def sigma_squared(self) -> Fraction:
        """The exact variance parameter σ² = t·c/L of the sampled distribution."""
        return Fraction(self.t * self.c, self.L)

    @property
    def sigma(self) -> float:
        """σ as a float (rounded; the exact value is ``sqrt(sigma_squared)``)."""
        return math.sqrt(self.sigma_squared)

    def sample(self, source: RandomBits, n: int) -> IntArray:
        """``n`` independent exact N_Z(0, σ²) values (int64)."""
        if n <= SMALL_BATCH:
            return np.array([self.sample_one(source) for _ in range(n)], dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            need = n - filled
            got = self._batch(source, min(need + need + 64, CHUNK))
            take = min(got.size, need)
            out[filled : filled + take] = got[:take]
            filled += take
        return out

    def sample_one(self, source: RandomBits) -> int:
        """One exact N_Z(0, σ²) value: the vectorized algorithm with Python integers."""
        t, c, L = self.t, self.c, self.L
        d = 2 * L * t * c
        while True:
            u = uniform_below_int(source, t)
            absy = t * geometric_exp1_int(source) + u
            negative = uniform_below_int(source, 2) == 1
            if negative and absy == 0:
                continue
            if bernoulli_exp_integer_int(source, (absy * L - c) ** 2 + 2 * L * c * u, d):
                return -absy if negative else absy

    def _batch(self, source: RandomBits, m: int) -> IntArray:
        t, c, L = self.t, self.c, self.L
        d = 2 * L * t * c
        u = uniform_below(source, t, m)
        v = geometric_exp1(source, m)
        negative = uniform_below(source, 2, m) == 1
        absy = t * v + u
        keep = ~(negative & (absy == 0))
        slow = keep & (absy > self.y_fast)
        fast = keep & ~slow
        fi = np.flatnonzero(fast)
        a = absy[fi] * L - c
        n_num = a * a + 2 * L * c * u[fi]
        q, r = np.divmod(n_num, d)
        acc = bernoulli_exp_integer(source, q)
        survivors = np.flatnonzero(acc)
        acc[survivors] = bernoulli_exp_fraction(source, r[survivors], d)
        accepted = np.zeros(m, dtype=np.bool_)
        accepted[fi] = acc
        for i in np.flatnonzero(slow).tolist():
            ay, ui = int(absy[i]), int(u[i])
            num = (ay * L - c) ** 2 + 2 * L * c * ui
            accepted[i] = bernoulli_exp_integer_int(source, num, d)
        y = np.where(negative, -absy, absy)
        return y[accepted]


@dataclass(frozen=True, slots=True)
class DiscreteLaplaceSampler:
    """Exact sampler of P[Y = y] ∝ exp(−|y|·s/t) on the integers (Canonne et al. 2020 Alg. 2)."""

    s: int
    t: int

    def __post_init__(self) -> None:
        if not (self.s >= 1 and 1 <= self.t <= 2**52):
            raise InvalidParameterError(
                f"s and t must be integers with s >= 1 and 1 <= t <= 2^52, got s={self.s}, "
                f"t={self.t}"
            )

    @classmethod
    def with_rate_at_most(
        cls, rate: Fraction, *, denominator_bits: int = 40
    ) -> DiscreteLaplaceSampler:
        """The sampler with rate s/t ≤ ``rate`` (t = 2^denominator_bits), i.e. noise never
        smaller than e^(−rate·|y|) asks for."""
        t = 1 << denominator_bits
        s = math.floor(rate * t)
        if s < 1:
            raise InvalidParameterError(
                f"rate must be at least 2^-{denominator_bits}, got rate={float(rate):g}"
            )
        return cls(s=s, t=t)

    @property
    def rate(self) -> Fraction:
        """The exact rate s/t: P[Y = y] ∝ exp(−rate·|y|)."""
        return Fraction(self.s, self.t)

    def sample(self, source: RandomBits, n: int, *, bound: int | None = None) -> IntArray:
        """``n`` independent values; with ``bound``, conditioned on |Y| ≤ bound (by rejection)."""
        if n <= SMALL_BATCH:
            values = [self.sample_one(source, bound=bound) for _ in range(n)]
            return np.array(values, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            need = n - filled
            got = self._batch(source, min(2 * need + 64, CHUNK))
            if bound is not None:
                got = got[np.abs(got) <= bound]
            take = min(got.size, need)
            out[filled : filled + take] = got[:take]
            filled += take
        return out

    def sample_one(self, source: RandomBits, *, bound: int | None = None) -> int:
        """One value (conditioned on |Y| ≤ bound if given), with Python integers."""
        while True:
            u = uniform_below_int(source, self.t)
            if not bernoulli_exp_fraction_int(source, u, self.t):
                continue
            y = (u + self.t * geometric_exp1_int(source)) // self.s
            negative = uniform_below_int(source, 2) == 1
            if (negative and y == 0) or (bound is not None and y > bound):
                continue
            return -y if negative else y

    def _batch(self, source: RandomBits, m: int) -> IntArray:
        u = uniform_below(source, self.t, m)
        keep = bernoulli_exp_fraction(source, u, self.t)
        u = u[keep]
        v = geometric_exp1(source, u.size)
        x = u + self.t * v  # v < 2^11 with overwhelming probability; checked below
        if v.size and int(v.max()) >= (2**62) // self.t:
            raise OverflowError("discrete Laplace proposal overflowed int64")
        y = x // self.s
        negative = uniform_below(source, 2, y.size) == 1
        ok = ~(negative & (y == 0))
        signed: IntArray = np.where(negative, -y, y)[ok]
        return signed
