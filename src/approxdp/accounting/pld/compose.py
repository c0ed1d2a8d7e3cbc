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
from typing import Any

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
from approxdp.accounting.pld.grid import DiscretePLD, discretize
from approxdp.accounting.pld.rounded import RoundedPLD, discretize_rounded
from approxdp.accounting.pld.spectrum import fold_rolled, polar_terms, rolled
from approxdp.accounting.pld.spectrum import survivors as _few_left
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

_U = float(np.finfo(np.float64).eps) / 2  # unit round-off
MAX_WINDOW = 1 << 22  # composed window (4M points: ~200 MB of work arrays)
#: A frequency whose bound on the composed spectrum, e^(Σ c log(|y_j| + e_j)), is below
#: e^_DROP is no longer followed by :func:`_fft_power`: the composed |Y| there is below
#: _BELOW_DROP (the least positive float; e^_DROP is ~1e-330), which the round-off bound adds
#: for it instead. In a sum of many steps |Y| falls fast away from frequency 0, so the polar
#: power (five transcendental functions per frequency and part) is taken on a few per cent
#: of the frequencies after the first parts.
_DROP = -760.0
_BELOW_DROP = math.ulp(0.0)


class WindowTooLargeError(InvalidParameterError):
    """The composed loss window would exceed :data:`MAX_WINDOW` points at this grid step."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message)
        self.needed = needed


def _fft_power(
    parts: Sequence[tuple[DiscretePLD, int]], lam: float, a_idx: int, n: int,
    extended: bool = False,
) -> tuple[FloatArray, float, float]:
    """irfft(∏ rfft(tilted p_j)^c_j) on n points, placed so that entry m is the tilted mass at
    index a_idx + m; with the per-entry round-off bound and the exact log-MGF at λ.

    Each tilted measure is rolled (exactly) so that its mean sits at index 0: its spectrum
    y is then near 1 with a small phase wherever y^c is not negligible. The power is taken in
    polar form, y^c = e^(c log|y|) e^(i c arg y), in float64, with log|y| = ½ log1p(|y|² − 1)
    and |y|² − 1 = (Re y − 1)(Re y + 1) + (Im y)² formed from Re y − 1 (exact where Re y ≥ ½):
    both logarithms then carry *relative* errors, and the power's error is a few u times
    (1 + Σ c_j (|log|y_j|| + |arg y_j|)) of |y^c| — where |y^c| matters, c|log|y|| ≲ 40
    and, centred, c|arg y| is small — instead of ~u·c·(|log|y|| + π) with an uncentred,
    absolute log. The bound per frequency (u the float64 unit round-off; ℓ = log|y|,
    A = |Re y − 1|·|Re y + 1| + (Im y)²; safety factor 2 on each term):

    - ℓ from log1p (|y|² ≥ ½): |Δℓ| ≤ 8uA/|y|² + 4u|ℓ| (|y|² − 1 is formed with error
      ≤ 5uA, Re y and Im y cast to float64 with relative error u each; log1p adds 1 ulp:
      no constant term, which c would multiply);
      from log (|y|² < ½): |Δℓ| ≤ 4u(|ℓ| + 1);
    - arg y = atan2(Im y, Re y): |Δ arg| ≤ 8u|arg y| (the inputs' relative u errors move it
      by ≤ u|sin 2 arg y| ≤ 2u|arg y|, atan2 itself by ≤ 2 ulp);
    - the products c·ℓ, c·arg (u each), their running sums over the k parts (a k-term float
      sum errs by ≤ (k − 1)u Σ|terms|), and e^x, cos, sin of them: ≤ (8 + 2k)u(1 + Σ c(|ℓ| +
      |arg|)) more; the result is |Y|·(expm1(Σ c(|Δℓ| + |Δarg|) + that) + 8u) off.

    The forward transforms' own error (pocketfft's componentwise bound c·log2(N)·u_f·‖x‖₁,
    and the folding sums) is first order: |Δ ∏ y_j^c_j| ≤ Σ_j c_j e_j ∏_i (|y_i| + e_i)^c_i
    / (|y_j| + e_j). A power c multiplies it by c: where the composition stands for very
    many steps (blocks of blocks), ``extended`` computes the tilting and the forward
    transform (and the inverse one, whose error is c·log2(N)·u_f·Σ|Y|/N per entry) in x87
    extended precision (u_f = 5.4e-20 instead of 1.1e-16; pocketfft supports it); the power
    stays in float64, whose errors above are relative (the transcendental functions on x87
    long doubles cost 40–100 times more: they were 3/4 of a T = 10^12 calibration). Every
    bound evaluated in float64 is scaled by 1.001 (its own rounding is ~u of it)."""
    dt: Any = np.longdouble if extended else np.float64
    u_in = float(np.finfo(dt).eps) / 2  # the tilting and the forward transform
    u = _U  # the power
    base = 0
    log2n = math.log2(n)
    log_mgf = 0.0
    m = n // 2 + 1
    # each part tilted first: its mass bounds its spectrum before it is transformed
    tilts: list[tuple[Any, int, int, float]] = []
    for p, c in parts:
        if lam == p.tilt:  # stored tilted at this λ (a block): a rescaling only
            w: Any = np.maximum(p.pmf, 0.0).astype(dt)
            total = w.sum()
            norm = dt(p.log_norm) + np.log(total) if total > 0 else dt(-np.inf)
            tilted = w / total if total > 0 else np.zeros_like(w)
        else:
            losses: Any = (p.offset + np.arange(p.pmf.size, dtype=dt)) * dt(p.h)
            with np.errstate(divide="ignore"):
                lt = np.log(np.maximum(p.pmf, 0.0).astype(dt))
            lt += dt(p.log_norm) + (dt(lam) - dt(p.tilt)) * losses
            top = lt.max()
            norm = top + np.log(np.exp(lt - top).sum()) if np.isfinite(top) else top
            tilted = np.exp(lt - norm) if np.isfinite(norm) else np.zeros_like(lt)
            del lt, losses
        log_mgf += c * float(norm)
        # the tilted mean's index, rolled to 0 (an exact circular shift of the whole sum)
        weights = np.asarray(tilted, dtype=np.float64)
        mass = float(weights.sum())
        shift = round(float((weights * np.arange(weights.size)).sum()) / mass) if mass > 0 else 0
        folds = -(-p.pmf.size // n)
        # log of a bound on |y| + e_fwd at every frequency: |DFT| ≤ Σ|x| (the float sums'
        # rounding, < 1e-9 of the mass, and the transform's error bound added)
        cap = c * math.log(mass * (1.0 + 1e-9) * (1.0 + 1.001 * (4.0 * log2n + folds) * u_in)
                           ) if mass > 0 else 0.0
        tilts.append((tilted, shift, folds, cap))
        del weights
    # the bound of the parts not yet transformed, after each part (see _DROP)
    caps_after = [*np.cumsum([cap for *_, cap in tilts][::-1])[::-1].tolist()[1:], 0.0]
    keep = np.arange(m)  # the frequencies still followed (see _DROP)
    dropped = 0
    log_abs = np.zeros(m)
    arg = np.zeros(m)
    log_env = np.zeros(m)
    err_pow = np.zeros(m)  # Σ c (|Δℓ| + |Δarg|), then the products' and functions' share
    sizes = np.zeros(m)  # Σ c (|ℓ| + |arg|)
    fwd: list[tuple[FloatArray, float, int, npt.NDArray[np.intp]]] = []
    for i, ((p, c), (tilted, shift, folds, _), cap_after) in enumerate(
        zip(parts, tilts, caps_after, strict=True)
    ):
        # aliasing commutes with convolution; entry i: index offset + shift + i (mod n)
        folded = fold_rolled(tilted, n, shift, dt)
        base += c * (p.offset + shift)
        spec = sfft.rfft(folded)
        # pocketfft's componentwise bound c·log2(N)·u·‖x‖₁, and the folding sums
        e_fwd = (4.0 * log2n + folds) * u_in * float(np.sum(np.abs(folded)))
        del folded
        pre = 0  # frequencies surely dropped after this part, left out before its envelope
        if keep.size < m:
            spec = spec[keep]
        elif i == 0 and (few := _few_left(spec, e_fwd, c, cap_after, _DROP)) is not None:
            spec, keep, pre = spec[few], few, m - few.size
            log_abs, arg, log_env, err_pow, sizes = (np.zeros(few.size) for _ in range(5))
        re = np.asarray(spec.real, dtype=np.float64)
        im = np.asarray(spec.imag, dtype=np.float64)
        re_m1 = np.asarray(spec.real - 1.0, dtype=np.float64)
        del spec
        y2 = re * re + im * im
        with np.errstate(divide="ignore", invalid="ignore"):
            env = np.log(np.sqrt(y2) + e_fwd)
        log_env += c * env
        # the frequencies dropped after this part (see _DROP), left out before the polar
        # power's transcendental functions: in a sum of many steps they are most of them
        alive = log_env + cap_after >= _DROP
        live = int(np.count_nonzero(alive))
        if pre or 8 * live < 7 * alive.size:  # a sizeable share: drop it
            dropped += pre + alive.size - live
            keep = keep[alive]
            re, im, re_m1, y2, env = re[alive], im[alive], re_m1[alive], y2[alive], env[alive]
            log_abs, arg, log_env = log_abs[alive], arg[alive], log_env[alive]
            err_pow, sizes = err_pow[alive], sizes[alive]
        la, ph, err_c, size_c = polar_terms(re, im, re_m1, y2, c, u)
        log_abs += c * la
        arg += c * ph
        err_pow += err_c
        sizes += size_c
        fwd.append((env, e_fwd, c, keep))
        del re, im, re_m1, y2, la, ph, err_c, size_c, alive
    abs_k = np.exp(log_abs)
    err_k = np.zeros(keep.size)
    for env, e_fwd, c, at in fwd:
        env_k = env if at.size == keep.size else env[np.searchsorted(at, keep)]
        err_k += c * e_fwd * np.exp(log_env - env_k)
    with np.errstate(over="ignore"):
        rel = np.expm1(err_pow + (8.0 + 2.0 * len(parts)) * u * (1.0 + sizes)) + 8.0 * u
    err_k += np.where(abs_k > 0.0, abs_k * rel, 0.0)
    abs_t = np.zeros(m)
    abs_t[keep] = abs_k
    spec_t = np.zeros(m, dtype=np.complex128)
    spec_t[keep] = abs_k * (np.cos(arg) + 1j * np.sin(arg))
    err_spec = np.zeros(m)
    err_spec[keep] = err_k
    del log_abs, arg, log_env, err_pow, sizes, rel, fwd, abs_k, err_k
    # the inverse transform in the forward one's precision: in float64 its error (about
    # 64u·Σ|Y|/N per entry) would be the largest term left at T = 10^12
    comp_x = sfft.irfft(spec_t.astype(np.clongdouble) if extended else spec_t, n=n)
    comp = np.asarray(comp_x, dtype=np.float64)
    del spec_t
    weight = np.full(m, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    roundoff = 1.001 * (
        float((weight * err_spec).sum()) / n
        + 4.0 * log2n * u_in * float((weight * abs_t).sum()) / n
        + u_in * float(np.max(np.abs(comp_x)))
        + (u * float(np.max(np.abs(comp))) if extended else 0.0)  # the cast to float64
        + 2.0 * dropped * _BELOW_DROP / n  # |Y| at the frequencies left out (see _DROP)
    )
    # position k holds the index s ≡ base + k (mod n); put index a_idx + m at position m
    return rolled(comp, a_idx - base), roundoff, log_mgf


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

    Raises:
        WindowTooLargeError: the window would need more than :data:`MAX_WINDOW` points.
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
    comp, roundoff, log_mgf = _fft_power(parts, lam, a_idx, n, extended)
    return ComposedPLD(
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
