"""Many loss sources discretized in one vectorized pass (:mod:`approxdp.accounting.pld.batched`,
:func:`~approxdp.accounting.pld.grid.discretize_many`): a schedule's phases must get exactly the
measures they get one by one — every certified bound is built on them — so the batched CDFs,
tail edges and discretizations are compared bit for bit with the per-source ones."""

from __future__ import annotations

import numpy as np
import pytest

from approxdp.accounting.pld import discretized, grid
from approxdp.accounting.pld import edges as grid_edges
from approxdp.accounting.pld.batched import (
    cdfs_and_errors_many,
    cdfs_many,
    tail_edges_both,
)
from approxdp.accounting.pld.privacy_loss import (
    EpsilonDeltaLoss,
    GaussianLoss,
    LaplaceLoss,
    LossSource,
    SubsampledLoss,
    cdfs_with_errors,
)
from approxdp.accounting.pld.rounded import discretize_rounded, discretize_rounded_many

#: (σ, q) of DP-SGD phases: tiny, small and large sampling rates, small and large noise
_PHASES = [(1.1, 256 / 60000), (0.5, 1e-5), (5.0, 1e-3), (0.8, 0.5), (2.0, 0.99), (1.3, 0.004)]


def _sources(direction: str) -> list[LossSource]:
    return [SubsampledLoss(GaussianLoss(1.0 / s), q, direction) for s, q in _PHASES]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_batched_cdfs_are_the_sources_own_bit_for_bit(direction: str) -> None:
    srcs: list[LossSource] = [*_sources(direction), GaussianLoss(0.7), LaplaceLoss(0.3)]
    rng = np.random.default_rng(3)
    edges = []
    for s in srcs:
        q = getattr(s, "q", 0.5)
        # around both ends of a subsampled loss's range, far out, and ±inf
        special = [-np.inf, np.log1p(-q), -np.log1p(-q), 0.0, np.inf]
        pts = np.concatenate((rng.uniform(-5.0, 8.0, 300), special,
                              np.nextafter(special[1:4], np.inf)))
        edges.append(np.sort(pts))
    got = cdfs_many(srcs, edges)
    for s, e, c in zip(srcs, edges, got, strict=True):
        want = s.cdfs(e)
        for name in ("fp", "sp", "fq", "sq"):
            assert _same(getattr(c, name), getattr(want, name)), (s, name)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize(("h", "tail"), [(1e-9, 1e-14), (16.0**-8, 1e-12), (1e-3, 1e-6)])
def test_batched_tail_edges_are_the_sources_own(upper: bool, h: float, tail: float) -> None:
    srcs = [*_sources("remove"), *_sources("add"), LaplaceLoss(0.5)]
    got = tail_edges_both(srcs, h, [tail])[2 if upper else 1][0]
    assert got == [grid_edges.tail_edge(s, h, tail, upper) for s in srcs]


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_batched_cdfs_and_errors_are_the_sources_own_bit_for_bit(direction: str) -> None:
    """The error bounds from the batch's own preimages (not evaluated twice) are the
    per-source ones, every field."""
    srcs: list[LossSource] = [*_sources(direction), GaussianLoss(0.7), LaplaceLoss(0.3)]
    edges = [np.sort(np.concatenate((np.linspace(-0.5, 3.0, 400), [np.log1p(-0.004)])))
             for _ in srcs]
    for s, e, (c, ce) in zip(srcs, edges, cdfs_and_errors_many(srcs, edges), strict=True):
        want, want_e = cdfs_with_errors(s, e)
        for name in ("fp", "sp", "fq", "sq"):
            assert _same(getattr(c, name), getattr(want, name)), (s, name)
        for name in ("value", "near", "near_moved", "near_shift", "near_mass"):
            a, b = getattr(ce, name), getattr(want_e, name)
            assert (a is None and b is None) or _same(np.asarray(a), np.asarray(b)), (s, name)
        assert (ce.tiny, ce.moved, ce.shift) == (want_e.tiny, want_e.moved, want_e.shift)


@pytest.mark.parametrize("upper", [True, False])
def test_tail_edges_at_several_tails_share_their_probes(upper: bool) -> None:
    srcs = [*_sources("remove"), *_sources("add"), LaplaceLoss(0.5)]
    tails = [1e-14, 4096e-14, 1e-6]
    side = 2 if upper else 1
    got = tail_edges_both(srcs, 16.0**-8, tails)[side]
    assert got == [tail_edges_both(srcs, 16.0**-8, [t])[side][0] for t in tails]


@pytest.mark.parametrize(("h", "tails"), [(16.0**-8, [1e-14, 4096e-14]), (1e-3, [1e-6]),
                                          (1e-9, [1e-12, 0.3])])
def test_both_sides_from_one_probe_pass_are_each_sides_own(h: float, tails: list[float]) -> None:
    """tail_edges_both (probes and +∞ in one evaluation, every refinement in one more): each
    side's edges are tail_edge's, source by source, and the mass at +∞ is the source's own; a
    source with every mass at +∞ (the vacuous pair) among them."""
    srcs: list[LossSource] = [*_sources("remove"), *_sources("add"), LaplaceLoss(0.5),
                              EpsilonDeltaLoss(0.5, 1e-3), EpsilonDeltaLoss(1.0, 1.0)]
    inf_mass, los, his = tail_edges_both(srcs, h, tails)
    assert inf_mass == [float(s.cdfs(np.array([np.inf])).sp[0]) for s in srcs]
    for j, t in enumerate(tails):
        assert los[j] == [grid_edges.tail_edge(s, h, t, False) for s in srcs]
        assert his[j] == [grid_edges.tail_edge(s, h, t, True) for s in srcs]
    one = tail_edges_both(srcs[:1], h, tails)
    assert one == ([inf_mass[0]], [[x[0]] for x in los], [[x[0]] for x in his])


@pytest.mark.parametrize("stable", [False, True])
def test_discretize_many_gives_the_same_measures(stable: bool) -> None:
    srcs = [*_sources("remove"), *_sources("add"), LaplaceLoss(0.5)]
    grid_edges.clear_edges()
    hs = [1e-3 * (1.0 + 0.1 * i) for i in range(len(srcs))]
    for step in (1e-3, hs):
        many = grid.discretize_many(srcs, step, 1e-12, stable)
        grid_edges.clear_edges()  # (one by one from scratch: the edges too)
        steps = [step] * len(srcs) if isinstance(step, float) else step
        for s, h, got in zip(srcs, steps, many, strict=True):
            want = grid.discretize(s, h, 1e-12, stable)
            assert (got.h, got.offset, got.infinity_mass, got.guard) == (
                want.h, want.offset, want.infinity_mass, want.guard)
            assert _same(got.pmf, want.pmf)
            assert got.spread is not None and want.spread is not None
            assert _same(got.spread, want.spread)


@pytest.mark.parametrize("precise", [False, True])
def test_discretize_rounded_many_gives_the_same_bins(precise: bool) -> None:
    srcs = [*_sources("remove"), *_sources("add"), LaplaceLoss(0.5)]
    many = discretize_rounded_many(srcs, 2e-3, 1e-12, precise)
    grid_edges.clear_edges()
    for s, got in zip(srcs, many, strict=True):
        want = discretize_rounded(s, 2e-3, 1e-12, precise)
        assert (got.h, got.offset, got.p_inf, got.r_inf) == (
            want.h, want.offset, want.p_inf, want.r_inf)
        assert _same(got.p, want.p) and _same(got.r, want.r)


def test_batch_caches_serve_single_lookups_and_are_cleared() -> None:
    discretized.clear_caches()
    parts = [(s, 100) for s in _sources("remove")]
    plds = discretized.discretized_all(parts, 1e-3, 1e-12, False)
    assert all(discretized._discretized(s, 1e-3, 1e-12, False) is p
               for (s, _), p in zip(parts, plds, strict=True))
    rounded = discretized.rounded_all(parts, 1e-3, 1e-12, False)
    assert discretized._rounded(parts[0][0], 1e-3, 1e-12, False) is rounded[0]
    discretized.prefetch_coarse([s for s, _ in parts])
    coarse = discretized._coarse(parts[0][0])
    discretized.clear_caches()
    assert discretized._discretized(parts[0][0], 1e-3, 1e-12, False) is not plds[0]
    assert discretized._coarse(parts[0][0]) is not coarse


def test_the_lru_cache_keeps_the_recently_used() -> None:
    cache = discretized._Cache(2)
    cache.put(("a",), 1)
    cache.put(("b",), 2)
    assert cache.get(("a",)) == 1  # a is now the most recent: b goes first
    cache.put(("c",), 3)
    assert cache.get(("b",)) is None
    assert (cache.get(("a",)), cache.get(("c",))) == (1, 3)


def test_saddle_point_estimates_are_computed_once_per_history_and_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Choosing the first grid, ordering the directions and aiming the first pass all ask
    for the same saddle-point estimate: the second ask costs no log-MGF."""
    from approxdp.accounting.pld import estimates

    calls: list[float] = []
    real = estimates.composed_moments

    def counted(parts: object, u: float) -> object:
        calls.append(u)
        return real(parts, u)  # type: ignore[arg-type]

    monkeypatch.setattr(estimates, "composed_moments", counted)
    discretized.clear_caches()
    parts = ((_sources("remove")[0], 1000), (_sources("remove")[5], 500))
    first = (estimates.saddle_epsilon(parts, 1e-5), estimates.saddle_delta(parts, 1.0))
    n = len(calls)
    assert n > 0
    assert (estimates.saddle_epsilon(parts, 1e-5), estimates.saddle_delta(parts, 1.0)) == first
    assert len(calls) == n
    discretized.clear_caches()
    estimates.saddle_delta(parts, 1.0)
    assert len(calls) > n


def test_a_batch_larger_than_the_caches_still_gets_every_measure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schedule with more distinct phases than a cache holds: each batch is served whole
    (what it computed, not what is left in the cache after its own evictions)."""
    discretized.clear_caches()
    monkeypatch.setattr(grid_edges, "_EDGES_KEEP", 2)
    monkeypatch.setattr(discretized, "_DISCRETIZED", discretized._Cache(3))
    monkeypatch.setattr(discretized, "_ROUNDED", discretized._Cache(3))
    monkeypatch.setattr(discretized, "_COARSE", discretized._Cache(3))
    parts = [(s, 10) for s in [*_sources("remove"), *_sources("add")]]
    srcs = [s for s, _ in parts]
    discretized.discretized_all(parts[:2], 1e-3, 1e-12, False)  # (some cached already)
    got = discretized.discretized_all(parts, 1e-3, 1e-12, False)
    rounded = discretized.rounded_all(parts, 1e-3, 1e-12, False)
    coarse = discretized._coarse_many(srcs)
    for s, pld, r, (c, _) in zip(srcs, got, rounded, coarse, strict=True):
        assert _same(pld.pmf, grid.discretize(s, 1e-3, 1e-12).pmf)
        assert _same(r.p, discretize_rounded(s, 1e-3, 1e-12).p)
        assert c.pmf.size > 1000
    discretized.clear_caches()


def test_a_cached_discretization_with_a_smaller_tail_serves_a_larger_one() -> None:
    """Same source, grid and split: the measure cached for a smaller tail (a wider range) is
    returned for a larger one — a pessimistic discretization all the same, with less mass at
    +∞ — and nothing is discretized for it; a smaller tail, another grid or another split
    is discretized afresh."""
    discretized.clear_caches()
    parts = [(s, 100) for s in _sources("remove")]
    wide = discretized.discretized_all(parts, 1e-3, 1e-16, False)
    served = discretized.discretized_all(parts, 1e-3, 1e-12, False)
    assert all(a is b for a, b in zip(wide, served, strict=True))
    narrow = grid.discretize_many([s for s, _ in parts], 1e-3, 1e-12, False)
    for w, n in zip(wide, narrow, strict=True):
        assert w.offset <= n.offset and w.offset + w.pmf.size >= n.offset + n.pmf.size
        assert w.infinity_mass <= n.infinity_mass
    wider = discretized.discretized_all(parts, 1e-3, 1e-18, False)[0]
    assert wider is not wide[0]
    assert discretized.discretized_all(parts, 2e-3, 1e-12, False)[0] is not wide[0]
    assert discretized.discretized_all(parts, 1e-3, 1e-12, True)[0] is not wide[0]
    # of those that reach far enough, the one with the largest tail (the fewest points)
    assert discretized.discretized_all(parts, 1e-3, 1e-17, False)[0] is wider
    assert discretized.discretized_all(parts, 1e-3, 1e-15, False)[0] is wide[0]
