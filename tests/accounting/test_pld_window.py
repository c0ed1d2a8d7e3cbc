"""The window planner's log-MGFs (:mod:`approxdp.accounting.pld.window`): every Chernoff bound
on what the FFT window leaves out is built on K(u) = Σ c_j log Σ_i p_ij e^(u·l_ij) computed
here, so it is checked against mpmath — also where most terms fall far below float range
(tilted blocks), where the exponentials are floored at e^−600 for speed — and the stacked
(schedule) layouts against the supports one by one."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from approxdp.accounting.pld import supports, window
from approxdp.accounting.pld.grid import DiscretePLD, discretize
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.supports import Support, _Stacked, composed_moments, support_of


def _measure(n: int, *, h: float = 0.05, offset: int = -40, tilt: float = 0.0,
             seed: int = 0) -> DiscretePLD:
    rng = np.random.default_rng(seed)
    pmf = rng.uniform(0.5, 1.5, n)
    pmf /= pmf.sum()
    return DiscretePLD(h=h, offset=offset, pmf=pmf, infinity_mass=0.0, tilt=tilt)


def _exact(pld: DiscretePLD, u: float) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf]:
    """(K(u), mean, variance) of the u-tilted measure, in 50 digits from the stored masses."""
    with mpmath.workdps(50):
        w = [mpmath.mpf(float(p)) * mpmath.exp(-mpmath.mpf(pld.tilt) * float(x)
                                                 + mpmath.mpf(u) * float(x))
             for p, x in zip(pld.pmf, pld.losses, strict=True)]
        s0 = mpmath.fsum(w)
        s1 = mpmath.fsum(wi * float(x) for wi, x in zip(w, pld.losses, strict=True))
        s2 = mpmath.fsum(wi * float(x) ** 2 for wi, x in zip(w, pld.losses, strict=True))
        mean = s1 / s0
        return mpmath.log(s0), mean, s2 / s0 - mean * mean


@pytest.mark.parametrize("u", [0.0, 1.0, 4.0, 5.0, 6.5, 12.0])
def test_moments_match_mpmath_where_most_terms_underflow(u: float) -> None:
    """A tilted block's masses span e^0 … e^−2000 (tilt 5 over losses −2 … 398): under most
    tilts all but a few hundred terms are below e^−708 — the exponentials are floored at
    e^−600, which must leave K, the mean and the variance at their exact values."""
    pld = _measure(8000, tilt=5.0)
    k, mean, var = Support(pld).moments(u)
    ek, emean, evar = _exact(pld, u)
    assert abs(k - float(ek)) <= 1e-13 * max(1.0, abs(float(ek)))
    assert mean == pytest.approx(float(emean), rel=1e-11, abs=1e-11)
    assert var == pytest.approx(float(evar), rel=1e-9, abs=1e-12)


def test_floored_exponentials_only_raise_a_sum() -> None:
    """Flooring at e^−600 can only add mass (the safe side of every Chernoff bound) and
    adds less than n·e^−600 relative: nothing a float sum that holds a 1 can see."""
    a = np.array([0.0, -1.0, -650.0, -800.0, -1e6, -np.inf])
    out = a.copy()
    supports._exp_floored(out)
    assert np.all(out >= np.exp(a))
    assert float(out.sum()) == float(np.exp(a).sum())


def _parts(sizes: list[int]) -> list[tuple[Support, int]]:
    return [
        (Support(_measure(n, offset=-n // 3 - j, seed=j, h=0.01 * (1 + j % 3))), 1 + 7 * j)
        for j, n in enumerate(sizes)
    ]


@pytest.mark.parametrize(
    ("sizes", "padded"),
    [([500, 510, 480, 505, 499], True), ([6000, 40, 30, 55, 20, 35], False)],
)
@pytest.mark.parametrize("u", [0.0, 0.7, 3.0, -2.0])
def test_stacked_moments_agree_with_the_supports_one_by_one(
    sizes: list[int], padded: bool, u: float
) -> None:
    """A schedule's parts stacked (rows of a padded matrix where sizes are alike, else
    concatenated segments) give the same K, mean and variance as the parts one at a time."""
    parts = _parts(sizes)
    stacked = _Stacked(parts)
    assert stacked.padded is padded
    got = stacked.moments(u)
    k = mean = var = 0.0
    for sup, c in parts:
        lk, m, v = sup.moments(u)
        k, mean, var = k + c * lk, mean + c * m, var + c * v
    assert got.k == pytest.approx(k, rel=1e-13, abs=1e-12)
    assert got.mean == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert got.var == pytest.approx(var, rel=1e-10)
    assert composed_moments(parts, u) == got


@pytest.mark.parametrize("sizes", [[50, 50, 50], [2000, 10, 10]])
def test_moments_beyond_float_range_are_nan(sizes: list[int]) -> None:
    """A tilt beyond float range: NaN moments (callers read them as "too far"), in every
    layout."""
    parts = _parts(sizes)
    got = _Stacked(parts).moments(math.inf)
    assert math.isnan(got.k) and math.isnan(got.mean)
    assert math.isnan(parts[0][0].moments(math.inf)[0])


def test_a_schedule_keeps_every_support_cached() -> None:
    """A schedule of 100 phases composes 100 supports per direction: all stay cached (only
    32 did, so every θ tried rebuilt them); past the point budget the oldest go, marked so
    that no window edge is memoized on them."""
    window.clear_supports()
    plds = [_measure(200, seed=j) for j in range(100)]
    first = [support_of(p) for p in plds]
    assert all(s.cached for s in first)
    assert all(support_of(p) is s for p, s in zip(plds, first, strict=True))
    assert supports._HELD[0] == 100 * 200  # (the running count of held points)
    big = _measure(supports._KEEP_POINTS - 100 * 200 + 1, seed=7)
    support_of(big)
    assert not first[0].cached
    assert supports._HELD[0] == sum(s.l.size for _, s in supports._SUPPORTS.values())
    assert support_of(plds[0]) is not first[0]
    window.clear_supports()
    assert not any(s.cached for s in first)


def test_chernoff_from_a_nearby_theta_finds_the_same_bound_in_fewer_evaluations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A composed window re-solves θ for its edges after rounding them to an FFT size,
    starting from the θ the plan found: the bound K(θ) ∓ θ·edge must be as good as a search
    from scratch finds (any θ is valid; Newton stops within 1e-3 of the least exponent),
    and for a heavy upper tail (a subsampled Gaussian: Newton from 0 crawls up it) it takes
    fewer log-MGFs."""
    pld = discretize(SubsampledLoss(GaussianLoss(1.0), 1e-3, "remove"), 1e-3, 1e-12)
    parts = [(Support(pld), 1000)]
    m0 = composed_moments(parts, 0.0)
    calls: list[float] = []
    real = window.composed_moments

    def counted(p: window.Parts, u: float) -> window.Moments:
        calls.append(u)
        return real(p, u)

    monkeypatch.setattr(window, "composed_moments", counted)
    counts = {}
    for upper, k in ((True, 8.0), (False, 6.0)):
        sign = 1.0 if upper else -1.0
        edge = m0.mean + sign * k * math.sqrt(m0.var)
        near = m0.mean + sign * (k - 0.2) * math.sqrt(m0.var)
        hint, _ = window.chernoff_at(parts, lam=0.0, edge=near, upper=upper)
        calls.clear()
        cold = window.chernoff_at(parts, lam=0.0, edge=edge, upper=upper)
        n_cold = len(calls)
        calls.clear()
        warm = window.chernoff_at(parts, lam=0.0, edge=edge, upper=upper, start=hint)
        counts[upper] = (n_cold, len(calls))
        assert warm[1] - sign * warm[0] * edge <= cold[1] - sign * cold[0] * edge + 1e-3
        assert cold[1] - sign * cold[0] * edge <= warm[1] - sign * warm[0] * edge + 1e-3
    assert counts[True][1] < counts[True][0]


def _schedule_supports(h: float = 2e-3) -> list[tuple[Support, int]]:
    return [(Support(discretize(SubsampledLoss(GaussianLoss(1.0 / s), q, "remove"), h, 1e-14)),
             t) for s, q, t in [(1.0, 0.004, 3000), (1.4, 0.008, 2000), (0.9, 0.002, 5000)]]


def test_a_merged_support_keeps_the_mean_and_stays_below_the_exact_log_mgf() -> None:
    """Planning a schedule's window on merged supports: a run's mass at its mean loss keeps
    the mean, and (Jensen) its K is below the exact one, by about u²·v/2 (v the runs'
    variance) — a planning error only: the composer bounds the tails on the exact supports."""
    for sup, _ in _schedule_supports():
        merged = sup.merged(window._PLAN_MERGE)
        # at most one entry per run of _PLAN_MERGE grid points (the exact support may hold
        # fewer than every point: discretizations thin their far tails)
        assert merged.l.size <= (sup.idx[-1] - sup.idx[0]) // window._PLAN_MERGE + 1
        assert merged.l.size < sup.l.size
        assert sup.merged(window._PLAN_MERGE) is merged  # (cached per factor)
        k0, m0, v0 = sup.moments(0.0)
        mk0, mm0, mv0 = merged.moments(0.0)
        assert mk0 == pytest.approx(k0, abs=1e-12)
        assert mm0 == pytest.approx(m0, rel=1e-9, abs=1e-15)
        gap = v0 - mv0  # the within-run variance the merge drops
        assert 0.0 <= gap <= (window._PLAN_MERGE * 2e-3) ** 2 / 4
        for u in (-20.0, -3.0, -0.5, 0.5, 3.0, 10.0, 40.0):
            exact = sup.moments(u)[0]
            plain = merged.moments(u)[0]
            assert plain <= exact + 1e-9 * (1.0 + abs(exact))
            assert exact - plain <= u * u * (window._PLAN_MERGE * 2e-3) ** 2 / 8 + 1e-9


def test_schedule_windows_planned_on_merged_supports_keep_their_tails_near_budget() -> None:
    """The composer bounds what a window leaves out on the exact supports: for a schedule
    planned on merged ones those bounds stay within a fraction of a nat of the budget (the
    merged K's deficit), and the window is about the exact plan's size."""
    from approxdp.accounting.pld.compose import compose

    plds = [(discretize(SubsampledLoss(GaussianLoss(1.0 / s), q, "remove"), 2e-3, 1e-14), t)
            for s, q, t in [(1.0, 0.004, 3000), (1.4, 0.008, 2000), (0.9, 0.002, 5000)]]
    tail = 1e-10
    for tilt_at in (None, 1.0, 3.0):
        comp = compose(plds, tail=tail, tilt_at=tilt_at)
        with window.exact_planning():
            exact = compose(plds, tail=tail, tilt_at=tilt_at)
        assert exact.log_beyond <= math.log(tail) + 1e-9
        assert comp.log_beyond <= math.log(tail) + 1.0
        assert 0.8 * exact.size <= comp.size <= 1.25 * exact.size


def test_exact_planning_applies_inside_only() -> None:
    parts = _schedule_supports()
    assert window._planning(parts)[0][0] is not parts[0][0]
    two = parts[:2]
    assert window._planning(two) is two  # (one or two parts: planned exactly)
    with pytest.raises(RuntimeError), window.exact_planning():
        assert window._planning(parts) is parts
        raise RuntimeError
    assert window._planning(parts)[0][0] is not parts[0][0]
