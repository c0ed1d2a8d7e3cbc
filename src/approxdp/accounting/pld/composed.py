"""A composed privacy-loss distribution on its window, and the certified bounds read off it.

:class:`ComposedPLD` holds the (tilted) masses of a composition built by
:func:`approxdp.accounting.pld.compose.compose`, with every error term (round-off, left-out
and aliased tails, mass at +∞) needed to turn them into a certified upper bound on
δ(ε) = E_P[(1 − e^(ε−S))₊] + P(S = ∞) and its inverse ε(δ) (Koskela, Jälkö, Honkela 2020,
https://arxiv.org/abs/1906.03049, Sec. 3; Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380).

A lower bound comes with it (:func:`rounded_tails`): the loss rounded to the nearest grid point
is a test statistic, so δ(ε) ≥ P(S̃ > t) − e^ε Q(S̃ > t) for the rounded sum S̃ and any t
(:func:`~approxdp.accounting.pld.rounded.discretize_rounded`). Its P- and Q-measures are composed
the same way on the same window, their tails bounded from below and from above
(:func:`test_delta`, :func:`test_epsilon`).
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import numpy.typing as npt

__all__ = [
    "ComposedPLD",
    "rounded_tails",
    "test_delta",
    "test_epsilon",
]

FloatArray = npt.NDArray[np.float64]
_U = float(np.finfo(np.float64).eps) / 2  # unit round-off
#: Linear tail bounds below this are read in log space (:meth:`ComposedPLD.log_upper_tails`).
_NORMAL = 1e-290
# Sums of products are written (x * y).sum(), never np.dot: short vectors through a threaded
# BLAS cost milliseconds of thread wake-ups on a busy machine (measured: 3.4 ms vs 0.05 ms).


def _suffix(x: FloatArray) -> FloatArray:
    """Suffix sums of x, then 0 (the running sum from the end, written backwards in place)."""
    out = np.zeros(x.size + 1)
    if x.size:
        with np.errstate(over="ignore", invalid="ignore"):
            np.cumsum(x[::-1], out=out[-2::-1])
    return out


class ComposedPLD:
    """The composition of several discretized measures, with every error term needed to turn
    its masses into certified bounds.

    ``tilted[m]`` is the tilted mass at loss (offset + m)·h; the untilted mass is
    ``tilted[m] · exp(log_mgf − lam · loss)``. Built by :func:`compose`.
    """

    def __init__(
        self,
        *,
        h: float,
        offset: int,
        tilted: FloatArray,
        lam: float,
        log_mgf: float,
        infinity_mass: float,
        roundoff: float,
        log_beyond: float,
        log_alias_up: float,
        log_alias_low: float,
        log_below: float,
        steps: int,
        lam_target: float | None = None,
        alias_theta: float = 0.0,
    ) -> None:
        self.h = h
        self.offset = offset
        self.size = int(tilted.size)
        self.lam = lam
        self.log_mgf = log_mgf
        self.infinity_mass = infinity_mass
        self.roundoff = roundoff  # per-entry bound on |error| of ``tilted``
        self.log_beyond = log_beyond  # log bound on the true mass at or above the window top
        self.log_alias_up = log_alias_up  # log bound (before e^(−λ max(ε, a))) of mass aliased down
        self.log_alias_low = log_alias_low  # log bound on the mass aliased up (any landing)
        self.log_below = log_below  # log bound on the true mass below the window's bottom
        self.steps = steps  # composed steps
        self.lam_target = lam_target  # the loss the tilt was aimed at (None: untilted)
        self.tilted = tilted  # the whole window, tilted (for composing in blocks)
        self.block_spread = 0.0  # variance added by regridding blocks (under the tilt)
        self.blocked = False  # composed in blocks (passes.composed)
        self.step_h = h  # the steps' grid (coarser than asked where it would not fit: passes)
        self.alias_theta = alias_theta  # the θ of log_alias_up (for per-entry alias bounds)
        # the Chernoff (θ, K) of the window's edges (beyond, alias, below) the composer used:
        # to compose another measure on this window with the same bounds (set by compose)
        self.edges: tuple[tuple[float, float], ...] = ()
        # only ε ≥ 0 is ever asked for: atoms at l < 0 never count (the losses (offset + i)·h
        # increase: those ≥ 0 are the suffix from i = −offset on; only it is formed)
        keep = min(max(-offset, 0), self.size)
        self._l = (offset + np.arange(keep, self.size)) * h
        t = self._l * lam  # the untilt factors e^(min(log_mgf − λl, 700)), formed in place
        np.subtract(log_mgf, t, out=t)
        over = np.flatnonzero(t > 700.0)  # (capped: the tests' tails over them are unknown)
        self._capped = int(over[-1]) if over.size else -1
        np.minimum(t, 700.0, out=t)
        with np.errstate(over="ignore"):
            self._untilt = np.exp(t, out=t)
        self._m = tilted[keep:] * self._untilt  # untilted masses
        self._ref = float(self._l[0]) if self._l.size else 0.0
        self._terms_at: dict[float, tuple[float, float, float]] = {}  # (see _terms)

    def untilt_factors(self) -> FloatArray:
        """The untilt factors e^(min(log_mgf − λl, 700)) of the window's losses l ≥ 0 (read
        only: the array the bounds here are formed from)."""
        return np.asarray(self._untilt)

    # suffix sums from index j on: m, m·e^(ref − l), untilt factors (each formed when first
    # read: a test composition reads two of them, an ε read all three)
    @cached_property
    def _r1(self) -> FloatArray:
        return _suffix(self._m)

    @cached_property
    def _r2(self) -> FloatArray:
        t: FloatArray = np.asarray(self._ref - self._l)  # m·e^(max(ref − l, −745)), in place
        np.maximum(t, -745.0, out=t)
        with np.errstate(over="ignore", under="ignore"):
            np.exp(t, out=t)
            t *= self._m
        return _suffix(t)

    @cached_property
    def _r3(self) -> FloatArray:
        return _suffix(self._untilt)

    @cached_property
    def _r4(self) -> FloatArray:
        t: FloatArray = np.asarray(self._ref - self._l)  # untilt·e^(max(ref − l, −745))
        np.maximum(t, -745.0, out=t)
        with np.errstate(over="ignore", under="ignore"):
            np.exp(t, out=t)
            t *= self._untilt
        return _suffix(t)

    def _rounding(self, j: int, epsilon: float, weights: FloatArray | None = None) -> float:
        """The round-off's share of δ(ε) from entry j on (the losses above ε): the per-entry
        bound ``roundoff`` (on the tilted masses) untilted and weighted as the masses are in
        δ(ε) = Σ m_k (1 − e^(ε − l_k)) — an entry's error moves δ by its error times that
        weight, not by its whole size. ``weights``: the 1 − e^(ε − l_k) already formed."""
        if self.roundoff == 0.0 or j >= self._l.size:
            return 0.0
        w = -np.expm1(epsilon - self._l[j:]) if weights is None else weights
        with np.errstate(over="ignore"):  # (untilt factors up to e^700: a sum of them may
            return self.roundoff * float((self._untilt[j:] * w).sum())  # be +∞, no bound)

    def alias_bounds(self) -> FloatArray:
        """Per entry of the window, a bound on the tilted mass that aliasing put there (from
        above: the tilted mass beyond the top, at least N·h higher; from below: the mass
        below the bottom, untilting shrinking it by e^(−λNh)), in the units of ``tilted``."""
        rel = np.arange(self.size) * self.h  # s − bottom
        norm = self.log_mgf
        with np.errstate(over="ignore", under="ignore"):
            up = np.exp(np.minimum(self.log_alias_up - norm - self.alias_theta * rel, 0.0))
            span = self.size * self.h
            low = np.exp(np.minimum(
                self.log_below + self.lam * (self.bottom + rel - span) - norm, 0.0))
        return np.asarray(up + low)

    @property
    def losses(self) -> FloatArray:
        """The loss of each entry of the composed window."""
        return np.asarray((self.offset + np.arange(self.size)) * self.h, dtype=np.float64)

    @property
    def bottom(self) -> float:
        """The lowest loss in the window."""
        return self.offset * self.h

    def mass_above(self, epsilon: float) -> float:
        """≈ P(S > ε) (finite part, in the window): for error estimates, not certified."""
        j = int(np.searchsorted(self._l, epsilon, side="right"))
        return float(self._r1[j])

    def slope(self, epsilon: float) -> float:
        """≈ −dδ/dε = e^ε E[e^(−S); S > ε] (finite part, in the window): for error estimates."""
        j = int(np.searchsorted(self._l, epsilon, side="right"))
        return float(self._r2[j]) * math.exp(min(epsilon - self._ref, 700.0))

    def _parts(self, epsilon: float) -> tuple[float, float]:
        """(core sum, pessimistic extra) at ε ≥ 0, by direct summation."""
        core, pess, _ = self._terms(epsilon)
        return core, pess

    def _terms(self, epsilon: float) -> tuple[float, float, float]:
        """:meth:`_parts` and the round-off's share of its extra (one summation for both).
        Memoized per ε: a pass's answer is read three times (the ε's check, then its error
        terms twice: :func:`~approxdp.accounting.pld.passes.upper_epsilon`), each a sweep of
        the window — the same floats."""
        hit = self._terms_at.get(epsilon)
        if hit is None:
            hit = self._terms_now(epsilon)
            if len(self._terms_at) < 64:
                self._terms_at[epsilon] = hit
        return hit

    def _terms_now(self, epsilon: float) -> tuple[float, float, float]:
        j = int(np.searchsorted(self._l, epsilon, side="right"))
        w = -np.expm1(epsilon - self._l[j:])
        core = float((self._m[j:] * w).sum())
        rounding = self._rounding(j, epsilon, w)
        # each term bounds a contribution to δ ≤ 1: a weak bound is capped at 1 (log 0)
        beyond = math.exp(min(self.log_beyond, 0.0))
        if epsilon < self.bottom:  # true mass in (ε, window bottom) is not in the window
            beyond += math.exp(min(self.log_below, 0.0))
        # aliased mass only ever adds (positive) mass: harmless for the upper bound
        return core, self.infinity_mass + beyond + rounding, rounding

    def error_terms(self, epsilon: float) -> tuple[float, float]:
        """(round-off, left-out and aliased tails) of :meth:`delta` at ε: what the window
        costs there (the aliased mass is not in the bound — it only adds mass — but it can
        make the bound loose). (Its sum over the window is :meth:`_terms`'s, memoized.)"""
        _, pess, rounding = self._terms(epsilon)
        m = max(epsilon, self.bottom)
        alias = math.exp(min(self.log_alias_up - self.lam * m, 0.0)) + math.exp(
            min(self.log_alias_low, 0.0)
        )
        return rounding, pess - rounding - self.infinity_mass + alias

    def delta(self, epsilon: float) -> float:
        """Certified upper bound on δ(ε) of the composition (ε ≥ 0)."""
        core, pess = self._parts(epsilon)
        return min(1.0, (core + pess) * (1.0 + 1e-10))

    def tails(self, lower: bool, infinite: bool) -> FloatArray:
        """Certified bounds on the finite mass at or above each loss of the window (losses
        ≥ 0), plus the mass at +∞ if ``infinite``: from below (``lower``; every term that may
        have added mass taken off) or from above (every left-out mass added)."""
        return self._tails(lower)[1 if infinite else 0]

    def _tails(self, lower: bool, roundoff: bool = True) -> tuple[FloatArray, FloatArray]:
        """:meth:`tails` without and with the mass at +∞ (the finite part formed once);
        without the round-off term if not ``roundoff`` (not certified: what it costs).

        The float sums' own error is taken too (the tests' P- and Q-tails may nearly cancel,
        and far in the tail a Q-tail is subnormal): each term relative ``rel`` (a suffix sum of
        up to ``size`` terms errs by < size·u of it; an untilt factor e^x by ~|x|·u, |x| ≤
        |log_mgf| + |λ|·max|l| or 700; an alias bound likewise) and, where values are
        subnormal, ``floor`` absolute (~½ ulp(0) for each of ~6 roundings per entry). A
        threshold whose tail holds a capped untilt factor (e^700) is no test."""
        n = self._l.size
        rounding = self.roundoff * self._r3[:n] if roundoff else np.zeros(n)
        lm = self.log_mgf if math.isfinite(self.log_mgf) else 0.0
        top = float(np.max(np.abs(self._l))) if n else 0.0
        rel = (self.size + 1408.0 + 2.0 * (abs(lm) + abs(self.lam) * top)) * _U * 1.01
        floor = 4.0 * (self.size + 4) * math.ulp(0.0)
        if lower:
            if self.lam < 0.0:  # untilting grows what was aliased up from below: no bound
                none = np.full(n, -math.inf)  # is derived for it, so nothing is certified
                return none, none.copy()
            # Mass aliased down from above the window's top was read at its landing loss l,
            # untilted there by e^(−λl) instead of at its true loss ≥ l + N·h: in these
            # (untilted) units its bound e^(log_alias_up − λl) is NOT a probability and may
            # exceed 1, so it is never capped (a cap at 1 let a window whose top sits in the
            # tilted bulk certify a tail above the truth). Overflow gives −∞: no test there.
            # Mass aliased up from below the bottom is a probability shrunk by untilting: ≤ 1.
            with np.errstate(over="ignore"):
                alias = np.exp(self.log_alias_up - self.lam * self._l)
            alias = alias + math.exp(min(self.log_alias_low, 0.0))
            with np.errstate(invalid="ignore"):
                finite = self._r1[:n] * (1.0 - rel) - (rounding + alias) * (1.0 + rel) - floor
            finite[: self._capped + 1] = -math.inf
            return np.asarray(finite + 0.0), np.asarray(finite + self.infinity_mass * (1.0 - 1e-12))
        beyond = math.exp(min(self.log_beyond, 0.0))
        finite = (self._r1[:n] + rounding + beyond) * (1.0 + rel) + floor
        finite[: self._capped + 1] = math.inf
        return np.asarray(finite + 0.0), np.asarray(finite + self.infinity_mass * (1.0 + 1e-12))

    def log_upper_tails(
        self, linear: tuple[FloatArray, FloatArray], roundoff: bool = True
    ) -> tuple[FloatArray, FloatArray]:
        """The logs of the upper tails ``linear`` (:meth:`_tails` from above with the same
        ``roundoff``: without and with the mass at +∞, formed once by the caller): the log of
        the linear bound where that is a normal float, and where it is not — the tails of a
        test's Q-measure are about e^(−t) times its P-tails, below 1e-308 once t + log(1/P)
        passes ~709 (δ = 1e-300 at ε > 18; any δ at ε > 709), where the linear bound sinks
        into its subnormal floor and the tests certified nothing past ε ≈ 710 — a suffix sum
        in log space: log Σ_(k ≥ j) (max(m̃_k, 0) + r)·e^(K − λ l_k), r the per-entry
        round-off bound of the tilted masses m̃, and the mass left out above the window, by
        ``np.logaddexp.accumulate``; each of its n steps errs by at most (|partial| + 2)·u in
        the log, the terms by (|K| + 2|λ l| + 2)·u: their sum is added (rounded up)."""
        finite, infinite = linear
        with np.errstate(divide="ignore"):  # (a bound ≤ 0 — only without the round-off
            log_f = np.log(np.maximum(finite, 0.0))  # terms, not certified — reads as log 0)
            log_i = np.log(np.maximum(infinite, 0.0))
        far = np.flatnonzero(finite < _NORMAL)
        if far.size == 0 or not self.lam > 0.0 or not math.isfinite(self.log_mgf):
            return log_f, log_i
        j0 = int(far[0])
        keep = self.size - self._l.size
        masses = np.maximum(self.tilted[keep + j0:], 0.0)
        if roundoff:
            masses = masses + self.roundoff
        expo = self.log_mgf - self.lam * self._l[j0:]
        with np.errstate(divide="ignore"):
            terms = np.log(masses) + expo
        acc = np.logaddexp.accumulate(terms[::-1])[::-1]
        acc = np.logaddexp(acc, min(self.log_beyond, 0.0))
        live = acc[np.isfinite(acc)]
        if live.size:
            big = float(np.max(np.abs(live)))
            top = float(np.max(np.abs(self._l[j0:])))  # (K − λl's rounding: of |K| + |λl|)
            err = ((acc.size + 2) * (big + 2.0) + abs(self.log_mgf) + 2.0 * abs(self.lam) * top
                   + 4.0) * _U * 1.01
            acc = acc + 2.0 * err
        log_f[j0:] = np.minimum(log_f[j0:], acc)
        if self.infinity_mass > 0.0:
            extra = math.log(self.infinity_mass * (1.0 + 1e-12))
            log_i[j0:] = np.minimum(log_i[j0:], np.logaddexp(log_f[j0:], extra) + 4.0 * _U * (
                np.abs(log_f[j0:]) + abs(extra) + 2.0))
        else:
            log_i[j0:] = log_f[j0:]
        return log_f, log_i

    def _core_epsilon(self, target: float, with_rounding: bool) -> float:
        """Least ε ≥ 0 with core(ε) [+ rounding(ε)] ≤ target, from the suffix sums (a fast
        estimate: the callers certify the answer by direct summation)."""
        if target <= 0.0:
            return math.inf
        lk, r1, r2 = self._l, self._r1, self._r2
        if lk.size == 0:
            return 0.0
        e_r = self.roundoff if with_rounding else 0.0
        if e_r > 0.0:  # (m + e_r·untilt) weighted as in δ(ε): see _rounding
            r1 = r1 + e_r * self._r3
            r2 = r2 + e_r * self._r4
        with np.errstate(over="ignore", invalid="ignore"):
            # r1 − e^(min(l − ref, 700))·r2 above each grid loss, formed in place
            at_grid = lk - self._ref
            np.minimum(at_grid, 700.0, out=at_grid)
            np.exp(at_grid, out=at_grid)
            at_grid *= r2[1:]
            np.subtract(r1[1:], at_grid, out=at_grid)
        ok = np.nonzero(at_grid <= target)[0]
        if ok.size == 0:
            return math.inf
        j = int(ok[0])
        lo_e = 0.0 if j == 0 else float(lk[j - 1])
        # inside (l_{j−1}, l_j]: value(ε) = r1[j] − e^(ε − ref) r2[j]
        num = float(r1[j] - target)
        den = float(r2[j])
        if den <= 0.0 or num <= 0.0:
            return lo_e
        eps = self._ref + math.log(num) - math.log(den)
        return min(max(eps, lo_e), float(lk[j]))

    def epsilon(self, delta: float) -> float:
        """Least ε ≥ 0 with δ_upper(ε) ≤ δ: a certified upper bound on the true ε(δ)."""
        if self.delta(0.0) <= delta:
            return 0.0
        const = self.infinity_mass + math.exp(min(self.log_beyond, 0.0))
        # aim a hair below δ so that the direct-summation check below passes at once
        eps = self._core_epsilon(delta * (1.0 - 1e-9) / (1.0 + 1e-10) - const, with_rounding=True)
        if not math.isfinite(eps):
            return math.inf
        eps = eps * (1.0 + 4e-16) + 1e-300
        tol = max(self.h * 1e-4, 1e-15)
        step, fail = tol, None
        while self.delta(eps) > delta:  # certify by direct summation
            fail = eps
            eps += step
            step *= 2.0
            if step > 1e6:
                return math.inf
        # the walk overshoots by up to its last step — as far as from the estimate to the
        # answer, which is far where the estimate lies below the window's bottom (δ_up = 1
        # there): bisect back between the last failing ε and the certified one (every ε
        # returned is checked by direct summation)
        for _ in range(80):
            if fail is None or eps - fail <= tol:
                break
            mid = 0.5 * (fail + eps)
            if self.delta(mid) <= delta:
                eps = mid
            else:
                fail = mid
        return eps


def rounded_tails(
    p_comp: ComposedPLD, q_comp: ComposedPLD, roundoff: bool = True
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """For the composed P- and Q-measures of a rounded loss (same window): for tests
    {S̃ ≥ t_j} at each window loss t_j ≥ 0, with the outcomes where some step fell in the
    infinite bin left out or counted in (both are tests; counting them in helps when their
    P-mass is true infinite loss, and hurts when it is a truncated tail with Q-mass), a lower
    bound on each test's P-mass, an upper bound on its Q-mass, and the log of an upper bound
    on its Q-mass (the same bound's log where it is a normal float; where it is not, summed
    in log space: :meth:`ComposedPLD.log_upper_tails`). Then δ(ε) ≥ max over the tests of
    P-mass − e^ε Q-mass. Without the FFT round-off terms if not ``roundoff`` (not certified:
    to see what the round-off costs the tests)."""
    if p_comp.offset != q_comp.offset or p_comp.size != q_comp.size:
        raise ValueError("the P- and Q-compositions must share their window")  # pragma: no cover
    a = np.concatenate(p_comp._tails(True, roundoff))
    q_up = q_comp._tails(False, roundoff)
    b = np.concatenate(q_up)
    log_b = np.concatenate(q_comp.log_upper_tails(q_up, roundoff))
    return a, b, log_b


def test_delta(
    a_low: FloatArray, b_up: FloatArray, epsilon: float, log_b_up: FloatArray | None = None
) -> float:
    """max(0, max_j a_low_j − e^ε b_up_j): the certified lower bound on δ(ε) of the tests.
    ``log_b_up`` (:func:`rounded_tails`): where b_up is not a normal float, or e^ε is not,
    e^(ε + log b_up) instead (without it those tests certify nothing)."""
    if a_low.size == 0:
        return 0.0
    # e^ε·b rounded up (exp and the product: a few u of it, which a nearly equal a_low can
    # make a large share of the difference); for ε > 709 e^ε is +∞ and so is the product
    scale = math.exp(epsilon) * (1.0 + (4.0 + 2.0 * abs(epsilon)) * _U) if epsilon < 709.0 \
        else math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        vals = a_low - scale * b_up
        if log_b_up is not None:
            far = np.flatnonzero((b_up < _NORMAL) | (scale == math.inf))
            if far.size:
                # e^(ε + log b) rounded up: the sum's and the log's rounding (a few u of their
                # size) in the exponent, exp's own after it
                lb = log_b_up[far]
                size = np.abs(np.where(np.isfinite(lb), lb, 0.0))
                up = np.exp(epsilon + lb + (4.0 + abs(epsilon) + 2.0 * size) * _U)
                vals[far] = np.fmax(vals[far], a_low[far] - up * (1.0 + 4.0 * _U))
    best = float(np.nanmax(vals))
    return max(0.0, best * (1.0 - 1e-10) if best > 0 else best)


def test_epsilon(
    a_low: FloatArray, b_up: FloatArray, delta: float, log_b_up: FloatArray | None = None
) -> float:
    """The largest ε whose test lower bound on δ(ε) still exceeds δ (so the true ε(δ) is at
    least that), rounded down; 0 if no test exceeds δ. ``log_b_up`` (:func:`rounded_tails`):
    the logs of the Q-mass bounds, read instead of log b_up (the same where b_up is normal;
    where it underflowed, the tests certify ε far beyond ~710)."""
    ok = a_low * (1.0 - 1e-10) > delta
    if not bool(ok.any()):
        return 0.0
    num = a_low[ok] * (1.0 - 1e-10) - delta
    if log_b_up is None:
        den = b_up[ok]
        if bool((den <= 0.0).any()):
            return math.inf
        log_den = np.log(den)
    else:
        log_den = log_b_up[ok]
        if bool((log_den == -math.inf).any()):
            return math.inf
    eps = float(np.max(np.log(num) - log_den))
    return max(0.0, eps - 1e-12 * (1.0 + abs(eps)))
