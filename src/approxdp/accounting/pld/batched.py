"""The CDFs of many loss sources in one vectorized pass (a schedule's phases).

A schedule of many phases discretizes one loss source per phase and direction on each grid,
and probes each one's tails first (:func:`~approxdp.accounting.pld.grid.tail_edge`): one
:meth:`~approxdp.accounting.pld.privacy_loss.LossSource.cdfs` call per source and probe set,
most on arrays of a few hundred points — the call overhead, not the arithmetic, is the cost.
Here the sources' edges are concatenated and evaluated at once.

Poisson-subsampled Gaussians (DP-SGD's steps; Zhu, Dong, Wang 2022,
https://arxiv.org/abs/2106.08567, Thm 9) of one direction are evaluated together with each
element's own q and μ, by the very operations of
:meth:`~approxdp.accounting.pld.privacy_loss.SubsampledLoss.cdfs` in the same order, so the
values are bit-for-bit those of the sources one by one (tested); any other source is
evaluated on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.accounting.pld.privacy_loss import (
    GaussianLoss,
    LossCDF,
    LossSource,
    SubsampledLoss,
    log_expm1_or_minus_inf,
)

__all__ = ["cdfs_many", "tail_edges_many"]

FloatArray = npt.NDArray[np.float64]


def _batchable(source: LossSource) -> bool:
    return type(source) is SubsampledLoss and type(source.inner) is GaussianLoss


def cdfs_many(sources: Sequence[LossSource], edges: Sequence[FloatArray]) -> list[LossCDF]:
    """``[s.cdfs(e) for s, e in zip(sources, edges)]``, the subsampled Gaussians of each
    direction in one pass (the results are views into shared arrays)."""
    out: list[LossCDF | None] = [None] * len(sources)
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(sources):
        if _batchable(s) and len(sources) > 1:
            groups.setdefault(s.direction, []).append(i)  # type: ignore[attr-defined]
        else:
            out[i] = s.cdfs(edges[i])
    for direction, idx in groups.items():
        if len(idx) == 1:
            out[idx[0]] = sources[idx[0]].cdfs(edges[idx[0]])
            continue
        subs: list[SubsampledLoss] = [sources[i] for i in idx]  # type: ignore[misc]
        sizes = [int(np.asarray(edges[i]).size) for i in idx]
        e = np.concatenate([np.asarray(edges[i], dtype=np.float64) for i in idx])
        c = _subsampled_gaussian_cdfs(subs, sizes, direction, e)
        start = 0
        for i, n in zip(idx, sizes, strict=True):
            part = slice(start, start + n)
            out[i] = LossCDF(c.fp[part], c.sp[part], c.fq[part], c.sq[part])
            start += n
    return [c for c in out if c is not None]


def _subsampled_gaussian_cdfs(
    subs: Sequence[SubsampledLoss], sizes: Sequence[int], direction: str, e: FloatArray
) -> LossCDF:
    """:meth:`SubsampledLoss.cdfs` of each source on its segment of ``e`` (segment lengths
    ``sizes``): the same float operations, with q, μ and the scalars derived from them
    (computed per source exactly as the method does) repeated over each segment."""
    counts = np.asarray(sizes, dtype=np.intp)

    def rep(values: list[float]) -> FloatArray:
        return np.repeat(np.asarray(values, dtype=np.float64), counts)

    qs = [s.q for s in subs]
    mus = [s.inner.mu for s in subs]  # type: ignore[attr-defined]
    log1mq = [math.log1p(-q) for q in qs]
    q = rep(qs)
    one_minus_q = rep([1.0 - v for v in qs])
    lmq = rep(log1mq)
    # SubsampledLoss._inner_edges: f⁻¹(e) = log((e^e − 1 + q)/q), −inf at and below log(1 − q)
    arg = e if direction == "remove" else -e
    t = np.asarray(arg - lmq, dtype=np.float64)
    g, finite = log_expm1_or_minus_inf(t)
    g[finite] += rep([a - math.log(v) for a, v in zip(log1mq, qs, strict=True)])[finite]
    # GaussianLoss.cdfs of the inner edges
    mu = rep(mus)
    with np.errstate(invalid="ignore", over="ignore"):
        x = g / mu + rep([0.5 * m for m in mus])
    z = x - mu
    a_f, a_s = special.ndtr(z), special.ndtr(-z)
    b_f, b_s = special.ndtr(x), special.ndtr(-x)
    if direction == "remove":
        fp = q * a_f + one_minus_q * b_f
        sp = q * a_s + one_minus_q * b_s
        below = e < lmq
        return LossCDF(
            np.where(below, 0.0, fp),
            np.where(below, 1.0, sp),
            np.where(below, 0.0, b_f),
            np.where(below, 1.0, b_s),
        )
    fq = q * a_s + one_minus_q * b_s
    sq = q * a_f + one_minus_q * b_f
    above = e >= -lmq
    return LossCDF(
        np.where(above, 1.0, b_s),
        np.where(above, 0.0, b_f),
        np.where(above, 1.0, fq),
        np.where(above, 0.0, sq),
    )


def tail_edges_many(
    sources: Sequence[LossSource], h: float, tail: float, upper: bool
) -> list[float]:
    """``[tail_edge(s, h, tail, upper) for s in sources]``
    (:func:`~approxdp.accounting.pld.grid.tail_edge`: geometric probes, then a linear
    refinement), every source's probes evaluated in one :func:`cdfs_many` call per stage."""
    n = len(sources)
    if n == 0:
        return []
    inf_mass = [float(c.sp[0]) for c in cdfs_many(sources, [np.array([np.inf])] * n)]
    k = np.arange(0, 90, dtype=np.float64)
    probes = np.concatenate((-h * 2.0 ** k[::-1], [0.0], h * 2.0**k))

    def ok(values: Sequence[FloatArray]) -> list[npt.NDArray[np.bool_]]:
        cs = cdfs_many(sources, values)
        if upper:
            return [np.asarray(c.sp - m <= tail) for c, m in zip(cs, inf_mass, strict=True)]
        return [np.asarray(c.fp <= tail) for c in cs]

    goods = ok([probes] * n)
    fines: list[FloatArray] = []
    fallback: list[float] = []
    for good in goods:
        if upper:
            idx = int(np.argmax(good)) if bool(good.any()) else probes.size - 1
            lo = probes[idx - 1] if idx > 0 else probes[idx] - h
            fines.append(np.linspace(lo, probes[idx], 65))
        else:
            idx = int(np.nonzero(good)[0][-1]) if bool(good.any()) else 0
            hi = probes[idx + 1] if idx + 1 < probes.size else probes[idx] + h
            fines.append(np.linspace(probes[idx], hi, 65))
        fallback.append(float(probes[idx]))
    out = []
    for fine, g, back in zip(fines, ok(fines), fallback, strict=True):
        if not bool(g.any()):
            out.append(back)
        elif upper:
            out.append(float(fine[int(np.argmax(g))]))
        else:
            out.append(float(fine[int(np.nonzero(g)[0][-1])]))
    return out
