"""Filters, derived columns and public joins on PrivateTable (releases/transformations.py):
they share the parent's accountant, every release kind works on them (the same values on
DuckDB and Spark), contribution bounding holds after them, and the sensitivity changes only
where it must (a filtered count under replace-one)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from approxdp import (
    DataError,
    ExpressionError,
    InvalidParameterError,
    LinearQuery,
    Mean,
    ParameterTypeError,
    PrivacyAccountant,
    PrivateJoinError,
    PrivateTable,
    Sum,
)
from approxdp.releases.sensitivity import query_sensitivity
from approxdp.releases.specs import ContributionBounds, Count


def _shop(n: int = 3000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "customer": rng.integers(0, 400, n),
        "region": rng.choice(["north", "south", "east", "west"], n),
        "price": np.round(rng.gamma(2.0, 20.0, n), 2),
        "quantity": rng.integers(1, 6, n),
        "age": rng.integers(18, 90, n),
    })


def _near(result: Any, truth: float, key: tuple[Any, ...] | None = None) -> bool:
    """Within 5 noise standard deviations of the truth (fails by chance w.p. < 1e-6)."""
    if key is None:
        value, std = float(result.value), float(result.std[0])
    else:
        i = result.keys.index(key)
        value, std = float(result.values[i]), float(result.std[i])
    return abs(value - truth) <= 5 * std + 1e-9


REGIONS = pa.table({"region": ["north", "south", "east", "west"],
                    "country": ["A", "A", "B", "B"], "rate": [0.1, 0.2, 0.15, 0.05]})


def test_transformed_tables_share_the_accountant_and_spend_from_it() -> None:
    t = PrivateTable(_shop(), budget=(1.0, 1e-6), seed=1)
    f = t.filter("age > 30").with_column("revenue", "price * quantity", bounds=(0, 500))
    j = f.join_public(REGIONS, on="region")
    assert f.accountant is t.accountant is j.accountant
    j.mean("revenue", epsilon=0.4, delta=4e-7)
    f.count(epsilon=0.4, delta=4e-7)
    assert t.remaining().count == 2
    assert t.remaining().spent_epsilon > 0.4  # two spends of 0.4 (composed exactly)
    assert t.steps == () and len(j.steps) == 3
    assert "country" in j.columns and "revenue" not in t.columns


def test_filter_gives_the_statistics_of_the_kept_rows() -> None:
    data = _shop()
    t = PrivateTable(data, budget=(1e6, 1e-3), seed=2)  # huge ε: values ≈ exact
    f = t.filter("region = 'north' AND age BETWEEN 30 AND 60")
    mask = pc.and_(pc.equal(data["region"], "north"),
                   pc.and_(pc.greater_equal(data["age"], 30), pc.less_equal(data["age"], 60)))
    kept = data.filter(mask)
    assert _near(f.count(epsilon=1e5, delta=1e-4), kept.num_rows)
    price = np.clip(np.asarray(kept["price"]), 0, 100)
    m = f.mean("price", (0, 100), epsilon=1e5, delta=1e-4)
    assert _near(m, price.mean())
    assert any("filter(\"region = 'north'" in n for n in m.notes)


def test_derived_columns_use_their_declared_bounds() -> None:
    data = _shop()
    t = PrivateTable(data, budget=(1e6, 1e-3), seed=3)
    r = t.with_column("revenue", "price * quantity", bounds=(0, 200))
    revenue = np.asarray(data["price"]) * np.asarray(data["quantity"])
    got = r.sum("revenue", epsilon=1e5, delta=1e-4)
    assert _near(got, np.clip(revenue, 0, 200).sum())
    assert got.sensitivity.l2 == 1.0  # scaled by max |bound| = 200
    explicit = r.sum("revenue", (0, 50), epsilon=1e5, delta=1e-4)  # an explicit bound wins
    assert _near(explicit, np.clip(revenue, 0, 50).sum())
    for call in (lambda: r.median("revenue", epsilon=1.0, delta=1e-6),
                 lambda: r.variance("revenue", epsilon=1.0, delta=1e-6),
                 lambda: r.quantiles("revenue", [0.25, 0.75], epsilon=1.0, delta=1e-6)):
        assert call().values.size >= 1
    with pytest.raises(ParameterTypeError, match=r"mean\('price'\) needs bounds"):
        r.mean("price", epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterTypeError, match="bounds apply to numbers"):
        t.with_column("label", "CASE WHEN age < 30 THEN 'young' ELSE 'older' END",
                      bounds=(0, 1))
    with pytest.raises(InvalidParameterError, match="low <= high"):
        t.with_column("x", "price", bounds=(5, 1))
    with pytest.raises(DataError, match="'price' already exists"):
        t.with_column("Price", "price * 2")


def test_a_derived_category_is_a_histogram_key() -> None:
    data = _shop()
    t = PrivateTable(data, budget=(1e6, 1e-3), seed=4)
    band = t.with_column("band", "CASE WHEN age < 40 THEN 'under 40' ELSE '40+' END")
    h = band.histogram("band", epsilon=1e5, delta=1e-4, domain={"band": ["under 40", "40+"]})
    young = int(np.sum(np.asarray(data["age"]) < 40))
    assert _near(h, young, ("under 40",))
    decade = t.with_column("decade", "CAST(floor(age / 10) * 10 AS BIGINT)")
    assert decade.columns["decade"] == "integer"
    d = decade.histogram("decade", epsilon=1e5, delta=1e-4,
                         domain={"decade": list(range(10, 100, 10))})
    assert _near(d, int(np.sum((np.asarray(data["age"]) // 10) == 3)), (30,))


@pytest.mark.parametrize("unit", [None, "customer"])
def test_a_filter_never_widens_a_units_contribution(unit: str | None) -> None:
    """The sensitivity of every query is the one of the unfiltered table (add/remove), and
    after the filter each unit still contributes at most m rows' worth, each clamped: the
    per-unit bounding runs on the filtered rows. (A filtered sum can exceed the unfiltered
    one: a unit with n > m rows has its sum scaled by m/n, and the filter lowers n.)"""
    caps = {"privacy_unit": unit, "max_partitions": 2, "max_rows_per_partition": 3} if unit \
        else {}
    t = PrivateTable(_shop(), budget=(1e6, 1e-3), seed=5, **caps)  # type: ignore[arg-type]
    f = t.filter("quantity >= 3")
    for q in (Count(), Sum("price", (0, 100)), Mean("price", (0, 100), ("region",))):
        a, b = (query_sensitivity(q, "add-remove", x) for x in (f.bounds, t.bounds))
        assert (a.l2, a.l1, a.linf) == (b.l2, b.l1, b.linf)
    whole = t.count(epsilon=1e5, delta=1e-4)
    part = f.count(epsilon=1e5, delta=1e-4)
    part_rows, whole_rows = part.diagnostics.rows, whole.diagnostics.rows
    assert part_rows["used"] <= whole_rows["used"] and part_rows["read"] < whole_rows["read"]
    if unit:  # each unit still counts at most m = 3 rows, and sums at most 3 × 5
        per_unit = f.release([Count(), Sum("quantity", (0, 5), ("customer",),
                                           {"customer": list(range(400))})],
                             epsilon=1e5, delta=1e-4)[1]
        assert float(np.max(per_unit.values)) <= 15 + 5 * float(per_unit.std[0])
        rows = f.histogram("customer", epsilon=1e5, delta=1e-4,
                           domain={"customer": list(range(400))})
        assert float(np.max(rows.values)) <= 3 + 5 * float(rows.std[0])


def test_a_filtered_count_is_noised_under_replace_one() -> None:
    """Replace-one: an unfiltered count has Δ = 0 (the size is public) and is released exactly;
    after a filter a replaced person can leave or enter it, so Δ = 1 (Δ = m with units)."""
    t = PrivateTable(_shop(), budget=(1.0, 1e-6), neighbouring="replace-one", seed=6)
    assert t.count(epsilon=0.5, delta=5e-7).mechanism == "exact"
    f = t.filter("age > 50")
    r = f.count(epsilon=0.5, delta=5e-7)
    assert r.mechanism == "gaussian" and r.sensitivity.l2 == 1.0
    assert "filtered before bounding" in r.sensitivity.derivation
    joined = t.join_public(REGIONS, on="region")  # an inner join drops rows: a filter
    assert joined.bounds.filtered
    assert not t.join_public(REGIONS, on="region", how="left").bounds.filtered
    assert query_sensitivity(Count(), "replace-one", ContributionBounds(
        "u", 1, 4, filtered=True)).l2 == 4.0
    assert query_sensitivity(Count(), "replace-one", ContributionBounds("u", 1, 4)).l2 == 3.0


def test_join_public_adds_the_lookup_columns() -> None:
    data = _shop()
    t = PrivateTable(data, budget=(1e6, 1e-3), seed=7)
    j = t.join_public(REGIONS, on="region").with_column("tax", "price * rate", bounds=(0, 50))
    by_country = j.histogram("country", epsilon=1e5, delta=1e-4, domain={"country": ["A", "B"]})
    region = np.asarray(data["region"])
    assert _near(by_country, int(np.isin(region, ["north", "south"]).sum()), ("A",))
    rate = {"north": 0.1, "south": 0.2, "east": 0.15, "west": 0.05}
    tax = np.asarray(data["price"]) * np.array([rate[r] for r in region])
    assert _near(j.sum("tax", epsilon=1e5, delta=1e-4), np.clip(tax, 0, 50).sum())
    renamed = pa.table({"name": ["north"], "zone": [1]})
    inner = t.join_public(renamed, on={"region": "name"})
    left = t.join_public(renamed, on={"region": "name"}, how="left")
    n_north = int((region == "north").sum())
    assert _near(inner.count(epsilon=1e5, delta=1e-4), n_north)
    assert _near(left.count(epsilon=1e5, delta=1e-4), len(region))
    assert "name" not in inner.columns and "zone" in inner.columns


def test_repeated_public_keys_are_refused_without_a_privacy_unit() -> None:
    dup = pa.table({"region": ["north", "north", "south"], "store": ["n1", "n2", "s1"]})
    t = PrivateTable(_shop(), budget=(1.0, 1e-6), seed=8)
    with pytest.raises(DataError, match=r"1 key value\(s\) occur on several rows.*'north'"):
        t.join_public(dup, on="region")
    assert t.remaining().count == 0
    # with a unit, the per-unit caps bound the copies: m = 2 rows per cell
    u = PrivateTable(_shop(), budget=(1e6, 1e-3), seed=8, privacy_unit="customer",
                     max_partitions=1, max_rows_per_partition=2)
    j = u.join_public(dup, on="region")
    assert "repeat" in j.steps[-1]
    per_unit = j.histogram("customer", epsilon=1e5, delta=1e-4,
                           domain={"customer": list(range(400))})
    assert float(np.max(per_unit.values)) <= 2 + 5 * float(per_unit.std[0])


def test_joining_two_private_tables_is_refused() -> None:
    a = PrivateTable(_shop(), budget=(1.0, 1e-6))
    b = PrivateTable(_shop(seed=1), budget=(1.0, 1e-6))
    with pytest.raises(PrivateJoinError, match="Joining two private tables is not supported"):
        a.join_public(b, on="customer")
    assert isinstance(PrivateJoinError("x"), TypeError)
    with pytest.raises(DataError, match="cannot be matched"):
        a.join_public(pa.table({"region": [1, 2]}), on="region")
    with pytest.raises(ParameterTypeError, match="on must"):
        a.join_public(REGIONS, on=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "part"), [
    ("age > 1; DROP TABLE t", ";"),
    ("age > 1 -- bypass", " bypass"),
    ("age > 1 /* x */", " x "),
    ("age IN (SELECT customer FROM read_csv('/etc/passwd'))", "age IN (SELECT"),
    ("read_csv('/etc/passwd') IS NULL", "READ_CSV('/etc/passwd')"),
    ("length(getenv('HOME')) > 0", "GETENV('HOME')"),
    ('"age"" > 1 OR ""x" = 1', 'age" > 1 OR "x'),
    ("agee > 1", "agee"),
    ("sum(price) > 10", "SUM(price)"),
    ("region = 'north' OR 1 = (SELECT 1)", "(SELECT 1)"),
])
def test_adversarial_filters_are_typed_errors_and_spend_nothing(text: str, part: str) -> None:
    t = PrivateTable(_shop(), budget=(1.0, 1e-6))
    with pytest.raises(ExpressionError) as info:
        t.filter(text).count(epsilon=0.5, delta=5e-7)
    assert info.value.part.startswith(part) and info.value.expression == text
    assert isinstance(info.value, ValueError)
    assert t.remaining().count == 0


def test_unknown_columns_get_the_closest_name() -> None:
    t = PrivateTable(_shop(), budget=(1.0, 1e-6))
    with pytest.raises(ExpressionError, match=r"column 'quantiy' not found.*did you mean "
                                              r"'quantity'"):
        t.with_column("x", "quantiy * 2")
    with pytest.raises(ExpressionError, match=r"did you mean 'region'.*single quotes"):
        t.filter('"Region" = "north"')


def test_every_release_kind_on_transformed_tables_is_the_same_on_duckdb_and_spark(
    spark_session: Any,
) -> None:
    data = _shop(1500, seed=9)

    def run(engine: str) -> list[Any]:
        # the histogram's partition selection (δ after the first release): a basic share
        acc = PrivacyAccountant(budget=(50.0, 1e-3), basic_share=(0.0, 1e-4))
        t = PrivateTable(data, accountant=acc, seed=11, engine=engine,
                         privacy_unit="customer", max_partitions=2, max_rows_per_partition=2)
        j = (t.filter("age >= 25 AND region <> 'west'")
             .with_column("revenue", "round(price * quantity, 1)", bounds=(0, 400))
             .join_public(REGIONS, on="region")
             .with_column("band", "CASE WHEN age < 50 THEN 'young' ELSE 'old' END"))
        eps, dlt = 1.0, 1e-5
        out = [
            j.count(epsilon=eps, delta=dlt),
            j.sum("revenue", epsilon=eps, delta=dlt),
            j.mean("revenue", epsilon=eps, delta=dlt, by=["country"],
                   domain={"country": ["A", "B"]}),
            # private bounds need enough values per bin: ε = 10 (2 on the bounds) here
            j.mean("revenue", bounds="private", epsilon=10 * eps, delta=dlt),
            j.histogram(["band", "country"], epsilon=eps, delta=dlt),
            j.linear_queries([LinearQuery(), LinearQuery("revenue", (0, 400),
                                                         {"band": "old"})],
                             epsilon=eps, delta=dlt),
            j.quantiles("revenue", [0.1, 0.5, 0.9], epsilon=eps, delta=dlt),
            j.median("price", (0, 200), epsilon=eps, delta=dlt),
            j.variance("revenue", epsilon=eps, delta=dlt),
            j.std("price", (0, 200), epsilon=eps, delta=dlt),
            j.estimate_bounds("revenue", epsilon=10 * eps, delta=dlt),
            *j.release([Sum("quantity", (0, 5), ("band",), {"band": ["young", "old"]}),
                        Mean("rate", (0, 1))], epsilon=eps, delta=dlt),
        ]
        return out

    duck, spark = run("duckdb"), run("spark")
    assert len(duck) == len(spark) == 13
    for a, b in zip(duck, spark, strict=True):
        assert (a.kind, a.keys) == (b.kind, b.keys)
        # the same noise on aggregates equal up to the engines' summation order
        np.testing.assert_allclose(np.asarray(a.values), np.asarray(b.values), rtol=1e-12,
                                   err_msg=a.label)
        assert a.diagnostics.rows == b.diagnostics.rows, a.label
        assert a.notes == b.notes
        assert all(math.isfinite(float(v)) for v in np.asarray(a.values))
