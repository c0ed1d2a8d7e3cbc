"""The CDFs of many loss sources in one vectorized pass (a schedule's phases).

A schedule of many phases discretizes one loss source per phase and direction on each grid,
and probes each one's tails first (:func:`~approxdp.accounting.pld.edges.tail_edge`): one
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

from approxdp.accounting.pld.loss_cdfs import _normal_tails, _pinned
from approxdp.accounting.pld.privacy_loss import (
    CDFError,
    GaussianLoss,
    LossCDF,
    LossSource,
    SubsampledLoss,
    cdf_errors,
    cdfs_with_errors,
    log_expm1_or_minus_inf,
)

__all__ = ["cdfs_and_errors_many", "cdfs_many", "tail_edges_both"]

FloatArray = npt.NDArray[np.float64]


def _batchable(source: LossSource) -> bool:
    return type(source) is SubsampledLoss and type(source.inner) is GaussianLoss


def cdfs_many(sources: Sequence[LossSource], edges: Sequence[FloatArray]) -> list[LossCDF]:
    """``[s.cdfs(e) for s, e in zip(sources, edges)]``, the subsampled Gaussians of each
    direction in one pass (the results are views into shared arrays)."""
    return [c for c, _ in _many(sources, edges, False)]


def cdfs_and_errors_many(
    sources: Sequence[LossSource], edges: Sequence[FloatArray]
) -> list[tuple[LossCDF, CDFError]]:
    """``[cdfs_with_errors(s, e) for s, e in zip(sources, edges)]``: :func:`cdfs_many`, and
    each subsampled Gaussian's error bounds (:meth:`SubsampledLoss.cdf_error`) from the
    preimages its CDFs were computed from (the same values: not evaluated twice)."""
    return [(c, cdf_errors(s, e) if ce is None else ce)
            for (c, ce), s, e in zip(_many(sources, edges, True), sources, edges, strict=True)]


def _many(
    sources: Sequence[LossSource], edges: Sequence[FloatArray], errors: bool
) -> list[tuple[LossCDF, CDFError | None]]:
    out: list[tuple[LossCDF, CDFError | None] | None] = [None] * len(sources)
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(sources):
        if _batchable(s) and len(sources) > 1:
            groups.setdefault(s.direction, []).append(i)  # type: ignore[attr-defined]
        elif errors:
            out[i] = cdfs_with_errors(s, edges[i])
        else:
            out[i] = (s.cdfs(edges[i]), None)
    for direction, idx in groups.items():
        if len(idx) == 1:
            i = idx[0]
            out[i] = (cdfs_with_errors(sources[i], edges[i]) if errors
                      else (sources[i].cdfs(edges[i]), None))
            continue
        subs: list[SubsampledLoss] = [sources[i] for i in idx]  # type: ignore[misc]
        sizes = [int(np.asarray(edges[i]).size) for i in idx]
        e = np.concatenate([np.asarray(edges[i], dtype=np.float64) for i in idx])
        c, g = _subsampled_gaussian_cdfs(subs, sizes, direction, e)
        start = 0
        for i, sub, n in zip(idx, subs, sizes, strict=True):
            part = slice(start, start + n)
            ce = None
            if errors:  # (SubsampledLoss.cdf_error, on the preimages computed above)
                own = e[part] if direction == "remove" else -e[part]
                ce = sub._inner_error(own, g[part], 4.0)
            out[i] = (LossCDF(c.fp[part], c.sp[part], c.fq[part], c.sq[part]), ce)
            start += n
    return [c for c in out if c is not None]


def _subsampled_gaussian_cdfs(
    subs: Sequence[SubsampledLoss], sizes: Sequence[int], direction: str, e: FloatArray
) -> tuple[LossCDF, FloatArray]:
    """:meth:`SubsampledLoss.cdfs` of each source on its segment of ``e`` (segment lengths
    ``sizes``): the same float operations, with q, μ and the scalars derived from them
    (computed per source exactly as the method does) repeated over each segment; and the
    inner preimages g (:meth:`SubsampledLoss._inner_edges`, bit for bit)."""
    counts = np.asarray(sizes, dtype=np.intp)
    total = int(counts.sum())

    def rep(values: list[float]) -> FloatArray:
        if all(v == values[0] for v in values):  # (phases sharing q: no repeat needed)
            return np.full(total, values[0])
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
    g, _ = log_expm1_or_minus_inf(t)
    g += rep([a - math.log(v) for a, v in zip(log1mq, qs, strict=True)])  # (−∞ stays −∞)
    # GaussianLoss.cdfs of the inner edges
    mu = rep(mus)
    with np.errstate(invalid="ignore", over="ignore"):
        x = g / mu + rep([0.5 * m for m in mus])
    z = x - mu
    a_f, a_s = _normal_tails(z)
    b_f, b_s = _normal_tails(x)
    if direction == "remove":
        fp = q * a_f + one_minus_q * b_f
        sp = q * a_s + one_minus_q * b_s
        below = e < lmq
        if not below.any():
            return LossCDF(fp, sp, b_f, b_s), g
        return _pinned(below, 0.0, fp, sp, b_f, b_s), g
    fq = q * a_s + one_minus_q * b_s
    sq = q * a_f + one_minus_q * b_f
    above = e >= -lmq
    if not above.any():
        return LossCDF(b_s, b_f, fq, sq), g
    return _pinned(above, 1.0, b_s, b_f, fq, sq), g


def tail_edges_both(
    sources: Sequence[LossSource], h: float, tails: Sequence[float]
) -> tuple[list[float], list[list[float]], list[list[float]]]:
    """(each source's P-mass at loss +∞, its lower edges, its upper edges; the edges one list
    per tail, each ``[tail_edge(s, h, tail, upper) for s in sources]``
    (:func:`~approxdp.accounting.pld.edges.tail_edge`: geometric probes, then a linear
    refinement)): both sides at every tail from one evaluation of the probes (+∞ among them)
    and one of every refinement — the same values, the CDFs being evaluated point by point
    (two calls instead of six: a cold call's tails are probed for one or two sources)."""
    inf_mass, sides = _tail_edges(sources, h, tails)
    return inf_mass, sides[False], sides[True]


def _tail_edges(
    sources: Sequence[LossSource], h: float, tails: Sequence[float]
) -> tuple[list[float], dict[bool, list[list[float]]]]:
    """The P-mass at +∞ of each source and, for each side (True: upper), the edges at each
    tail (see :func:`~approxdp.accounting.pld.edges.tail_edge`: the same probes, refinements
    and choices, taken for all sources at once)."""
    sides = (False, True)
    n = len(sources)
    if n == 0:
        return [], {upper: [[] for _ in tails] for upper in sides}
    k = np.arange(0, 90, dtype=np.float64)
    probes = np.concatenate((-h * 2.0 ** k[::-1], [0.0], h * 2.0**k))
    last = probes.size - 1
    at = cdfs_many(sources, [np.concatenate((probes, [np.inf]))] * n)
    inf_mass = np.array([c.sp[-1] for c in at])
    sp = np.stack([c.sp[:-1] for c in at]) - inf_mass[:, None]
    fp = np.stack([c.fp[:-1] for c in at])
    rows = np.arange(n)
    los: list[FloatArray] = []
    his: list[FloatArray] = []
    backs: list[FloatArray] = []
    for upper in sides:
        for tail in tails:
            good = sp <= tail if upper else fp <= tail
            found = good.any(axis=1)
            if upper:  # the first probe inside the tail, refined between it and the one below
                idx = np.where(found, good.argmax(axis=1), last)
                hi = probes[idx]
                lo = np.where(idx > 0, probes[np.maximum(idx - 1, 0)], hi - h)
            else:  # the last one inside, refined up to the one above
                idx = np.where(found, last - good[:, ::-1].argmax(axis=1), 0)
                lo = probes[idx]
                hi = np.where(idx < last, probes[np.minimum(idx + 1, last)], lo + h)
            los.append(lo)
            his.append(hi)
            backs.append(lo if not upper else hi)
    lo_all, hi_all = np.concatenate(los), np.concatenate(his)
    if bool(np.any((hi_all - lo_all) / 64 == 0.0)):  # (np.linspace's denormal branch)
        fines = np.stack([np.linspace(a, b, 65) for a, b in zip(lo_all, hi_all, strict=True)])
    else:  # the same values as np.linspace(lo, hi, 65) row by row
        fines = np.linspace(lo_all, hi_all, 65, axis=1)
    at_fines = cdfs_many(list(sources) * (len(sides) * len(tails)), list(fines))
    out: dict[bool, list[list[float]]] = {}
    j = 0
    for upper in sides:
        out[upper] = []
        for tail in tails:
            part = slice(j * n, (j + 1) * n)
            cs = at_fines[part]
            if upper:
                good = np.stack([c.sp for c in cs]) - inf_mass[:, None] <= tail
                pick = good.argmax(axis=1)
            else:
                good = np.stack([c.fp for c in cs]) <= tail
                pick = 64 - good[:, ::-1].argmax(axis=1)
            edge = np.where(good.any(axis=1), fines[part][rows, pick], backs[j])
            out[upper].append([float(x) for x in edge])
            j += 1
    return inf_mass.tolist(), out
