"""Engine conformance: every engine must give the same aggregates for the same data.

Parametrized over ``ENGINE_FACTORIES`` so a Spark engine is added by one line. Each test
compares an engine's output with a reference computed in plain NumPy from the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp.engines import (
    AggregateRequest,
    Aggregation,
    ColumnKind,
    Engine,
    Membership,
    PerKeyLimit,
)
from approxdp.engines.duckdb import DuckDBEngine
from approxdp.errors import DataError

ENGINE_FACTORIES: dict[str, Callable[[], Engine]] = {"duckdb": lambda: DuckDBEngine(threads=2)}


@pytest.fixture(params=sorted(ENGINE_FACTORIES))
def engine(request: pytest.FixtureRequest) -> Engine:
    return ENGINE_FACTORIES[request.param]()


def _rows(n: int = 2000, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    v = rng.normal(5, 4, n)
    v[rng.random(n) < 0.05] = np.nan
    return {
        "unit": rng.integers(0, 150, n),
        "g": rng.choice(["a", "b", "c", "d"], n),
        "h": rng.integers(0, 3, n),
        "v": v,
    }


def _table(rows: dict[str, Any]) -> pa.Table:
    return pa.table(rows)


def test_schema_and_count(engine: Engine) -> None:
    t = engine.load(_table(_rows()))
    assert engine.schema(t) == {
        "unit": ColumnKind.NUMERIC,
        "g": ColumnKind.STRING,
        "h": ColumnKind.NUMERIC,
        "v": ColumnKind.NUMERIC,
    }
    assert engine.count_rows(t) == 2000


def test_grouped_count_and_clamped_sum_match_numpy(engine: Engine) -> None:
    rows = _rows()
    t = engine.load(_table(rows))
    req = AggregateRequest(
        ("g", "h"),
        (
            Aggregation("n", "count"),
            Aggregation("s", "sum", "v", 0.0, 6.0, shift=1.0),
            Aggregation("nv", "count", "v"),
            Aggregation("fa", "count", where=(Membership("h", (0, 2)),)),
        ),
    )
    res = engine.aggregate(t, req)
    g, h, v = rows["g"], rows["h"], rows["v"]
    keys = sorted({(a, int(b)) for a, b in zip(g, h, strict=True)})
    assert list(zip(res.keys["g"], res.keys["h"], strict=True)) == keys
    for i, (a, b) in enumerate(keys):
        sel = (g == a) & (h == b)
        ok = sel & ~np.isnan(v)
        assert res.values["n"][i] == sel.sum()
        assert res.values["s"][i] == pytest.approx((np.clip(v[ok], 0, 6) - 1).sum())
        assert res.values["nv"][i] == ok.sum()
        assert res.values["fa"][i] == (sel.sum() if b in (0, 2) else 0)
    assert res.rows_used == 2000


def test_global_aggregate_on_empty_filter_returns_one_row(engine: Engine) -> None:
    t = engine.load(_table(_rows()))
    res = engine.aggregate(
        t, AggregateRequest((), (Aggregation("n", "count"),), keep=(Membership("g", ("zzz",)),))
    )
    assert res.values["n"].tolist() == [0.0]


def test_per_key_limit_caps_groups_and_rows(engine: Engine) -> None:
    rows = _rows(5000)
    t = engine.load(_table(rows))
    k, m = 2, 3
    # per-unit aggregate with the limit applied: group by (unit, g) reveals what each kept
    res = engine.aggregate(
        t,
        AggregateRequest(
            ("unit", "g"), (Aggregation("n", "count"),), sample=PerKeyLimit("unit", k, m, seed=11)
        ),
    )
    units = res.keys["unit"]
    _, per_unit = np.unique(units.astype(int), return_counts=True)
    assert per_unit.max() <= k
    assert res.values["n"].max() <= m
    # each kept (unit, g) pair has exactly min(n, m) rows
    for u, a, n in zip(units, res.keys["g"], res.values["n"], strict=True):
        true_n = int(((rows["unit"] == u) & (rows["g"] == a)).sum())
        assert n == min(true_n, m)
    # every unit keeps min(k, its number of groups) groups
    for u in np.unique(rows["unit"]):
        groups = len(set(rows["g"][rows["unit"] == u]))
        assert int((units == u).sum()) == min(k, groups)


def test_per_key_limit_rescales_sums(engine: Engine) -> None:
    rows = {
        "unit": np.array([1, 1, 1, 1, 2]),
        "g": np.array(["a"] * 5),
        "v": np.array([1.0, 2.0, 3.0, 10.0, 4.0]),
    }
    t = engine.load(_table(rows))
    res = engine.aggregate(
        t,
        AggregateRequest(
            ("g",),
            (Aggregation("s", "sum", "v", 0, 5), Aggregation("n", "count")),
            sample=PerKeyLimit("unit", 1, 2, seed=3),
        ),
    )
    # unit 1: 4 rows, clamped sum 11, scaled by 2/4 → 5.5; unit 2: 4
    assert res.values["s"].tolist() == [pytest.approx(9.5)]
    assert res.values["n"].tolist() == [3.0]
    assert res.rows_used == 3


def test_per_key_limit_is_deterministic_and_order_free(engine: Engine) -> None:
    rows = _rows(3000, seed=4)
    perm = np.random.default_rng(9).permutation(3000)
    shuffled = {c: v[perm] for c, v in rows.items()}
    req = AggregateRequest(
        ("g",),
        (Aggregation("n", "count"), Aggregation("s", "sum", "v", 0, 9)),
        sample=PerKeyLimit("unit", 1, 2, seed=123),
    )
    a = engine.aggregate(engine.load(_table(rows)), req)
    b = engine.aggregate(engine.load(_table(shuffled)), req)
    assert a.values["n"].tolist() == b.values["n"].tolist()
    np.testing.assert_allclose(a.values["s"], b.values["s"], rtol=1e-12)
    other = AggregateRequest(req.by, req.aggregations, sample=PerKeyLimit("unit", 1, 2, seed=7))
    c = engine.aggregate(engine.load(_table(rows)), other)
    assert c.values["n"].tolist() != a.values["n"].tolist()


def test_count_outside(engine: Engine) -> None:
    t = engine.load(_table(_rows()))
    n, examples = engine.count_outside(t, Membership("g", ("a", "b")))
    assert n > 0 and set(examples) <= {"c", "d"}
    assert engine.count_outside(t, Membership("g", ("a", "b", "c", "d"))) == (0, ())


def test_nulls_in_keys_and_membership(engine: Engine) -> None:
    t = engine.load(pa.table({"g": ["a", None, None, "b"], "v": [1.0, 2.0, None, math.inf]}))
    res = engine.aggregate(
        t, AggregateRequest(("g",), (Aggregation("n", "count"), Aggregation("s", "sum", "v", 0, 3)))
    )
    assert res.keys["g"].tolist() == ["a", "b", None]
    assert res.values["n"].tolist() == [1, 1, 2]
    assert res.values["s"].tolist() == [1.0, 3.0, 2.0]  # +inf clamped to 3, NULL skipped
    assert engine.count_outside(t, Membership("g", ("a", "b", None))) == (0, ())


@pytest.mark.parametrize(
    ("request_", "needle"),
    [
        (AggregateRequest(("gg",), (Aggregation("n", "count"),)), "'gg'"),
        (AggregateRequest((), (Aggregation("s", "sum", "g", 0, 1),)), "numeric"),
        (
            AggregateRequest(
                ("g",), (Aggregation("n", "count"),), sample=PerKeyLimit("user", 1, 1, 0)
            ),
            "'user'",
        ),
        (
            AggregateRequest(
                ("g",), (Aggregation("n", "count"),), keep=(Membership("g", ("a", 1)),)
            ),
            r"1 \(int\) does not fit column 'g', which is string",
        ),
        (
            AggregateRequest(
                (), (Aggregation("n", "count", where=(Membership("h", ("0",)),)),)
            ),
            "does not fit column 'h', which is numeric",
        ),
    ],
)
def test_bad_columns_raise_data_error(
    engine: Engine, request_: AggregateRequest, needle: str
) -> None:
    t = engine.load(_table(_rows(50)))
    with pytest.raises(DataError, match=needle):
        engine.aggregate(t, request_)
