"""The PLD engine in the regimes issue 22 found slow or loose: heavy-tailed sums (small
sampling rates), astronomically many steps, tiny δ; each result checked against an
independent reference or its own certified bracket (whose lower end comes from a different
construction: rounded-loss tests, not connect-the-dots)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.accountants import calibrate_dpsgd, dpsgd_epsilon
from approxdp.accounting.dpsgd.gdp_clt import gdp_clt_epsilon
from approxdp.accounting.pld import passes
from approxdp.accounting.pld.accounting import _plan, pld_delta, pld_epsilon
from approxdp.accounting.pld.compose import (
    DiscretePLD,
    _fft_power,
    compose,
    discretize,
    tail_edge,
)
from approxdp.accounting.pld.privacy_loss import (
    GaussianLoss,
    SubsampledLoss,
    cdfs_with_errors,
    loss_interval,
)
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_epsilon
from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon
from approxdp.events import GaussianEvent, SubsampledEvent
from pld_exact import integer_power

#: The issue's cases (σ, q, T, δ) and dp_accounting's PLD at its default grid on them.
ISSUE = [
    (0.5, 1e-4, 100_000, 1e-5, 2.057967),
    (0.595, 2.3e-4, 130, 1e-5, 0.155493),
    (0.5, 1e-5, 1000, 1e-5, 0.019778),
    (1.1, 256 / 60000, 14063, 1e-5, 2.381779),
]


@pytest.mark.parametrize(("sigma", "q", "steps", "delta", "theirs"), ISSUE)
def test_the_issue_cases_are_certified_within_a_tenth_of_a_percent(
    sigma: float, q: float, steps: int, delta: float, theirs: float
) -> None:
    """The bracket's lower end is a certified lower bound on the truth (it was 0 for the third
    case): upper/lower − 1 ≤ 0.1 % certifies ε ≤ 0.1 % above the truth. dp_accounting's
    (uncertified) default agrees to its own grid's accuracy."""
    g = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta)
    assert g.bracket is not None
    lo, hi = (float(b) for b in g.bracket)
    assert hi == g.epsilon
    assert 0.0 < lo <= hi <= lo * (1 + 1e-3)
    assert abs(hi / theirs - 1) < 3e-3


def test_small_sampling_rate_window_is_sized_from_the_composed_loss() -> None:
    """Chernoff's θ searched on the composed discretized loss: the window of the issue's
    σ = 0.595, q = 2.3e-4, T = 130 case holds tens of thousands of points (a θ grid around
    z/sd had sized it at 5.2 million)."""
    src = SubsampledLoss(GaussianLoss(1 / 0.595), 2.3e-4, "remove")
    pld = discretize(src, 1e-4, 1e-9 / 130)
    comp = compose([(pld, 130)], tail=1e-9, tilt_at=0.1555)
    assert comp.size < 200_000
    assert comp.epsilon(1e-5) == pytest.approx(0.15549, rel=2e-3)


def test_blocks_agree_with_one_composition() -> None:
    """2^17 steps composed in blocks (B-fold on the fine grid, regridded, composed again)
    against one FFT over all of them, on the same first grid: both are certified upper
    bounds, each at or above the other's certified lower bound, and close."""
    plan = _plan([(SubsampledEvent(GaussianEvent(sigma=2.0), 0.01), 1 << 17)])
    parts, h, delta = plan.remove, 2e-4, 1e-6
    passes.clear_caches()
    one = passes.compose([(passes._discretized(parts[0][0], h, 1e-10 / (1 << 17), False), 1 << 17)],
                         tail=1e-10, tilt_at=12.0)
    blocked = passes._in_blocks(
        [(passes._discretized(parts[0][0], h, 1e-10 / (1 << 17), False), 1 << 17)],
        1e-10, 12.0, None,
    )
    assert blocked.blocked and blocked.size < one.size / 4
    e_one, e_blk = one.epsilon(delta), blocked.epsilon(delta)
    low_one = passes.lower_epsilon(parts, delta, h, e_one, None, False)
    low_blk = passes.lower_epsilon(parts, delta, h, e_blk, None, True)
    assert max(low_one, low_blk) <= min(e_one, e_blk)
    assert e_blk == pytest.approx(e_one, rel=2e-4)


def test_a_trillion_steps_is_certified_between_its_limits() -> None:
    """σ = 6300, q = 256/60000, T = 10^12 (the issue's calibration): the PLD (in blocks of
    blocks, in extended precision) lands between the central-limit value (2.80, where the sum
    is nearly Gaussian) and RDP's 3.04, with a certified lower end."""
    g = dpsgd_epsilon(noise_multiplier=6300, sample_rate=256 / 60000, steps=10**12,
                      delta=1e-5)
    clt = gdp_clt_epsilon(6300, 256 / 60000, 10**12, 1e-5).epsilon
    rdp = rdp_dpsgd_epsilon(6300, 256 / 60000, 10**12, 1e-5).epsilon
    assert clt < g.epsilon < 0.95 * rdp
    assert g.bracket is not None and 0.95 * g.epsilon < float(g.bracket[0]) <= g.epsilon


def test_calibration_at_a_trillion_steps_is_what_dpsgd_epsilon_certifies() -> None:
    """Issue 22: σ = 35,858 came out where σ = 6,300 already certified ε = 3.04."""
    kw = {"delta": 1e-5, "sample_rate": 256 / 60000, "steps": 10**12}
    sigma = calibrate_dpsgd(epsilon=3.0, **kw)  # type: ignore[arg-type]
    assert sigma < 6300
    assert dpsgd_epsilon(noise_multiplier=sigma, **kw).epsilon <= 3.0  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma / 1.001, **kw).epsilon > 3.0  # type: ignore[arg-type]


def test_calibration_at_a_tiny_sampling_rate() -> None:
    kw = {"delta": 1e-5, "sample_rate": 1e-5, "steps": 1000}
    sigma = calibrate_dpsgd(epsilon=3.0, **kw)  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma, **kw).epsilon <= 3.0  # type: ignore[arg-type]
    assert dpsgd_epsilon(noise_multiplier=sigma / 1.001, **kw).epsilon > 3.0  # type: ignore[arg-type]


def test_extended_precision_agrees_and_bounds_less_round_off() -> None:
    pld = discretize(SubsampledLoss(GaussianLoss(1 / 1.1), 0.01, "remove"), 1e-3, 1e-14)
    plain, r_plain, k_plain = _fft_power([(pld, 1000)], 2.0, -200, 4096)
    ext, r_ext, k_ext = _fft_power([(pld, 1000)], 2.0, -200, 4096, extended=True)
    assert np.max(np.abs(plain - ext)) <= r_plain + r_ext
    # the power is taken in float64 either way (its error is relative): what extended
    # precision removes is the forward transform's absolute error times the power
    assert r_ext < 1e-2 * r_plain
    assert k_ext == pytest.approx(k_plain, rel=1e-12)


@pytest.mark.parametrize("extended", [False, True])
def test_fft_power_is_within_its_roundoff_bound_of_the_exact_convolution(extended: bool) -> None:
    """Integer masses compose exactly (Python integers): the FFT power of two measures, 40 and
    7 copies, off-centre (the measures are rolled to their means and back), is within the
    per-entry round-off it reports of the exact tilted masses, everywhere in the window — and
    that bound is not vacuous."""
    from fractions import Fraction

    rng = np.random.default_rng(1)
    a = [int(x) for x in rng.integers(1, 1000, 40)]
    b = [int(x) for x in rng.integers(0, 50, 25)] + [7]

    ca, cb, n, pad = 40, 7, 4096, 100
    exact = np.convolve(integer_power(a, ca), integer_power(b, cb))
    den = sum(a) ** ca * sum(b) ** cb
    truth = np.zeros(n)
    truth[pad : pad + exact.size] = [float(Fraction(int(v), den)) for v in exact]
    pa = DiscretePLD(h=0.01, offset=-13, pmf=np.array(a, float), infinity_mass=0.0)
    pb = DiscretePLD(h=0.01, offset=5, pmf=np.array(b, float), infinity_mass=0.0)
    comp, roundoff, log_mgf = _fft_power([(pa, ca), (pb, cb)], 0.0, ca * -13 + cb * 5 - pad, n,
                                         extended=extended)
    assert float(np.max(np.abs(comp - truth))) <= roundoff
    assert roundoff < (1e-16 if extended else 1e-14)
    assert log_mgf == pytest.approx(ca * math.log(sum(a)) + cb * math.log(sum(b)), rel=1e-14)


@pytest.mark.parametrize(("sigma", "q", "delta"), [(0.7, 1e-3, 1e-9), (2.0, 0.2, 1e-4)])
def test_delta_at_epsilon_brackets_the_exact_one_step_profile(
    sigma: float, q: float, delta: float
) -> None:
    """pld_delta's bracket around the δ whose exact ε (one step, closed form) is known."""
    eps = subsampled_gaussian_epsilon(delta, 1 / sigma, q)
    g = pld_delta([(SubsampledEvent(GaussianEvent(sigma=sigma), q), 1)], eps)
    assert g.bracket is not None
    lo, hi = (float(b) for b in g.bracket)
    assert lo <= delta * (1 + 1e-9) and hi >= delta * (1 - 1e-9)
    assert hi <= delta * 1.05


def test_delta_and_epsilon_are_inverses_for_a_long_run() -> None:
    ev = [(SubsampledEvent(GaussianEvent(sigma=1.0), 1e-3), 100_000)]
    g = pld_delta(ev, 1.0)
    assert g.bracket is not None and 0.0 < float(g.bracket[0]) <= g.delta
    back = pld_epsilon(ev, float(g.delta))
    assert back.epsilon == pytest.approx(1.0, abs=2e-4)


def test_hopeless_runs_take_rdp_without_running_the_pld() -> None:
    """T = 10^12 at σ = 1, q = 0.01 (ε ~ 10^8): the PLD cost 20 s and 700 MB for nothing."""
    g = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10**12, delta=1e-5)
    assert g.epsilon > 1e6 and "not run" in g.rule
    assert math.isfinite(g.epsilon)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("mu", "q"), [(1.67e-4, 4.3e-3), (0.9, 1e-4), (2.0, 0.3), (0.05, 1e-5)])
def test_split_numerators_are_within_their_error_bound_of_mpmath(
    direction: str, mu: float, q: float
) -> None:
    """The cancellation-free split numerator p − e^e·r of a subsampled Gaussian (what keeps the
    float guard from adding up over 10^12 steps) is within its stated error of the same
    quantity at 40 digits, on the very points x the inner CDFs were evaluated at."""
    import mpmath as mp

    mp.mp.dps = 40
    src = SubsampledLoss(GaussianLoss(mu), q, direction)
    lo, hi = (tail_edge(src, 1e-9, 1e-14, upper=up) for up in (False, True))
    edges = np.linspace(lo, hi, 41)
    num, err = src.split_numerators(edges)
    sign = 1.0 if direction == "remove" else -1.0
    with np.errstate(invalid="ignore", over="ignore"):
        x = src._inner_edges(sign * edges) / mu + 0.5 * mu  # as GaussianLoss.cdfs forms it
    mq = mp.mpf(q)
    for k in range(edges.size - 1):
        x0, x1 = mp.mpf(float(x[k])), mp.mpf(float(x[k + 1]))
        a = abs(mp.ncdf(x1 - mu) - mp.ncdf(x0 - mu))
        b = abs(mp.ncdf(x1) - mp.ncdf(x0))
        e = mp.mpf(float(edges[k]))
        if direction == "remove":
            truth = a * mq + (1 - mq) * b - mp.e**e * b
        else:
            truth = b - mp.e**e * (mq * a + (1 - mq) * b)
        assert abs(float(num[k]) - float(truth)) <= float(err[k]), (k, num[k], truth, err[k])
    if q <= 0.01:  # the cancellation is gone: far below the bound on p − e^e·r as written
        c, ce = cdfs_with_errors(src, edges)
        _, p_scale = loss_interval(c.fp, c.sp)
        _, r_scale = loss_interval(c.fq, c.sq)
        kap = 2.0 * np.maximum(ce.value[1:], ce.value[:-1])  # (grid.discretize's plain bound)
        plain = (8.0 * (np.finfo(float).eps / 2) + kap) * (
            p_scale + np.exp(edges[:-1]) * r_scale)
        assert float(err.sum()) <= 0.1 * float(plain.sum())


def test_stable_split_keeps_the_mass_and_only_shrinks_the_guard() -> None:
    """discretize(stable=True) (used from STABLE_FROM composed steps) moves less mass up to
    cover round-off than the plain split — at T = 1e10's σ ≈ 37, q = 1e-4 the guard is what
    the stable form exists for — and keeps every interval's mass; below STABLE_FROM the plain
    split is used (the stable one costs a second evaluation of the inner CDFs)."""
    src = SubsampledLoss(GaussianLoss(1 / 37.356), 1e-4, "remove")
    plain = discretize(src, 2e-6, 1e-20)
    stable = discretize(src, 2e-6, 1e-20, stable=True)
    assert 0.0 < stable.guard < 0.1 * plain.guard
    assert float(stable.pmf.sum()) == pytest.approx(float(plain.pmf.sum()), rel=1e-12)
    # mass moved up only: the stable grid's mean is at or below the plain one's
    assert stable.mean_var()[0] <= plain.mean_var()[0]
    assert passes._stable([(src, passes.STABLE_FROM)])
    assert not passes._stable([(src, passes.STABLE_FROM // 2), (src, passes.STABLE_FROM // 4)])


def test_normal_interval_is_within_its_bound_of_mpmath_and_relatively_tight() -> None:
    """N(0, 1)'s mass of [c − d, c + d] by its Taylor series: within the stated error of the
    40-digit value, and that error is a few ulps of the mass (a CDF difference near the
    centre errs by ~u/(4φd): 1e-14 relative at d = 0.01)."""
    import mpmath as mp

    from approxdp.accounting.pld.privacy_loss import normal_interval

    mp.mp.dps = 40
    rng = np.random.default_rng(3)
    c = np.concatenate([rng.uniform(-9.0, 9.0, 120), rng.uniform(-1.0, 1.0, 60), [0.0, 0.2]])
    d = np.concatenate([rng.uniform(1e-6, 0.024, 180), [0.01, 0.2]])
    mass, err = normal_interval(c, d)
    used = np.isfinite(err)
    assert used.sum() >= 150
    for ci, di, mi, ei in zip(c[used], d[used], mass[used], err[used], strict=True):
        truth = mp.ncdf(mp.mpf(ci) + mp.mpf(di)) - mp.ncdf(mp.mpf(ci) - mp.mpf(di))
        assert abs(mp.mpf(mi) - truth) <= ei, (ci, di, mi, ei)
    central = used & (np.abs(c) <= 2.0)
    assert float(np.max(err[central] / mass[central])) < 40 * np.finfo(float).eps
    # out of the series' range: no claim
    assert not np.isfinite(normal_interval(np.array([0.0]), np.array([0.5]))[1][0])


def test_normal_interval_in_long_double_is_within_its_bound() -> None:
    """The same series in extended precision (where the platform has it): its bound scales
    with that precision's unit round-off and still holds at 40 digits."""
    import mpmath as mp

    from approxdp.accounting.pld.privacy_loss import normal_interval

    mp.mp.dps = 40
    rng = np.random.default_rng(4)
    c = rng.uniform(-6.0, 6.0, 80).astype(np.longdouble) / 3
    d = rng.uniform(1e-6, 0.03, 80).astype(np.longdouble)
    mass, err = normal_interval(c, d)
    assert mass.dtype == np.longdouble
    eps = float(np.finfo(np.longdouble).eps)

    def exact(v: np.longdouble) -> mp.mpf:
        return mp.mpf(np.format_float_scientific(v, precision=30, unique=False))

    for ci, di, mi, ei in zip(c, d, mass, err, strict=True):
        assert np.isfinite(ei)
        truth = mp.ncdf(exact(ci) + exact(di)) - mp.ncdf(exact(ci) - exact(di))
        assert abs(exact(mi) - truth) <= exact(ei)
        assert float(ei / mi) < 80 * eps


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_bin_bounds_bracket_the_exact_bins_tightly(direction: str) -> None:
    """The subsampled Gaussian's rounded-loss bins by the series: the P-mass lower and
    Q-mass upper bounds of the very sets between the float preimages x (40 digits) hold,
    and are within a few ulps; the rounded loss built from them keeps nearly all P-mass."""
    import mpmath as mp

    from approxdp.accounting.pld.rounded import discretize_rounded

    mp.mp.dps = 40
    mu, q = 1 / 40.0, 1e-3
    src = SubsampledLoss(GaussianLoss(mu), q, direction)
    lo, hi = (tail_edge(src, 1e-9, 1e-14, upper=up) for up in (False, True))
    edges = np.linspace(lo, hi, 1201)
    res = src.bin_bounds(edges)
    assert res is not None
    p_low, r_high = res
    assert np.isfinite(r_high).sum() >= 1000
    sign = 1.0 if direction == "remove" else -1.0
    x = src._inner_edges(sign * edges) / mu + 0.5 * mu
    mq = mp.mpf(q)
    tol = 8 * np.finfo(float).eps
    for k in range(0, edges.size - 1, 13):
        if not np.isfinite(r_high[k]):
            continue
        a0, a1 = sorted((mp.mpf(float(x[k])), mp.mpf(float(x[k + 1]))))
        a = mp.ncdf(a1 - mu) - mp.ncdf(a0 - mu)
        b = mp.ncdf(a1) - mp.ncdf(a0)
        mix = mq * a + (1 - mq) * b
        p_true, r_true = (mix, b) if direction == "remove" else (b, mix)
        assert p_true * (1 - tol) <= mp.mpf(p_low[k]) <= p_true, (k, p_low[k], p_true)
        assert r_true <= mp.mpf(r_high[k]) <= r_true * (1 + tol), (k, r_high[k], r_true)
    # on the rounded grid: the P-mass given up to round-off is ~u of it, not ~u/(bin mass)
    # (CDF differences alone gave up 1.9e-14 here, ~u per bin near the centre)
    rounded = discretize_rounded(src, 2e-6, 1e-14, precise=True)
    lost = 1.0 - float(rounded.p.sum()) - rounded.p_inf
    assert 0.0 <= lost < 1e-15
    plain = discretize_rounded(src, 2e-6, 1e-14)  # (what passes use below STABLE_FROM steps)
    assert np.all(plain.p <= rounded.p) and np.all(plain.r >= rounded.r)


def test_only_compositions_standing_for_10_to_the_10_steps_run_in_extended_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At T = 10^12 in blocks, the first level's block (power B, used T/B times) runs in
    extended precision; the levels above and the remainders (power × uses < 10^10) in
    float64, where the power's error is relative."""
    from approxdp.accounting.pld import blocks

    seen: list[tuple[int, bool]] = []
    real = blocks.compose

    def spy(parts: list[tuple[DiscretePLD, int]], **kw: object) -> object:
        seen.append((parts[0][1], bool(kw.get("extended", False))))
        return real(parts, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(blocks, "compose", spy)
    pld = discretize(SubsampledLoss(GaussianLoss(1 / 5985.2), 0.00427, "remove"), 2e-7, 1e-25)
    steps = 10**12
    block, k, _ = blocks.block_plan(steps)
    blocks.block_pieces([(pld, steps)], lam=2.0, tilt_at=3.0, tail=1e-10, extended=True)
    assert (block, True) in seen
    assert all(not ext for c, ext in seen if c != block)
    assert sum(1 for _, ext in seen if ext) == 1
    assert block * (k + 1) >= blocks.EXTENDED_FROM


def test_the_other_direction_is_certified_on_a_coarser_grid_with_the_same_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 22, setting #14 (σ = 1, q = 1e-4, T = 1e7): the add direction's first pass came
    out above the refined remove direction; it only has to come out below it, which a grid
    ~3x coarser than the final one does (half the points): same guarantee and bracket as
    certifying it on the final grid, and where the coarser pass misses, the final grid is
    used as before. (Where both directions' first passes run: the saddle-point estimates
    cannot tell them apart, or the other direction's predicted pass missed; here forced.)"""
    import approxdp.accounting.pld.accounting as acc

    monkeypatch.setattr(acc, "_dominant", lambda plan, delta: None)

    ev = [(SubsampledEvent(GaussianEvent(sigma=1.0), 1e-4), 10**7)]
    grids: list[float] = []
    real_solve = acc._solve

    def spy(parts, delta, h, guess, below=None):  # type: ignore[no-untyped-def]
        grids.append(h)
        return real_solve(parts, delta, h, guess, below)

    monkeypatch.setattr(acc, "_solve", spy)
    passes.clear_caches()
    got = pld_epsilon(ev, 1e-5)
    assert len(grids) == 3 and grids[0] == grids[1] and grids[2] < grids[0]
    coarser = grids[2]
    monkeypatch.setattr(acc, "_other_step", lambda other, top, eps_up: top.h)
    grids.clear()
    passes.clear_caches()
    old = pld_epsilon(ev, 1e-5)
    assert grids[2] < coarser  # the final grid, finer
    assert got.epsilon == old.epsilon and got.bracket == old.bracket
    # a coarse pass that misses (the first grid: above the remove direction) falls back
    monkeypatch.setattr(acc, "_other_step", lambda other, top, eps_up: other.h)
    grids.clear()
    passes.clear_caches()
    miss = pld_epsilon(ev, 1e-5)
    assert len(grids) == 4 and miss.epsilon == old.epsilon and miss.bracket == old.bracket
