"""Private quantiles and the median (:mod:`approxdp.releases.quantiles`): accuracy on Adult,
honest intervals (empirical coverage), one spend, nothing spent by a failed release, the same
answers on DuckDB and Spark for the same seed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from approxdp import PrivateTable
from approxdp.errors import (
    BudgetExceededError,
    DataError,
    InvalidParameterError,
    ParameterTypeError,
)
from approxdp.mechanisms import is_secure
from approxdp.releases.quantiles import QuantileTree, quantiles_from_tree


def _true_quantile(values: np.ndarray, q: float) -> float:
    """inf{x : #{v ≤ x} ≥ qN}, the quantile the interval is about."""
    v = np.sort(values)
    return float(v[max(math.ceil(q * v.size) - 1, 0)])


def test_adult_median_age_within_one_year_in_95_percent_of_seeded_runs() -> None:
    """The issue's accuracy target: ε = 1, δ = 1e-6, |private − true median| ≤ 1 year in
    ≥ 95 % of 20 seeded runs (measured: 20 of 20, each within 0.1 year)."""
    from approxdp.data import load_adult

    adult = load_adult()
    ages = np.asarray(adult.column("age").to_numpy(), dtype=float)
    true = float(np.median(ages))
    hits = 0
    for seed in range(20):
        t = PrivateTable(adult, budget=(1.0, 1e-6), seed=seed)
        r = t.median("age", (0, 100), epsilon=1.0, delta=1e-6)
        hits += abs(r.value - true) <= 1.0
        assert r.ci_low[0] <= _true_quantile(ages, 0.5) <= r.ci_high[0]
    assert hits >= 19


def _tree_counts(values: np.ndarray, tree: QuantileTree, bounds: tuple[float, float]
                 ) -> list[np.ndarray]:
    low, high = bounds
    width = (high - low) / tree.bins
    leaf = np.minimum(np.floor((np.clip(values, low, high) - low) / width), tree.bins - 1)
    leaves = np.bincount(leaf.astype(int), minlength=tree.bins).astype(float)
    return [leaves.reshape(n, -1).sum(axis=1) for n in tree.levels]


def test_interval_coverage_with_gaussian_noise() -> None:
    """Empirical coverage of the post-processing at level 0.9 over 1000 simulated noisy trees
    (σ = 20 per count on 500 skewed values, a hard case). Coverage is ≥ 0.9 by construction;
    the test asks ≥ 0.87, which a true coverage of 0.9 fails with probability < 0.1 %
    (binomial tail), and the union bound makes the true coverage higher still."""
    rng = np.random.default_rng(1)
    values = rng.gamma(2.0, 10.0, 500)
    tree = QuantileTree(64, 8)
    bounds = (0.0, 100.0)
    counts = _tree_counts(values, tree, bounds)
    qs = (0.1, 0.5, 0.9)
    truth = [_true_quantile(values, q) for q in qs]
    covered = np.zeros(len(qs))
    trials = 1000
    for _ in range(trials):
        noisy = [c + rng.normal(0, 20.0, c.size) for c in counts]
        _, lo, hi = quantiles_from_tree(noisy, [20.0, 20.0], tree, qs, bounds, 0.9,
                                        secure=False)
        covered += (lo <= truth) & (truth <= hi)
    assert stats.binom.cdf(869, trials, 0.9) < 0.001
    assert np.all(covered / trials >= 0.87), covered / trials


def test_interval_coverage_end_to_end() -> None:
    """60 seeded releases on 300 rows at ε = 0.3: the true quantiles lie in every 90 %
    interval at least 51 times (P[Binomial(60, 0.9) < 51] ≈ 4 %: the union bound makes the
    true coverage much higher, measured 60 of 60)."""
    rng = np.random.default_rng(2)
    values = rng.lognormal(3.0, 0.6, 300)
    table = pa.table({"x": values})
    qs = (0.25, 0.5, 0.75)
    truth = np.array([_true_quantile(values, q) for q in qs])
    covered = np.zeros(len(qs))
    for seed in range(60):
        t = PrivateTable(table, budget=(0.3, 1e-6), seed=seed)
        r = t.quantiles("x", qs, (0, 200), epsilon=0.3, delta=1e-6, level=0.9, bins=256,
                        branching=16)
        covered += (r.ci_low <= truth) & (truth <= r.ci_high)
        assert np.all(r.ci_low <= r.values) and np.all(r.values <= r.ci_high)
    assert np.all(covered >= 51), covered


def test_one_spend_for_all_quantiles_and_an_exact_gaussian_event() -> None:
    t = PrivateTable(pa.table({"x": np.arange(1000.0)}), budget=(2.0, 1e-6), seed=0)
    r = t.quantiles("x", [0.1, 0.5, 0.9], (0, 1000), epsilon=1.0, delta=5e-7)
    status = t.remaining()
    assert status.count == 1  # one event: the Gaussian of the whole tree
    assert r.kind == "quantiles" and r.keys == [(0.1,), (0.5,), (0.9,)]
    assert np.all(np.abs(r.values - [99.5, 499.5, 899.5]) < 60)  # rank noise ≈ 40 rows
    assert np.all((r.ci_low <= [99, 499, 899]) & (r.ci_high >= [99, 499, 899]))
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(2))  # two levels, Δ2 = 1 each
    assert "hierarchical histogram" in r.explain()


def test_seeded_output_is_marked_and_secure_output_is_not() -> None:
    data = pa.table({"x": np.linspace(0, 10, 500)})
    seeded = PrivateTable(data, budget=(1.0, 1e-6), seed=3).median(
        "x", (0, 10), epsilon=1.0, delta=1e-6)
    assert not seeded.secure and not is_secure(seeded.values)
    assert "NOT private" in seeded.explain() and "SEEDED" in str(seeded)
    secure = PrivateTable(data, budget=(1.0, 1e-6)).median("x", (0, 10), epsilon=1.0,
                                                           delta=1e-6)
    assert secure.secure
    assert secure.ci_low[0] <= 5.0 <= secure.ci_high[0]


def test_privacy_unit_bounds_contributions() -> None:
    """A unit with many rows counts like one row per level (max_rows_per_partition = 1)."""
    x = np.concatenate([np.full(5000, 90.0), np.linspace(0, 50, 1001)])
    unit = np.concatenate([np.zeros(5000, dtype=int), np.arange(1, 1002)])
    t = PrivateTable(pa.table({"x": x, "u": unit}), budget=(1.0, 1e-6), privacy_unit="u",
                     seed=0)
    r = t.median("x", (0, 100), epsilon=1.0, delta=1e-6)
    assert abs(r.value - 25.0) < 2.0  # without bounding the median would be 90
    assert r.diagnostics.rows["used"] == 1002


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"column": "nope"}, DataError, "not found"),
    ({"column": "s"}, DataError, "must be numeric"),
    ({"column": "empty"}, DataError, "has no value"),
    ({"bounds": (5, 5)}, InvalidParameterError, "low < high"),
    ({"bounds": (-1e308, 1e308)}, InvalidParameterError, "finite width"),
    ({"qs": [0.5, 1.5]}, InvalidParameterError, "qs"),
    ({"qs": []}, ParameterTypeError, "qs"),
    ({"bins": 100}, InvalidParameterError, "power of branching"),
    ({"bins": 100, "bounds": "private"}, InvalidParameterError, "power of branching"),
    ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
    ({"epsilon": 5.0}, BudgetExceededError, r"\w"),
])
def test_failed_releases_spend_nothing(kwargs: dict[str, Any], error: type, match: str) -> None:
    t = PrivateTable(pa.table({"x": [1.0, 2.0, 3.0], "s": ["a", "b", "c"],
                               "empty": pa.array([None, None, None], pa.float64())}),
                     budget=(1.0, 1e-6), seed=0)
    args: dict[str, Any] = {"column": "x", "qs": [0.5], "bounds": (0, 10), "epsilon": 0.5,
                            "delta": 1e-7, "bins": 64, "branching": 8}
    args.update(kwargs)
    column, qs, bounds = args.pop("column"), args.pop("qs"), args.pop("bounds")
    with pytest.raises(error, match=match):
        t.quantiles(column, qs, bounds, **args)
    assert t.remaining().count == 0


def test_release_kind_takes_the_tree_shape_and_checks_it_before_private_bounds() -> None:
    """The registry's inputs carry bins/branching (what the CLI and batch specs fill in): the
    same release as the API's, and a bad shape refused before private bounds spend."""
    from approxdp.releases.kinds import RELEASE_KINDS, KindInputs

    data = pa.table({"x": np.arange(200.0)})
    got = PrivateTable(data, budget=(1.0, 1e-6), seed=3).release_kind(
        "median", KindInputs(("x",), (0.0, 200.0), bins=64, branching=8), epsilon=1.0,
        delta=1e-6)
    want = PrivateTable(data, budget=(1.0, 1e-6), seed=3).median(
        "x", (0.0, 200.0), epsilon=1.0, delta=1e-6, bins=64, branching=8)
    assert got.values.tolist() == want.values.tolist()
    t = PrivateTable(data, budget=(1.0, 1e-6), seed=3)
    with pytest.raises(InvalidParameterError, match="got bins=60"):
        t.release_kind("quantiles", KindInputs(("x",), "private", bins=60, branching=8),
                       epsilon=1.0, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="mean takes no bins or branching"):
        t.release_kind("mean", KindInputs(("x",), (0.0, 1.0), branching=8), epsilon=1.0,
                       delta=1e-6)
    assert t.remaining().count == 0
    assert [k.name for k in RELEASE_KINDS.values() if k.tree] == ["median", "quantiles"]


def test_missing_values_are_skipped_and_the_edges_of_the_bounds_clamp() -> None:
    x = pa.array([None, float("nan"), float("inf"), -float("inf")] + [5.0] * 400)
    r = PrivateTable(pa.table({"x": x}), budget=(1.0, 1e-6), seed=1).median(
        "x", (0, 10), epsilon=1.0, delta=1e-6, bins=64, branching=8)
    assert r.diagnostics.rows["read"] == 402
    assert abs(r.value - 5.0) < 0.5


def test_same_answers_on_duckdb_and_spark(spark_session: Any) -> None:
    rng = np.random.default_rng(5)
    data = pa.table({"x": rng.normal(40, 12, 1000), "u": rng.integers(0, 300, 1000)})
    out = []
    for source in (data, spark_session.createDataFrame(data.to_pandas())):
        t = PrivateTable(source, budget=(1.0, 1e-6), privacy_unit="u", max_partitions=2,
                         max_rows_per_partition=2, seed=42)
        out.append(t.quantiles("x", [0.1, 0.5, 0.9], (0, 100), epsilon=1.0, delta=1e-6,
                               bins=64, branching=8))
    duck, spark = out
    assert spark.diagnostics.rows == duck.diagnostics.rows
    np.testing.assert_array_equal(np.asarray(spark.values), np.asarray(duck.values))
    np.testing.assert_array_equal(np.asarray(spark.ci_low), np.asarray(duck.ci_low))


def test_small_data_quantiles_name_the_tree_that_makes_them_informative() -> None:
    """Issue 23 §4: on 300 values at ε = 0.5 the default tree (1024 leaves, branching 32)
    gives intervals spanning about 40 %, 41 % and 69 % of the bounds (10 seeds; 2 of 10
    releases informative); the note names, from the release's own noisy count, a coarser shape
    that narrows them — 64 leaves, branching 8: about 15 %, 21 %, 28 %; 16 leaves: about 15 %,
    15 %, 22 % — and the release made with the shape it names is informative."""
    import re

    from approxdp.releases.quantiles import suggest_tree

    rng = np.random.default_rng(5)
    small = pa.table({"age": np.clip(rng.normal(40, 12, 300), 0, 100).round()})
    default_ok, named, suggested_ok = 0, 0, 0
    for seed in range(10):
        t = PrivateTable(small, budget=(1.0, 1e-5), seed=1000 + seed)
        r = t.quantiles("age", (0.25, 0.5, 0.75), (0.0, 100.0), epsilon=0.5, delta=1e-6)
        if r.informative is not None and r.informative.all():
            default_ok += 1
            continue
        note = r.notes[-1]
        found = re.search(r"\(bins=(\d+), branching=(\d+) in the API", note)
        assert found is not None, note
        bins, branching = int(found.group(1)), int(found.group(2))
        assert (bins, branching) in ((16, 16), (64, 8)) and ", this tree " in note
        assert f"--bins {bins} --branching {branching} on the command line" in note
        assert f"bins = {bins}, branching = {branching} in a batch query" in note
        named += 1
        better = t.quantiles("age", (0.25, 0.5, 0.75), (0.0, 100.0), epsilon=0.5,
                             delta=1e-6, bins=bins, branching=branching)
        suggested_ok += int(better.informative is not None and better.informative.all())
    assert default_ok <= 3 and named >= 7 and suggested_ok >= named - 1
    tree = suggest_tree(300, 0.5, 1e-6)
    assert (tree.bins, tree.branching) == (64, 8)


def test_the_default_tree_stays_the_choice_for_adult() -> None:
    """On the bundled Adult data (45,222 ages) the default tree is informative, and it is what
    suggest_tree picks for that many values."""
    from approxdp.data import load_adult
    from approxdp.releases.quantiles import suggest_tree

    adult = load_adult()
    t = PrivateTable(adult, budget=(1.0, 1e-5), seed=3)
    r = t.quantiles("age", (0.25, 0.5, 0.75), (0.0, 100.0), epsilon=0.5, delta=1e-6)
    assert r.informative is not None and r.informative.all()
    assert np.all(r.ci_high - r.ci_low < 2.0)  # a leaf is 0.1 wide; ages are integers
    assert not any(n.startswith("not informative") for n in r.notes)
    tree = suggest_tree(adult.num_rows, 0.5, 1e-6)
    assert (tree.bins, tree.branching) == (1024, 32)
