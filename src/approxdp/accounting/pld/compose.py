"""Certified privacy-loss-distribution (PLD) accounting: discretize, compose by FFT, bound.

The composed result and the bounds read off it live in
:mod:`approxdp.accounting.pld.composed` (re-exported here).

The privacy profile of a composition is that of the *sum* of the privacy losses (Dwork,
Rothblum 2016; Koskela, Jälkö, Honkela 2020, https://arxiv.org/abs/1906.03049, Sec. 3):
δ(ε) = E_P[(1 − e^(ε−S))₊] + P(S = ∞), S = L₁ + … + L_T. We compute an *upper bound* on it,
every step of which is on the private side:

1. **Pessimistic discretization ("connect the dots").** Each mechanism's loss distribution is
   replaced by one on the grid i·h whose hockey-stick curve interpolates the true one at the
   grid points (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the Dots",
   https://arxiv.org/abs/2207.04380, Sec. 3). Concretely the P- and Q-mass of every loss
   interval (e_{k−1}, e_k] is split between its two ends so that both masses are kept; the
   coarse pair is then *dominating* (the original is its post-processing), and its error is
   second order in h: the loss is rounded at random with mean shift ≤ h²/8. Floating-point
   error in the split is bounded and moved up the grid (never down). Mass below the lowest
   grid point is moved up to it; mass above the highest goes to loss +∞.
2. **Composition in the Fourier domain.** The T-fold sum of m kinds of steps is
   irfft(∏ rfft(p_j)^{T_j}) (Koskela et al. 2021, https://arxiv.org/abs/2006.07134, Sec. 4),
   one FFT per kind, whatever T. The FFT is circular: a window [a, b) of the sum is chosen
   by Chernoff bounds on the composed discretized distribution
   (:mod:`approxdp.accounting.pld.window`); mass above b is bounded and added to δ, mass that
   aliases only ever adds mass (harmless for an upper bound).
3. **Exponential tilting.** Far in the tail, FFT round-off (~1e-16 of the largest mass) swamps
   the masses that make δ (dp_accounting under-reports ε there). The FFT is therefore done on
   the tilted distributions p_j e^(λl)/M_j(λ), with λ chosen so that the tilted mean sits at
   the ε of interest; the masses are untilted afterwards. Round-off is bounded per entry
   (pocketfft's componentwise bound c·log₂N·u·‖x‖₁ and the error of the complex power) and
   the bound is added to δ.

A lower bound comes with it (:func:`~approxdp.accounting.pld.composed.rounded_tails`): the loss
rounded to the nearest grid point is a test statistic, so δ(ε) ≥ P(S̃ > t) − e^ε Q(S̃ > t) for
the rounded sum S̃ and any t (:func:`~approxdp.accounting.pld.rounded.discretize_rounded`). Its P-
and Q-measures are composed the same way on the same window, their tails bounded from below and
from above; the bound's error is second order in the rounding, so the two bracket the truth
tightly (about 0.1 % wide in the DP-SGD example), also where the loss is concentrated far below
one grid step (small sampling rates), where no grid-supported dominated pair can be close.

Independent checks (in the tests): the analytic profile of one subsampled-Gaussian step
(:mod:`approxdp.accounting.pld.subsampled_gaussian`), the exact composition of Gaussians (one
Gaussian, Zhao et al. 2019, https://arxiv.org/abs/1911.12060, Lemma 15), and Google's
dp_accounting at a fine grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import fft as sfft

from approxdp.accounting.pld.composed import (
    ComposedPLD,
    rounded_tails,
    test_delta,
    test_epsilon,
)
from approxdp.accounting.pld.edges import tail_edge
from approxdp.accounting.pld.fft_power import _DROP as _DROP  # (running.py imports it here)
from approxdp.accounting.pld.fft_power import _fft_power
from approxdp.accounting.pld.grid import DiscretePLD, discretize
from approxdp.accounting.pld.rounded import RoundedPLD, discretize_rounded
from approxdp.accounting.pld.window import (
    Support,
    Window,
    chernoff_at,
    plan_window,
    support_of,
)
from approxdp.errors import InvalidParameterError

__all__ = [
    "MAX_WINDOW",
    "AliasTooLargeError",
    "ComposedPLD",
    "DiscretePLD",
    "RoundedPLD",
    "WindowTooLargeError",
    "compose",
    "discretize",
    "discretize_rounded",
    "rounded_tails",
    "tail_edge",
    "test_delta",
    "test_epsilon",
]

FloatArray = npt.NDArray[np.float64]
# Sums of products are written (x * y).sum(), never np.dot: short vectors through a threaded
# BLAS cost milliseconds of thread wake-ups on a busy machine (measured: 3.4 ms vs 0.05 ms).

MAX_WINDOW = 1 << 22  # composed window (4M points: ~200 MB of work arrays)


class WindowTooLargeError(InvalidParameterError):
    """The composed loss window would exceed :data:`MAX_WINDOW` points at this grid step."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message)
        self.needed = needed


class AliasTooLargeError(Exception):
    """A reused window's bound on the tilted mass aliased down from above its top exceeds
    the caller's cap (``compose``'s ``alias_cap``): found before the FFT is run."""


def _infinity(parts: Sequence[tuple[DiscretePLD, int]]) -> float:
    """P(some step is at +∞) = 1 − ∏ (1 − p∞_j)^c_j."""
    if any(p.infinity_mass >= 1.0 for p, _ in parts):
        return 1.0
    return -math.expm1(sum(c * math.log1p(-p.infinity_mass) for p, c in parts))


def _rebound(
    supports: Sequence[tuple[Support, int]], window: Window, shift: float, h: float
) -> Window:
    """``window``'s points for another measure tilted λ + ``shift``: the Chernoff exponents
    that bound its own mass beyond those edges (the Q-measure of a rounded loss, on its
    P-measure's window)."""
    lam = window.lam + shift
    top = (window.a_idx + window.n) * h
    bottom = window.a_idx * h
    # each from the θ the plan found for its edge (the edges moved only by rounding)
    beyond = chernoff_at(supports, lam=0.0, edge=top, upper=True, start=window.beyond[0])
    # both minimize K(u) − (u − λ₀)·top over u ≥ λ₀: where beyond's u is above λ it serves both
    alias = (beyond[0] - lam, beyond[1]) if beyond[0] > lam else chernoff_at(
        supports, lam=lam, edge=top, upper=True, start=window.alias[0] - shift
    )
    low = chernoff_at(supports, lam=0.0, edge=bottom, upper=False, start=window.below[0])
    return Window(window.lam, window.a_idx, window.n, beyond, alias, low)


def compose(
    parts: Sequence[tuple[DiscretePLD, int]],
    *,
    tail: float,
    tilt_at: float | None = None,
    below: float | None = None,
    window: Window | None = None,
    lam_shift: float = 0.0,
    lam: float | None = None,
    extended: bool = False,
    alias_cap: float | None = None,
) -> ComposedPLD:
    """Compose ``count`` copies of each discretized measure (all on one grid step h).

    Args:
        parts: (measure, count) pairs, count ≥ 1.
        tail: target size of each left-out term (in δ units at ``tilt_at``).
        tilt_at: the loss (ε) where δ is wanted; the FFT is tilted there. None: no tilt.
        below: how far under ``tilt_at`` the window must reach (default: three tilted
            standard deviations and a tenth of ``tilt_at``).
        window: reuse this window (tilt λ + ``lam_shift``): to compose a second measure on
            the same points (the Q-measure of a rounded loss, with ``lam_shift=1``).
        lam_shift: added to the window's tilt.
        lam: use this tilt (``tilt_at`` then only places the window).
        extended: compute the FFT in extended precision (for compositions that stand for
            very many steps).
        alias_cap: raise :class:`AliasTooLargeError`, before the FFT, where the bound on
            the tilted mass aliased down from above the window's top, untilted at
            ``tilt_at`` (``log_alias_up − λ·tilt_at``), is above e^``alias_cap``.

    Raises:
        WindowTooLargeError: the window would need more than :data:`MAX_WINDOW` points.
        AliasTooLargeError: see ``alias_cap``.
    """
    h = parts[0][0].h
    steps = sum(c for _, c in parts)
    infinity = _infinity(parts)
    if any(not bool((p.pmf > 0.0).any()) for p, _ in parts):
        # a step with no finite loss at all (only P(L = ∞)): the composition has none either
        return ComposedPLD(
            h=h, offset=0, tilted=np.zeros(1), lam=0.0, log_mgf=-math.inf,
            infinity_mass=infinity, roundoff=0.0, log_beyond=-math.inf,
            log_alias_up=-math.inf, log_alias_low=-math.inf, log_below=-math.inf, steps=steps,
        )
    support_lo = sum(c * p.offset for p, c in parts)
    support_hi = sum(c * (p.offset + p.pmf.size - 1) for p, c in parts)
    supports = [(support_of(p), c) for p, c in parts]
    if window is None:
        window = plan_window(
            supports, h=h, tilt_at=tilt_at, log_tail=math.log(tail),
            support=(support_lo, support_hi), below=below, delta_scale=tail * 1e4, lam=lam,
        )
    lam = window.lam + lam_shift
    a_idx = window.a_idx
    n = int(sfft.next_fast_len(window.n, real=True))
    if n > MAX_WINDOW:
        raise WindowTooLargeError(
            f"the composed loss window needs {window.n} points at step h={h:.3g} "
            f"(at most {MAX_WINDOW}); use a coarser precision",
            needed=window.n,
        )
    # the Chernoff exponents for the edges the window really has
    window = _rebound(supports, Window(window.lam, a_idx, n, window.beyond, window.alias,
                                       window.below), lam_shift, h)
    # every left-out term bounded at the Chernoff exponents chosen for the window's edges
    # (each K exact; a window rounded up to an FFT size only makes them smaller)
    top = (a_idx + n) * h
    if a_idx + n > support_hi:
        log_beyond = log_alias_up = -math.inf
    else:
        th, k = window.beyond
        log_beyond = min(0.0, k - th * top)
        th, k = window.alias
        log_alias_up = k - th * top
    if a_idx <= support_lo:
        log_alias_low = log_below = -math.inf
    else:
        th, k = window.below
        log_below = min(0.0, k + th * a_idx * h)
        log_alias_low = log_below - lam * n * h  # lands ≥ n·h higher: untilting shrinks it
    if (alias_cap is not None and tilt_at is not None
            and log_alias_up - lam * tilt_at > alias_cap):
        raise AliasTooLargeError
    comp, roundoff, log_mgf = _fft_power(parts, lam, a_idx, n, extended)
    out = ComposedPLD(
        h=h,
        offset=a_idx,
        tilted=comp,
        lam=lam,
        log_mgf=log_mgf,
        infinity_mass=infinity,
        roundoff=roundoff,
        log_beyond=log_beyond,
        log_alias_up=log_alias_up,
        log_alias_low=log_alias_low,
        log_below=log_below,
        steps=steps,
        lam_target=tilt_at,
        alias_theta=window.alias[0],
    )
    out.edges = (window.beyond, window.alias, window.below)
    return out
