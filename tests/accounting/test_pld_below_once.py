"""The non-dominant direction of pld_epsilon, certified below the dominant one's ε on a coarse
grid (accounting._below), stops at the first composition that certifies it: a second tilt
would only tighten a bound that is not the answer (main composed it twice on the 10-phase
schedule: the first window's error terms were not small at its ε)."""

from __future__ import annotations

from typing import Any

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_schedule_epsilon
from approxdp.accounting.pld import accounting, passes
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.accounting.pld.plan import _plan

Q = 256 / 60000
PHASES = [(2.0 - 0.12 * i, Q if i < 5 else 2 * Q, 1400) for i in range(10)]
# the answer, to 10 digits: the route changes how the other direction is certified, never
# the answer (main 9b2c666 had 3.7164349284378844, 3.713191899388684; since
# grid_steps._planned_start the dominant direction's one pass is tilted at the saddle point's
# estimate: 2.8e-7 tighter; its lower end, on that pass's window, 6.1e-7 higher)
EPS, LOW = 3.7164338703389035, 3.713194168301843


def test_the_other_direction_costs_one_composition(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    calls: list[str] = []
    compose, below = passes.composed, accounting._below
    inside = [False]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append("below" if inside[0] else "other")
        return compose(*args, **kwargs)

    def traced(*args: Any, **kwargs: Any) -> Any:
        inside[0] = True
        try:
            return below(*args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(passes, "composed", counted)
    monkeypatch.setattr(accounting, "_below", traced)
    g = dpsgd_schedule_epsilon(PHASES, delta=1e-5)
    assert g.bracket is not None
    assert float(g.epsilon) == pytest.approx(EPS, rel=1e-10)
    assert float(g.bracket[0]) == pytest.approx(LOW, rel=1e-10)
    assert calls.count("below") == 1
    clear_caches()


def test_a_caller_that_needs_less_still_gets_a_certified_bound() -> None:
    # upper_epsilon(enough=...) returns the first pass's ε where it is at most ``enough``: the
    # same certified bound a caller without ``enough`` may tighten further, never below it
    clear_caches()
    parts = _plan(_events()).add
    full = passes.upper_epsilon(parts, 1e-5, 0.004, 3.5)[1]
    quick = passes.upper_epsilon(parts, 1e-5, 0.004, 3.5, enough=10.0)[1]
    assert full <= quick <= 10.0
    clear_caches()


def _events() -> list[tuple[Any, int]]:
    from approxdp.accounting.dpsgd.bounds import event_of
    from approxdp.accounting.dpsgd.phases import check_phases

    return [(event_of(p, "poisson"), p.steps) for p in check_phases(PHASES)]
