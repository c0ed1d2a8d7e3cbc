"""The running route never answers from a bracket whose lower end is above its upper end.

Both ends are certified, so a lower end above the upper one means one certificate is wrong;
before, ε took such a bracket (its negative width passed the precision check) and δ clamped
its lower end to the upper one (a zero-width bracket). Now the ask is declined and the
one-shot accountant answers (session-7 review)."""

from __future__ import annotations

from typing import Any

import pytest

from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld import incremental, incremental_delta
from approxdp.accounting.pld.incremental import INCREMENTAL_RULE

Q = 256 / 60000


def _rules_and_brackets(acct: TrainingAccountant, ask: Any, phases: int) -> list[Any]:
    out = []
    for i in range(phases):
        acct.step(noise_multiplier=1.5 - 0.1 * i, sample_rate=Q, steps=300)
        g = ask()
        assert g.bracket is not None
        assert g.bracket[0] <= g.bracket[1]
        out.append(g.rule)
    return out


def test_epsilon_asks_decline_a_lower_end_above_the_upper(monkeypatch: pytest.MonkeyPatch) -> None:
    acct = TrainingAccountant()
    honest = _rules_and_brackets(acct, lambda: acct.epsilon(1e-5), 4)
    assert honest[-1] == INCREMENTAL_RULE  # the route runs here when its tests are sound
    monkeypatch.setattr(incremental, "test_epsilon", lambda *args: 1e9)
    acct = TrainingAccountant()
    rules = _rules_and_brackets(acct, lambda: acct.epsilon(1e-5), 4)
    assert INCREMENTAL_RULE not in rules


def test_delta_asks_decline_a_lower_end_above_the_upper(monkeypatch: pytest.MonkeyPatch) -> None:
    acct = TrainingAccountant()
    honest = _rules_and_brackets(acct, lambda: acct.delta(1.0), 4)
    assert honest[-1] == INCREMENTAL_RULE
    monkeypatch.setattr(incremental_delta, "test_delta", lambda *args: 0.999)
    acct = TrainingAccountant()
    rules = _rules_and_brackets(acct, lambda: acct.delta(1.0), 4)
    assert INCREMENTAL_RULE not in rules
