"""A lower end above the certified upper end is declined, never clamped to it: both ends are
certified, so one of them is wrong, and clamping reported the bracket as closed (the tests whose
Q-tails underflowed near δ = 1e-300 certified lower ends above the truth; accounting.py clamped
them to the upper end: dpsgd_epsilon(σ = 0.6, q = 1e-5, T = 2, δ = 1e-300) gave the bracket
(65.4153133, 65.4153133) where the truth is 65.4151642)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta, dpsgd_epsilon
from approxdp.accounting.pld import accounting, delta
from approxdp.accounting.pld.accounting import clear_caches


def test_an_epsilon_test_above_the_upper_end_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    honest = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=100, delta=1e-6)
    assert honest.bracket is not None and 0.0 < float(honest.bracket[0]) < float(honest.epsilon)
    real = accounting._lower

    def faulty(*args: Any, **kwargs: Any) -> list[float]:
        return [*real(*args, **kwargs), math.inf]  # one test "certifies" ε ≥ ∞

    monkeypatch.setattr(accounting, "_lower", faulty)
    clear_caches()
    g = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=100, delta=1e-6)
    assert g.bracket is not None
    assert float(g.epsilon) == float(honest.epsilon)
    assert float(g.bracket[0]) == float(honest.bracket[0])  # the faulty test is left out
    clear_caches()


def test_a_delta_test_above_the_upper_end_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    monkeypatch.setattr(delta, "lower_delta", lambda *args, **kwargs: 2.0)
    g = dpsgd_delta(noise_multiplier=1.0, sample_rate=0.01, steps=100, epsilon=1.0)
    assert g.bracket is not None
    up = float(g.delta)
    assert 0.0 < up < 1.0
    assert float(g.bracket[0]) == 0.0 < up  # not (up, up)
    clear_caches()
