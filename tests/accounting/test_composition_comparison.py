"""The composition rules side by side (accounting/composition/comparison.py): typed results
that ``approxdp compose`` and the browser's Compose page only format (issue 25: comparison
reports live in their domain)."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting import compose_gaussian
from approxdp.accounting.composition.comparison import (
    COMPARED_RULES,
    RuleBound,
    compare_rules,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import (
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)
from approxdp.reports.composition import composition_report, parse_release


def test_gaussian_steps_every_rule_bounds_the_exact_epsilon() -> None:
    bounds = compare_rules([(GaussianEvent(sigma=4.0), 10)], 1e-5)
    assert all(isinstance(b, RuleBound) for b in bounds)
    assert [b.rule for b in bounds] == list(COMPARED_RULES)
    exact = bounds[0]
    truth = compose_gaussian([4.0], counts=[10]).guarantee(delta=1e-5)
    assert exact.kind == "exact" and exact.epsilon == float(truth.epsilon)
    assert exact.ratio_to_best == 1.0
    for bound in bounds[1:]:
        assert bound.kind == "upper bound" and bound.epsilon is not None
        assert bound.epsilon >= exact.epsilon and bound.ratio_to_best == pytest.approx(
            bound.epsilon / exact.epsilon)
        assert bound.per_release_delta is not None and 0 < bound.per_release_delta < 1e-5 / 10


def test_the_report_only_formats_the_typed_results() -> None:
    tokens = ["3xgaussian:2", "laplace:1", "2xdp:0.5:1e-7"]
    releases = [parse_release(t) for t in tokens]
    report = composition_report(releases, 1e-5)
    bounds = compare_rules([(r.event(), r.count) for r in releases], 1e-5)
    assert report["rules"] == [b.as_dict() for b in bounds]
    assert bounds[0].kind == "upper bound"  # mixed steps: the accountant's best rule


def test_rules_subset_and_limits() -> None:
    steps = [(LaplaceEvent(scale=2.0), 3), (EpsilonDeltaEvent(epsilon=0.1, delta=1e-8), 5)]
    basic, = compare_rules(steps, 1e-6, ("basic",))
    assert basic.rule == "basic" and basic.epsilon == pytest.approx(3 * 0.5 + 5 * 0.1)
    none, = compare_rules(steps, 1e-6, ("exact-gaussian",))  # no Gaussian step
    assert none.kind == "n/a" and none.epsilon is None and none.ratio_to_best is None
    infeasible = compare_rules([(EpsilonDeltaEvent(epsilon=1.0, delta=1e-3), 2)], 1e-3)
    assert {b.rule: math.isinf(b.epsilon or 0.0) for b in infeasible}["basic"]


@pytest.mark.parametrize(("steps", "delta", "rules", "error", "match"), [
    ([(GaussianEvent(sigma=1.0), 1)], 0.0, COMPARED_RULES, InvalidParameterError,
     r"delta must be in \(0, 1\), got delta=0"),
    ([], 1e-5, COMPARED_RULES, InvalidParameterError, "at least one step"),
    ([(GaussianEvent(sigma=1.0), 0)], 1e-5, COMPARED_RULES, InvalidParameterError,
     "count must be an integer >= 1"),
    ([(GaussianEvent(sigma=1.0), 1)], 1e-5, ("renyi",), InvalidParameterError,
     "rules must be among"),
    ([(SubsampledEvent(GaussianEvent(sigma=1.0), q=0.1), 1)], 1e-5, COMPARED_RULES,
     ParameterTypeError, "got SubsampledEvent"),
])
def test_bad_inputs_are_typed_errors(steps, delta, rules, error, match) -> None:
    with pytest.raises(error, match=match):
        compare_rules(steps, delta, rules)
