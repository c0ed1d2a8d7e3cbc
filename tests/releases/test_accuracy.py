"""Planning by accuracy (:mod:`approxdp.releases.accuracy`): the least ε whose intervals are
within the targets — releasing at it gives intervals within them, at 1 % less ε wider — and
the accuracy a budget buys; nothing read, nothing spent."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from approxdp import Count, Histogram, LinearQueries, LinearQuery, Mean, PrivateTable, Sum
from approxdp.errors import InvalidParameterError, ParameterTypeError

DATA = pa.table({"g": ["a", "b", "c"] * 200, "x": np.linspace(0, 10, 600)})
QUERIES = [Count(), Histogram(("g",), {"g": ["a", "b", "c"]}), Sum("x", (0, 10)),
           Histogram(("g",)), LinearQueries((LinearQuery(), LinearQuery("x", (0, 5))))]
TARGETS = [40.0, 60.0, 300.0, 60.0, 150.0]


def _half_widths(seed: int | None, epsilon: float) -> np.ndarray:
    t = PrivateTable(DATA, budget=(50.0, 1e-5), seed=seed)
    results = t.release(QUERIES, epsilon=epsilon, delta=1e-6)
    return np.array([float(np.max(r.ci_high - r.ci_low)) / 2 for r in results])


@pytest.mark.parametrize("seed", [3, None], ids=["seeded", "secure"])
def test_released_intervals_meet_the_targets_and_one_percent_less_does_not(
    seed: int | None,
) -> None:
    t = PrivateTable(DATA, budget=(1.0, 1e-6), seed=seed)
    plan = t.plan_for_accuracy(QUERIES, half_width=TARGETS, delta=1e-6)
    assert t.remaining().count == 0  # spends nothing
    got = _half_widths(seed, plan.epsilon)
    assert np.all(got <= TARGETS)
    predicted = np.array([q.half_width for q in plan.queries])
    np.testing.assert_allclose(got[[0, 1, 2, 4]], predicted[[0, 1, 2, 4]], rtol=1e-9)
    wider = _half_widths(seed, plan.epsilon * 0.99)
    assert np.any(wider > TARGETS)
    binding = int(np.argmax(predicted / TARGETS))
    # the least ε: the binding target is met almost exactly (the secure interval scale moves
    # in small steps with σ)
    assert predicted[binding] == pytest.approx(TARGETS[binding], rel=1e-4)


def test_rmse_target_and_the_reverse() -> None:
    t = PrivateTable(DATA, budget=(1.0, 1e-6), seed=1)
    plan = t.plan_for_accuracy([Count(), Sum("x", (0, 10))], rmse=[None, 100.0], delta=1e-6)
    (count, total) = t.release([Count(), Sum("x", (0, 10))], epsilon=plan.epsilon, delta=1e-6)
    assert total.std[0] <= 100.0 and total.std[0] == pytest.approx(100.0, rel=1e-6)
    back = t.accuracy([Count(), Sum("x", (0, 10))], epsilon=plan.epsilon, delta=1e-6)
    assert back.queries[1].rmse == pytest.approx(100.0, rel=1e-6)
    assert back.queries[0].half_width == pytest.approx(
        float(count.ci_high[0] - count.ci_low[0]) / 2, rel=1e-9)
    assert "nothing spent" in back.explain() and "RMSE" in str(plan)


def test_a_mean_is_planned_for_a_stated_count() -> None:
    t = PrivateTable(DATA, budget=(1.0, 1e-6))
    with pytest.raises(ParameterTypeError, match="rows="):
        t.plan_for_accuracy([Mean("x", (0, 10))], half_width=0.5, delta=1e-6)
    plan = t.plan_for_accuracy([Mean("x", (0, 10))], half_width=0.5, delta=1e-6, rows=600)
    assert plan.queries[0].half_width <= 0.5
    more = t.plan_for_accuracy([Mean("x", (0, 10))], half_width=0.5, delta=1e-6, rows=6000)
    assert more.epsilon < plan.epsilon


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({}, InvalidParameterError, "half_width= or rmse="),
    ({"half_width": -1.0}, InvalidParameterError, "half_width"),
    ({"half_width": [1.0]}, InvalidParameterError, "one target per query"),
    ({"half_width": 1e-9}, InvalidParameterError, "no epsilon"),
    ({"half_width": 5.0, "delta": 2.0}, InvalidParameterError, "delta"),
])
def test_bad_targets(kwargs: dict[str, object], error: type, match: str) -> None:
    t = PrivateTable(DATA, budget=(1.0, 1e-6))
    args: dict[str, object] = {"delta": 1e-6, **kwargs}
    with pytest.raises(error, match=match):
        t.plan_for_accuracy([Count(), Sum("x", (0, 1))], **args)  # type: ignore[arg-type]
