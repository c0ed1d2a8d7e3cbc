"""Each step's discretizations, cached across passes and calls.

The grids of a history's passes are powers of 2^(1/4) (:func:`quantize`), so a step
discretized once at a grid step is reused by every later pass, direction and call at that
grid: the pessimistic connect-the-dots measure (Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380; :func:`~approxdp.accounting.pld.grid.discretize`), the
rounded loss of the lower bound (:func:`~approxdp.accounting.pld.grid.discretize_rounded`),
and a coarse copy for uncertified estimates (its mean, variance and support).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from approxdp.accounting.pld.compose import (
    DiscretePLD,
    RoundedPLD,
    discretize,
    discretize_rounded,
    tail_edge,
)
from approxdp.accounting.pld.grid import _edges
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.accounting.pld.window import Support, clear_supports

__all__ = [
    "STABLE_FROM",
    "Parts",
    "clear_caches",
    "coarse_moments",
    "coarse_support",
    "quantize",
]

Parts = Sequence[tuple[LossSource, int]]
_COARSE_POINTS = 4096
#: From this many composed steps the split is also formed without cancellation
#: (:func:`~approxdp.accounting.pld.grid.discretize`'s ``stable``): below it the plain split's
#: float guard shifts ε by < 3e-5 of itself (measured: 2.6e-5 at T = 10^8, 2e-7 at 10^7; 9e-4
#: at 10^10), while the second form costs 20–35 % of a mid-size call. (The lower bound's
#: long-double bin masses, :func:`~approxdp.accounting.pld.grid.discretize_rounded`'s
#: ``precise``, start at EXTENDED_FROM = 10^10 steps: below, the CDF differences' margin
#: costs < 1e-4 of the P-mass — bracket 0.071 % at T = 10^9 — and the series ~50 ms.)
STABLE_FROM = 10**8


def quantize(h: float, up: bool = False) -> float:
    """Round a grid step to a power of 2^(1/4), down by default (so discretizations can be
    cached across calls)."""
    k = 4.0 * math.log2(h)
    return float(2.0 ** ((math.ceil(k) if up else math.floor(k)) / 4.0))


@lru_cache(maxsize=256)
def _coarse(source: LossSource) -> tuple[DiscretePLD, float]:
    """A coarse discretization of ``source`` (about 4096 points over its 1e-14 tails) and the
    width of that range."""
    lo = tail_edge(source, 1e-9, 1e-14, upper=False)
    hi = tail_edge(source, 1e-9, 1e-14, upper=True)
    width = max(hi - lo, 1e-12)
    return discretize(source, width / _COARSE_POINTS, 1e-14), width


@lru_cache(maxsize=256)
def coarse_moments(source: LossSource) -> tuple[float, float, float]:
    """(mean, variance, width) of the finite loss under P, from a coarse discretization."""
    coarse, width = _coarse(source)
    mean, var = coarse.mean_var()
    return mean, var, width


@lru_cache(maxsize=256)
def coarse_support(source: LossSource) -> Support:
    """The :class:`Support` of the coarse discretization (for cheap, uncertified estimates)."""
    return Support(_coarse(source)[0])


@lru_cache(maxsize=256)
def _discretized(source: LossSource, h: float, tail: float, stable: bool) -> DiscretePLD:
    return discretize(source, h, tail, stable)


def _stable(parts: Parts) -> bool:
    """Whether a direction's steps are many enough for the stable split (:data:`STABLE_FROM`)."""
    return sum(c for _, c in parts) >= STABLE_FROM


@lru_cache(maxsize=64)
def _rounded(source: LossSource, h: float, tail: float, precise: bool) -> RoundedPLD:
    return discretize_rounded(source, h, tail, precise)


def clear_caches() -> None:
    """Forget every cached discretization (for benchmarks of cold calls, and tests)."""
    _coarse.cache_clear()
    coarse_moments.cache_clear()
    coarse_support.cache_clear()
    _discretized.cache_clear()
    _rounded.cache_clear()
    _edges.cache_clear()
    clear_supports()


def _step_tail(parts: Parts, tail: float) -> float:
    return tail / max(sum(c for _, c in parts), 1)
