"""The registry of release kinds, and statistics from derived columns (quantiles, variance,
bounds) as query specs: in one plan with any other query, one spend, stated shares, the same
answers as their own methods, ``bounds="private"`` for every clamped kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import approxdp as dp
from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError
from approxdp.releases.bounds import PrivateBounds
from approxdp.releases.derived import DerivedQuery
from approxdp.releases.kinds import RELEASE_KINDS, KindInputs, release_kind
from approxdp.releases.quantiles import Median, Quantiles
from approxdp.releases.variance import Std, Variance


def _data(n: int = 3000) -> pa.Table:
    rng = np.random.default_rng(11)
    return pa.table({"age": rng.integers(18, 90, n).astype(float),
                     "sex": rng.choice(["F", "M"], n),
                     "uid": np.arange(n) % 700})


def test_every_kind_builds_its_spec_and_says_what_it_takes() -> None:
    age = KindInputs(columns=("age",), bounds=(0.0, 100.0))
    expected = {"count": KindInputs(), "sum": age, "mean": age,
                "histogram": KindInputs(columns=("sex",)), "median": age,
                "quantiles": KindInputs(("age",), (0.0, 100.0), qs=(0.1, 0.9)),
                "variance": age, "std": age, "bounds": KindInputs(columns=("age",))}
    assert list(RELEASE_KINDS) == list(expected)
    for name, inputs in expected.items():
        kind = RELEASE_KINDS[name]
        spec = kind.build(inputs)
        assert type(spec) is kind.spec, name
        assert kind.problem(inputs) is None
        assert kind.summary and kind.sensitivity and kind.engine
    assert RELEASE_KINDS["median"].build(age).label() == "median(age)"
    assert RELEASE_KINDS["count"].build(KindInputs()).label() == "count"
    problem = RELEASE_KINDS["mean"].problem(KindInputs(columns=("age",)))
    assert (problem.input, problem.problem) == ("bounds", "missing")  # type: ignore[union-attr]
    with pytest.raises(InvalidParameterError, match="count takes no columns"):
        RELEASE_KINDS["count"].build(KindInputs(columns=("age",)))
    with pytest.raises(InvalidParameterError, match="takes no qs"):
        RELEASE_KINDS["median"].build(KindInputs(("age",), (0.0, 1.0), qs=(0.5,)))
    with pytest.raises(InvalidParameterError, match="release_kind"):
        RELEASE_KINDS["mean"].build(KindInputs(columns=("age",), bounds="private"))
    with pytest.raises(InvalidParameterError, match="kind must be one of"):
        release_kind("mode")


@pytest.mark.parametrize("spec", [
    Quantiles("age", (0.25, 0.5), (0.0, 100.0)), Median("age", (0.5,), (0.0, 100.0)),
    Variance("age", (0.0, 100.0)), Std("age", (0.0, 100.0)), PrivateBounds("age"),
])
def test_a_statistic_as_a_spec_is_its_method(spec: DerivedQuery) -> None:
    """``t.release([Quantiles(...)])`` is ``t.quantiles(...)``: same plan, same noise, same
    ledger label."""
    methods: dict[str, Any] = {
        "quantiles": lambda t: t.quantiles("age", [0.25, 0.5], (0, 100), epsilon=1, delta=1e-6),
        "median": lambda t: t.median("age", (0, 100), epsilon=1, delta=1e-6),
        "variance": lambda t: t.variance("age", (0, 100), epsilon=1, delta=1e-6),
        "std": lambda t: t.std("age", (0, 100), epsilon=1, delta=1e-6),
        "bounds": lambda t: t.estimate_bounds("age", epsilon=1, delta=1e-6),
    }
    a = dp.PrivateTable(_data(), budget=(5.0, 1e-5), seed=4)
    b = dp.PrivateTable(_data(), budget=(5.0, 1e-5), seed=4)
    level = 0.95
    (by_spec,) = a.release([spec], epsilon=1.0, delta=1e-6, level=level)
    by_method = methods[spec.kind](b)
    np.testing.assert_array_equal(by_spec.values, by_method.values)
    np.testing.assert_array_equal(by_spec.ci_low, by_method.ci_low)
    assert by_spec.label == by_method.label and by_spec.kind == by_method.kind
    labels = [r.event.label for r in a.accountant.history()]  # type: ignore[attr-defined]
    assert labels == [r.event.label for r in b.accountant.history()]  # type: ignore[attr-defined]


def test_statistics_and_linear_queries_in_one_plan_are_one_spend() -> None:
    t = dp.PrivateTable(_data(), budget=(5.0, 1e-5), seed=2, privacy_unit="uid",
                        max_partitions=2, max_rows_per_partition=5)
    queries = [dp.Count(), Quantiles("age", (0.5,), (0.0, 100.0)),
               dp.Mean("age", (0.0, 100.0), ("sex",), {"sex": ["F", "M"]}),
               Variance("age", (0.0, 100.0)), PrivateBounds("age"), dp.Histogram(("sex",))]
    allocated = t.allocate(t.plan(queries, [1, 2, 1, 1, 1, 1]), epsilon=4.0, delta=1e-6)
    assert allocated.owners == (0, 1, 1, 2, 3, 4, 5)  # the tree's two levels belong to query 1
    assert allocated.shares == (1 / 7, 2 / 7, 1 / 7, 1 / 7, 1 / 7, 1 / 7)
    assert [aq.query.label() for aq in allocated.parts_of(1)] == [
        "quantiles(age) level 1", "quantiles(age) level 2"]
    results = t.execute(allocated)
    assert [r.kind for r in results] == ["count", "quantiles", "mean", "variance", "bounds",
                                         "histogram"]
    history = t.accountant.history()  # type: ignore[attr-defined]
    assert len(history) == 1  # one plan, one spend
    low, high = results[4].values
    assert 0 < low < high <= 110  # (bins under the noise threshold lean the bounds inwards)
    assert 40 < results[1].values[0] < 70 and 0 < results[3].values[0] < 2500


def test_derived_columns_never_clash_with_the_tables() -> None:
    data = _data().append_column("age_tree32", pa.array(np.zeros(3000)))
    data = data.append_column("age_centred", pa.array(np.zeros(3000)))
    t = dp.PrivateTable(data, budget=(5.0, 1e-5), seed=1)
    q, v = t.release([Quantiles("age", (0.5,), (0.0, 100.0)), Variance("age", (0.0, 100.0))],
                     epsilon=1.0, delta=1e-6)
    assert 40 < q.values[0] < 70 and 200 < v.values[0] < 1000


def test_private_bounds_for_every_clamped_statistic() -> None:
    for name in ("median", "variance", "std", "quantiles"):
        t = dp.PrivateTable(_data(), budget=(2.0, 1e-5), seed=5)
        method = getattr(t, name)
        args = ("age", [0.5], "private") if name == "quantiles" else ("age", "private")
        result = method(*args, epsilon=1.0, delta=1e-6, bounds_share=0.25)
        assert t.remaining().count == 2, name  # the bounds, then the statistic
        assert "bounds='private'" in result.notes[-1] and "bounds_share=0.25" in result.notes[-1]
        assert result.extra["bounds"].shape == (2,)
    t = dp.PrivateTable(_data(), budget=(2.0, 1e-5), seed=5)
    via_kind = t.release_kind("median", KindInputs(columns=("age",), bounds="private"),
                              epsilon=1.0, delta=1e-6)
    assert t.remaining().count == 2 and via_kind.label == "median(age)"
    with pytest.raises(ParameterTypeError, match="bounds_share"):
        t.variance("age", (0, 100), epsilon=0.1, delta=1e-7, bounds_share=0.5)
    with pytest.raises(ParameterTypeError, match="takes no bounds_share"):
        t.release_kind("count", KindInputs(), epsilon=0.1, delta=1e-7, bounds_share=0.5)
    with pytest.raises(DataError, match="'agee' not found"):
        t.median("agee", "private", epsilon=0.1, delta=1e-7)
    assert t.remaining().count == 2  # the failures spent nothing


def test_accuracy_planning_refuses_statistics_from_post_processing() -> None:
    t = dp.PrivateTable(_data(), budget=(5.0, 1e-5), seed=1)
    with pytest.raises(InvalidParameterError, match="accuracy planning covers"):
        t.accuracy([dp.Count(), Median("age", (0.5,), (0.0, 100.0))], epsilon=1.0, delta=1e-6)


def test_a_statistic_with_no_value_spends_nothing() -> None:
    data = pa.table({"age": pa.array([None, float("nan")], pa.float64()), "x": [1.0, 2.0]})
    t = dp.PrivateTable(data, budget=(5.0, 1e-5), seed=1)
    with pytest.raises(DataError, match="has no value"):
        t.release([dp.Count(), Median("age", (0.5,), (0.0, 100.0))], epsilon=1.0, delta=1e-6)
    assert t.remaining().count == 0


def test_a_mixed_plan_gives_the_same_answers_on_spark(spark_session: Any) -> None:
    data = _data(1200)
    out = []
    for source in (data, spark_session.createDataFrame(data.to_pandas())):
        t = dp.PrivateTable(source, budget=(5.0, 1e-5), seed=9)
        out.append(t.release([dp.Count(), Quantiles("age", (0.5,), (0.0, 100.0)),
                              Std("age", (0.0, 100.0)), PrivateBounds("age")],
                             epsilon=2.0, delta=1e-6))
    for duck, spark in zip(*out, strict=True):
        np.testing.assert_allclose(duck.values, spark.values, rtol=1e-12)
