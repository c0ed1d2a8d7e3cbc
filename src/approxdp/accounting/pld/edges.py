"""The tail edges of a loss distribution that the pessimistic discretization's grid covers
(:mod:`approxdp.accounting.pld.grid`): :func:`tail_edge`, a loss beyond which at most a given
P-mass lies (geometric probes, then a linear refinement), and the cached, batched edges of
many sources at the probe scale of their grid step (:func:`_edges_many`, :func:`_edges_at`;
probed together by :func:`~approxdp.accounting.pld.batched.tail_edges_both`).

Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022 (https://arxiv.org/abs/2207.04380) for the
connect-the-dots discretization these grids serve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.batched import tail_edges_both
from approxdp.accounting.pld.privacy_loss import LossSource

__all__ = ["clear_edges", "tail_edge"]

FloatArray = npt.NDArray[np.float64]


def tail_edge(source: LossSource, h: float, tail: float, upper: bool) -> float:
    """A loss e with P(e < L < ∞) ≤ tail (upper) or P(L ≤ e) ≤ tail (lower), near the least
    such e (upper) or the greatest (lower): geometric probes, then a linear refinement."""
    inf_mass = float(source.cdfs(np.array([np.inf])).sp[0])
    k = np.arange(0, 90, dtype=np.float64)
    probes = np.concatenate((-h * 2.0 ** k[::-1], [0.0], h * 2.0**k))

    def ok(e: FloatArray) -> npt.NDArray[np.bool_]:
        c = source.cdfs(e)
        if upper:
            return np.asarray(c.sp - inf_mass <= tail)
        return np.asarray(c.fp <= tail)

    good = ok(probes)
    if upper:
        idx = int(np.argmax(good)) if bool(good.any()) else probes.size - 1
        lo = probes[idx - 1] if idx > 0 else probes[idx] - h
        fine = np.linspace(lo, probes[idx], 65)
        g = ok(fine)
        return float(fine[int(np.argmax(g))]) if bool(g.any()) else float(probes[idx])
    idx = int(np.nonzero(good)[0][-1]) if bool(good.any()) else 0
    hi = probes[idx + 1] if idx + 1 < probes.size else probes[idx] + h
    fine = np.linspace(probes[idx], hi, 65)
    g = ok(fine)
    return float(fine[int(np.nonzero(g)[0][-1])]) if bool(g.any()) else float(probes[idx])


#: (source, scale, tail) → the source's (lower, upper) tail edges (see :func:`_edges`)
_EDGES: dict[tuple[LossSource, float, float], tuple[float, float]] = {}
_EDGES_KEEP = 1024


def _edges(source: LossSource, scale: float, tail: float) -> tuple[float, float]:
    """(lower, upper) tail edges of ``source``, probed from the step ``scale`` (cached: the
    edges hardly depend on the grid, which then rounds them outwards)."""
    return _edges_many([source], scale, tail)[0]


def _edges_many(
    sources: Sequence[LossSource], scale: float, tail: float, also: float | None = None
) -> list[tuple[float, float]]:
    """:func:`_edges` of each source, those not cached probed together
    (:func:`~approxdp.accounting.pld.batched.tail_edges_both`); with ``also``, the edges at
    that tail are probed with them (from the same probes) and cached too."""
    tails = [tail] if also is None or also == tail else [tail, also]
    missing = [s for s in dict.fromkeys(sources)
               if any((s, scale, t) not in _EDGES for t in tails)]
    found = {s: _EDGES[(s, scale, tail)] for s in sources if (s, scale, tail) in _EDGES}
    if missing:
        inf_mass, los, his = tail_edges_both(missing, scale, tails)
        # (nearly) all mass at loss +∞, e.g. the vacuous pair: a 2-point grid
        mass = {s: 1.0 - m for s, m in zip(missing, inf_mass, strict=True)}
        for t, lo_t, hi_t in zip(tails, los, his, strict=True):
            new = {s: (min(lo, hi), hi) for s, lo, hi in zip(missing, lo_t, hi_t, strict=True)
                   if mass[s] > t}
            for s in missing:
                if t == tail:  # (a batch larger than the cache evicts its own entries)
                    found[s] = new.get(s, (0.0, 0.0))
                if len(_EDGES) >= _EDGES_KEEP:
                    _EDGES.pop(next(iter(_EDGES)))
                _EDGES[(s, scale, t)] = new.get(s, (0.0, 0.0))
    return [found[s] for s in sources]


def clear_edges() -> None:
    """Forget the cached tail edges."""
    _EDGES.clear()


def _edge_scale(h: float) -> float:
    # the probes' first step: the edges come out to about 1/128 of themselves whatever it is,
    # so one scale serves every grid from 16^-8 up (passes on several grids share the edges)
    return float(16.0 ** min(math.floor(math.log(h, 16.0)), -8))


def _edges_at(
    sources: Sequence[LossSource], hs: Sequence[float], tail: float, also: float | None = None
) -> list[tuple[float, float]]:
    """:func:`_edges` of each source at the probe scale of its grid step (and those at the
    tail ``also`` probed with them: :func:`_edges_many`)."""
    scales = [_edge_scale(step) for step in hs]
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(sources)
    for scale in dict.fromkeys(scales):
        idx = [i for i, sc in enumerate(scales) if sc == scale]
        for i, e in zip(idx, _edges_many([sources[i] for i in idx], scale, tail, also),
                        strict=True):
            out[i] = e
    return out
