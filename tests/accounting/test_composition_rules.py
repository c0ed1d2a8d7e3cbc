"""Composition theorems: reference values, orderings, monotonicity, the k ≈ 70 crossover."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approxdp import (
    advanced_composition,
    basic_composition,
    optimal_composition,
    simplified_advanced_composition,
)
from approxdp.accounting.composition.optimal import kov_delta

EPS = st.floats(min_value=1e-3, max_value=3.0)
KS = st.integers(min_value=1, max_value=400)
DPRIME = st.floats(min_value=1e-12, max_value=0.1)


def mp_s(epsilon: float, k: int, eps_g: float) -> mpmath.mpf:
    """Kairouz et al.'s S(ε_g) at 40 digits, summed term by term from the theorem."""
    with mpmath.workdps(40):
        e, g = mpmath.mpf(epsilon), mpmath.mpf(eps_g)
        total = mpmath.mpf(0)
        for l in range(k + 1):
            term = mpmath.exp((k - l) * e) - mpmath.exp(g + l * e)
            if term > 0:
                total += mpmath.binomial(k, l) * term
        return total / (1 + mpmath.exp(e)) ** k


def test_basic_composition_sums() -> None:
    g = basic_composition([(0.5, 1e-6), (0.25, 0.0), (0.25, 2e-6)])
    assert g.as_tuple() == (1.0, 3e-6)
    assert g.kind == "upper bound"


def test_advanced_matches_theorem_3_20() -> None:
    eps, delta = advanced_composition(0.01, 1e-8, 10_000, 1e-6)
    expected = math.sqrt(2 * 10_000 * math.log(1e6)) * 0.01 + 10_000 * 0.01 * math.expm1(0.01)
    assert eps == pytest.approx(expected, rel=1e-14)
    assert delta == pytest.approx(10_000 * 1e-8 + 1e-6, rel=1e-14)


def test_advanced_is_vectorized() -> None:
    g = advanced_composition(np.array([0.1, 0.2]), 0.0, 10, 1e-5)
    assert isinstance(g.epsilon, np.ndarray) and g.epsilon.shape == (2,)
    assert g.epsilon[0] < g.epsilon[1]


@pytest.mark.parametrize(
    ("epsilon", "k", "delta_prime"),
    [(0.1, 10, 1e-5), (1.0, 70, 1e-4), (0.5, 31, 1e-9), (0.01, 2000, 1e-6), (2.0, 5, 0.01)],
)
def test_optimal_against_mpmath(epsilon: float, k: int, delta_prime: float) -> None:
    """ε_g is feasible (S ≤ δ') and tight (S just below ε_g exceeds δ'), at 40 digits."""
    eps_g = optimal_composition(epsilon, 0.0, k, delta_prime).epsilon
    assert mp_s(epsilon, k, eps_g) <= delta_prime
    assert mp_s(epsilon, k, eps_g * (1 - 1e-9)) > delta_prime


def test_optimal_large_k_against_mpmath() -> None:
    eps_g = optimal_composition(0.01, 1e-9, 10_000, 1e-6).epsilon
    assert mp_s(0.01, 10_000, eps_g) <= 1e-6
    assert mp_s(0.01, 10_000, eps_g * (1 - 1e-8)) > 1e-6


def test_kov_breakpoints_against_mpmath() -> None:
    """δ_i at ε_g = (k − 2i)ε equals Kairouz et al.'s closed form (δ = 0 per step)."""
    for i in (1, 3, 10):
        k, e = 40, 0.3
        value = kov_delta(e, 0.0, k, (k - 2 * i) * e)
        with mpmath.workdps(40):
            ref = (
                sum(
                    mpmath.binomial(k, l)
                    * (mpmath.exp((k - l) * e) - mpmath.exp((k - 2 * i + l) * e))
                    for l in range(i)
                )
                / (1 + mpmath.exp(e)) ** k
            )
        assert value == pytest.approx(float(ref), rel=1e-12)


def test_optimal_total_delta() -> None:
    g = optimal_composition(0.1, 1e-7, 50, 1e-6)
    assert g.delta >= 1 - (1 - 1e-7) ** 50 * (1 - 1e-6)
    assert g.delta <= 50 * 1e-7 + 1e-6
    assert g.kind == "exact"


def test_optimal_extremes() -> None:
    assert optimal_composition(0.0, 0.0, 10, 1e-6).epsilon == 0.0
    # one step: S(x) = (e − e^x)/(1 + e) ≤ δ′ gives x = ln(e − (1 + e)δ′) just below 1
    expected = math.log(math.e - (1 + math.e) * 1e-9)
    assert optimal_composition(1.0, 0.0, 1, 1e-9).epsilon == pytest.approx(expected, rel=1e-9)
    # huge per-step ε stays finite and below kε (log-space sums)
    g = optimal_composition(50.0, 0.0, 1000, 1e-6)
    assert math.isfinite(g.epsilon) and g.epsilon <= 50_000.0


@settings(max_examples=40, deadline=None)
@given(EPS, KS, DPRIME)
def test_optimal_below_advanced_and_basic(epsilon: float, k: int, delta_prime: float) -> None:
    opt = optimal_composition(epsilon, 1e-9, k, delta_prime)
    adv = advanced_composition(epsilon, 1e-9, k, delta_prime)
    assert opt.epsilon <= adv.epsilon * (1 + 1e-12)
    assert opt.epsilon <= k * epsilon * (1 + 1e-12)
    assert opt.delta <= adv.delta * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(EPS, KS, DPRIME, st.floats(min_value=1.01, max_value=2.0))
def test_monotone_in_epsilon_and_k(epsilon: float, k: int, dp: float, factor: float) -> None:
    for rule in (advanced_composition, optimal_composition):
        base = rule(epsilon, 0.0, k, dp).epsilon
        assert rule(epsilon * factor, 0.0, k, dp).epsilon >= base
        assert rule(epsilon, 0.0, k + 1, dp).epsilon >= base
        assert rule(epsilon, 0.0, k, dp / factor).epsilon >= base


def test_advanced_beats_basic_only_for_large_k() -> None:
    # at ε = 0.1, δ' = 1e-6 the crossover is k = 2 ln(1/δ')/(2 − e^ε)² ≈ 34.8
    assert advanced_composition(0.1, 0.0, 10, 1e-6).epsilon > 10 * 0.1
    assert advanced_composition(0.1, 0.0, 1000, 1e-6).epsilon < 1000 * 0.1
    # Thm 3.20 never beats basic at ε = 1 (k ε (e − 1) alone exceeds k ε)
    for k in (10, 100, 10_000):
        assert advanced_composition(1.0, 0.0, k, 1e-4).epsilon > k


def test_notes_crossover_near_70() -> None:
    """Near & Abuah's plot (ε = 1, δ = 10e-5): the simplified form beats basic from k = 74 on."""
    cross = next(
        k for k in range(1, 200) if simplified_advanced_composition(1.0, k, 1e-4).epsilon < k
    )
    assert 65 <= cross <= 80
    assert cross == 74


def test_simplified_form_underestimates_at_epsilon_1() -> None:
    """At ε = 1 the notes' 2ε√(2k ln(1/δ)) is BELOW the optimal composition: not a bound."""
    simple = simplified_advanced_composition(1.0, 1000, 1e-4)
    optimal = optimal_composition(1.0, 0.0, 1000, 1e-4)
    assert simple.kind == "approximation"
    assert simple.epsilon < optimal.epsilon
    # where its condition holds it is labelled an upper bound and dominates Thm 3.20
    small = simplified_advanced_composition(0.01, 100, 1e-6)
    assert small.kind == "upper bound"
    assert small.epsilon >= advanced_composition(0.01, 0.0, 100, 1e-6).epsilon
