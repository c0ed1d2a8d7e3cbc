"""A schedule's passes (issue 22 §2): the lower bound aimed from the upper pass's own
measures (no pessimistic discretization only to aim it), and the ε and δ answers of one
schedule bracketing each other honestly."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_schedule_delta, dpsgd_schedule_epsilon
from approxdp.accounting.pld import discretized
from approxdp.accounting.pld.accounting import _plan
from approxdp.accounting.pld.discretized import quantize
from approxdp.accounting.pld.lower import lower_epsilon
from approxdp.accounting.pld.passes import upper_epsilon
from approxdp.events import GaussianEvent, SubsampledEvent

SCHEDULE = [(2.0 - 0.12 * i, 256 / 60000 if i < 5 else 512 / 60000, 1400) for i in range(10)]


def _parts() -> list[tuple[object, int]]:
    items = [(SubsampledEvent(GaussianEvent(sigma=s), q), t) for s, q, t in SCHEDULE]
    return list(_plan(items).remove)


def test_the_lower_bound_is_aimed_from_the_upper_pass_measures() -> None:
    """Aimed from the pessimistic steps at the upper pass's grid (cached), the tests at twice
    that grid discretize no pessimistic measure of their own, and certify a lower bound below
    the upper one and as tight as when aimed from their own grid's."""
    discretized.clear_caches()
    parts = _parts()
    delta, h = 1e-5, quantize(2.0**-11)
    _, eps = upper_epsilon(parts, delta, h)  # type: ignore[arg-type]
    h2 = quantize(2.0 * h, up=True)
    aimed = lower_epsilon(parts, delta, h2, eps, aim_h=h)  # type: ignore[arg-type]
    assert not any(k[1] == h2 for k in discretized._DISCRETIZED.data)
    own = lower_epsilon(parts, delta, h2, eps)  # type: ignore[arg-type]
    assert any(k[1] == h2 for k in discretized._DISCRETIZED.data)
    assert 0.0 < aimed <= eps and 0.0 < own <= eps
    assert aimed == pytest.approx(own, rel=1e-6)


def test_epsilon_and_delta_of_a_schedule_bracket_each_other() -> None:
    """ε(δ)'s bracket [lo, hi] and δ(ε) at its ends: the true δ at hi is at most δ and at lo
    at least δ, so δ's certified lower bound at hi is ≤ δ and its upper bound at lo ≥ δ."""
    delta = 1e-5
    g = dpsgd_schedule_epsilon(SCHEDULE, delta=delta)
    assert g.bracket is not None
    lo, hi = (float(b) for b in g.bracket)
    assert 0.0 < lo <= hi <= lo * (1 + 1e-3)
    at_hi = dpsgd_schedule_delta(SCHEDULE, epsilon=hi)
    at_lo = dpsgd_schedule_delta(SCHEDULE, epsilon=lo)
    assert at_hi.bracket is not None and at_lo.bracket is not None
    assert float(at_hi.bracket[0]) <= delta <= float(at_lo.delta)


def test_step_tails_are_powers_of_two_so_a_grown_history_reuses_its_steps() -> None:
    """Each step's tail is the history's share rounded down to a power of 2 (never more
    than the share: as certified, a little wider); a run grown by a short phase keeps the
    same step tail, so its earlier phases' discretizations are found in the cache."""
    from approxdp.accounting.pld.discretized import _step_tail

    parts = _parts()
    tail = 1e-4 * 1e-5
    share = tail / sum(c for _, c in parts)
    got = _step_tail(parts, tail)  # type: ignore[arg-type]
    assert share / 2 < got <= share and math.frexp(got)[0] == 0.5
    grown = [*parts, (parts[-1][0], 50)]
    assert _step_tail(grown, tail) == got  # type: ignore[arg-type]
    discretized.clear_caches()
    h = quantize(2.0**-10)
    before = discretized.discretized_all(parts, h, got, False)  # type: ignore[arg-type]
    after = discretized.discretized_all(grown, h, _step_tail(grown, tail), False)  # type: ignore[arg-type]
    assert all(a is b for a, b in zip(before, after, strict=False))
