"""Sensitivities derived from bounds, caps and the neighbouring relation; selection thresholds;
query-spec validation (named tables of invalid inputs)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.releases.selection import (
    selection_budget,
    selection_delta,
    selection_probability,
    selection_threshold,
)
from approxdp.releases.sensitivity import query_sensitivity
from approxdp.releases.specs import (
    ContributionBounds,
    Count,
    Histogram,
    LinearQueries,
    LinearQuery,
    Mean,
    Sum,
)

ROW = ContributionBounds()
UNIT = ContributionBounds("user", max_partitions=2, max_rows_per_partition=5)


@pytest.mark.parametrize(
    ("query", "relation", "bounds", "l2", "l1"),
    [
        (Count(), "add-remove", ROW, 1.0, 1.0),
        (Count(), "replace-one", ROW, 0.0, 0.0),  # n is public under bounded DP
        (Count(), "replace-one", UNIT, 4.0, 4.0),  # a unit counts 1..5 rows
        (Count(), "add-remove", UNIT, 5.0, 5.0),
        (Histogram(("a",)), "add-remove", ROW, 1.0, 1.0),  # Zhao et al. Fig. 5: Δ = 1
        (Histogram(("a",), {"a": [1]}), "replace-one", ROW, math.sqrt(2), 2.0),
        (Histogram(("a", "b")), "add-remove", UNIT, 5 * math.sqrt(2), 10.0),
        # sums are scaled by max|bound|: Δ in units of that scale
        (Sum("x", (0, 10)), "add-remove", ROW, 1.0, 1.0),
        (Sum("x", (2, 10)), "replace-one", ROW, 1.0, 1.0),  # NULL may contribute 0: width 10
        (Sum("x", (-4, 4)), "replace-one", ROW, 2.0, 2.0),
        # mean: centred sum (scale 5) and count, jointly
        (Mean("x", (0, 10)), "add-remove", ROW, math.sqrt(2), 2.0),
        (Mean("x", (0, 10)), "replace-one", ROW, math.sqrt(5), 3.0),
        # k counting queries: Δ2 = √k, Δ1 = k (Wu's notes, §2.2)
        (
            LinearQueries(tuple(LinearQuery(where={"a": i}) for i in range(9))),
            "add-remove",
            ROW,
            3.0,
            9.0,
        ),
    ],
)
def test_sensitivity_table(query, relation, bounds, l2, l1) -> None:  # type: ignore[no-untyped-def]
    s = query_sensitivity(query, relation, bounds)
    assert s.l2 == pytest.approx(l2)
    assert s.l1 == pytest.approx(l1)
    assert "Δ2" in s.derivation


def test_replace_one_grouped_takes_the_smaller_bound() -> None:
    q = Sum("x", (-1, 1), ("g",), {"g": ["a"]})
    s = query_sensitivity(q, "replace-one", UNIT)
    # √(2k W²) with W = 2·5 = 10 → √40·... vs 2√(k M²) with M = 5 → 2√50
    assert s.l2 == pytest.approx(min(math.sqrt(2 * 2 * 10**2), 2 * math.sqrt(2 * 25)))


@pytest.mark.parametrize(
    ("make", "error", "needle"),
    [
        (lambda: Sum("x", (5, 1)), InvalidParameterError, "bounds"),
        (lambda: Sum("x", (0, math.inf)), InvalidParameterError, r"bounds\[1\]"),
        (lambda: Mean("x", (math.nan, 1)), InvalidParameterError, r"bounds\[0\]"),
        (lambda: Sum("x", "ab"), ParameterTypeError, "bounds"),
        (lambda: Sum("", (0, 1)), ParameterTypeError, "column"),
        (lambda: Histogram(()), ParameterTypeError, "columns"),
        (lambda: Histogram(("a", "a")), InvalidParameterError, "twice"),
        (lambda: Histogram(("a",), {"b": [1]}), InvalidParameterError, "domain"),
        (lambda: Histogram(("a",), {"a": []}), InvalidParameterError, "domain"),
        (lambda: Histogram(("a",), {"a": [1]}, "ignore"), InvalidParameterError, "outside_domain"),
        (lambda: Sum("x", (0, 1), domain={"a": [1]}), InvalidParameterError, "by"),
        (lambda: ContributionBounds(None, 2, 1), InvalidParameterError, "privacy_unit"),
        (lambda: ContributionBounds("u", 0, 1), InvalidParameterError, "max_partitions"),
        (lambda: ContributionBounds("u", 1, 2.5), ParameterTypeError, "max_rows"),
        (lambda: LinearQueries(()), ParameterTypeError, "queries"),
    ],
)
def test_invalid_specs(make, error, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=needle):
        make()


@pytest.mark.parametrize("k", [1, 2, 10])
@pytest.mark.parametrize("m", [1, 5])
@pytest.mark.parametrize("p_max", [1e-3, 1e-8, 1e-14])
def test_threshold_is_least_and_verified(k: int, m: int, p_max: float) -> None:
    sigma = 3.7
    tau = selection_threshold(sigma, k, m, p_max)
    assert selection_probability(tau, sigma, k, m) <= p_max
    # not wastefully large: 0.1% lower would fail
    assert selection_probability(m + (tau - m) * 0.999, sigma, k, m) > p_max
    # closed form for k = 1
    if k == 1:
        assert tau == pytest.approx(m + sigma * norm.isf(p_max), rel=1e-9)


def test_selection_budget_inverts_selection_delta() -> None:
    for d_t in (1e-3, 1e-7, 1e-12):
        p = selection_budget(d_t, 1e-6)
        assert selection_delta(p, 1e-6) <= d_t * (1 + 1e-12)
        assert selection_delta(p * 1.001, 1e-6) > d_t
