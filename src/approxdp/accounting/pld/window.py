"""Where the composed loss lives: the tilt of the FFT and its window, from Chernoff bounds.

The FFT composes T steps on a circular window [a, a + N·h) (Koskela et al. 2021,
https://arxiv.org/abs/2006.07134, Sec. 4). Everything the window leaves out is bounded by
Chernoff's inequality on the *discretized* steps, whose log moment generating function
K(u) = Σ_j c_j log Σ_i p_ij e^(u·l_ij) is known exactly:

- true mass at or above the top b: P(S ≥ b) ≤ e^(K(θ) − θb) (added to δ: the private side);
- true mass below a when ε < a: P(S < a) ≤ e^(K(−θ) + θa) (added too);
- tilted mass above b that aliases *down* to a landing point s ≥ max(ε, a), where untilting
  multiplies it by e^(K(λ) − λs): at most e^(K(λ+θ) − θb − λ·max(ε, a)) (it only adds mass:
  harmless for an upper bound, subtracted for a lower one, and kept small for accuracy);
- mass below a that aliases *up* by N·h: untilting shrinks it by e^(−λNh), so it is at most
  e^(−λNh)·P(S < a) (again only added mass).

Each bound holds for any θ > 0. The best θ for a bound at b solves the Legendre condition
K'(θ) = b; so each edge of the window is found by Newton's method on
K(λ+θ) − θK'(λ+θ) = log(budget) (the bound's value as a function of θ, falling as θ grows),
on the exact K of the composed *discretized* distribution. Chernoff's θ must come from the
composed distribution, not from one step: for a heavy-tailed step (a subsampled Gaussian with
small q) the best θ is far below z/sd, and a grid of θ around z/sd sized windows a thousand
times too wide (issue 22: 5.2 million points where 30 thousand do). The log-MGFs themselves,
and the cache of supports, are in :mod:`approxdp.accounting.pld.supports`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from approxdp.accounting.pld.supports import (
    _EDGES,
    Moments,
    Parts,
    Support,
    clear_supports,
    composed_moments,
    support_of,
)

__all__ = [
    "Moments",
    "Support",
    "Window",
    "chernoff_at",
    "clear_supports",
    "composed_moments",
    "exact_planning",
    "legendre_edge",
    "plan_window",
    "solve_tilt",
    "support_of",
]

_U = float(np.finfo(np.float64).eps) / 2


def solve_tilt(parts: Parts, target: float, start: float = 0.0) -> float:
    """λ ≥ 0 whose tilted composed mean is ``target`` (0 if the mean is already above it):
    safeguarded Newton on the convex log-MGF (its slope is the tilted mean, its curvature the
    tilted variance), from ``start``. Any λ is valid; a good one only makes the bounds
    tighter."""
    mo = composed_moments(parts, 0.0)
    if mo.mean >= target:
        return 0.0
    lo, hi = 0.0, math.inf
    lam = 0.0
    # a tilt of 20 over the widest step already puts nearly all of it on its largest loss
    jump = max((sup.hi - sup.lo for sup, _ in parts), default=0.0)
    cap = 20.0 / jump if jump > 0.0 else math.inf
    # where the target is inside the support, a step may double λ (a sum whose tilted mean
    # grows slowly would otherwise crawl up by the cap); else λ only grows by the cap
    reachable = target < sum(c * sup.hi for sup, c in parts)
    if start > 0.0:  # Newton from there (the loop below sets the bracket's side)
        lam, mo = start, composed_moments(parts, start)
    for _ in range(100):
        if mo.mean < target:
            lo = lam
        else:
            hi = lam
        if mo.var <= 0.0:
            step = 1.0
        elif mo.mean > 0.0 and target > 0.0:  # Newton on log(mean): it grows exponentially in λ
            step = math.log(target / mo.mean) * mo.mean / mo.var
        else:
            step = (target - mo.mean) / mo.var
        nxt = lam + min(step, max(cap, lam) if reachable else cap)
        if not (lo < nxt < hi):
            if not math.isfinite(hi):
                nxt = max(2.0 * lam, lo + cap)
            else:
                nxt = math.sqrt(lo * hi) if lo > 0.0 else 0.25 * hi
        if abs(nxt - lam) <= 1e-5 * max(1.0, lam):
            return nxt
        lam = nxt
        mo = composed_moments(parts, lam)
    return lam


def legendre_edge(
    parts: Parts, *, lam: float, budget: float, upper: bool, scale: float
) -> tuple[float, float, float]:
    """See :func:`_legendre_edge` (memoized on the supports' identities)."""
    key = (tuple((id(sup), c) for sup, c in parts), lam, budget, upper)
    hit = _EDGES.get(key)
    if hit is None:
        hit = _legendre_edge(parts, lam=lam, budget=budget, upper=upper, scale=scale)
        if all(sup.cached for sup, _ in parts):
            _EDGES[key] = hit
    return hit


def _legendre_edge(
    parts: Parts, *, lam: float, budget: float, upper: bool, scale: float
) -> tuple[float, float, float]:
    """The edge b of the window beyond which the (λ-tilted, unnormalized) mass is at most
    e^``budget`` by Chernoff: θ ≥ 0 solving K(λ ± θ) ∓ θK'(λ ± θ) = budget, b = K'(λ ± θ).

    Returns (b, θ, K(λ ± θ)): the bound at any b' beyond b is K(λ ± θ) ∓ θb' ≤ budget.
    ``upper``: the mass above b (θ added to λ); else below b (θ taken off). ``scale`` (a
    standard deviation) starts the search. Where no θ reaches the budget, b is ±∞."""
    sign = 1.0 if upper else -1.0

    def f(theta: float) -> tuple[float, Moments]:
        mo = composed_moments(parts, lam + sign * theta)
        return mo.k - sign * theta * mo.mean - budget, mo

    f0, m0 = f(0.0)
    if f0 <= 0.0:  # the whole (tilted) mass is within the budget
        return (-math.inf if upper else math.inf), 0.0, m0.k
    lo, hi = 0.0, math.inf
    # a Gaussian sum needs θ ≈ √(2f/var); a heavy-tailed one (a few large losses) far less,
    # about f over the widest single step
    jump = max((sup.hi - sup.lo for sup, _ in parts), default=0.0)
    theta = math.sqrt(2.0 * f0 / m0.var) if m0.var > 0.0 else 1.0 / max(scale, 1e-300)
    if jump > 0.0:
        theta = min(theta, f0 / jump)
    best: tuple[float, float, float] | None = None
    for _ in range(40):
        val, mo = f(theta)
        if not math.isfinite(val):
            hi = theta
        elif val > 0.0:
            lo = theta
        else:
            hi = theta
            if best is None or theta < best[1]:
                best = (mo.mean, theta, mo.k)
            if val > -0.25:  # within a factor 1.3 of the budget: close enough
                break
        # Newton on f (f'(θ) = −θ K''(λ ± θ)), aiming a little inside the budget
        ok = math.isfinite(val) and mo.var > 0.0
        nxt = theta + (val + 0.1) / (theta * mo.var) if ok else math.nan
        if not (lo < nxt < hi):
            if not math.isfinite(hi):
                nxt = 2.0 * max(theta, lo)
            else:
                nxt = math.sqrt(lo * hi) if lo > 0.0 else 0.25 * hi
        if math.isfinite(hi) and hi - lo <= 1e-6 * hi:
            break
        theta = nxt
    if best is None:  # the bound never falls that far: the support's own edge
        return (math.inf if upper else -math.inf), 0.0, -math.inf
    return best


def _newton(mo: Moments, edge: float, theta: float, sign: float) -> float:
    """The next θ solving K'(λ ± θ) = edge from θ: Newton on log|K'| where K' and the edge
    share a sign and the edge is farther from 0 (a subsampled loss's tilted mean grows about
    exponentially in θ, where plain Newton overshoots by orders of magnitude), else on K'."""
    if not mo.var > 0.0:
        return math.nan if theta > 0.0 else 1.0
    if mo.mean * edge > 0.0 and abs(edge) > abs(mo.mean):
        return theta + math.log(edge / mo.mean) * abs(mo.mean) / mo.var
    return theta - (mo.mean - edge) * sign / mo.var


def chernoff_at(
    parts: Parts, *, lam: float, edge: float, upper: bool, start: float = 0.0
) -> tuple[float, float]:
    """(θ, K(λ ± θ)) with θ ≥ 0 minimizing the Chernoff bound K(λ ± θ) ∓ θ·edge on the mass
    beyond a given ``edge`` (above it, or below it): K'(λ ± θ) = edge, by safeguarded Newton
    (any θ gives a valid bound) from ``start`` if positive (e.g. the θ a planned window found
    for an edge near this one: Newton then needs a step or two instead of seven)."""
    sign = 1.0 if upper else -1.0
    m0 = composed_moments(parts, lam)
    if (m0.mean - edge) * sign >= 0.0:  # the edge is on the near side of the mean: θ = 0
        return 0.0, m0.k
    lo, hi = 0.0, math.inf
    theta = start if 0.0 < start < math.inf else _newton(m0, edge, 0.0, sign)
    best = (0.0, m0.k, m0.k)  # (θ, K, bound)
    for _ in range(80):
        mo = composed_moments(parts, lam + sign * theta)
        bound = mo.k - sign * theta * edge
        if math.isfinite(bound) and bound < best[2]:
            best = (theta, mo.k, bound)
        gap = (mo.mean - edge) * sign  # < 0: θ too small
        if gap < 0.0:
            lo = theta
        else:
            hi = theta
        nxt = _newton(mo, edge, theta, sign) if math.isfinite(gap) else math.nan
        # Newton's predicted gain gap²/(2K'') on the exponent: below 1e-3 the bound is within
        # 0.1 % of its least (any θ is valid; this one only stops the search)
        if (math.isfinite(nxt) and gap * gap < 2e-3 * mo.var and math.isfinite(bound)
                and bound <= best[2] + 1e-3):
            break
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * max(theta, lo)
        if abs(nxt - theta) <= 1e-3 * max(theta, 1e-300) or (
            math.isfinite(hi) and hi - lo <= 1e-6 * hi
        ):
            break
        theta = nxt
    return best[0], best[1]


@dataclass(frozen=True, slots=True)
class Window:
    """A tilt λ and a window of the FFT starting at grid index ``a_idx``, ``n`` points long
    (at least: the composer rounds it up to an FFT size), with the Chernoff exponents found
    for its edges: each bound is K(u) − (u − λ₀)·edge at the recorded u (see the composer)."""

    lam: float
    a_idx: int
    n: int
    beyond: tuple[float, float] = (0.0, 0.0)  # (θ, K(θ)) for the true mass above the top
    alias: tuple[float, float] = (0.0, 0.0)  # (θ, K(λ + θ)) for the tilted mass above it
    below: tuple[float, float] = (0.0, 0.0)  # (θ, K(−θ)) for the true mass below the bottom


def _predicted_roundoff(
    count: int, *, lam: float, eps_ref: float, h: float, n: int, k_lam: float, sd: float
) -> float:
    """A model (not a bound: the composer bounds it) of what FFT round-off adds to δ at
    ``eps_ref`` for tilt λ: per entry ~ T (4 log₂N + 1) u times the share of the spectrum a
    sum of standard deviation sd occupies (~2h/(√(2π) sd)), times the untilting factors
    e^(K(λ) − λs) summed over s ≥ ε."""
    per_entry = count * (4.0 * math.log2(max(n, 2)) + 1.0) * _U
    per_entry *= min(1.0, 2.0 * h / (math.sqrt(2.0 * math.pi) * max(sd, h)))
    log_sum = k_lam - lam * eps_ref
    if lam * h > 1e-12:
        log_sum -= math.log(-math.expm1(-lam * h))
    else:
        log_sum += math.log(max(n, 1))
    return per_entry * math.exp(min(log_sum, 700.0))


#: A schedule (more parts than this) is planned on merged supports (:meth:`Support.merged`):
#: its stacked support is the whole of each phase's, and the planner evaluates it ~30 times.
_PLAN_STACKED = 2
#: entries merged into one for planning (see :meth:`Support.merged`)
_PLAN_MERGE = 4


#: whether windows of schedules may be planned on merged supports (see :func:`exact_planning`)
_MERGING = [True]


@contextmanager
def exact_planning() -> Iterator[None]:
    """Plan every window inside on the exact supports (the lower bound's tests: their
    windows' left-out tails are lost mass, kept at the planned budget exactly)."""
    _MERGING.append(False)
    try:
        yield
    finally:
        _MERGING.pop()


def planning_supports(parts: Parts) -> Parts:
    """``parts`` as windows are planned on (see :func:`_planning`; for callers that only
    choose Chernoff points or sizes with them, never certify with them)."""
    return _planning(parts)


def _planning(parts: Parts) -> Parts:
    """The supports a window is planned on: the exact ones, or for a schedule of many phases
    merged ones (the composer then bounds what its window leaves out on the exact ones:
    the plan only places the window and starts those searches)."""
    if len(parts) <= _PLAN_STACKED or not _MERGING[-1]:
        return parts
    return [(sup.merged(_PLAN_MERGE), c) for sup, c in parts]


def plan_window(
    parts: Parts,
    *,
    h: float,
    tilt_at: float | None,
    log_tail: float,
    support: tuple[int, int],
    below: float | None,
    delta_scale: float,
    lam: float | None = None,
) -> Window:
    """The tilt and window for an FFT that must give δ at ``tilt_at`` (None: untilted, the
    whole distribution), each left-out term at most e^``log_tail`` there.

    The tilt that centres the composed mean at ``tilt_at`` minimizes FFT round-off there, but
    tilting a heavy-tailed sum (a few large losses) fattens its upper tail and widens the
    window it needs several-fold. So smaller tilts are tried as well, and the one with the
    narrowest window kept among those whose modelled round-off stays within 3e-5 of
    ``delta_scale`` (δ) — the composer still bounds the real round-off. ``below``: how far
    under ``tilt_at`` the window must reach (default: three tilted standard deviations and a
    tenth of ``tilt_at``; ``inf``: down to where the untilted mass below is within the
    budget, for a block whose every part matters). ``lam``: use this tilt.
    """
    lo_idx, hi_idx = support
    parts = _planning(parts)
    count = sum(c for _, c in parts)
    m0 = composed_moments(parts, 0.0)
    sd0 = math.sqrt(m0.var) if m0.var > 0.0 else h
    # the true mass above the top and below the bottom: the same for every tilt
    b_top, th_b, k_b = legendre_edge(parts, lam=0.0, budget=log_tail, upper=True, scale=sd0)
    b_low, th_l, k_l = legendre_edge(parts, lam=0.0, budget=log_tail, upper=False, scale=sd0)
    if tilt_at is None or tilt_at <= m0.mean:
        eps_ref = m0.mean if tilt_at is None else tilt_at
        room = 0.0 if tilt_at is None else (3.0 * sd0 + 0.1 * abs(eps_ref) + 16.0 * h
                                            if below is None else below)
        a = b_low if math.isinf(room) else min(eps_ref - room, b_low)
        top = min(max(b_top, eps_ref + h), (hi_idx + 1) * h)
        return _window(0.0, a, top, h, lo_idx, hi_idx, (th_b, k_b), (th_b, k_b), (th_l, k_l))
    # a tilted mean can only sit below the top of the support it is solved on: the planning
    # supports' largest entries (a merged support's sit below the true top; a target between
    # the two sends the tilt off towards infinity, and untilting the FFT's round-off by
    # e^(K(λ) − λε) then swamps δ: 1.0 just below a direction's top, issue 22)
    top_support = _reach_top(parts)
    eps_ref = max(min(tilt_at, m0.mean + 0.95 * (top_support - m0.mean)), 0.0)
    star = solve_tilt(parts, eps_ref) if lam is None else lam
    fracs = (1.0, 0.7, 0.5, 0.35, 0.25) if lam is None else (1.0,)
    best: Window | None = None
    for frac in fracs:
        lam = star * frac
        mo = composed_moments(parts, lam)
        sd = math.sqrt(mo.var) if mo.var > 0.0 else h
        b_alias, th_a, k_a = legendre_edge(
            parts, lam=lam, budget=log_tail + lam * eps_ref, upper=True, scale=sd
        )
        top = min(max(b_top, b_alias, eps_ref + h), (hi_idx + 1) * h)
        room = 3.0 * sd + 0.1 * abs(eps_ref) + 16.0 * h if below is None else below
        # what lies below a aliases up: harmless if it is small (a below the Chernoff point)
        # or if untilting shrinks it enough when it lands n·h higher (e^(−λ(top − a)) ≤ tail)
        if math.isinf(room):  # the whole distribution matters (a block): from its low point
            a = b_low
        else:
            a = min(eps_ref - room, max(b_low, top + log_tail / lam) if lam > 0.0 else b_low)
        win = _window(lam, a, top, h, lo_idx, hi_idx, (th_b, k_b), (th_a, k_a), (th_l, k_l))
        if frac < 1.0:
            noise = _predicted_roundoff(count, lam=lam, eps_ref=eps_ref, h=h, n=win.n,
                                        k_lam=mo.k, sd=sd)
            if noise > 3e-5 * delta_scale:
                break  # smaller tilts only make it worse
        if best is None or win.n < best.n:
            best = win
        if star == 0.0:
            break
    assert best is not None
    return best


def _reach_top(parts: Parts) -> float:
    """The largest loss a sum of the supports' entries takes (their losses ascend)."""
    return sum(c * (sup.ref + float(sup.l[-1]) if sup.l.size else sup.hi) for sup, c in parts)


def _window(
    lam: float,
    a: float,
    top: float,
    h: float,
    lo_idx: int,
    hi_idx: int,
    beyond: tuple[float, float],
    alias: tuple[float, float],
    low: tuple[float, float],
) -> Window:
    a_idx = lo_idx if not math.isfinite(a) else max(lo_idx, min(hi_idx, math.floor(a / h)))
    top_idx = hi_idx + 1 if not math.isfinite(top) else min(hi_idx + 1, math.ceil(top / h) + 1)
    top_idx = max(top_idx, a_idx + 1)
    return Window(lam, a_idx, top_idx - a_idx, beyond, alias, low)
