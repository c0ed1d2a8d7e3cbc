"""Each step's discretizations, cached across passes and calls.

The grids of a history's passes are powers of 2^(1/4) (:func:`quantize`), so a step
discretized once at a grid step is reused by every later pass, direction and call at that
grid: the pessimistic connect-the-dots measure (Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380; :func:`~approxdp.accounting.pld.grid.discretize`), the
rounded loss of the lower bound (:func:`~approxdp.accounting.pld.rounded.discretize_rounded`),
and a coarse copy for uncertified estimates (its mean, variance and support).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from approxdp.accounting.pld.batched import tail_edges_both
from approxdp.accounting.pld.edges import clear_edges
from approxdp.accounting.pld.grid import DiscretePLD, discretize_many
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.accounting.pld.rounded import RoundedPLD, discretize_rounded_many
from approxdp.accounting.pld.window import Support, clear_supports

__all__ = [
    "COARSE_TAIL",
    "STABLE_FROM",
    "Parts",
    "clear_caches",
    "coarse_moments",
    "coarse_support",
    "discretized_all",
    "prefetch_coarse",
    "quantize",
    "rounded_all",
]

Parts = Sequence[tuple[LossSource, int]]
_COARSE_POINTS = 4096
#: The coarse discretizations' tails (each side's P-mass left beyond their edges).
COARSE_TAIL = 1e-14
#: From this many composed steps the split is also formed without cancellation
#: (:func:`~approxdp.accounting.pld.grid.discretize`'s ``stable``): below it the plain split's
#: float guard shifts ε by < 3e-5 of itself (measured: 2.6e-5 at T = 10^8, 2e-7 at 10^7; 9e-4
#: at 10^10), while the second form costs 20–35 % of a mid-size call. (The lower bound's
#: long-double bin masses, :func:`~approxdp.accounting.pld.rounded.discretize_rounded`'s
#: ``precise``, start at EXTENDED_FROM = 10^10 steps: below, the CDF differences' margin
#: costs < 1e-4 of the P-mass — bracket 0.071 % at T = 10^9 — and the series ~50 ms.)
STABLE_FROM = 10**8


def quantize(h: float, up: bool = False) -> float:
    """Round a grid step to a power of 2^(1/4), down by default (so discretizations can be
    cached across calls)."""
    k = 4.0 * math.log2(h)
    return float(2.0 ** ((math.ceil(k) if up else math.floor(k)) / 4.0))


class _Cache:
    """A least-recently-used map of at most ``size`` entries (what ``functools.lru_cache``
    keeps, but filled a batch at a time)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict[tuple[object, ...], object] = {}

    def get(self, key: tuple[object, ...]) -> object | None:
        hit = self.data.pop(key, None)
        if hit is not None:
            self.data[key] = hit
        return hit

    def put(self, key: tuple[object, ...], value: object) -> None:
        self.data.pop(key, None)
        while len(self.data) >= self.size:
            self.data.pop(next(iter(self.data)))
        self.data[key] = value

    def get_all(
        self,
        keys: Sequence[tuple[object, ...]],
        compute: Callable[[list[tuple[object, ...]]], Sequence[object]],
    ) -> list[Any]:
        """The value of each key (repeats allowed), those not cached computed together by
        ``compute(missing keys)`` (one value per key, in order) and kept."""
        found = {k: self.get(k) for k in dict.fromkeys(keys)}
        missing = [k for k, hit in found.items() if hit is None]
        if missing:
            for k, value in zip(missing, compute(missing), strict=True):
                found[k] = value
                self.put(k, value)
        return [found[k] for k in keys]

    def clear(self) -> None:
        self.data.clear()


_COARSE = _Cache(256)
_DISCRETIZED = _Cache(256)
_ROUNDED = _Cache(64)
#: saddle-point estimates (:func:`~approxdp.accounting.pld.estimates.saddle_epsilon`), kept
#: here so that :func:`clear_caches` forgets them too
SADDLES = _Cache(64)
#: each step's uncertified estimates (:func:`~approxdp.accounting.pld.estimates.estimate_moments`)
ESTIMATES = _Cache(256)
#: the excess model's summed split spreads and guards per grid step
#: (:meth:`~approxdp.accounting.pld.estimates.ExcessModel.at`)
SPREADS = _Cache(256)


def _coarse(source: LossSource) -> tuple[DiscretePLD, float]:
    """A coarse discretization of ``source`` (about 4096 points over its 1e-14 tails) and the
    width of that range."""
    return _coarse_many([source])[0]


def _coarse_many(sources: Sequence[LossSource]) -> list[tuple[DiscretePLD, float]]:
    """:func:`_coarse` of each source; those not cached are probed and discretized together."""

    def compute(keys: list[tuple[object, ...]]) -> list[tuple[DiscretePLD, float]]:
        missing: list[LossSource] = [k[0] for k in keys]  # type: ignore[misc]
        _, (los,), (his,) = tail_edges_both(missing, 1e-9, [COARSE_TAIL])
        widths = [max(hi - lo, 1e-12) for lo, hi in zip(los, his, strict=True)]
        plds = discretize_many(missing, [w / _COARSE_POINTS for w in widths], COARSE_TAIL)
        return list(zip(plds, widths, strict=True))

    return _COARSE.get_all([(s,) for s in sources], compute)


def prefetch_coarse(sources: Sequence[LossSource]) -> None:
    """Compute the coarse discretizations of ``sources`` now, together (a schedule's phases:
    one vectorized pass instead of one per phase)."""
    _coarse_many(sources)


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


def _discretized(source: LossSource, h: float, tail: float, stable: bool) -> DiscretePLD:
    """The pessimistic discretization of ``source`` (cached)."""
    return discretized_all([(source, 1)], h, tail, stable)[0]


def discretized_all(
    parts: Parts, h: float, tail: float, stable: bool
) -> list[DiscretePLD]:
    """:func:`_discretized` of each part's source; those not cached discretized together
    (:func:`~approxdp.accounting.pld.grid.discretize_many`).

    A cached discretization of the same source, grid and split whose tail is at most
    ``tail`` serves too: its range reaches at least as far (the tail edges move out as the
    tail shrinks), so it is the same pessimistic discretization with less mass sent to +∞
    — as certified, and as close. (δ(ε)'s first pass uses a smaller tail than the excess
    model that follows it on the same grid.)"""

    def compute(missing: list[tuple[object, ...]]) -> list[DiscretePLD]:
        wider: dict[object, tuple[float, DiscretePLD]] = {}  # the largest tail ≤ ``tail``
        for key, value in _DISCRETIZED.data.items():
            source, step, cut, split = key
            if step == h and split == stable and isinstance(cut, float) and cut <= tail and (
                source not in wider or wider[source][0] < cut
            ):
                wider[source] = (cut, value)  # type: ignore[assignment]
        todo: list[LossSource] = [k[0] for k in missing if k[0] not in wider]  # type: ignore[misc]
        fresh = iter(discretize_many(todo, h, tail, stable) if todo else [])
        return [wider[k[0]][1] if k[0] in wider else next(fresh) for k in missing]

    return _DISCRETIZED.get_all([(s, h, tail, stable) for s, _ in parts], compute)


def _stable(parts: Parts) -> bool:
    """Whether a direction's steps are many enough for the stable split (:data:`STABLE_FROM`)."""
    return sum(c for _, c in parts) >= STABLE_FROM


def _rounded(source: LossSource, h: float, tail: float, precise: bool) -> RoundedPLD:
    """The rounded loss of ``source`` (cached)."""
    return rounded_all([(source, 1)], h, tail, precise)[0]


def rounded_all(parts: Parts, h: float, tail: float, precise: bool) -> list[RoundedPLD]:
    """:func:`_rounded` of each part's source; those not cached computed together."""
    return _ROUNDED.get_all(
        [(s, h, tail, precise) for s, _ in parts],
        lambda missing: discretize_rounded_many([k[0] for k in missing], h, tail, precise),  # type: ignore[misc]
    )


def clear_caches() -> None:
    """Forget every cached discretization (for benchmarks of cold calls, and tests)."""
    _COARSE.clear()
    coarse_moments.cache_clear()
    coarse_support.cache_clear()
    _DISCRETIZED.clear()
    _ROUNDED.clear()
    SADDLES.clear()
    ESTIMATES.clear()
    SPREADS.clear()
    clear_edges()
    clear_supports()


def _step_tail(parts: Parts, tail: float) -> float:
    """Each step's share of a history's left-out ``tail``, rounded down to a power of 2: a
    smaller tail is as certified (the range reaches further, less mass goes to +∞; the
    range grows by ~1 % at most), and a history that grows by a phase keeps its steps'
    discretizations cached (a training run asked for ε after every phase)."""
    share = tail / max(sum(c for _, c in parts), 1)
    if not 0.0 < share < math.inf:
        return share
    return math.ldexp(0.5, math.frexp(share)[1])
