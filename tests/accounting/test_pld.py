"""The PLD accountant's contract: never under-report, tight, monotone, typed errors.

References are independent of the PLD code: the exact one-step profile of the subsampled
Gaussian (checked against mpmath at 50 digits here), the exact composition of Gaussians (one
Gaussian, Zhao et al. 2019 Lemma 15), the closed-form Laplace profile, Kairouz-Oh-Viswanath's
optimal composition (exact for (ε, δ) parts), and Google's dp_accounting PLD at a fine grid
(its optimistic estimate is a lower bound on the true ε).
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from approxdp.accounting.composition.optimal import optimal_composition
from approxdp.accounting.pld.accounting import event_losses, pld_delta, pld_epsilon
from approxdp.accounting.pld.compose import compose, discretize, discretize_rounded
from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    GaussianLoss,
    LaplaceLoss,
    SubsampledLoss,
)
from approxdp.accounting.pld.subsampled_gaussian import (
    subsampled_gaussian_delta,
    subsampled_gaussian_epsilon,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)
from approxdp.profiles.discrete_gaussian import discrete_gaussian_delta
from approxdp.profiles.gaussian import gaussian_epsilon

#: One of each kind of loss distribution, both directions of subsampling.
SOURCES = [
    GaussianLoss(0.8),
    LaplaceLoss(0.5),
    EpsilonDeltaLoss(0.3, 1e-4),
    DiscreteGaussianLoss(2.0, 1),
    SubsampledLoss(GaussianLoss(1.0), 0.02, "remove"),
    SubsampledLoss(GaussianLoss(1.0), 0.02, "add"),
    SubsampledLoss(LaplaceLoss(1.0), 0.1, "add"),
]
TIGHT = 1.5e-3  # relative excess allowed at the default precision
ABS = 5e-5  # absolute excess allowed where ε is small


def _mp_subsampled_delta(eps: float, mu: float, q: float, direction: str) -> mp.mpf:
    """The hockey-stick divergence of the mixture pair, straight from its definition (150
    digits: the two terms cancel to δ)."""
    with mp.workdps(150):
        e, m, qq = mp.mpf(eps), mp.mpf(mu), mp.mpf(q)
        phi = mp.ncdf
        if direction == "remove":  # (qN(μ) + (1−q)N(0)) vs N(0); loss > ε iff x > x_ε
            x = (mp.log((mp.e**e - 1 + qq) / qq) + m**2 / 2) / m
            return qq * phi(m - x) + (1 - qq) * phi(-x) - mp.e**e * phi(-x)
        c = 1 - (1 - qq) * mp.e**e  # N(0) vs (qN(μ) + (1−q)N(0)); loss > ε iff x < x_ε
        if c <= 0:
            return mp.mpf(0)
        t = mp.log(qq * mp.e**e / c)
        x = (m**2 / 2 - t) / m
        return phi(x) - mp.e**e * (qq * phi(x - m) + (1 - qq) * phi(x))


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_one_step_profile_matches_mpmath(direction: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        mu = float(10 ** rng.uniform(-1.5, 0.7))
        q = float(10 ** rng.uniform(-4, 0)) * 0.999
        eps = float(10 ** rng.uniform(-3, 1.3))
        ref = _mp_subsampled_delta(eps, mu, q, direction)
        got = subsampled_gaussian_delta(eps, mu, q, direction)
        if ref < mp.mpf("1e-300"):
            assert got < 1e-290
            continue
        assert abs(got - ref) / ref < 1e-11, (eps, mu, q, got, float(ref))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("q", [1e-4, 3e-3, 0.1, 0.6])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-3])
def test_one_step_pld_brackets_the_exact_profile(sigma: float, q: float, delta: float) -> None:
    exact = subsampled_gaussian_epsilon(delta, 1.0 / sigma, q)
    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=sigma), q), 1)], delta)
    assert g.kind == "upper bound"
    assert g.epsilon >= exact
    assert g.epsilon <= exact * (1 + TIGHT) + ABS
    assert g.bracket is not None
    assert g.bracket[0] <= exact <= g.bracket[1]


@pytest.mark.parametrize(
    ("sigma", "steps", "delta"),
    [(3.0, 1000, 1e-10), (1.0, 100, 1e-5), (0.7, 10, 1e-6), (10.0, 20000, 1e-8), (2.0, 1, 1e-3)],
)
def test_gaussian_composition_agrees_from_above(sigma: float, steps: int, delta: float) -> None:
    """q = 1: T Gaussians compose to one with σ/√T exactly; the PLD (not told so, the event
    goes through its own discretization) must agree from above. (σ=3, T=1000, δ=1e-10 is where
    dp_accounting under-reports: 121.827828 against the exact 121.828384.)"""
    exact = float(gaussian_epsilon(sigma / math.sqrt(steps), delta))
    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=sigma), 1.0), steps)], delta)
    assert exact <= g.epsilon <= exact * (1 + TIGHT) + ABS
    assert g.bracket is not None and g.bracket[0] <= exact


def test_laplace_one_and_many() -> None:
    # one Laplace release: δ(ε) = 1 − e^((ε − ε0)/2), so ε(δ) = ε0 + 2 log(1 − δ)
    eps0, delta = 0.7, 1e-3
    exact = eps0 + 2 * math.log1p(-delta)
    g = pld_epsilon([(LaplaceEvent(scale=1 / eps0), 1)], delta)
    assert exact <= g.epsilon <= exact * (1 + TIGHT) + ABS
    # k Laplace releases are no worse than k worst-case ε0-DP steps (Kairouz et al. 2017 is
    # exact for those)
    k, delta = 200, 1e-6
    kov = optimal_composition(0.1, 0.0, k, delta).epsilon
    g = pld_epsilon([(LaplaceEvent(scale=10.0), k)], delta)
    assert g.epsilon <= kov
    assert g.epsilon > 0.5 * kov


@pytest.mark.parametrize(("eps", "dlt", "k"), [(0.1, 0.0, 300), (0.5, 1e-7, 40), (1.0, 1e-6, 5)])
def test_epsilon_delta_parts_match_optimal_composition(eps: float, dlt: float, k: int) -> None:
    """The (ε, δ) dominating pair composed k times is exactly what Kairouz et al.'s theorem
    bounds."""
    delta_prime = 1e-6
    kov = optimal_composition(eps, dlt, k, delta_prime)
    g = pld_epsilon([(EpsilonDeltaEvent(eps, dlt), k)], float(kov.delta))
    assert g.epsilon >= float(kov.epsilon) * (1 - 1e-9) - 1e-12
    assert g.epsilon <= float(kov.epsilon) * (1 + TIGHT) + 2e-3 * eps


def test_discrete_gaussian_one_release_from_above() -> None:
    sigma, eps = 3.0, 0.5
    exact = float(discrete_gaussian_delta(eps, sigma, 1.0))
    ev = DiscreteGaussianEvent(sigma=sigma, sensitivity=1.0, epsilon=1.0, delta=1e-3)
    g = pld_delta([(ev, 1)], eps)
    assert exact <= float(g.delta) <= exact * (1 + 1e-2)
    assert g.bracket is not None and g.bracket[0] <= exact
    back = pld_epsilon([(ev, 1)], exact)
    assert eps <= back.epsilon <= eps * (1 + TIGHT)


def test_mixed_history_beats_or_matches_composition_theorems() -> None:
    history = [
        (GaussianEvent(sigma=4.0), 3),
        (LaplaceEvent(scale=20.0), 10),
        (EpsilonDeltaEvent(0.05, 1e-8), 5),
        (SubsampledEvent(GaussianEvent(sigma=1.0), 0.01), 100),
    ]
    g = pld_epsilon(history, 1e-5)
    assert math.isfinite(g.epsilon)
    # never below any one part alone (monotone in the history)
    for item in history:
        assert pld_epsilon([item], 1e-5).epsilon <= g.epsilon + 1e-12
    # a ComposedEvent is the same history
    composed = ComposedEvent(tuple(e for e, c in history for _ in range(c)))
    assert pld_epsilon([(composed, 1)], 1e-5).epsilon == pytest.approx(g.epsilon, rel=1e-9)


def test_dp_sgd_example_against_dp_accounting() -> None:
    """Two independent certified upper bounds (ours; dp_accounting's connect-the-dots at a
    5x finer grid than its default) agree to 0.05 %, and ours is above dp_accounting's
    optimistic (privacy-buckets) lower estimate."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    q, sigma, steps, delta = 256 / 60000, 1.1, 14063, 1e-5

    def theirs(pessimistic: bool) -> float:
        return float(
            pld_lib.from_gaussian_mechanism(
                sigma,
                sampling_prob=q,
                pessimistic_estimate=pessimistic,
                value_discretization_interval=2e-5,
                use_connect_dots=pessimistic,
            )
            .self_compose(steps)
            .get_epsilon_for_delta(delta)
        )

    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=sigma), q), steps)], delta)
    assert g.epsilon >= theirs(False)
    upper = theirs(True)
    assert upper * (1 - 5e-4) <= g.epsilon <= upper * (1 + 5e-4)
    assert 2.38 < g.epsilon < 2.385


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sigma", "q", "steps", "delta"),
    [
        (0.5, 1e-3, 1000, 1e-5),
        (0.8, 0.01, 500, 1e-8),
        (2.0, 0.05, 2000, 1e-10),
        (5.0, 0.3, 100, 1e-4),
        (10.0, 1.0, 300, 1e-3),
        (1.0, 1e-4, 100000, 1e-6),
    ],
)
def test_never_below_dp_accounting_optimistic(
    sigma: float, q: float, steps: int, delta: float
) -> None:
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    opt = pld_lib.from_gaussian_mechanism(
        sigma,
        sampling_prob=q,
        pessimistic_estimate=False,
        value_discretization_interval=1e-4,
        use_connect_dots=False,
    ).self_compose(steps)
    lower = opt.get_epsilon_for_delta(delta)
    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=sigma), q), steps)], delta)
    assert g.epsilon >= lower
    pess = pld_lib.from_gaussian_mechanism(
        sigma, sampling_prob=q, pessimistic_estimate=True, value_discretization_interval=1e-4
    ).self_compose(steps)
    # tight: no looser than dp_accounting's own pessimistic bound at this fine grid (+0.1 %)
    assert g.epsilon <= max(pess.get_epsilon_for_delta(delta), lower) * (1 + TIGHT) + ABS


def test_epsilon_monotone_and_stable_in_delta_down_to_1e_minus_20() -> None:
    """prv_accountant#17: ε jumped from 0.06 to 3.8 between δ = 1.10e-18 and 1.13e-18."""
    ev = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    deltas = np.geomspace(1e-20, 1e-3, 25)
    eps = [pld_epsilon([(ev, 1000)], float(d)).epsilon for d in deltas]
    assert all(a >= b for a, b in itertools.pairwise(eps))
    ratios = [a / b for a, b in itertools.pairwise(eps)]
    assert max(ratios) < 1.3
    near = [pld_epsilon([(ev, 1000)], d).epsilon for d in (1.10e-18, 1.13e-18)]
    assert near[0] >= near[1] and near[0] / near[1] < 1.01


@pytest.mark.parametrize("source", SOURCES)
def test_discretization_keeps_both_masses_and_dominates(source: object) -> None:
    """Connect-the-dots keeps total P-mass 1 and Q-mass ≤ 1, and its δ is ≥ the source's at
    every grid point (δ from the source's CDFs: P(L > ε) − e^ε Q(L > ε))."""
    pld = discretize(source, 1e-3, 1e-14)  # type: ignore[arg-type]
    total = pld.pmf.sum() + pld.infinity_mass
    assert total == pytest.approx(1.0, abs=1e-12)
    q_mass = float(np.sum(pld.pmf * np.exp(-pld.losses)))
    assert q_mass <= 1.0 + 1e-12
    for eps in (0.0, 0.01, 0.1, 0.5, 1.0):
        c = source.cdfs(np.array([eps]))  # type: ignore[attr-defined]
        true = float(c.sp[0] - math.exp(eps) * c.sq[0])
        assert pld.delta(eps) >= true - 1e-15


@pytest.mark.parametrize("source", SOURCES)
def test_rounded_discretization_keeps_the_masses_and_its_tests_stay_below(source: object) -> None:
    """The loss rounded to the nearest grid point, under P and under Q: the masses (rounded
    down under P, up under Q) add up to 1 to float rounding, and every test {S̃ ≥ t} of one
    step gives P − e^ε Q at or below the source's δ(ε) (from its CDFs), and close to it."""
    h = 1e-3
    r = discretize_rounded(source, h, 1e-14)  # type: ignore[arg-type]
    assert r.p.min() >= 0.0 and r.r.min() >= 0.0
    assert r.p.sum() + r.p_inf == pytest.approx(1.0, abs=1e-10)
    assert r.p.sum() + r.p_inf <= 1.0 + 1e-15
    losses = (r.offset + np.arange(r.p.size)) * h
    p_tail = np.cumsum(r.p[::-1])[::-1]  # P(S̃ ≥ loss_j), finite bins
    q_tail = np.cumsum(r.r[::-1])[::-1]
    for eps in (0.0, 0.01, 0.1, 0.5, 1.0):
        c = source.cdfs(np.array([eps]))  # type: ignore[attr-defined]
        true = float(c.sp[0] - math.exp(eps) * c.sq[0])
        tests = np.concatenate(
            (p_tail - math.exp(eps) * q_tail,
             p_tail + r.p_inf - math.exp(eps) * (q_tail + r.r_inf))
        )
        best = max(float(tests.max()), 0.0)  # (and the empty test)
        assert best <= true + 1e-15
        assert losses.size > 0
        assert best >= true - 0.05 * max(true, 1e-12) - 2e-3  # a half-step rounding loses little


def test_bracket_is_tight_for_dp_sgd() -> None:
    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=1.1), 256 / 60000), 14063)], 1e-5)
    assert g.bracket is not None
    lower, upper = g.bracket
    assert lower < 2.38169 < upper  # dp_accounting's connect-the-dots at grid 1e-5: 2.3816906
    assert (upper - lower) / upper < 2e-3


def test_composed_roundoff_is_bounded_and_small() -> None:
    pld = discretize(SubsampledLoss(GaussianLoss(1 / 1.1), 256 / 60000, "remove"), 3e-4, 1e-20)
    comp = compose([(pld, 14063)], tail=1e-10, tilt_at=2.4)
    assert 0 < comp.roundoff < 1e-12
    assert comp.delta(2.4) > 0


def test_bad_events_are_typed_errors() -> None:
    with pytest.raises(ParameterTypeError):
        event_losses(3.0)
    with pytest.raises(InvalidParameterError, match="SubsampledEvent of a ComposedEvent"):
        event_losses(SubsampledEvent(ComposedEvent((GaussianEvent(1.0),)), 0.1))
    with pytest.raises(InvalidParameterError, match="precision"):
        pld_epsilon([(GaussianEvent(1.0), 1)], 1e-5, precision=0.5)
    with pytest.raises(InvalidParameterError, match="count"):
        pld_epsilon([(GaussianEvent(1.0), 0)], 1e-5)


# Found by the adversarial review of the PLD accountant (each failed before its fix).


def test_vanishing_noise_is_no_privacy_not_a_finite_epsilon() -> None:
    """σ/Δ = 1e-155 overflowed μ² and reported ε ≈ 1 for 100 steps; one step alone already
    has δ(ε) ≥ q at every ε."""
    from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon

    for sigma in (1e-155, 1e-100, 1e-6):
        g = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=0.01, steps=100, delta=1e-5)
        assert g.epsilon == math.inf
    big = SubsampledEvent(GaussianEvent(sigma=1.0, sensitivity=1e160), 0.01)
    assert pld_epsilon([(big, 100)], 1e-5).epsilon == math.inf
    # plain Gaussians too (their merged μ overflowed into an untyped OverflowError)
    assert pld_epsilon([(GaussianEvent(sigma=1e-100), 3)], 1e-5).epsilon == math.inf


@pytest.mark.parametrize(
    ("items", "delta", "exact"),
    [
        ([(LaplaceEvent(scale=1 / 0.3), 1)], 1e-12, 0.3 + 2 * math.log1p(-1e-12)),
        ([(EpsilonDeltaEvent(1.313, 0.0), 1)], 1e-6, None),
        ([(EpsilonDeltaEvent(0.01235, 0.0), 5)], None, None),
    ],
)
def test_bracket_lower_end_is_below_the_truth_next_to_atoms(
    items: list[tuple[object, int]], delta: float | None, exact: float | None
) -> None:
    """The optimistic curve raised a point to its floor after the gap margin, so the chord into
    it crossed δ where δ reaches the floor inside a grid cell (Laplace's top at ε0)."""
    ev, k = items[0]
    if exact is None:  # (ε, δ) parts: Kairouz et al.'s optimal composition is exact
        kov = optimal_composition(ev.epsilon, 0.0, k, 1e-6)  # type: ignore[attr-defined]
        delta = float(kov.delta) if delta is None else delta
        exact = float(optimal_composition(ev.epsilon, 0.0, k, delta).epsilon)  # type: ignore[attr-defined]
    g = pld_epsilon(items, delta)  # type: ignore[arg-type]
    assert g.bracket is not None
    assert g.bracket[0] <= exact <= g.epsilon * (1 + 1e-12)
    beyond = pld_delta([(LaplaceEvent(scale=1 / 0.3), 1)], 0.30001)
    assert beyond.bracket is not None and beyond.bracket[0] == 0.0  # the truth is 0 there


@pytest.mark.parametrize(
    ("sigma", "steps", "delta"), [(5.5045, 222991, 5.65e-16), (3.0053, 54, 1.196e-18)]
)
def test_deep_delta_gaussian_composition_is_tight(sigma: float, steps: int, delta: float) -> None:
    """Below the FFT's round-off floor the passes stopped early (+3.4 %, +17 %)."""
    exact = float(gaussian_epsilon(sigma / math.sqrt(steps), delta))
    g = pld_epsilon([(SubsampledEvent(GaussianEvent(sigma=sigma), 1.0), steps)], delta)
    assert exact <= g.epsilon <= exact * (1 + TIGHT)


def test_deep_delta_dp_sgd_is_below_rdp_and_monotone() -> None:
    """ndtri(1 − δ) was inf for δ < 1.1e-16: ε came out 9774 where RDP certifies 10.1."""
    from approxdp.accounting.rdp.conversion import rdp_dpsgd_epsilon

    ev = SubsampledEvent(GaussianEvent(sigma=0.58516), 6.4744e-4)
    g = pld_epsilon([(ev, 1112)], 2.55e-19)
    assert g.epsilon <= float(rdp_dpsgd_epsilon(0.58516, 6.4744e-4, 1112, 2.55e-19).epsilon)
    assert g.bracket is not None and g.epsilon - g.bracket[0] < 1e-3 * g.epsilon
    ev2 = SubsampledEvent(GaussianEvent(sigma=0.948), 4.919e-4)
    assert pld_epsilon([(ev2, 517)], 1e-17).epsilon <= pld_epsilon([(ev2, 517)], 1e-18).epsilon


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ([(GaussianEvent(1.0), 2.5)], ParameterTypeError),
        ([(GaussianEvent(1.0), 1.5)], ParameterTypeError),
        ([(LaplaceEvent(1.0), math.nan)], ParameterTypeError),
        ([(LaplaceEvent(1.0), None)], ParameterTypeError),
        ([(LaplaceEvent(1.0), True)], ParameterTypeError),
        ([(LaplaceEvent(1.0), 10**30)], InvalidParameterError),
        (None, ParameterTypeError),
        ([LaplaceEvent(1.0)], ParameterTypeError),
        ([(LaplaceEvent(1.0),)], ParameterTypeError),
        ([("gaussian", 1)], ParameterTypeError),
    ],
)
def test_malformed_histories_are_typed_errors(items: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        pld_epsilon(items, 1e-5)  # type: ignore[arg-type]


def test_bad_grid_step_and_subnormal_delta_are_typed_errors() -> None:
    history = [(LaplaceEvent(1.0), 3)]
    for h in (0.0, -1.0, math.nan):
        with pytest.raises(InvalidParameterError, match="h must be"):
            pld_epsilon(history, 1e-5, h=h)
    with pytest.raises(ParameterTypeError, match="h must be"):
        pld_epsilon(history, 1e-5, h="a")  # type: ignore[arg-type]
    for delta in (1e-320, 5e-324):
        with pytest.raises(InvalidParameterError, match="delta"):
            pld_epsilon(history, delta)
    assert np.isfinite(pld_epsilon(history, 1e-300).epsilon)
