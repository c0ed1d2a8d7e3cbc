"""Sources of random bits for the exact samplers.

The default source is the operating system's CSPRNG (``os.urandom``, i.e. ``getrandom(2)`` on
Linux, ``BCryptGenRandom`` on Windows) — the same source as :mod:`secrets`. Nothing is seeded
from it: every bit that decides a noise value is read from the OS. A NumPy
:class:`numpy.random.Generator` can be wrapped instead, for reproducible tests and simulations;
such a source reports ``secure = False`` and everything released with it is marked as a
simulation.

The samplers need only one primitive, :func:`uniform_below`: exactly uniform integers in
``[0, m)`` obtained by masking random words to ``bitlen(m - 1)`` bits and rejecting values
``>= m`` (no modulo bias; each accepted value is uniform and the accepted values are
independent, so keeping the first ``n`` of them is exact).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from approxdp.errors import ParameterTypeError

__all__ = [
    "GeneratorBits",
    "RandomBits",
    "SecureBits",
    "resolve_bits",
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


@dataclass(frozen=True, slots=True)
class SecureBits:
    """Random words read from the OS CSPRNG with ``os.urandom`` (what :mod:`secrets` uses)."""

    @property
    def secure(self) -> bool:
        return True

    def words(self, n: int, bits: int) -> npt.NDArray[np.unsignedinteger[Any]]:
        dtype = _dtype(bits)
        return np.frombuffer(os.urandom(n * (bits // 8)), dtype=dtype)


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


def _dtype(bits: int) -> type[np.unsignedinteger[Any]]:
    for width, dtype in _DTYPES:
        if bits == width:
            return dtype
    raise ValueError(f"bits must be 8, 16, 32 or 64, got {bits}")


def resolve_bits(rng: Any) -> RandomBits:
    """``None`` → the OS CSPRNG; a NumPy Generator → a reproducible, non-secure source.

    Raises:
        ParameterTypeError: for anything else (an int seed is refused on purpose: a seeded
            path must be asked for explicitly with ``np.random.default_rng(seed)``).
    """
    if rng is None:
        return SecureBits()
    if isinstance(rng, np.random.Generator):
        return GeneratorBits(rng)
    if isinstance(rng, (SecureBits, GeneratorBits)):
        return rng
    raise ParameterTypeError(
        f"rng must be None (OS CSPRNG) or a numpy.random.Generator, got {type(rng).__name__} "
        f"{rng!r}; for a reproducible simulation pass rng=numpy.random.default_rng(seed)"
    )


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


def uniform_below_int(source: RandomBits, m: int) -> int:
    """One exactly uniform Python integer in ``[0, m)`` for any ``m >= 1`` (slow path)."""
    if m == 1:
        return 0
    nbits = (m - 1).bit_length()
    nwords = -(-nbits // 64)
    while True:
        words = source.words(nwords, 64)
        value = 0
        for word in words.tolist():
            value = (value << 64) | int(word)
        value &= (1 << nbits) - 1
        if value < m:
            return value
