"""The lower bound's tests composed on the upper bound's window and tilt (lower.lower_epsilon's
``like``), moved onto the tests' grid by the rounding's shift: no window planned for them
(main 2877e1a planned one on the exact supports, the most expensive plan of a schedule's ask:
~15-25 % of the 10-phase one). Any window is certified (the composer bounds what it leaves
out at its edges); this one was tighter on 27 of the 34-setting sweep's lower ends (by up to
1.4e-5 relative) and looser on 2 (#7 by 9e-7, #29 by 1e-9)."""

from __future__ import annotations

from typing import Any

import pytest

from approxdp.accounting.pld import accounting, discretized
from approxdp.accounting.pld import compose as compose_mod
from approxdp.accounting.pld.accounting import pld_epsilon
from approxdp.events import GaussianEvent, SubsampledEvent


def _planned(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every window planned, as whether it was for the lower bound's tests."""
    calls: list[bool] = []
    inside = [False]
    real, lower = compose_mod.plan_window, accounting.lower_epsilon

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(inside[0])
        return real(*args, **kwargs)

    def traced(*args: Any, **kwargs: Any) -> Any:
        inside[0] = True
        try:
            return lower(*args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(compose_mod, "plan_window", spy)
    monkeypatch.setattr(accounting, "lower_epsilon", traced)
    return calls


@pytest.mark.parametrize(
    ("sigma", "q", "steps", "delta", "main_low"),
    [(5.0, 1e-5, 1000, 1e-5, 4.139129515672612e-05),  # issue 22's sweep #28
     (1.1, 256 / 60000, 14063, 1e-5, 2.380617786)],  # MNIST (#3)
)
def test_the_tests_reuse_the_upper_bounds_window(
    sigma: float, q: float, steps: int, delta: float, main_low: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    discretized.clear_caches()
    events = [(SubsampledEvent(GaussianEvent(sigma), q), steps)]
    planned = _planned(monkeypatch)
    g = pld_epsilon(events, delta)
    assert g.bracket is not None
    assert planned.count(False) >= 1 and planned.count(True) == 0  # (main: one for the tests)
    assert g.bracket[0] >= main_low * (1.0 - 1e-12)  # (no looser than main's lower end)
    assert g.epsilon <= g.bracket[0] * (1.0 + 1e-3)
    discretized.clear_caches()
