"""Composition in blocks: T steps as k blocks of B steps (and a remainder), for large T.

One FFT over T steps needs a grid fine enough for T roundings (the excess goes as T·h²) and a
window as wide as the whole sum (√T standard deviations of one step): about √(T/precision)
points — millions at T = 10^8. In blocks (Koskela, Jälkö, Prediger, Honkela 2021,
https://arxiv.org/abs/2006.07134, compose by FFT; here twice): the B-fold sum is composed on the
fine grid (its window only √B standard deviations wide), made pessimistic, and regridded by
connect-the-dots to a grid √B/2 times coarser (a block is rounded k times, not T); the k blocks
are composed there. Two windows of about (T/precision)^(1/4) points each.

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
"""

from __future__ import annotations

import math

import numpy as np

from approxdp.accounting.pld.compose import DiscretePLD, RoundedPLD, compose
from approxdp.accounting.pld.window import Window

__all__ = [
    "BLOCK_FROM",
    "block_measure",
    "block_plan",
    "block_step",
    "rounded_blocks",
]

#: Counts from which a part is composed in blocks.
BLOCK_FROM = 1 << 15
_U = float(np.finfo(np.float64).eps) / 2


def block_plan(count: int) -> tuple[int, int, int]:
    """(B, k, r): ``count`` = k·B + r with B a power of 2 near √count (r < B)."""
    block = 1 << max(0, round(0.5 * math.log2(count)))
    return block, count // block, count % block


def block_step(h: float, block: int) -> tuple[float, int]:
    """The coarser grid of the blocks, h·m with m a power of 2 near √B/2 (so that k blocks
    rounded at h·m cost about a quarter of what T steps rounded at h do), and m."""
    m = 1 << max(0, round(math.log2(max(math.sqrt(block) / 2.0, 1.0))))
    return h * m, m


def block_measure(
    pld: DiscretePLD,
    count: int,
    *,
    lam: float,
    tilt_at: float | None,
    tail: float,
    factor: int,
) -> tuple[DiscretePLD, float]:
    """``count`` copies of ``pld`` composed (tilted at λ, window placed at ``tilt_at``), made
    pessimistic and regridded to the step ``factor``·h: a measure (stored tilted at λ) that
    dominates the ``count``-fold composition (see the module docstring); and the variance
    the regridding adds under the λ-tilt (for the excess estimate)."""
    h = pld.h
    h2 = h * factor
    comp = compose([(pld, count)], tail=tail, tilt_at=tilt_at, lam=lam)
    t = np.maximum(comp.tilted + comp.roundoff, 0.0)  # round-off: pointwise up
    bottom = comp.offset * h
    if comp.log_below > -math.inf:  # mass below the window: at its bottom
        t[0] += math.exp(min(comp.log_below + lam * bottom - comp.log_mgf, 700.0))
    infinity = min(1.0, comp.infinity_mass + math.exp(min(comp.log_beyond, 0.0)))
    # connect-the-dots onto the grid j·h2: index i = j·factor + rem
    idx = comp.offset + np.arange(t.size)
    j = np.floor_divide(idx, factor)
    rem = idx - j * factor
    frac = np.arange(factor, dtype=np.float64) * h  # loss above the lower neighbour
    with np.errstate(over="ignore"):
        beta = np.expm1(-frac) / math.expm1(-h2)  # P-share going up, Q-mass kept
        beta = np.minimum(1.0, beta + 8.0 * _U)  # (rounded up: more loss)
        up = beta * np.exp(lam * (h2 - frac))  # tilted weights at the new points
        down = (1.0 - beta) * np.exp(-lam * frac)
    j0 = int(j[0])
    size = int(j[-1]) - j0 + 2
    new = np.bincount(j - j0, weights=t * down[rem], minlength=size).astype(np.float64)
    new += np.bincount(j - j0 + 1, weights=t * up[rem], minlength=size)
    total = float(t.sum())
    spread = 0.0
    if total > 0.0:
        spread = float((t * (beta * (1.0 - beta))[rem]).sum()) / total * h2 * h2
    block = DiscretePLD(
        h=h2, offset=j0, pmf=new, infinity_mass=infinity, tilt=lam, log_norm=comp.log_mgf
    )
    return block, spread


def _rebin(
    t: np.ndarray, offset: int, lam: float, factor: int, h: float
) -> tuple[np.ndarray, int]:
    """Tilted masses at indices offset + i (step h) summed into the bins of the grid j·h·m
    nearest to each (m = ``factor``; half-way goes up), re-tilted to the bins' losses."""
    idx = offset + np.arange(t.size)
    j = np.floor_divide(idx + factor // 2, factor)
    shift = (j * factor - idx) * h  # bin loss − atom loss
    with np.errstate(over="ignore"):
        w = t * np.exp(lam * shift)
    j0 = int(j[0])
    out = np.bincount(j - j0, weights=w, minlength=int(j[-1]) - j0 + 1).astype(np.float64)
    return out, j0


def rounded_blocks(
    rounded: RoundedPLD,
    count: int,
    *,
    lam: float,
    tilt_at: float | None,
    tail: float,
    factor: int,
) -> tuple[DiscretePLD, DiscretePLD]:
    """For the lower bound: the rounded loss of ``count`` steps, composed under P and under
    Q (tilts λ and λ + 1, one window) and rounded again to the nearest point of the grid
    h·``factor`` — still a test statistic, a deterministic function of the outcome. Returned
    as a pointwise *lower* bound on its P-masses (round-off, aliased mass and everything
    outside the window taken off; a block sum beyond the window counts as finite there) and a
    pointwise *upper* bound on its Q-masses (round-off added, the Q-mass above the window in
    its infinite bin, below it at its bottom), both stored tilted."""
    p_meas, q_meas = rounded.as_measures()
    h = rounded.h
    pc = compose([(p_meas, count)], tail=tail, tilt_at=tilt_at, lam=lam)
    win = Window(pc.lam, pc.offset, pc.size)
    qc = compose([(q_meas, count)], tail=tail, window=win, lam_shift=1.0)
    p_low = np.maximum(pc.tilted - pc.roundoff - pc.alias_bounds(), 0.0)
    q_up = np.maximum(qc.tilted + qc.roundoff, 0.0)
    bottom = qc.offset * h
    if qc.log_below > -math.inf:
        q_up[0] += math.exp(min(qc.log_below + qc.lam * bottom - qc.log_mgf, 700.0))
    p_bins, j0 = _rebin(p_low, pc.offset, pc.lam, factor, h)
    q_bins, _ = _rebin(q_up, qc.offset, qc.lam, factor, h)
    h2 = h * factor
    p_inf = pc.infinity_mass * (1.0 - 1e-12)
    q_inf = min(1.0, qc.infinity_mass * (1.0 + 1e-12) + math.exp(min(qc.log_beyond, 0.0)))
    return (
        DiscretePLD(h=h2, offset=j0, pmf=p_bins, infinity_mass=p_inf, tilt=pc.lam,
                    log_norm=pc.log_mgf),
        DiscretePLD(h=h2, offset=j0, pmf=q_bins, infinity_mass=q_inf, tilt=qc.lam,
                    log_norm=qc.log_mgf),
    )
