"""The connect-the-dots split of the PLD accountant's grids
(:func:`~approxdp.accounting.pld.grid.discretize`): each loss interval's P- and Q-mass shared
between its two ends (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022,
https://arxiv.org/abs/2207.04380, Sec. 3), with the floating-point guards that keep the result
dominating (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.discrete import DiscretePLD
from approxdp.accounting.pld.privacy_loss import (
    CDFError,
    LossCDF,
    LossSource,
    loss_interval,
    sliver_guard,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
# Sums of products are written (x * y).sum(), never np.dot: short vectors through a threaded
# BLAS cost milliseconds of thread wake-ups on a busy machine (measured: 3.4 ms vs 0.05 ms).

_U = float(np.finfo(np.float64).eps) / 2  # unit round-off


def _split(
    source: LossSource, h: float, i_lo: int, n: int, edges: FloatArray, c: LossCDF,
    ce: CDFError, stable: bool, dots: IntArray | None = None,
) -> DiscretePLD:
    """The connect-the-dots split of :func:`discretize`, from the CDFs at the grid's edges and
    their error bounds; with ``dots``, ``edges`` (and the CDFs) are those of the grid points
    ``dots`` only (:func:`_dots_many`), each interval split by its own width (the sliver
    guard kept at the grid step: a narrower interval's, larger)."""
    p, p_scale = loss_interval(c.fp, c.sp)
    r, r_scale = loss_interval(c.fq, c.sq)
    left = edges[:-1]
    with np.errstate(over="ignore"):
        grow = np.exp(left)  # e^(e_{k-1}); r·grow stays below p where it matters
    width: FloatArray | float = h
    denom: FloatArray | float = -math.expm1(-h)
    if dots is not None:
        width = np.diff(dots) * h
        denom = -np.expm1(-width)
    with np.errstate(invalid="ignore", over="ignore"):
        split = getattr(source, "split_numerators", None) if stable else None
        written = split(edges) if split is not None else None
        # the cells are off the exact preimages of the edges by slivers whose share across
        # each edge (≤ mass·expm1(shift)/(1 − e^(−h))) is moved up over it
        across, lost = sliver_guard(ce, np.minimum(c.fp, c.sp), h)
    a, exact = _shares(p, r, p_scale, r_scale, grow, denom, ce.value, 2.0 * ce.tiny, across,
                       written)
    lift = _dominance_lift(c, ce)  # see there: the CDF values' own errors, not accumulated
    unbounded = not bool(np.isfinite(lift).all())  # no bound known: nothing is certified
    pmf = np.zeros(edges.size)
    pmf[1:] += a
    pmf[:-1] += p - a
    pmf[0] += c.fp[0]  # everything at or below the lowest grid point
    lift_top = _place_up(pmf, np.where(np.isfinite(lift), lift, 0.0))
    # the sums above round each entry by ≤ u·(its terms), < 2u of it: scaling by 1 + 8u
    # (itself rounded by ≤ u) leaves every entry at least the exact sum of its shares
    pmf *= 1.0 + 8.0 * _U
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(p > 0.0, (width * width) * a * (p - a) / p, 0.0)
    # the mean shift the guard adds (mass moved up a step): negligible for one step, but it
    # adds up over 10^9 steps of a tiny loss
    guard = float(((a - exact) * width).sum())
    if dots is not None:  # back on the grid (a coarse interval's spread at its first step)
        full = np.zeros(n)
        full[dots] = pmf
        pmf = full
        full = np.zeros(n - 1)
        full[dots[:-1]] = spread
        spread = full
    # the mass above the grid, rounded up (and the slivers that may reach above the last
    # grid point or past a step, sent to +∞ with it)
    top = float(c.sp[-1]) * (1.0 + 4.0 * _U + float(ce.value[-1])) + ce.tiny
    inf_mass = 1.0 if unbounded else min(1.0, top + lost + 2.0 * lift_top)
    return DiscretePLD(
        h=h, offset=i_lo, pmf=pmf, infinity_mass=inf_mass, spread=spread, guard=guard
    )


def _shares(
    p: FloatArray, r: FloatArray, p_scale: FloatArray, r_scale: FloatArray, grow: FloatArray,
    denom: FloatArray | float, value: FloatArray, tiny2: FloatArray | float,
    across: FloatArray | float, written: tuple[FloatArray, FloatArray] | None,
) -> tuple[FloatArray, FloatArray]:
    """Each interval's upper share a = (p − e^(e_(k−1))·r)/(1 − e^(−width)) of its P-mass p (r:
    its Q-mass), raised by its error bound and the slivers' guard ``across``, then clipped to
    [0, p]; and the share clipped without them (for the guard's mean shift): for :func:`_split`
    and :func:`_split_together` alike (``value``: the CDF error bounds κ per edge, ``tiny2``:
    2τ, per interval or one for all; ``written``: a stable split's own numerators and their
    errors, or None)."""
    # the CDF values' error bounds as masses of their cells (privacy_loss.CDFError): an
    # interval's mass errs by ≤ 2·max κ·scale + 2·max τ (the arithmetic here a few ulps more)
    kap = 2.0 * np.maximum(value[1:], value[:-1])
    with np.errstate(invalid="ignore", over="ignore"):
        a = (p - grow * r) / denom
        err = ((8.0 * _U + kap) * (p_scale + grow * r_scale) + tiny2 * (1.0 + grow))
        err /= denom
        a = np.where(np.isfinite(a), a, p)
        err = np.where(np.isfinite(err), err, np.inf)
        if written is not None:  # the same numerator, written without its cancellation
            num, num_err = written
            a2, err2 = num / denom, num_err / denom
            # each (a, err) bounds the true share from above: the tighter one is used
            better = a2 + err2 < a + err
            a, err = np.where(better, a2, a), np.where(better, err2, err)
        err = err + across
        exact = np.clip(a, 0.0, p)
        return np.clip(a + err, 0.0, p), exact


def _place_up(pmf: FloatArray, lift: FloatArray) -> float:
    """Add ``lift`` to ``pmf`` in place, each entry at its own point where that holds mass and
    otherwise at the next point above that does (moving added mass up keeps the dominance, and
    the support — which the window planning and the tilts read — stays what it was); what
    has no such point above goes to +∞: returned."""
    n = pmf.size
    held = pmf > 0.0
    if bool(held.all()):  # every point holds mass: each lift at its own point
        pmf += lift
        return 0.0
    idx = np.where(held, np.arange(n), n)
    nxt = np.minimum.accumulate(idx[::-1])[::-1]  # the first point ≥ i holding mass
    inside = nxt < n
    np.add.at(pmf, nxt[inside], lift[inside])
    return float(lift[~inside].sum())


def _dominance_lift(c: LossCDF, ce: CDFError) -> FloatArray:
    """Mass added at each grid point so that the discretization dominates the exact one at
    every point, the bulk included, whatever the CDF values' own errors.

    The P-mass at or above grid point e_i is the top mass, the interval masses above e_i and
    interval i's upper share; the interval masses are differences of the *same* computed
    values, so their sum telescopes: to s̃_i − s̃_last over the intervals taken from the
    survival function, and over a run of intervals taken from the CDF (``loss_interval``
    takes the smaller tail: one run at the bottom) to f̃_b − f̃_i = s̃_i − s̃_b + η_b − η_i,
    where η = f̃ + s̃ − 1 is the pair's own error at an edge (|η| ≤ κ(f̃ + s̃) + 2τ + 2u).
    So the P-mass at or above e_i falls short of the exact one by at most
    d_i = κ_i·t_i + τ + (the |η| bounds at the ends of the runs above e_i) + 2u·s̃_i, with
    t_i the tail the telescoped sum ends on (f̃_i inside a run, else s̃_i): a few ulps,
    **not** accumulated over the intervals (the upper shares' own errors are in the split's
    guard). Adding G(i) − G(i+1) at e_i with G(i) = max_(k ≥ i) d_k makes the added mass at
    or above every e_i at least d_i; in all G(0) ≈ a few u, placed where the bound needs it
    (mostly the bulk) rather than at +∞: over 10^12 composed steps, T·G(0) of added mass is
    ~1e-3 *relative* to δ, where the same mass at +∞ would be ~1e-3 *absolute*.
    Dominance (mass at or above every point at least the exact one's) is what composition
    preserves (convolution of dominating measures; Doroshenko et al. 2022,
    https://arxiv.org/abs/2207.04380, Sec. 3, for connect-the-dots itself)."""
    f, s = c.fp, c.sp
    kap = np.asarray(ce.value, dtype=np.float64)
    tau = float(ce.tiny)
    n = f.size
    eta = kap * (f + s) + 2.0 * tau + 2.0 * _U
    use_f = f[1:] <= s[:-1]  # as loss_interval: interval k (edges k−1, k) from the CDF
    # runs of CDF-taken intervals: [a, b] in edge indices (intervals a+1 .. b)
    flips = np.flatnonzero(np.diff(np.concatenate(([False], use_f, [False])).astype(np.int8)))
    # each run: edge a = its first interval's lower edge, b = its last interval's upper edge
    run_a, run_b = flips[0::2], flips[1::2]
    d = kap * s + tau
    if run_a.size:
        w = eta[run_a] + eta[run_b]  # a whole run above e_i: |η_b| + |η_a|
        # Σ over runs with a ≥ i: a reverse cumulative sum over the runs' lower edges
        above = np.zeros(n + 1)
        np.add.at(above, run_a, w)
        above = np.cumsum(above[::-1])[::-1]
        d = d + above[:n]
        for a, b in zip(run_a.tolist(), run_b.tolist(), strict=True):
            # inside a run (a ≤ i < b): the telescoped sum ends on f̃_i and η_b, plus the
            # runs above b
            d[a:b] = kap[a:b] * f[a:b] + tau + eta[b] + above[b + 1]
    d = d + 2.0 * _U * np.minimum(s, 1.0)
    d[0] += kap[0] * f[0] + tau  # the lowest point also holds the mass below the grid
    g = np.maximum.accumulate(d[::-1])[::-1]
    lift = g.copy()
    lift[:-1] -= g[1:]
    return lift


#: (source, h, first grid index, grid points, edges, CDFs, their errors, dots) of one split
SplitInput = tuple[LossSource, float, int, int, FloatArray, LossCDF, CDFError, "IntArray | None"]
#: :func:`split_many` splits sources together up to this many edges (its temporaries stay in
#: the cache: larger ones, through fresh pages, made it slower than one by one)
_CHUNK = 1 << 13


def split_many(items: Sequence[SplitInput], stable: bool) -> list[DiscretePLD]:
    """``[_split(*item[:7], stable, item[7]) for item in items]`` — the same measures, bit for
    bit — with the arithmetic of up to :data:`_CHUNK` edges of consecutive sources done at
    once on their concatenated edges (a schedule's phases: a few hundred points each, where
    the ~60 array operations' call overhead, not the arithmetic, was the cost). ``stable``
    splits (rare: see :func:`~approxdp.accounting.pld.grid.discretize`) and sources with
    near-edge sliver bounds are split one by one."""
    out: list[DiscretePLD | None] = [None] * len(items)
    batch: list[int] = []
    held = 0
    for k, item in enumerate(items):
        ce, size = item[6], item[4].size
        if stable or ce.near is not None or size < 2:
            out[k] = _split(*item[:7], stable, item[7])
            continue
        if batch and held + size > _CHUNK:
            _flush(items, batch, out)
            batch, held = [], 0
        batch.append(k)
        held += size
    if batch:
        _flush(items, batch, out)
    return [o for o in out if o is not None]


def _flush(items: Sequence[SplitInput], batch: list[int], out: list[DiscretePLD | None]) -> None:
    if len(batch) == 1:
        k = batch[0]
        out[k] = _split(*items[k][:7], False, items[k][7])
        return
    for k, pld in zip(batch, _split_together([items[k] for k in batch]), strict=True):
        out[k] = pld


def _split_together(items: Sequence[SplitInput]) -> list[DiscretePLD]:
    """:func:`_split` of each source (none stable, none with near-edge slivers), elementwise
    on the concatenation: interval k lies between concatenated edges k and k + 1 (the one
    straddling two sources is computed and never read); every per-source scalar is repeated
    over its entries and each operation is _split's own, in its order (so each entry is the
    same float); the sums stay per source."""
    sizes = [it[4].size for it in items]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
    total = sum(sizes)
    ends = starts + np.asarray(sizes, dtype=np.intp) - 1
    cut = ends[:-1]  # the straddling intervals
    fp = np.concatenate([it[5].fp for it in items])
    sp = np.concatenate([it[5].sp for it in items])
    fq = np.concatenate([it[5].fq for it in items])
    sq = np.concatenate([it[5].sq for it in items])
    kv = np.concatenate([it[6].value for it in items])
    edges = np.concatenate([it[4] for it in items])
    # per interval: the step width, 1 − e^(−width) (math.expm1 for a scalar step, as _split)
    width = np.ones(total - 1)  # (1 at the straddling intervals)
    denom = np.ones(total - 1)
    for (_, h, _, _, e, _, _, dots), at in zip(items, starts.tolist(), strict=True):
        part = slice(at, at + e.size - 1)
        if dots is None:
            width[part] = h
            denom[part] = -math.expm1(-h)
        else:
            w = np.diff(dots) * h
            width[part] = w
            denom[part] = -np.expm1(-w)
    counts = np.asarray(sizes, dtype=np.intp)
    tiny_src = np.array([it[6].tiny for it in items])
    tiny = np.repeat(tiny_src, counts)  # per edge
    p, p_scale = loss_interval(fp, sp)
    r, r_scale = loss_interval(fq, sq)
    with np.errstate(over="ignore"):
        grow = np.exp(edges[:-1])
    across, lost = _slivers(items, np.minimum(fp, sp), kv, starts, counts)
    a, exact = _shares(p, r, p_scale, r_scale, grow, denom, kv, 2.0 * tiny[:-1], across, None)
    lift = _lifts(fp, sp, kv, tiny, starts, ends, cut)
    finite = np.isfinite(lift)
    unbounded = ~np.logical_and.reduceat(finite, starts)
    low = p - a
    a_in = a.copy()
    a_in[cut] = 0.0
    low[cut] = 0.0
    pmf = np.zeros(total)
    pmf[1:] += a_in
    pmf[:-1] += low
    pmf[starts] += fp[starts]  # everything at or below each grid's lowest point
    lift = np.where(finite, lift, 0.0)
    full = np.logical_and.reduceat(pmf > 0.0, starts)  # _place_up's usual case: at each point
    np.add(pmf, lift, out=pmf, where=np.repeat(full, counts))
    lift_top = [0.0 if full[k] else _place_up(pmf[at : at + m], lift[at : at + m])
                for k, (at, m) in enumerate(zip(starts.tolist(), sizes, strict=True))]
    pmf *= 1.0 + 8.0 * _U
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spread = np.where(p > 0.0, (width * width) * a * (p - a) / p, 0.0)
        shifted = (a - exact) * width  # (the straddling intervals' may be NaN: never read)
    out: list[DiscretePLD] = []
    for k, ((_, h, i_lo, n, _, _, ce, dots), at, m) in enumerate(
        zip(items, starts.tolist(), sizes, strict=True)
    ):
        guard = float(shifted[at : at + m - 1].sum())
        if dots is None:
            pmf_k = pmf[at : at + m].copy()
            spread_k = spread[at : at + m - 1].copy()
        else:
            pmf_k = np.zeros(n)
            pmf_k[dots] = pmf[at : at + m]
            spread_k = np.zeros(n - 1)
            spread_k[dots[:-1]] = spread[at : at + m - 1]
        top = float(sp[at + m - 1]) * (1.0 + 4.0 * _U + float(kv[at + m - 1])) + ce.tiny
        inf_mass = 1.0 if unbounded[k] else min(1.0, top + lost[k] + 2.0 * lift_top[k])
        out.append(DiscretePLD(h=h, offset=i_lo, pmf=pmf_k, infinity_mass=inf_mass,
                               spread=spread_k, guard=guard))
    return out


def _slivers(
    items: Sequence[SplitInput], small: FloatArray, kv: FloatArray, starts: IntArray,
    counts: IntArray,
) -> tuple[FloatArray, list[float]]:
    """:func:`~approxdp.accounting.pld.privacy_loss.sliver_guard` of each source (none with
    near-edge bounds) on the concatenation: the guard per interval, and each source's mass
    sent to +∞."""
    grow_src = 1.0 + np.maximum.reduceat(kv, starts)  # (κ ≥ 0: max(initial=0) is the max)
    coef_src = np.zeros(len(items))
    lost: list[float] = []
    for k, ((_, h, _, _, _, _, ce, _), at, m) in enumerate(
        zip(items, starts.tolist(), counts.tolist(), strict=True)
    ):
        grow = float(grow_src[k])
        lost.append(ce.moved * float(small[at + m - 1]) * grow + ce.tiny)
        if ce.moved > 0.0:
            if ce.shift >= 0.5 * h:
                coef_src[k] = math.inf
                lost[k] = 1.0
            else:
                coef_src[k] = ce.moved * math.expm1(ce.shift) / -math.expm1(-h)
    tiny = np.repeat(np.array([it[6].tiny for it in items]), counts)[:-1]
    coef = np.repeat(coef_src, counts)[:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        guard = coef * (small[:-1] * np.repeat(grow_src, counts)[:-1] + tiny)
    # a source without slivers adds 0.0 (as _split's err + 0.0); one whose slivers may reach
    # past a step adds +∞
    return np.where(np.repeat(coef_src == 0.0, counts)[:-1], 0.0,
                    np.where(np.isinf(coef), np.inf, guard)), lost


def _lifts(
    f: FloatArray, s: FloatArray, kap: FloatArray, tau: FloatArray, starts: IntArray,
    ends: IntArray, cut: IntArray,
) -> FloatArray:
    """:func:`_dominance_lift` of each source on the concatenation (``tau`` per edge): the
    same floats. The reverse sums over runs restart at each source (folded in Python, in
    np.cumsum's order), the reverse running maximum likewise (exact: any order)."""
    eta = kap * (f + s) + (2.0 * tau) + 2.0 * _U
    use_f = f[1:] <= s[:-1]
    use_f[cut] = False  # (runs never straddle two sources)
    flips = np.flatnonzero(np.diff(np.concatenate(([False], use_f, [False])).astype(np.int8)))
    run_a, run_b = flips[0::2], flips[1::2]
    d = kap * s + tau
    if run_a.size:
        w = (eta[run_a] + eta[run_b]).tolist()
        src = (np.searchsorted(starts, run_a, side="right") - 1).tolist()
        runs = len(w)
        fold = [0.0] * runs  # Σ w over the source's runs from this one up (its cumsum order)
        after = [0.0] * runs  # the same from the next run up (0 for its last run)
        for j in range(runs - 1, -1, -1):
            if j + 1 < runs and src[j + 1] == src[j]:
                after[j] = fold[j + 1]
                fold[j] = fold[j + 1] + w[j]
            else:
                fold[j] = w[j]
        # above each edge: the fold of the first run of its source starting at or above it
        first = np.searchsorted(run_a, np.arange(f.size), side="left")
        edge_src = np.repeat(np.arange(starts.size), np.diff(np.append(starts, f.size)))
        ok = first < runs
        first_c = np.minimum(first, runs - 1)
        ok &= np.asarray(src)[first_c] == edge_src
        d = d + np.where(ok, np.asarray(fold)[first_c], 0.0)
        # inside a run (a ≤ i < b): kap·f + tau + eta[b] + above[b + 1]
        lens = run_b - run_a
        inside = np.repeat(run_a - np.cumsum(np.append(0, lens[:-1])), lens) + np.arange(
            int(lens.sum()))
        d[inside] = (kap[inside] * f[inside] + tau[inside] + np.repeat(eta[run_b], lens)
                     ) + np.repeat(np.asarray(after), lens)
    d = d + 2.0 * _U * np.minimum(s, 1.0)
    d[starts] += kap[starts] * f[starts] + tau[starts]
    g = np.empty_like(d)
    for at, end in zip(starts.tolist(), ends.tolist(), strict=True):
        g[at : end + 1] = np.maximum.accumulate(d[at : end + 1][::-1])[::-1]
    lift = g.copy()
    lift[:-1] -= g[1:]
    lift[ends] = g[ends]
    return lift
