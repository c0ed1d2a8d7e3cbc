"""Sources of random bits for the exact samplers.

The default source is the operating system's CSPRNG (``os.urandom``, i.e. ``getrandom(2)`` on
Linux, ``BCryptGenRandom`` on Windows) — the same source as :mod:`secrets`. Nothing is seeded
from it: every bit that decides a noise value is read from the OS. A NumPy
:class:`numpy.random.Generator` can be wrapped instead, for reproducible tests and simulations;
such a source reports ``secure = False`` and everything released with it is marked as a
simulation.

The samplers need two primitives. :func:`uniform_below` gives exactly uniform integers in
``[0, m)`` by masking random words to ``bitlen(m - 1)`` bits and rejecting values ``>= m`` (no
modulo bias; each accepted value is uniform and the accepted values are independent, so
keeping the first ``n`` of them is exact). :func:`bernoulli_ratio` gives Bernoulli(r/d) =
[U < r] for such a U without drawing all of its bits: it looks at the top 16 bits first and
draws the rest only on a tie with the top bits of r or d (probability about 2^-15).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = [
    "GeneratorBits",
    "RandomBits",
    "SecureBits",
    "bernoulli_ratio",
    "uniform_below",
    "uniform_below_int",
]

IntArray = npt.NDArray[np.int64]

_DTYPES: tuple[tuple[int, type[np.unsignedinteger[Any]]], ...] = (
    (8, np.uint8),
    (16, np.uint16),
    (32, np.uint32),
    (64, np.uint64),
)


class RandomBits(Protocol):
    """A source of independent uniformly random machine words."""

    @property
    def secure(self) -> bool:
        """True only when the words come from the operating system's CSPRNG."""

    def words(self, n: int, bits: int) -> npt.NDArray[np.unsignedinteger[Any]]:
        """``n`` independent uniform unsigned integers of ``bits`` in {8, 16, 32, 64} bits."""

    def integer(self, nbits: int) -> int:
        """One uniform Python integer in [0, 2^nbits), nbits ≥ 1."""


@dataclass(frozen=True, slots=True)
class SecureBits:
    """Random words read from the OS CSPRNG with ``os.urandom`` (what :mod:`secrets` uses)."""

    @property
    def secure(self) -> bool:
        return True

    def words(self, n: int, bits: int) -> npt.NDArray[np.unsignedinteger[Any]]:
        dtype = _dtype(bits)
        return np.frombuffer(os.urandom(n * (bits // 8)), dtype=dtype)

    def integer(self, nbits: int) -> int:
        nbytes = (nbits + 7) // 8
        return int.from_bytes(os.urandom(nbytes), "little") >> (8 * nbytes - nbits)


@dataclass(frozen=True, slots=True)
class GeneratorBits:
    """Random words from a NumPy Generator: reproducible, for tests and simulation only."""

    generator: np.random.Generator = field(repr=False)

    @property
    def secure(self) -> bool:
        return False

    def words(self, n: int, bits: int) -> npt.NDArray[np.unsignedinteger[Any]]:
        dtype = _dtype(bits)
        return self.generator.integers(0, np.iinfo(dtype).max, size=n, dtype=dtype, endpoint=True)

    def integer(self, nbits: int) -> int:
        raw = self.generator.bit_generator.random_raw
        nwords = (nbits + 63) // 64
        value = 0
        for _ in range(nwords):
            value = (value << 64) | int(raw())
        return value >> (64 * nwords - nbits)


def _dtype(bits: int) -> type[np.unsignedinteger[Any]]:
    for width, dtype in _DTYPES:
        if bits == width:
            return dtype
    raise ValueError(f"bits must be 8, 16, 32 or 64, got {bits}")


def uniform_below(source: RandomBits, m: int, n: int) -> IntArray:
    """``n`` exactly uniform integers in ``[0, m)`` for ``1 <= m <= 2**62`` (int64 array).

    Rejection sampling on ``bitlen(m - 1)``-bit words: acceptance probability > 1/2.
    """
    out = np.zeros(n, dtype=np.int64)
    if m == 1 or n == 0:
        return out
    nbits = (m - 1).bit_length()
    width = next(w for w, _ in _DTYPES if w >= nbits)
    mask = (1 << nbits) - 1
    exact_power = m == 1 << nbits
    filled = 0
    while filled < n:
        need = n - filled
        draw = need if exact_power else need + need // 2 + 16
        w = source.words(draw, width) & np.asarray(mask, dtype=_dtype(width))
        if not exact_power:
            w = w[w < m]
        take = min(w.size, need)
        out[filled : filled + take] = w[:take]
        filled += take
    return out


_HIGH_BITS = 16


def bernoulli_ratio(source: RandomBits, r: IntArray, d: int) -> npt.NDArray[np.bool_]:
    """Independent Bernoulli(r_i/d) trials, 0 ≤ r_i ≤ d ≤ 2**62: [U_i < r_i] with U_i uniform
    on [0, d), decided lazily.

    U is drawn as W uniform on [0, 2^b), b = bitlen(d − 1), rejected while W ≥ d. Split
    W = W_hi·2^(b−h) + W_lo (h = min(b, 16) top bits, independent uniform parts). With
    r_hi = ⌊r/2^(b−h)⌋ and d_hi = ⌊d/2^(b−h)⌋: W_hi < r_hi implies W < r ≤ d (True);
    r_hi < W_hi < d_hi implies r ≤ W < d (False); W_hi > d_hi implies W ≥ d (redraw). Only
    W_hi ∈ {r_hi, d_hi} needs W_lo, and then the full W decides exactly as above.
    """
    n = r.size
    if n == 0 or d == 1:
        return r >= 1 if d == 1 else np.zeros(n, dtype=np.bool_)
    b = (d - 1).bit_length()
    h = min(b, _HIGH_BITS)
    shift = b - h
    d_hi = d >> shift
    r_hi = (r >> shift).astype(np.int32)
    # First draw over the whole array: W_hi < r_hi decides True, r_hi < W_hi < d_hi decides
    # False; ties and W_hi > d_hi (a redraw) are rare and handled below.
    w_hi = (source.words(n, 16) >> np.uint16(16 - h)).astype(np.int32)
    out: npt.NDArray[np.bool_] = w_hi < r_hi
    idx = np.flatnonzero((w_hi == r_hi) | (w_hi >= d_hi))
    w_idx = w_hi[idx]
    while idx.size:
        rh = r_hi[idx]
        decided = w_idx < rh
        out[idx[decided]] = True
        decided |= (w_idx > rh) & (w_idx < d_hi)
        tie = ((w_idx == rh) | (w_idx == d_hi)) & ~decided
        if np.any(tie):
            tied = np.flatnonzero(tie)
            w = w_idx[tied].astype(np.int64) << shift
            if shift:
                w |= uniform_below(source, 1 << shift, tied.size)
            in_range = w < d
            pos = idx[tied[in_range]]
            out[pos] = w[in_range] < r[pos]
            decided[tied[in_range]] = True
        idx = idx[~decided]  # the rest redraw W from scratch
        w_idx = (source.words(idx.size, 16) >> np.uint16(16 - h)).astype(np.int32)
    return out


def uniform_below_int(source: RandomBits, m: int) -> int:
    """One exactly uniform Python integer in ``[0, m)`` for any ``m >= 1``: rejection on
    ``bitlen(m - 1)`` random bits (acceptance > 1/2)."""
    if m == 1:
        return 0
    nbits = (m - 1).bit_length()
    while True:
        value = source.integer(nbits)
        if value < m:
            return value
