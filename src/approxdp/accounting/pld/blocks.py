"""Composition in blocks: T steps as k blocks of B steps (and a remainder), for large T.

One FFT over T steps needs a grid fine enough for T roundings (the excess goes as T·h²) and a
window as wide as the whole sum (√T standard deviations of one step): about √(T/precision)
points — millions at T = 10^8. In blocks (the FFT composition of Koskela, Jälkö, Prediger,
Honkela 2021, https://arxiv.org/abs/2006.07134, applied level by level): the B-fold sum is
composed on the fine grid (its window only √B standard deviations wide), made pessimistic, and
regridded by connect-the-dots to a grid √B/2 times coarser (a block is rounded k times, not
T); the k blocks are composed there — themselves in blocks when k is still large.

Every step keeps the bound on the private side (the hockey-stick divergence of the composition,
δ(ε) = E_P[(1 − e^(ε−S))₊] + P(S = ∞), is an integral of a nonnegative function that grows with
each step's loss, against a convolution of nonnegative measures):

- the block's FFT round-off is added to every entry of its window, and negative entries are
  clipped at 0: a pointwise larger measure composes to a larger δ;
- its mass above the window (a Chernoff bound) goes to loss +∞, its mass below the window (the
  same) is placed at the window's bottom: losses only move up;
- the regridding is connect-the-dots on the block's atoms: each atom's P-mass is split between
  its two neighbours of the coarser grid keeping its Q-mass (Doroshenko et al. 2022,
  https://arxiv.org/abs/2207.04380), the upper share rounded up (more mass up is more loss).

The lower bound's rounded loss (:func:`~approxdp.accounting.pld.rounded.discretize_rounded`) is
composed the same way, its block sums rounded again to the coarser grid — still a test
statistic — with every error term taken off its P-masses and added to its Q-masses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.compose import ComposedPLD, DiscretePLD, RoundedPLD, compose
from approxdp.accounting.pld.window import Window, support_of

__all__ = [
    "BLOCK_FROM",
    "EXTENDED_FROM",
    "block_factor",
    "block_pieces",
    "block_plan",
    "rounded_pieces",
]

FloatArray = npt.NDArray[np.float64]
#: Counts from which a part is composed in blocks.
BLOCK_FROM = 1 << 15
#: A composition runs in extended precision where its power times the number of times its
#: result is used further up (the steps its round-off is multiplied by) is at least this:
#: the FFT's forward error grows with the power, and every later use adds it again. At
#: T = 10^12 that is the first level only (B·T/B = T); the levels above stand for T/B,
#: T/B², ... steps' worth, as accurate in float64 as whole runs of that many steps.
EXTENDED_FROM = 10**10
#: Blocks hold at most about this many steps (or blocks of the level below).
_MAX_BLOCK = 1 << 12
#: The share of its tail a block of the rounded loss's tests leaves out of its window. Its
#: P-measure is made a pointwise lower bound by taking off, at every entry, what aliasing may
#: have put there — each entry the whole of it, about the tail — so a window of N entries
#: loses ~N times its tail, composed again over every block. Where ε is tiny against the
#: loss's spread (P- and Q-tails nearly cancel in the tests) that was all of the bracket's
#: width: σ = 3, q = 1e-5, T = 10^7, δ = 1e-3 3.5 % (0.083 % with 1e-3 of the tail; the
#: windows grow by a few entries: a Gaussian-like tail 1e-3 further out is ~1σ wider)
_LOWER_TAIL = 1e-3
_U = float(np.finfo(np.float64).eps) / 2
Pieces = list[tuple[DiscretePLD, int]]


def block_plan(count: int, divide: bool = True) -> tuple[int, int, int]:
    """(B, k, r): ``count`` = k·B + r, with about as many levels of blocks of B as it takes
    to keep each below 4096 (r < B): B the power of 2 that makes those levels even — or,
    where ``count`` has a divisor up to √2 times larger, the least such divisor (r = 0: the
    remainder's composition, as costly as the block's, is not needed; round step counts such
    as 10^6 have one; never smaller: fewer blocks are fewer regriddings, so ε only tightens)."""
    levels = max(2, math.ceil(math.log2(count) / math.log2(_MAX_BLOCK)))
    block = 1 << max(1, round(math.log2(count) / levels))
    if count % block and divide:
        divisors = [b for b in range(block, math.floor(block * math.sqrt(2.0)) + 1)
                    if count % b == 0]
        block = divisors[0] if divisors else block
    return block, count // block, count % block


def block_factor(block: int) -> int:
    """The coarsening of a block of B: a power of 2 near √B/2 (k blocks rounded at h·m then
    cost about a quarter of what their B·k steps rounded at h do)."""
    return 1 << max(0, round(math.log2(max(math.sqrt(block) / 2.0, 1.0))))


def _tilted(comp: ComposedPLD, upper: bool) -> tuple[FloatArray, float]:
    """The window's tilted masses made a pointwise upper (or lower) bound on the true ones,
    and the mass at +∞ likewise: round-off added (taken off, with the aliased mass); the mass
    below the window added at its bottom and above it at +∞ (or left out)."""
    if not upper:
        t = np.maximum(comp.tilted - comp.roundoff - comp.alias_bounds(), 0.0)
        return t, comp.infinity_mass * (1.0 - 1e-12)
    t = np.maximum(comp.tilted + comp.roundoff, 0.0)
    if comp.log_below > -math.inf:
        t[0] += math.exp(min(comp.log_below + comp.lam * comp.bottom - comp.log_mgf, 700.0))
    infinity = comp.infinity_mass * (1.0 + 1e-12) + math.exp(min(comp.log_beyond, 0.0))
    return t, min(1.0, infinity)


def _split(
    t: FloatArray, offset: int, h: float, lam: float, factor: int
) -> tuple[FloatArray, int, float]:
    """Connect-the-dots of tilted atoms at (offset + i)·h onto the grid j·h·m (m = factor):
    the P-share β = (1 − e^(−(l − d)))/(1 − e^(−hm)) goes up (rounded up), re-tilted; with the
    variance the split adds under the tilt."""
    h2 = h * factor
    idx = offset + np.arange(t.size)
    j = np.floor_divide(idx, factor)
    rem = idx - j * factor
    frac = np.arange(factor, dtype=np.float64) * h  # loss above the lower neighbour
    with np.errstate(over="ignore"):
        beta = np.minimum(1.0, np.expm1(-frac) / math.expm1(-h2) + 8.0 * _U)
        up = beta * np.exp(lam * (h2 - frac))
        down = (1.0 - beta) * np.exp(-lam * frac)
    j0 = int(j[0])
    size = int(j[-1]) - j0 + 2
    new = np.bincount(j - j0, weights=t * down[rem], minlength=size).astype(np.float64)
    new += np.bincount(j - j0 + 1, weights=t * up[rem], minlength=size)
    total = float(t.sum())
    spread = float((t * (beta * (1.0 - beta))[rem]).sum()) / total * h2 * h2 if total > 0 else 0.0
    return new, j0, spread


def _rebin(t: FloatArray, offset: int, h: float, lam: float, factor: int) -> tuple[FloatArray, int]:
    """Tilted atoms at (offset + i)·h summed into the nearest points of the grid j·h·m
    (half-way goes up), re-tilted: the sum rounded again, for the lower bound's tests."""
    idx = offset + np.arange(t.size)
    j = np.floor_divide(idx + factor // 2, factor)
    with np.errstate(over="ignore"):
        w = t * np.exp(lam * (j * factor - idx) * h)
    j0 = int(j[0])
    return np.bincount(j - j0, weights=w, minlength=int(j[-1]) - j0 + 1).astype(np.float64), j0


def _measure(
    t: FloatArray, offset: int, h: float, infinity: float, lam: float, log_norm: float
) -> DiscretePLD:
    return DiscretePLD(h=h, offset=offset, pmf=t, infinity_mass=infinity, tilt=lam,
                       log_norm=log_norm)


def _coarsen(piece: DiscretePLD, factor: int, split: bool) -> tuple[DiscretePLD, float]:
    """``piece`` (stored tilted) on the grid ``factor`` times coarser: connect-the-dots
    (``split``, for the upper bound) or rounding to the nearest point (for the tests)."""
    if factor == 1:
        return piece, 0.0
    lam = piece.tilt
    if split:
        new, j0, spread = _split(piece.pmf, piece.offset, piece.h, lam, factor)
    else:
        (new, j0), spread = _rebin(piece.pmf, piece.offset, piece.h, lam, factor), 0.0
    return _measure(new, j0, piece.h * factor, piece.infinity_mass, lam, piece.log_norm), spread


def _composed_bound(
    measures: Sequence[DiscretePLD], count: int, *, lam: float, tilt_at: float | None,
    tail: float, upper: bool, extended: bool = False,
) -> list[DiscretePLD]:
    """``count``-fold compositions of each of ``measures`` (one measure: the upper bound; two:
    the P- and Q-measures of the rounded loss, Q tilted λ + 1 on P's window), each made a
    pointwise bound (:func:`_tilted`) and stored tilted."""
    # a block's whole distribution matters: the window reaches down to where the mass below
    # is within the budget (then moving it to the bottom costs nothing noticeable)
    first = compose([(measures[0], count)], tail=tail, tilt_at=tilt_at, lam=lam,
                    below=math.inf, extended=extended)
    comps = [first]
    if len(measures) > 1:  # the Q-measure, on the P-measure's window
        win = Window(first.lam, first.offset, first.size)
        comps.append(compose([(measures[1], count)], tail=tail, window=win, lam_shift=1.0,
                             extended=extended))
    out = []
    for i, comp in enumerate(comps):
        t, inf = _tilted(comp, upper=upper or i == 1)
        out.append(_measure(t, comp.offset, comp.h, inf, comp.lam, comp.log_mgf))
    return out


def _reduce(
    measures: Sequence[DiscretePLD], count: int, *, lam: float, tilt_at: float | None,
    tail: float, upper: bool, extended: bool = False,
) -> tuple[list[Pieces], float]:
    """``count`` copies of a step as a few pieces on one coarser grid, level by level: while
    the copies are many, B of them are composed into a block (and the r left over into a
    remainder), both coarsened by about √B/2, and the block becomes the step of the next
    level. Per measure, the pieces (the last level's block with its copies, and every
    remainder once); and the variance the regriddings added (upper bound only)."""
    cur = list(measures)
    copies = count
    extras: list[list[DiscretePLD]] = []
    spread = 0.0
    levels = max(1, math.ceil(math.log2(max(count, 2)) / math.log2(_MAX_BLOCK)) - 1)
    share = tail / (2.0 * levels)
    while copies >= BLOCK_FROM:
        block, k, rem = block_plan(copies, divide=copies == count)
        mean = support_of(cur[0]).moments(lam)[1] if tilt_at is not None else 0.0
        factor = block_factor(block)
        made = []
        for size in (block, rem):
            if size == 0:
                continue
            at = None if tilt_at is None else size * mean
            # each block is used once per block above it (k + 1 counts the remainder's
            # share: at the first level size·(k + 1) ≥ the steps)
            uses = k + 1 if size == block else 1
            ms = _composed_bound(cur, size, lam=lam, tilt_at=at, tail=share / (k + 1),
                                 upper=upper,
                                 extended=extended and size * uses >= EXTENDED_FROM)
            coarse = []
            for i, m in enumerate(ms):
                piece, v = _coarsen(m, factor, split=upper)
                coarse.append(piece)
                if i == 0:
                    spread += (k if size == block else 1) * v
            made.append(coarse)
        cur, copies = made[0], k
        if rem:
            extras.append(made[1])
    grid = cur[0].h
    layers: list[Pieces] = [[(m, copies)] for m in cur]
    for extra in extras:
        for i, m in enumerate(extra):
            piece, v = _coarsen(m, round(grid / m.h), split=upper)
            layers[i].append((piece, 1))
            if i == 0:
                spread += v
    return layers, spread


def _unify(layers: list[Pieces], split: bool) -> tuple[list[Pieces], float]:
    """Pieces on one grid (the coarsest): the others coarsened to it."""
    grid = max(p.h for layer in layers for p, _ in layer)
    spread = 0.0
    out: list[Pieces] = []
    for i, layer in enumerate(layers):
        row: Pieces = []
        for p, c in layer:
            piece, v = _coarsen(p, round(grid / p.h), split)
            row.append((piece, c))
            if i == 0:
                spread += c * v
        out.append(row)
    return out, spread


def block_pieces(
    plds: Sequence[tuple[DiscretePLD, int]], *, lam: float, tilt_at: float | None,
    tail: float, extended: bool = False,
) -> tuple[Pieces, float]:
    """Every part's steps composed in blocks (:func:`_reduce`; a part with few steps: as they
    are), all on the coarsest of their grids, ready to be composed; and the variance the
    regriddings add under the λ-tilt (for the excess estimate)."""
    total = sum(c for _, c in plds)
    pieces: Pieces = []
    spread = 0.0
    for p, c in plds:
        if c >= BLOCK_FROM:
            at = None if tilt_at is None else tilt_at * c / total
            (layer,), v = _reduce([p], c, lam=lam, tilt_at=at, tail=tail * c / total,
                                  upper=True, extended=extended)
            pieces += layer
            spread += v
        else:  # composed first, so that it is coarsened once, not c times
            at = None if tilt_at is None else tilt_at * c / total
            (m,) = _composed_bound([p], c, lam=lam, tilt_at=at, tail=tail * c / total,
                                   upper=True, extended=extended and c >= EXTENDED_FROM)
            pieces.append((m, 1))
    (pieces,), more = _unify([pieces], split=True)
    return pieces, spread + more


def rounded_pieces(
    rounded: Sequence[tuple[RoundedPLD, int]], *, lam: float, tilt_at: float, tail: float,
    extended: bool = False,
) -> tuple[Pieces, Pieces]:
    """The rounded loss of every part in blocks (as :func:`block_pieces`): pointwise lower
    bounds on the P-masses and upper bounds on the Q-masses of the blocks' rounded sums, on
    one grid (Q stored tilted λ + 1), each block's window leaving out ``_LOWER_TAIL`` of its
    share of ``tail``."""
    total = sum(c for _, c in rounded)
    tail *= _LOWER_TAIL
    p_row: Pieces = []
    q_row: Pieces = []
    for r, c in rounded:
        pm, qm = r.as_measures()
        if c >= BLOCK_FROM:
            (pl, ql), _ = _reduce([pm, qm], c, lam=lam, tilt_at=tilt_at * c / total,
                                  tail=tail * c / total, upper=False, extended=extended)
            p_row += pl
            q_row += ql
        else:
            pb, qb = _composed_bound([pm, qm], c, lam=lam, tilt_at=tilt_at * c / total,
                                     tail=tail * c / total, upper=False,
                                     extended=extended and c >= EXTENDED_FROM)
            p_row.append((pb, 1))
            q_row.append((qb, 1))
    (p_row, q_row), _ = _unify([p_row, q_row], split=False)
    return p_row, q_row
