"""Exact log moment generating functions of discretized measures, for the window planner.

:mod:`approxdp.accounting.pld.window` bounds what an FFT window leaves out by Chernoff's
inequality on the *discretized* steps, whose log-MGF K(u) = Σ_j c_j log Σ_i p_ij e^(u·l_ij) is
known exactly (Koskela et al. 2021, https://arxiv.org/abs/2006.07134, Sec. 4). This module
computes K, K' (the tilted mean) and K'' (the tilted variance) over each measure's support —
one step at a time (:class:`Support`) or many side by side (a schedule's phases) — and caches
the supports of recently composed measures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.grid import DiscretePLD
from approxdp.accounting.pld.quiet import quiet

__all__ = [
    "Moments",
    "Parts",
    "Support",
    "clear_supports",
    "composed_moments",
    "support_of",
]

FloatArray = npt.NDArray[np.float64]


class Support:
    """The positive-mass entries of one discretized measure, for exact log-MGFs."""

    def __init__(self, pld: DiscretePLD) -> None:
        keep = pld.pmf > 0.0
        self.idx = keep.nonzero()[0]  # the entries' grid positions
        losses = pld.losses[keep]
        self.logp = pld.log_masses()[keep]
        self.ref = float(losses[losses.size // 2]) if losses.size else 0.0
        self.l = losses - self.ref  # centred: the variance keeps its digits
        self.l2 = self.l * self.l
        self.reach = float(_MAX(np.abs(self.l))) if losses.size else 0.0
        self.lo = float(losses[0]) if losses.size else 0.0
        self.hi = float(losses[-1]) if losses.size else 0.0
        self._memo: dict[float, tuple[float, float, float]] = {}
        self.cached = False  # held in the module's cache (its edges may be memoized)
        self._merged: dict[int, Support] = {}

    def merged(self, k: int) -> Support:
        """A smaller measure for *planning* only (cached): the entries of each run of k
        consecutive grid points merged into one, of their total mass at their mean loss, so
        Newton searches on it land about where they would on the exact one, at ~1/k of the
        cost. It keeps the mean; its log-MGF is below the exact one (Jensen) by about u²·v/2
        at a tilt u, v the within-run variance (≲ (k·h)²/12; runs span k grid points however
        sparse the measure is there): over T steps on a grid whose T·h² is sized to the
        precision, a fraction of a nat of a window's tail budget. Nothing certified may be
        computed on it: the composer bounds what a window leaves out on the exact supports."""
        hit = self._merged.get(k)
        if hit is not None:
            return hit
        n = self.l.size
        if n <= 2 * k:
            return self
        group = (self.idx - self.idx[0]) // k
        starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        if starts.size > n // 2:  # (sparse already: little to gain)
            self._merged[k] = self
            return self
        top = np.maximum.reduceat(self.logp, starts)
        w = np.exp(self.logp - np.repeat(top, np.diff(np.append(starts, n))))
        mass = np.add.reduceat(w, starts)
        out = object.__new__(Support)
        out.ref = self.ref
        out.idx = self.idx[starts]
        out.l = np.add.reduceat(w * self.l, starts) / mass
        out.logp = top + np.log(mass)
        out.l2 = out.l * out.l
        out.reach = float(np.abs(out.l).max()) if out.l.size else 0.0
        out.lo, out.hi = self.lo, self.hi  # (the true range: callers cap steps with it)
        out._memo = {}
        out.cached = False  # (never memoized on: its id is not tied to a cached measure)
        out._merged = {}
        self._merged[k] = out
        return out

    def moments(self, u: float) -> tuple[float, float, float]:
        """(log Σ p e^(u l), mean, variance) of the loss under the u-tilted measure."""
        hit = self._memo.get(u)
        if hit is not None:
            return hit
        if self.l.size == 0:
            return -math.inf, 0.0, 0.0
        # (the planner's inner loop: hundreds of calls per ε over the whole support; on a
        # small one the call's overhead is most of it: no error-state switch where u·l
        # cannot overflow)
        # (ufuncs and their reductions called directly, c_einsum for np.einsum: the same
        # operations without numpy's Python-level wrappers, a quarter of a call here)
        l = self.l
        if abs(u) * self.reach < 1e300:
            a = _MUL(l, u)
            _ADD(a, self.logp, out=a)
            top = float(_MAX(a))
        else:
            with quiet():
                a = _MUL(l, u)
                _ADD(a, self.logp, out=a)
            top = float(_MAX(a))
            if not math.isfinite(top):  # u beyond float range: callers read NaN as too far
                return math.nan, math.nan, math.nan
        _SUB(a, top, out=a)
        _MAXIMUM(a, _FLOOR, out=a)  # (:func:`_exp_floored`, inline)
        _EXP(a, out=a)
        s0 = float(_SUM(a))
        m = float(_DOT("i,i", a, l)) / s0
        var = float(_DOT("i,i", a, self.l2)) / s0 - m * m
        if var <= 1e-8 * m * m:  # cancelled: the centred sum instead
            var = float(_DOT("i,i", a, (l - m) ** 2)) / s0
        out = (top + _LOG(s0) + u * self.ref, m + self.ref, max(var, 0.0))
        if len(self._memo) < 256:
            self._memo[u] = out
        return out


def _exp_floored(a: FloatArray) -> None:
    """e^a in place, every entry of ``a`` (all ≤ 0, the largest 0) raised to at least
    :data:`_FLOOR` first.

    Terms below e^−600 change a sum that holds a 1 by less than n·e^−600 ≈ 1e−256 relative,
    far below its rounding — and only upward, the side every Chernoff bound built on it may
    err on — while subnormal results (below e^−708) make the exponential and the sums of
    products after it 5–20 times slower on x86."""
    _MAXIMUM(a, _FLOOR, out=a)
    _EXP(a, out=a)


_MUL, _ADD, _SUB, _MAXIMUM, _EXP = np.multiply, np.add, np.subtract, np.maximum, np.exp
_LOG = math.log
#: ndarray.max / .sum without their Python wrappers (numpy's _methods call these)
_MAX, _SUM, _ALL = np.maximum.reduce, np.add.reduce, np.logical_and.reduce
#: np.einsum without optimize is this C function (numpy ≥ 1.26 keeps it in multiarray)
_DOT: Callable[..., Any] = getattr(
    getattr(getattr(np, "_core", getattr(np, "core", None)), "multiarray", None),
    "c_einsum", np.einsum)

#: See :func:`_exp_floored`.
_FLOOR = -600.0
#: e^−100: a row of :class:`_Stacked` whose shifted sum is below this is recomputed exactly
_OVERSHOT = math.exp(-100.0)

Parts = Sequence[tuple[Support, int]]

#: Supports of recently composed measures, each kept with its measure (so that its id cannot be
#: reused while the entry lives) and the window edges already solved on it.
_SUPPORTS: dict[int, tuple[DiscretePLD, Support]] = {}
_EDGES: dict[tuple[object, ...], tuple[float, float, float]] = {}
#: at most this many supports, holding at most _KEEP_POINTS points together (a schedule of
#: many phases composes a support per phase and direction: all of them must stay, or every
#: θ tried rebuilds them)
_KEEP = 512
_KEEP_POINTS = 1 << 21
#: the points the cached supports hold together
_HELD = [0]


def support_of(pld: DiscretePLD) -> Support:
    """The (cached) :class:`Support` of a discretized measure."""
    hit = _SUPPORTS.get(id(pld))
    if hit is not None:
        if hit[0] is pld:
            return hit[1]
        hit[1].cached = False  # (its measure is gone and the id reused)
        _HELD[0] -= _SUPPORTS.pop(id(pld))[1].l.size
        _EDGES.clear()  # (edges memoized on the support's id: it may be reused too)
    sup = Support(pld)
    while _SUPPORTS and (len(_SUPPORTS) >= _KEEP or _HELD[0] + sup.l.size > _KEEP_POINTS):
        old = _SUPPORTS.pop(next(iter(_SUPPORTS)))[1]
        old.cached = False
        _HELD[0] -= old.l.size
        _EDGES.clear()
    sup.cached = True
    _SUPPORTS[id(pld)] = (pld, sup)
    _HELD[0] += sup.l.size
    return sup


def clear_supports() -> None:
    """Forget the cached supports and window edges."""
    for _, sup in _SUPPORTS.values():
        sup.cached = False
    _SUPPORTS.clear()
    _HELD[0] = 0
    _EDGES.clear()
    _STACKS.clear()


class Moments(NamedTuple):
    """K(u), K'(u) (tilted mean) and K''(u) (tilted variance) of the composed loss. (A named
    tuple: the planner's Newton searches make ~100 of them per ε, and a frozen dataclass's
    ``__init__`` — three ``object.__setattr__`` calls — cost as much as one of the sums.)"""

    k: float
    mean: float
    var: float


class _Stacked:
    """Several supports side by side, for their moments in one vectorized pass (a schedule
    of many phases would otherwise loop over them in Python at every θ tried).

    The supports are rows of one padded matrix (padding: mass 0, loss 0) where that wastes
    little, so that every reduction is along rows; else they are concatenated and reduced by
    segment (``reduceat``)."""

    def __init__(self, parts: Parts) -> None:
        sizes = [sup.l.size for sup, _ in parts]
        self.ref = np.array([sup.ref for sup, _ in parts])
        self.count = np.array([float(c) for _, c in parts])
        self._memo: dict[float, Moments] = {}
        width = max(sizes, default=0)
        self.padded = len(parts) * width <= 1.25 * sum(sizes) + 64 * len(parts)
        if self.padded:
            self.l = np.zeros((len(parts), width))
            self.logp = np.full((len(parts), width), -np.inf)
            for j, (sup, _) in enumerate(parts):
                self.l[j, : sizes[j]] = sup.l
                self.logp[j, : sizes[j]] = sup.logp
        else:
            self.starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
            self.l = np.concatenate([sup.l for sup, _ in parts])
            self.logp = np.concatenate([sup.logp for sup, _ in parts])
            self.sizes = np.array(sizes, dtype=np.intp)
        self.l2 = self.l * self.l
        # each row's exponents u·l + log p, less a bound on their largest (its largest log p
        # plus u times its largest loss for u ≥ 0, its smallest for u < 0), are
        # (l − l_max)·u + (log p − max log p): both factors precomputed, no per-call maximum
        # or repeat (:meth:`moments`)
        with quiet():
            if self.padded:
                live = np.isfinite(self.logp)
                self.pmax = np.where(live, self.logp, -np.inf).max(axis=1, initial=-np.inf)
                self.lmax = np.where(live, self.l, -np.inf).max(axis=1, initial=-np.inf)
                self.lmin = np.where(live, self.l, np.inf).min(axis=1, initial=np.inf)
                self.p_rel = self.logp - self.pmax[:, None]
                self.l_hi = self.l - self.lmax[:, None]
                self.l_lo = self.l - self.lmin[:, None]
            else:
                self.pmax = np.maximum.reduceat(self.logp, self.starts)
                self.lmax = np.maximum.reduceat(self.l, self.starts)
                self.lmin = np.minimum.reduceat(self.l, self.starts)
                self.p_rel = self.logp - np.repeat(self.pmax, self.sizes)
                self.l_hi = self.l - np.repeat(self.lmax, self.sizes)
                self.l_lo = self.l - np.repeat(self.lmin, self.sizes)
        self.fast = bool(np.all(np.isfinite(self.pmax)) and np.all(np.isfinite(self.lmax))
                         and np.all(np.isfinite(self.lmin)))

    def moments(self, u: float) -> Moments:
        hit = self._memo.get(u)
        if hit is not None:
            return hit
        out = self._shifted(u) if self.fast else None
        if out is None:
            out = self._exact(u)
        if len(self._memo) < 256:
            self._memo[u] = out
        return out

    def _shifted(self, u: float) -> Moments | None:
        """:meth:`_exact`'s moments with each row's exponents shifted by a bound on their
        largest instead of the largest itself (the sums and the log-MGF are the same but for
        rounding); None where a row's bound overshoots by so much (> 100 nats) that its
        terms could come near the floor of :func:`_exp_floored`."""
        with quiet():
            shift = self.l_hi if u >= 0.0 else self.l_lo
            a = shift * u
            a += self.p_rel
            top = self.pmax + u * (self.lmax if u >= 0.0 else self.lmin)
            _exp_floored(a)
            if self.padded:
                s0 = a.sum(axis=1)
                s1 = _DOT("ij,ij->i", a, self.l)
                s2 = _DOT("ij,ij->i", a, self.l2)
            else:
                s0 = np.add.reduceat(a, self.starts)
                s1 = np.add.reduceat(a * self.l, self.starts)
                s2 = np.add.reduceat(a * self.l2, self.starts)
        if not (bool(_ALL(s0 >= _OVERSHOT)) and bool(_ALL(np.isfinite(top)))):
            return None
        return self._combine(u, top, s0, s1, s2)

    def _exact(self, u: float) -> Moments:
        """The moments with each row's exponents shifted by their largest."""
        with quiet():
            a = self.l * u  # (the padding: −∞ + 0·u, floored below like any tiny term)
            a += self.logp
            if self.padded:
                top = a.max(axis=1)
                if not bool(np.all(np.isfinite(top))):
                    return Moments(math.nan, math.nan, math.nan)
                a -= top[:, None]
                _exp_floored(a)
                s0 = a.sum(axis=1)
                s1 = _DOT("ij,ij->i", a, self.l)
                s2 = _DOT("ij,ij->i", a, self.l2)
            else:
                top = np.maximum.reduceat(a, self.starts)
                if not bool(np.all(np.isfinite(top))):
                    return Moments(math.nan, math.nan, math.nan)
                a -= np.repeat(top, self.sizes)
                _exp_floored(a)
                s0 = np.add.reduceat(a, self.starts)
                s1 = np.add.reduceat(a * self.l, self.starts)
                s2 = np.add.reduceat(a * self.l2, self.starts)
        return self._combine(u, top, s0, s1, s2)

    def _combine(
        self, u: float, top: FloatArray, s0: FloatArray, s1: FloatArray, s2: FloatArray
    ) -> Moments:
        m = s1 / s0
        var = np.maximum(s2 / s0 - m * m, 0.0)
        k = top + np.log(s0) + u * self.ref
        c = self.count
        return Moments(float(_SUM(c * k)), float(_SUM(c * (m + self.ref))), float(_SUM(c * var)))


_STACKS: dict[tuple[tuple[int, int], ...], tuple[Parts, _Stacked]] = {}
#: a :class:`Moments` from a (k, mean, var) tuple, without the named tuple's ``__new__``
_MOMENTS: Callable[[tuple[float, float, float]], Moments] = Moments._make


def composed_moments(parts: Parts, u: float) -> Moments:
    """K(u) = Σ_j c_j log M_j(u) and its first two derivatives, exactly."""
    if len(parts) > 2:
        key = tuple((id(sup), c) for sup, c in parts)
        hit = _STACKS.get(key)
        if hit is None or any(a is not b for (a, _), (b, _) in zip(hit[0], parts, strict=True)):
            if len(_STACKS) >= 8:
                _STACKS.pop(next(iter(_STACKS)))
            hit = (list(parts), _Stacked(parts))
            _STACKS[key] = hit
        return hit[1].moments(u)
    if len(parts) == 1:  # (most histories: one kind of step; the same sums as the loop's)
        sup, c = parts[0]
        lm, m, v = sup.moments(u)
        return _MOMENTS((0.0 + c * lm, 0.0 + c * m, 0.0 + c * v))
    k = mean = var = 0.0
    for sup, c in parts:
        lm, m, v = sup.moments(u)
        k += c * lm
        mean += c * m
        var += c * v
    return _MOMENTS((k, mean, var))
