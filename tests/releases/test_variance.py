"""Private variance and standard deviation (:mod:`approxdp.releases.variance`): the derived
sensitivity, accuracy, honest intervals, one spend, nothing spent by a failed release, the
same answers on DuckDB and Spark."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivateTable
from approxdp.errors import BudgetExceededError, DataError, InvalidParameterError
from approxdp.mechanisms import is_secure


def test_sensitivity_is_derived_for_both_relations() -> None:
    """(u, u², 1) with u ∈ [−1, 1]: Δ2 = m√3 under add/remove, m√5 under replace-one."""
    data = pa.table({"x": np.linspace(0, 10, 200), "u": np.arange(200) // 2})
    r = PrivateTable(data, budget=(1.0, 1e-6), seed=0).variance("x", (0, 10), epsilon=1.0,
                                                                 delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(3))
    r = PrivateTable(data, budget=(1.0, 1e-6), seed=0, neighbouring="replace-one").variance(
        "x", (0, 10), epsilon=1.0, delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(5))
    r = PrivateTable(data, budget=(1.0, 1e-6), seed=0, privacy_unit="u",
                     max_rows_per_partition=2).variance("x", (0, 10), epsilon=1.0, delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(2 * math.sqrt(3))


def test_adult_age_variance_and_std_are_accurate() -> None:
    from approxdp.data import load_adult

    adult = load_adult()
    ages = np.asarray(adult.column("age").to_numpy(), dtype=float)
    t = PrivateTable(adult, budget=(2.0, 1e-6), seed=1)
    v = t.variance("age", (0, 100), epsilon=1.0, delta=5e-7)
    s = t.std("age", (0, 100), epsilon=1.0, delta=5e-7)
    assert abs(v.value - ages.var()) < 3.0 and v.ci_low[0] <= ages.var() <= v.ci_high[0]
    assert abs(s.value - ages.std()) < 0.2 and s.ci_low[0] <= ages.std() <= s.ci_high[0]
    assert t.remaining().count == 2 and v.kind == "variance" and s.kind == "std"
    assert not v.secure and not is_secure(v.values) and "NOT private" in v.explain()


def test_interval_coverage_end_to_end() -> None:
    """100 seeded releases on 200 rows at ε = 0.5, level 0.9: the clamped data's variance lies
    in at least 85 intervals (P[Binomial(100, 0.9) < 85] ≈ 7 %; the box is conservative, and
    the measured coverage is 100 of 100)."""
    rng = np.random.default_rng(3)
    x = rng.normal(4.0, 2.0, 200)
    truth = float(np.clip(x, 0, 10).var())
    table = pa.table({"x": x})
    covered = 0
    for seed in range(100):
        r = PrivateTable(table, budget=(0.5, 1e-6), seed=seed).variance(
            "x", (0, 10), epsilon=0.5, delta=1e-6, level=0.9)
        covered += bool(r.ci_low[0] <= truth <= r.ci_high[0])
        assert 0.0 <= r.ci_low[0] <= r.value <= r.ci_high[0] <= 25.0
    assert covered >= 85


def test_secure_release_is_within_popoviciu_bounds() -> None:
    r = PrivateTable(pa.table({"x": [1.0, 2.0, 3.0]}), budget=(1.0, 1e-6)).std(
        "x", (0, 4), epsilon=1.0, delta=1e-6)
    assert r.secure and 0.0 <= r.ci_low[0] <= r.value <= r.ci_high[0] <= 2.0


@pytest.mark.parametrize(("column", "bounds", "epsilon", "error", "match"), [
    ("nope", (0, 1), 0.5, DataError, "not found"),
    ("s", (0, 1), 0.5, DataError, "must be numeric"),
    ("empty", (0, 1), 0.5, DataError, "has no value"),
    ("x", (1, 1), 0.5, InvalidParameterError, "low < high"),
    ("x", (-1e200, 1e200), 0.5, InvalidParameterError, "finite"),
    ("x", (0, 1), 5.0, BudgetExceededError, r"\w"),
])
def test_failed_releases_spend_nothing(column: str, bounds: Any, epsilon: float, error: type,
                                       match: str) -> None:
    t = PrivateTable(pa.table({"x": [1.0, 2.0], "s": ["a", "b"],
                               "empty": pa.array([None, None], pa.float64())}),
                     budget=(1.0, 1e-6), seed=0)
    with pytest.raises(error, match=match):
        t.variance(column, bounds, epsilon=epsilon, delta=1e-7)
    assert t.remaining().count == 0


def test_same_answers_on_duckdb_and_spark(spark_session: Any) -> None:
    rng = np.random.default_rng(6)
    data = pa.table({"x": rng.normal(40, 12, 2000).round(3), "u": rng.integers(0, 500, 2000)})
    out = []
    for source in (data, spark_session.createDataFrame(data.to_pandas())):
        t = PrivateTable(source, budget=(1.0, 1e-6), privacy_unit="u", max_rows_per_partition=3,
                         seed=9)
        out.append(t.std("x", (0, 100), epsilon=1.0, delta=1e-6))
    duck, spark = out
    assert spark.diagnostics.rows == duck.diagnostics.rows
    assert spark.value == pytest.approx(duck.value, rel=1e-12)
    assert spark.ci_high[0] == pytest.approx(duck.ci_high[0], rel=1e-12)
