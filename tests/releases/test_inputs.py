"""Releases at the edges: bad inputs raise typed errors naming the culprit and spend nothing,
no result field is ever NaN, NaN/NULL keys are values like any other, and every input kind
gives the same answer for the same data and seed (with and without a privacy unit).

Statistical checks use fixed seeds; |mean| < 5/√n and |var − 1| < 6√(2/n) over n
standardised errors fail with probability < 1e-6 each if the noise is as reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import approxdp
from approxdp import (
    Count,
    Histogram,
    LinearQueries,
    LinearQuery,
    Mean,
    PrivacyAccountant,
    PrivateTable,
    ReleaseResult,
    Sum,
)
from approxdp.errors import (
    BudgetExceededError,
    DataError,
    InvalidParameterError,
    ParameterTypeError,
)

BIG = (500.0, 0.5)


def _data(n: int = 600, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "user": rng.integers(0, max(n // 6, 1), n),
            "a": rng.integers(0, 5, n),
            "b": rng.choice(["x", "y"], n),
            "v": np.round(rng.uniform(-2, 12, n), 3),
            "flag": rng.random(n) < 0.5,
        }
    )


def _no_nan(r: ReleaseResult) -> None:
    """Every numeric field of a result is a number (±inf nowhere either)."""
    arrays = [r.values, r.std, r.ci_low, r.ci_high, *r.extra.values()]
    for arr in arrays:
        assert np.all(np.isfinite(arr)), r.label
    for x in (r.sigma, r.effective_sensitivity, r.epsilon, r.delta, r.level,
              r.sensitivity.l1, r.sensitivity.l2, r.sensitivity.linf):
        assert math.isfinite(x), r.label
    assert r.threshold is None or math.isfinite(r.threshold)
    for c in r.comparisons:
        assert (c.sigma is None) == (c.ratio_to_used is None)
        assert c.sigma is None or (math.isfinite(c.sigma) and c.sigma > 0)
    assert "nan" not in r.explain().lower()


Call = Callable[[PrivateTable], Any]

BAD: list[tuple[str, Call, type[Exception], str]] = [
    ("misspelled sum column", lambda t: t.sum("vv", (0, 1), epsilon=1, delta=1e-6),
     DataError, r"'vv'.*did you mean 'v'"),
    ("misspelled group column", lambda t: t.sum("v", (0, 1), by=["bb"], epsilon=1, delta=1e-6),
     DataError, "'bb'"),
    ("misspelled histogram column", lambda t: t.histogram("c", epsilon=1, delta=1e-6),
     DataError, "'c'"),
    ("string mean column", lambda t: t.mean("b", (0, 1), epsilon=1, delta=1e-6),
     DataError, r"mean\(b\): column 'b' must be numeric, but it holds text: 600 value\(s\) "
                r"are not numbers, e.g. \['x', 'y'\].*casts=\{'b': 'double'\}"),
    ("boolean sum column", lambda t: t.sum("flag", (0, 1), epsilon=1, delta=1e-6),
     DataError, "'flag' must be numeric.*boolean"),
    ("linear query on a missing column",
     lambda t: t.linear_queries([LinearQuery(where={"zz": 1})], epsilon=1, delta=1e-6),
     DataError, "'zz'"),
    ("linear query summing strings",
     lambda t: t.linear_queries([LinearQuery("b", (0, 1))], epsilon=1, delta=1e-6),
     DataError, "'b' must be numeric"),
    ("reversed bounds", lambda t: t.sum("v", (3, 1), epsilon=1, delta=1e-6),
     InvalidParameterError, "bounds.*swap"),
    ("infinite bound", lambda t: t.mean("v", (0, math.inf), epsilon=1, delta=1e-6),
     InvalidParameterError, r"bounds\[1\]"),
    ("-infinite bound", lambda t: t.sum("v", (-math.inf, 0), epsilon=1, delta=1e-6),
     InvalidParameterError, r"bounds\[0\]"),
    ("NaN bound", lambda t: t.sum("v", (math.nan, 1), epsilon=1, delta=1e-6),
     InvalidParameterError, r"bounds\[0\]"),
    ("bounds not a pair", lambda t: t.sum("v", 5, epsilon=1, delta=1e-6),  # type: ignore[arg-type]
     ParameterTypeError, "bounds"),
    ("domain misses data", lambda t: t.histogram("b", domain={"b": ["x"]}, epsilon=1, delta=1e-6),
     DataError, "'b' outside the declared domain"),
    ("domain values of the wrong type",
     lambda t: t.histogram("b", domain={"b": [1, 2]}, outside_domain="drop", epsilon=1,
                           delta=1e-6),
     DataError, r"1 \(int\) does not fit column 'b', which is string"),
    ("string domain for a numeric column",
     lambda t: t.sum("v", (0, 1), by=["a"], domain={"a": ["1"]}, outside_domain="drop",
                     epsilon=1, delta=1e-6),
     DataError, r"'1' \(str\) does not fit column 'a', which is numeric"),
    ("linear query condition of the wrong type",
     lambda t: t.linear_queries([LinearQuery(where={"a": "x"})], epsilon=1, delta=1e-6),
     DataError, "'x' .* does not fit column 'a'"),
    ("domain of the wrong columns",
     lambda t: t.histogram("b", domain={"a": [1]}, epsilon=1, delta=1e-6),
     InvalidParameterError, "domain"),
    ("unknown option", lambda t: t.sum("v", (0, 1), epsilon=1, delta=1e-6, bye=["a"]),  # type: ignore[call-arg]
     ParameterTypeError, "bye"),
    ("epsilon 0", lambda t: t.count(epsilon=0, delta=1e-6), InvalidParameterError, "epsilon"),
    ("delta > 1", lambda t: t.count(epsilon=1, delta=1.5), InvalidParameterError, "delta"),
    ("level 1", lambda t: t.count(epsilon=1, delta=1e-6, level=1.0),
     InvalidParameterError, "level"),
    ("weights of the wrong length",
     lambda t: t.release([Count(), Count()], epsilon=1, delta=1e-6, weights=[1.0]),
     InvalidParameterError, "weights"),
    ("budget too small", lambda t: t.count(epsilon=5, delta=1e-6), BudgetExceededError, ""),
    ("second query of a batch fails",
     lambda t: t.release([Count(), Sum("vv", (0, 1))], epsilon=1, delta=1e-6),
     DataError, "'vv'"),
]


@pytest.mark.parametrize("bounded", [False, True], ids=["rows", "units"])
@pytest.mark.parametrize(("what", "call", "error", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_and_spends_nothing(
    what: str, call: Call, error: type[Exception], needle: str, bounded: bool
) -> None:
    unit = {"privacy_unit": "user", "max_partitions": 2, "max_rows_per_partition": 2}
    t = PrivateTable(_data(), budget=(2.0, 1e-5), seed=0, **(unit if bounded else {}))
    t.count(epsilon=0.1, delta=1e-7)
    before = t.accountant.remaining()
    with pytest.raises(error, match=needle or None):
        call(t)
    assert len(t.accountant.history()) == 1 and t.accountant.remaining() == before


def test_missing_privacy_unit_and_empty_tables_spend_nothing() -> None:
    t = PrivateTable(_data(), budget=(1.0, 1e-6), privacy_unit="usr", max_partitions=2)
    with pytest.raises(DataError, match=r"'usr'.*did you mean 'user'"):
        t.count(epsilon=1, delta=1e-6)
    assert t.accountant.history() == ()
    empty = _data().slice(0, 0)
    for kwargs in ({}, {"privacy_unit": "user", "max_partitions": 2}):
        e = PrivateTable(empty, budget=(1.0, 1e-6), **kwargs)  # type: ignore[arg-type]
        with pytest.raises(DataError, match="empty"):
            e.histogram("b", domain={"b": ["x", "y"]}, epsilon=1, delta=1e-6)
        with pytest.raises(DataError, match="empty"):
            e.mean("v", (0, 1), epsilon=1, delta=1e-6)
        assert e.accountant.history() == ()


def test_mean_never_reports_nan_even_when_the_noisy_count_is_not_positive() -> None:
    # 50 rows per cell, two empty cells and a tiny ε: many noisy counts ≤ 0
    data = pa.table({"g": ["p", "q", "r", "s"] * 50, "v": np.linspace(0, 10, 200)})
    t = PrivateTable(data, budget=BIG, seed=11)
    dom = {"g": ["p", "q", "r", "s", "t", "u"]}  # 't', 'u' are empty
    seen_nonpositive = 0
    for _ in range(40):
        r = t.mean("v", (0, 10), by=["g"], domain=dom, epsilon=0.05, delta=1e-6)
        _no_nan(r)
        bad = r.extra["count"] <= 0
        seen_nonpositive += int(bad.sum())
        np.testing.assert_array_equal(r.values[bad], 5.0)  # the midpoint
        np.testing.assert_array_equal(r.std[bad], 5.0)  # (U − L)/2
        assert np.all(r.std <= 5.0)
        np.testing.assert_array_equal(r.ci_low[bad], 0.0)
        np.testing.assert_array_equal(r.ci_high[bad], 10.0)
    assert seen_nonpositive > 20


def test_results_are_nan_free_across_kinds() -> None:
    t = PrivateTable(_data(2000), budget=BIG, seed=3)
    res = t.release(
        [
            Count(),
            Sum("v", (0, 10)),
            Mean("v", (0, 10), ("b",)),  # partition selection
            Histogram(("a",), {"a": list(range(7))}),
            LinearQueries((LinearQuery(where={"a": 1}), LinearQuery("v", (0, 5)))),
        ],
        epsilon=1.0,
        delta=1e-6,
    )
    for r in res:
        _no_nan(r)
    nothing = PrivateTable(pa.table({"k": [f"id{i}" for i in range(50)]}), budget=BIG, seed=0)
    r = nothing.histogram("k", epsilon=1.0, delta=1e-6)  # singletons: nothing selected
    assert r.values.size == 0 and "no cell cleared" in r.explain()
    _no_nan(r)


def test_nan_and_null_keys_are_values() -> None:
    x = [1.0, math.nan, 2.0, None] * 50
    data = pa.table({"x": pa.array(x, pa.float64()), "u": np.arange(200)})
    for unit in ({}, {"privacy_unit": "u"}):
        # partition selection's δ after a first release comes from a basic share
        acc = PrivacyAccountant(budget=BIG, basic_share=(0.0, 0.1))
        t = PrivateTable(data, accountant=acc, seed=0, **unit)  # type: ignore[arg-type]
        dom = {"x": [1.0, 2.0, math.nan, None]}
        r = t.histogram("x", domain=dom, epsilon=50, delta=0.1)
        np.testing.assert_allclose(r.values, 50, atol=6 * r.std[0])
        with pytest.raises(DataError, match=r"outside the declared domain \(e\.g\. \[nan\]"):
            t.histogram("x", domain={"x": [1.0, 2.0, None]}, epsilon=50, delta=0.1)
        sel = t.histogram("x", epsilon=50, delta=0.1)  # partition selection keeps all four
        assert len(sel.keys) == 4 and sel.keys[-1] == (None,)


def _inputs(tmp_path: Path, table: pa.Table) -> dict[str, Any]:
    pq.write_table(table, tmp_path / "t.parquet")
    table.to_pandas().to_csv(tmp_path / "t.csv", index=False)
    con = duckdb.connect()
    con.register("base", table)
    return {
        "arrow": table,
        "pandas": table.to_pandas(),
        "polars": pl.from_arrow(table),
        "parquet": tmp_path / "t.parquet",
        "csv": str(tmp_path / "t.csv"),
        "relation": con.sql("SELECT * FROM base"),
    }


@pytest.mark.parametrize("bounded", [False, True], ids=["rows", "units"])
def test_every_input_kind_gives_the_same_answer(tmp_path: Path, bounded: bool) -> None:
    table = _data(3000, seed=5).drop(["flag"])
    unit = {"privacy_unit": "user", "max_partitions": 2, "max_rows_per_partition": 2}
    queries = [
        Count(),
        Sum("v", (0, 10), ("b",), {"b": ["x", "y"]}),
        Mean("v", (0, 10)),
        Histogram(("a", "b")),  # partition selection
        LinearQueries((LinearQuery(where={"a": [1, 2]}), LinearQuery("v", (0, 5)))),
    ]
    answers = {}
    for kind, source in _inputs(tmp_path, table).items():
        t = PrivateTable(source, budget=BIG, seed=42, **(unit if bounded else {}))
        res = t.release(queries, epsilon=1.0, delta=1e-6)
        answers[kind] = (
            [r.keys for r in res],
            np.concatenate([r.values for r in res]),
            [r.diagnostics.rows for r in res],
        )
    keys, ref, rows = answers.pop("arrow")
    for kind, (k, values, r) in answers.items():
        assert k == keys and r == rows, kind
        np.testing.assert_allclose(values, ref, rtol=1e-9, err_msg=kind)


def test_bounded_release_is_unbiased_with_reported_sigma() -> None:
    # every unit has ≤ 2 cells and ≤ 3 rows per cell, so bounding keeps all rows and the
    # exact answer is the plain aggregate
    rng = np.random.default_rng(8)
    units = np.repeat(np.arange(3000), 4)
    cells = np.where(np.arange(units.size) % 4 < 2, rng.integers(0, 30, units.size // 4)
                     .repeat(4), rng.integers(30, 60, units.size // 4).repeat(4))
    data = pa.table({"u": units, "c": cells, "v": rng.uniform(0, 4, units.size)})
    t = PrivateTable(data, budget=BIG, seed=9, privacy_unit="u", max_partitions=2,
                     max_rows_per_partition=3)
    dom = {"c": list(range(60))}
    df = data.to_pandas()
    n_true = df.groupby("c").size().reindex(range(60), fill_value=0).to_numpy()
    s_true = df.groupby("c").v.sum().reindex(range(60), fill_value=0.0).to_numpy()
    z_n, z_s = [], []
    for _ in range(20):
        h, s = t.release([Histogram(("c",), dom), Sum("v", (0, 4), ("c",), dom)],
                         epsilon=1.0, delta=1e-6)
        assert h.diagnostics.rows["dropped"] == 0
        assert h.sensitivity.l2 == pytest.approx(3 * math.sqrt(2))
        z_n.append((h.values - n_true) / h.std)
        z_s.append((s.values - s_true) / s.std)
    for z in (np.concatenate(z_n), np.concatenate(z_s)):
        assert abs(z.mean()) < 5 / math.sqrt(z.size), z.mean()
        assert abs(z.var() - 1) < 6 * math.sqrt(2 / z.size), z.var()


def test_release_api_is_exported_at_top_level() -> None:
    for name in ("PrivateTable", "Count", "Sum", "Mean", "Histogram", "LinearQueries",
                 "LinearQuery", "ContributionBounds", "ReleaseResult", "ReleasePlan"):
        assert name in approxdp.__all__ and getattr(approxdp, name) is getattr(
            approxdp.releases, name
        )


@pytest.mark.parametrize("module", ["session", "selection"])
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"approxdp.releases.{module}"))
    assert result.attempted > 0 and result.failed == 0


def test_unreadable_files_raise_data_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match=r"cannot read file .*junk\.parquet"):
        PrivateTable(junk, budget=(1.0, 1e-6)).count(epsilon=1, delta=1e-6)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"\xff\xfe\x00bad\n")
    with pytest.raises(DataError, match=r"cannot read file .*latin\.csv"):
        PrivateTable(latin, budget=(1.0, 1e-6)).count(epsilon=1, delta=1e-6)


@pytest.mark.parametrize("outside", ["error", "drop"])
@pytest.mark.parametrize("bounded", [False, True], ids=["rows", "units"])
@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_date_column_domains_fail_before_spending(outside: str, bounded: bool,
                                                  large: bool) -> None:
    """A date column against a domain: date objects are no literal, and string values match in
    SQL but not in Python; either way a typed error before the spend (was: a KeyError, or a
    ParameterTypeError, after the budget was charged)."""
    import datetime

    days = [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)]
    data = pa.table({"d": days * 50, "user": list(range(100))})
    unit = {"privacy_unit": "user", "max_partitions": 1} if bounded else {}
    for values, error in ((days, ParameterTypeError), (["2020-01-01", "2020-01-02"], DataError)):
        t = PrivateTable(data, budget=(2.0, 1e-5), seed=0, large_domain_cells=1 if large else
                         10**6, **unit)  # type: ignore[arg-type]
        try:
            t.histogram("d", domain={"d": values}, outside_domain=outside,  # type: ignore[arg-type]
                        epsilon=1, delta=1e-6)
        except (DataError, ParameterTypeError) as exc:
            assert isinstance(exc, error)
            assert t.accountant.history() == ()
        else:  # only the large path, which matches cells in SQL, answers string dates
            assert large and error is DataError
            assert len(t.accountant.history()) == 1


def test_unusable_output_dir_fails_before_spending(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    t = PrivateTable(pa.table({"a": [1, 2, 3] * 10}), budget=(2.0, 1e-5), seed=0,
                     large_domain_cells=1, output_dir=str(blocker / "out"))
    with pytest.raises(DataError, match="output_dir"):
        t.histogram("a", domain={"a": [1, 2, 3]}, epsilon=1, delta=1e-6)
    assert t.accountant.history() == ()  # was: NotADirectoryError after the charge


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
@pytest.mark.parametrize("bounded", [False, True], ids=["rows", "units"])
def test_group_columns_named_like_measures(large: bool, bounded: bool) -> None:
    """Group columns called "m0" or "q0_m0" (the measures' internal names) gave a KeyError
    ('Field "m0" exists 2 times')."""
    rng = np.random.default_rng(0)
    data = pa.table({"m0": rng.integers(0, 3, 300), "q0_m0": rng.integers(0, 3, 300),
                     "user": rng.integers(0, 30, 300)})
    unit = {"privacy_unit": "user", "max_partitions": 3, "max_rows_per_partition": 300}
    t = PrivateTable(data, budget=(1e9, 0.5), seed=0, large_domain_cells=1 if large else 10**6,
                     **(unit if bounded else {}))  # type: ignore[arg-type]
    for col in ("m0", "q0_m0"):
        r = t.histogram(col, domain={col: [0, 1, 2]}, epsilon=1e8, delta=0.1)
        got = (np.array([row[1] for row in r.table.table.fetchall()]) if large  # type: ignore[union-attr]
               else r.values)
        assert np.round(got).tolist() == np.bincount(data[col].to_numpy()).tolist()


@pytest.mark.parametrize("col", ["value", "__cell", "__rows"])
def test_group_columns_clashing_with_outputs_fail_before_spending(col: str) -> None:
    data = pa.table({col: [0, 1, 2] * 10})
    t = PrivateTable(data, budget=(2.0, 1e-5), seed=0, large_domain_cells=1)
    with pytest.raises(DataError, match=repr(col)):
        t.histogram(col, domain={col: [0, 1, 2]}, epsilon=1, delta=1e-6)
    assert t.accountant.history() == ()  # was: a KeyError or InvalidParameterError after it


def test_domain_with_two_nans_is_rejected() -> None:
    """Two NaN objects pass set() as distinct; the release had two NaN cells, one of them
    always released from a true count of 0."""
    t = PrivateTable(pa.table({"f": [math.nan, 1.0] * 10}), budget=(2.0, 1e-5), seed=0)
    with pytest.raises(InvalidParameterError, match="distinct"):
        t.histogram("f", domain={"f": [float("nan"), 1.0, float("nan")]}, epsilon=1,
                    delta=1e-6)
    assert t.accountant.history() == ()


def test_date_column_against_string_domain_says_to_cast() -> None:
    """Unbounded, outside_domain="error": the check runs on the aggregate's keys, which are
    dates; the error must say why they never match, not only that rows are outside."""
    import datetime

    days = [datetime.date(2020, 1, d) for d in (1, 2, 2, 3)]
    t = PrivateTable(pa.table({"d": days}), budget=(1.0, 1e-6), seed=0)
    with pytest.raises(DataError, match=r"values are date.*cast the column"):
        t.histogram("d", domain={"d": ["2020-01-01", "2020-01-02", "2020-01-03"]},
                    epsilon=0.5, delta=5e-7)
    assert len(t.accountant.history()) == 0  # nothing spent
