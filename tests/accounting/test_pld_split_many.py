"""split.split_many (grid.discretize_many's split of a schedule's sources, done on their
concatenated edges) gives every source's measure bit for bit as split._split one by one: on
real sources (subsampled Gaussians of both directions, thinned and unthinned grids, chunks of
several sources) and on synthetic CDF arrays that force the rare paths (several runs of
CDF-taken intervals, points without mass, slivers reaching past a step, mixed grid steps)."""

from __future__ import annotations

import numpy as np
import pytest

from approxdp.accounting.pld import split
from approxdp.accounting.pld.discrete import DiscretePLD
from approxdp.accounting.pld.grid import discretize, discretize_many
from approxdp.accounting.pld.loss_cdfs import CDFError, LossCDF
from approxdp.accounting.pld.privacy_loss import GaussianLoss, LaplaceLoss, SubsampledLoss


def _same(a: DiscretePLD, b: DiscretePLD) -> None:
    assert a.h == b.h and a.offset == b.offset
    assert a.pmf.shape == b.pmf.shape and np.array_equal(a.pmf, b.pmf)
    assert np.array_equal(np.signbit(a.pmf), np.signbit(b.pmf))
    assert a.spread is not None and b.spread is not None
    assert np.array_equal(a.spread, b.spread)
    assert a.guard == b.guard
    assert a.infinity_mass == b.infinity_mass


@pytest.mark.parametrize("h", [2e-3, 2e-4])
def test_discretize_many_is_discretize_one_by_one(h: float) -> None:
    sources = [
        SubsampledLoss(GaussianLoss(sigma), q, direction)
        for sigma, q in [(0.8, 0.01), (1.1, 256 / 60000), (1.5, 1e-3), (3.0, 0.1), (5.0, 1e-5)]
        for direction in ("remove", "add")
    ] + [SubsampledLoss(LaplaceLoss(1.0), 0.1, "add")]
    got = discretize_many(sources, h, 1e-12)
    assert len(got) == len(sources)
    for s, g in zip(sources, got, strict=True):
        _same(discretize(s, h, 1e-12), g)


def _synthetic(rng: np.random.Generator, n: int, kind: int) -> split.SplitInput:
    """A grid of n edges with CDF values whose smaller tail flips side several times."""
    h = [1e-3, 3e-3, 1e-2][kind % 3]
    i_lo = int(rng.integers(-50, 0))
    edges = (i_lo + np.arange(n)) * h
    fp = np.sort(rng.random(n)) * 0.5
    sp = np.sort(rng.random(n))[::-1] * 0.5
    if kind % 2:  # several flips of the smaller tail (several runs of CDF-taken intervals)
        sp = sp + 0.3 * np.sin(np.arange(n) / 3.0) ** 2
    fq = np.sort(rng.random(n)) * 0.6
    sq = np.sort(rng.random(n))[::-1] * 0.6
    if kind == 4:  # some intervals without mass: points left empty (the general lift placing)
        flat = rng.choice(n - 1, n // 5, replace=False)
        fp[flat + 1] = fp[flat]
        sp[flat + 1] = sp[flat]
        fp, sp = np.maximum.accumulate(fp), np.minimum.accumulate(sp)
    value = rng.random(n) * 1e-14
    moved = [0.0, 1e-10, 1e-12][kind % 3]
    shift = 0.6 * h if kind == 5 else 1e-9  # kind 5: slivers past half a step: +inf guard
    ce = CDFError(value=value, tiny=float(rng.random()) * 1e-300, moved=moved, shift=shift)
    dots = None
    if kind == 3:  # thinned dots: every point in the middle, every 4th in the tails
        dots = np.unique(np.concatenate((np.arange(0, 4 * n, 4)[: n // 3],
                                         4 * (n // 3) + np.arange(n)))).astype(np.intp)[:n]
        edges = (i_lo + dots) * h
        return (None, h, i_lo, int(dots[-1]) + 1, edges,  # type: ignore[return-value]
                LossCDF(fp, sp, fq, sq), ce, dots)
    return (None, h, i_lo, n, edges, LossCDF(fp, sp, fq, sq), ce, dots)  # type: ignore[return-value]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_many_is_split_one_by_one_on_synthetic_cdfs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = [_synthetic(rng, int(rng.integers(8, 400)), kind)
             for kind in range(6) for _ in range(3)]
    order = rng.permutation(len(items))
    items = [items[i] for i in order]
    got = split.split_many(items, False)
    assert len(got) == len(items)
    for (s, h, i_lo, n, e, c, ce, d), g in zip(items, got, strict=True):
        _same(split._split(s, h, i_lo, n, e, c, ce, False, d), g)


def test_split_many_chunks_and_single_sources() -> None:
    rng = np.random.default_rng(7)
    items = [_synthetic(rng, 3000, kind) for kind in (0, 1, 2, 4)] + [_synthetic(rng, 5, 1)]
    got = split.split_many(items, False)  # chunks of <= split._CHUNK edges, one of one source
    for (s, h, i_lo, n, e, c, ce, d), g in zip(items, got, strict=True):
        _same(split._split(s, h, i_lo, n, e, c, ce, False, d), g)
