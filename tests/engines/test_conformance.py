"""Engine conformance: every engine must give the same aggregates for the same data.

Parametrized over ``ENGINES`` (DuckDB, and Spark in local mode from the session fixture in
``conftest.py``). Each test compares an engine's output with a reference computed in plain
NumPy/Python from the same rows, so the engines agree with each other by transitivity; the
per-key limit is checked against :func:`approxdp.engines.keyed_hash.reference_rank`, and
``test_engines_agree_exactly`` compares DuckDB and Spark directly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp.engines import (
    AggregateRequest,
    Aggregation,
    CellMapRequest,
    ColumnKind,
    Engine,
    Membership,
    PerKeyLimit,
)
from approxdp.engines.duckdb import DuckDBEngine
from approxdp.engines.keyed_hash import HashInput, reference_rank
from approxdp.errors import DataError, InvalidParameterError

ENGINES = ("duckdb", "spark")


def _make(name: str, request: pytest.FixtureRequest) -> Engine:
    if name == "duckdb":
        return DuckDBEngine(threads=2)
    from approxdp.engines.spark import SparkEngine

    return SparkEngine(request.getfixturevalue("spark_session"))


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    return _make(request.param, request)


@pytest.fixture
def both(request: pytest.FixtureRequest) -> tuple[Engine, Engine]:
    return _make("duckdb", request), _make("spark", request)


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


# -- the per-key limit, against the engine-independent keyed hash ---------------------------
def _limited_reference(
    units: list[Any], groups: list[tuple[Any, ...]], values: np.ndarray,
    kinds: tuple[HashInput, ...], unit_kind: HashInput, k: int, m: int, seed: int,
) -> dict[tuple[Any, ...], tuple[float, float, int]]:
    """(count, clamped sum, rows) per group after keeping each unit's k smallest-rank groups."""
    pairs: dict[tuple[Any, tuple[Any, ...]], list[int]] = defaultdict(list)
    for i, (u, g) in enumerate(zip(units, groups, strict=True)):
        pairs[(u, g)].append(i)
    per_unit: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
    for u, g in pairs:
        per_unit[u].append(g)
    out: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for u, gs in per_unit.items():
        def key(g: tuple[Any, ...], u: Any = u) -> tuple[Any, ...]:
            rank = reference_rank(seed, list(zip(g, kinds, strict=True)), (u, unit_kind))
            return (rank, *((v is None, v if v is not None else 0) for v in g))

        for g in sorted(gs, key=key)[:k]:
            idx = pairs[(u, g)]
            n = len(idx)
            v = values[idx]
            part = np.clip(v[~np.isnan(v)], 0, 9).sum()
            scale = min(1.0, m / n)
            acc = out[g]
            acc[0] += min(n, m)
            acc[1] += part * scale
            acc[2] += min(n, m)
    return {g: (a[0], a[1], int(a[2])) for g, a in out.items()}


@pytest.mark.parametrize("unit_kind", ["integer", "text"])
@pytest.mark.parametrize("seed", [0, 2**62 + 12345])
def test_per_key_limit_keeps_the_groups_of_the_keyed_hash(
    engine: Engine, unit_kind: HashInput, seed: int
) -> None:
    rng = np.random.default_rng(seed % 1000)
    n = 1500
    raw_units = rng.integers(-40, 40, n)
    units: list[Any] = [int(u) if unit_kind == "integer" else f"user-{u}" for u in raw_units]
    units[::97] = [None] * len(units[::97])  # a NULL unit is one more unit
    g: list[Any] = list(rng.choice(["a", "b", "c", "é", "d d"], n))
    g[::31] = [None] * len(g[::31])
    h = rng.integers(-2, 3, n).tolist()
    v = rng.normal(4, 3, n)
    v[::13] = np.nan
    t = pa.table({"unit": units, "g": g, "h": h, "v": v})
    k, m = 2, 3
    res = engine.aggregate(
        engine.load(t),
        AggregateRequest(
            ("g", "h"),
            (Aggregation("n", "count"), Aggregation("s", "sum", "v", 0, 9)),
            sample=PerKeyLimit("unit", k, m, seed),
        ),
    )
    want = _limited_reference(units, list(zip(g, h, strict=True)), v, ("text", "integer"),
                              unit_kind, k, m, seed)
    got = {
        (a, b): (c, s)
        for a, b, c, s in zip(res.keys["g"], res.keys["h"], res.values["n"], res.values["s"],
                              strict=True)
    }
    assert set(got) == set(want)
    for key, (c, s, _rows) in want.items():
        assert got[key][0] == c
        assert got[key][1] == pytest.approx(s, rel=1e-12, abs=1e-9)
    assert res.rows_used == sum(r for _, _, r in want.values())


def test_engines_agree_exactly(both: tuple[Engine, Engine]) -> None:
    duck, spark = both
    rows = _rows(4000, seed=5)
    t = _table(rows)
    requests = [
        AggregateRequest(("g", "h"), (Aggregation("n", "count"),
                                      Aggregation("s", "sum", "v", -1, 8, shift=3.5))),
        AggregateRequest(("g",), (Aggregation("n", "count"), Aggregation("nv", "count", "v")),
                         keep=(Membership("h", (0, 2)),), sample=PerKeyLimit("unit", 1, 4, 77)),
        AggregateRequest(("h", "g"), (Aggregation("s", "sum", "v", 0, 10),),
                         sample=PerKeyLimit("unit", 3, 1, 2**63 - 1)),
        AggregateRequest((), (Aggregation("n", "count"),), sample=PerKeyLimit("unit", 1, 2, 5)),
    ]
    dt, st = duck.load(t), spark.load(t)
    for req in requests:
        a, b = duck.aggregate(dt, req), spark.aggregate(st, req)
        for c in req.by:
            assert a.keys[c].tolist() == b.keys[c].tolist()
        for name in a.values:
            np.testing.assert_allclose(a.values[name], b.values[name], rtol=1e-12, atol=1e-9)
        assert a.group_rows.tolist() == b.group_rows.tolist()
        assert a.rows_used == b.rows_used


@pytest.mark.parametrize("name", ["__unit", "__rank", "__n", "__v0", "__hin0", "__cell"])
def test_reserved_column_names_raise_before_any_work(engine: Engine, name: str) -> None:
    t = engine.load(pa.table({name: [1, 2, 2], "u": [1, 2, 3], "x": [1.0, 2.0, 3.0]}))
    as_group = AggregateRequest((name,), (Aggregation("n", "count"),))
    as_unit = AggregateRequest((), (Aggregation("n", "count"),),
                               sample=PerKeyLimit(name, 1, 1, seed=3))
    for request in (as_group, as_unit):
        with pytest.raises(DataError, match=rf"'{name}'.*reserved"):
            engine.aggregate(t, request)
    named_like_sum = AggregateRequest(("n",), (Aggregation("n", "count"),))
    t2 = engine.load(pa.table({"n": [1, 2]}))
    with pytest.raises(DataError, match="group column 'n' has the name"):
        engine.aggregate(t2, named_like_sum)


def test_count_outside_rejects_values_of_the_wrong_type(engine: Engine) -> None:
    t = engine.load(pa.table({"g": ["a", "b"], "x": [1, 2]}))
    with pytest.raises(DataError, match=r"domain value 1 \(int\) does not fit column 'g'"):
        engine.count_outside(t, Membership("g", ("a", 1)))
    with pytest.raises(DataError, match=r"domain value 'a' \(str\) does not fit column 'x'"):
        engine.count_outside(t, Membership("x", (1, "a")))
    with pytest.raises(DataError, match="column 'nope' not found"):
        engine.count_outside(t, Membership("nope", ("a",)))


def test_count_outside_counts_nulls_unless_listed(engine: Engine) -> None:
    t = engine.load(pa.table({"g": ["a", None, "b", None, "c"]}))
    assert engine.count_outside(t, Membership("g", ("a", "b"))) == (3, ("c", None))
    assert engine.count_outside(t, Membership("g", ("a", "b", None))) == (1, ("c",))


def test_long_membership_lists_filter_like_short_ones(engine: Engine) -> None:
    rows = _rows(3000, seed=8)
    t = engine.load(_table(rows))
    many = tuple(range(-2500, 2500, 2))  # 2500 values: the semi-join path
    req = AggregateRequest(("g",), (Aggregation("n", "count"),), keep=(Membership("unit", many),))
    res = engine.aggregate(t, req)
    even = rows["unit"] % 2 == 0
    for a, n in zip(res.keys["g"], res.values["n"], strict=True):
        assert n == int((even & (rows["g"] == a)).sum())
    n_out, examples = engine.count_outside(t, Membership("unit", many))
    assert n_out == int((~even).sum())
    assert all(int(e) % 2 == 1 for e in examples)


# -- cells of a grid ----------------------------------------------------------------------------
class _Tag:
    """A deterministic, picklable cell function: out = 1000·cell + n, and s doubled."""

    def __call__(self, batch: Any) -> Any:
        cell = batch.column("__cell").to_numpy()
        n = batch.column("n").to_numpy()
        s = batch.column("s").to_numpy()
        return pa.RecordBatch.from_arrays(
            [pa.array(1000.0 * cell + n), pa.array(2.0 * s)], names=["out", "twice"]
        )


@pytest.mark.parametrize("to_path", [False, True])
def test_map_cells_covers_every_cell_once(engine: Engine, tmp_path: Path, to_path: bool) -> None:
    rows = _rows(2000, seed=3)
    t = engine.load(_table(rows))
    g_values = ("d", "a", "zz", None)  # 'zz' and None: cells no row reaches
    h_values = (0, 1, 2, 7)
    req = CellMapRequest(
        AggregateRequest(
            ("g", "h"), (Aggregation("n", "count"), Aggregation("s", "sum", "v", 0, 6)),
            keep=(Membership("g", g_values), Membership("h", h_values)),
        ),
        grid=(("g", g_values), ("h", h_values)),
        function=_Tag(),
        outputs=("out", "twice"),
        path=str(tmp_path / "cells") if to_path else None,
    )
    res = engine.map_cells(t, req)
    assert res.n_cells == 16
    table = res.to_arrow()
    assert table.column_names == ["g", "h", "out", "twice"]
    got = {(r["g"], r["h"]): (r["out"], r["twice"]) for r in table.to_pylist()}
    assert len(got) == table.num_rows == 16
    g, h, v = rows["g"], rows["h"], rows["v"]
    used = 0
    for i, gv in enumerate(g_values):
        for j, hv in enumerate(h_values):
            sel = (g == gv) & (h == hv)
            used += int(sel.sum())
            ok = sel & ~np.isnan(v)
            out, twice = got[(gv, hv)]
            assert out == 1000.0 * (4 * i + j) + sel.sum()
            assert twice == pytest.approx(2 * np.clip(v[ok], 0, 6).sum())
    assert res.rows_used == used
    if to_path:
        assert res.path == str(tmp_path / "cells") and Path(res.path).exists()
        with pytest.raises(DataError, match="already exists"):
            engine.map_cells(t, req)


def test_map_cells_with_per_key_limit_matches_aggregate(engine: Engine) -> None:
    rows = _rows(3000, seed=6)
    t = engine.load(_table(rows))
    agg = AggregateRequest(("g",), (Aggregation("n", "count"), Aggregation("s", "sum", "v", 0, 9)),
                           sample=PerKeyLimit("unit", 1, 2, 99))
    direct = engine.aggregate(t, agg)
    res = engine.map_cells(t, CellMapRequest(agg, (("g", ("a", "b", "c", "d")),), _Tag(),
                                             ("out", "twice")))
    got = {r["g"]: r for r in res.to_arrow().to_pylist()}
    for i, (a, n, s) in enumerate(zip(direct.keys["g"], direct.values["n"], direct.values["s"],
                                      strict=True)):
        assert got[a]["out"] == 1000.0 * i + n
        assert got[a]["twice"] == pytest.approx(2 * s, rel=1e-12)
    assert res.rows_used == direct.rows_used


def test_special_float_keys_rank_like_the_reference(engine: Engine) -> None:
    """Float group and unit values -0.0, NaN and ±inf: DuckDB hashed "-0.0" for a -0.0 group
    (Spark's GROUP BY prints 0.0) and Spark hashed "NaN"/"Infinity" (DuckDB and Python: "nan",
    "inf"), so the engines kept different groups; the reference hashes -0.0 as 0.0."""
    g_values = [-0.0, 1.0, math.nan, math.inf, -math.inf, 2.5]
    u_values = [-0.0, 1.0, math.nan, math.inf, 3.0]
    rows = [(u, g) for u in u_values for g in g_values]
    table = pa.table({"u": pa.array([r[0] for r in rows], pa.float64()),
                      "g": pa.array([r[1] for r in rows], pa.float64())})
    for seed in range(4):
        res = engine.aggregate(engine.load(table), AggregateRequest(
            ("g",), (Aggregation("n", "count"),), sample=PerKeyLimit("u", 2, 9, seed=seed)))
        want: dict[Any, int] = defaultdict(int)
        for u in u_values:
            ranked = sorted(g_values, key=lambda g, u=u: reference_rank(  # type: ignore[misc]
                seed, [(g, "text")], (u, "text")))
            for g in ranked[:2]:
                want["nan" if math.isnan(g) else g] += 1
        got = {("nan" if math.isnan(k) else k): int(n)
               for k, n in zip(res.keys["g"], res.values["n"], strict=True)}
        assert got == dict(want)


def test_unconvertible_values_are_counted_and_cast_to_null(engine: Engine) -> None:
    """Text values that are not numbers: counted with examples, then NULL after the cast (the
    other values converted, the other columns untouched); numeric columns have none."""
    t = engine.load(pa.table({
        "s": ["1.5", "oops", None, "2", "n/a", "oops", "-3e2"],
        "k": ["a", "b", "c", "d", "e", "f", "g"],
        "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    }))
    assert engine.count_unconvertible(t, "s") == (3, ("n/a", "oops"))
    assert engine.count_unconvertible(t, "s", limit=1) == (3, ("n/a",))
    assert engine.count_unconvertible(t, "v") == (0, ())
    cast = engine.cast_to_double(t, "s")
    assert engine.schema(cast) == {"s": ColumnKind.NUMERIC, "k": ColumnKind.STRING,
                                   "v": ColumnKind.NUMERIC}
    res = engine.aggregate(cast, AggregateRequest(("k",), (Aggregation("x", "sum", "s"),
                                                           Aggregation("n", "count", "s"))))
    got = dict(zip(res.keys["k"].tolist(), res.values["x"].tolist(), strict=True))
    assert got == {"a": 1.5, "b": 0.0, "c": 0.0, "d": 2.0, "e": 0.0, "f": 0.0, "g": -300.0}
    assert res.values["n"].sum() == 3
    assert engine.count_rows(cast) == 7
    with pytest.raises(DataError, match="'zz' not found"):
        engine.count_unconvertible(t, "zz")
    with pytest.raises(DataError, match="'zz' not found"):
        engine.cast_to_double(t, "zz")


def test_derived_bins_match_numpy_and_drop_missing_values(engine: Engine) -> None:
    """Leaves floor((clamp(x) − low)/width) capped at n_bins − 1, coarser levels leaf // d;
    NULL and NaN rows dropped, ±inf clamped; the same on every engine."""
    from approxdp.releases.quantiles import bin_derivation

    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(5, 4, 500), [np.nan, np.inf, -np.inf, 0.0, 10.0, 2.5]])
    t = engine.load(pa.table({"x": pa.array([*x.tolist(), None], pa.float64()),
                              "k": np.arange(x.size + 1)}))
    binned = engine.derive(t, bin_derivation("x", 0.0, 10.0, 64, (("fine", 1), ("coarse", 8))))
    res = engine.aggregate(binned, AggregateRequest(("coarse", "fine"),
                                                    (Aggregation("n", "count"),)))
    kept = x[~np.isnan(x)]
    leaf = np.minimum(np.floor((np.clip(kept, 0.0, 10.0) - 0.0) / (10.0 / 64)), 63)
    want: dict[tuple[int, int], int] = defaultdict(int)
    for v in leaf.astype(int):
        want[(v // 8, v)] += 1
    got = {(int(c), int(f)): int(n) for c, f, n in
           zip(res.keys["coarse"], res.keys["fine"], res.values["n"], strict=True)}
    assert got == dict(want)
    assert engine.count_rows(binned) == kept.size
    with pytest.raises(DataError, match="'zz' not found"):
        engine.derive(t, bin_derivation("zz", 0.0, 1.0, 2, (("b", 1),)))
    with pytest.raises(DataError, match="already exists"):
        engine.derive(t, bin_derivation("x", 0.0, 1.0, 2, (("k", 1),)))


def _centred_powers(column: str, low: float, high: float, centre: float, name: str,
                    square: str) -> Any:
    from approxdp.engines import derivation as ex

    d = ex.subtract(ex.clamp(ex.value(), low, high), ex.number(centre))
    return ex.Derivation(column, ((name, d), (square, ex.multiply(d, d))))


def test_derived_centred_powers_match_numpy(engine: Engine) -> None:
    """d = clamp(x) − c and d·d; NULL and NaN rows dropped, ±inf clamped."""
    x = [1.5, None, float("nan"), float("inf"), -float("inf"), 7.25, -3.0]
    t = engine.load(pa.table({"x": pa.array(x, pa.float64()), "k": list(range(len(x)))}))
    derived = engine.derive(t, _centred_powers("x", 0.0, 10.0, 5.0, "d", "d2"))
    res = engine.aggregate(derived, AggregateRequest(("k",), (
        Aggregation("s", "sum", "d"), Aggregation("q", "sum", "d2"))))
    got = {int(k): (s, q) for k, s, q in
           zip(res.keys["k"], res.values["s"], res.values["q"], strict=True)}
    assert got == {0: (-3.5, 12.25), 3: (5.0, 25.0), 4: (-5.0, 25.0), 5: (2.25, 5.0625),
                   6: (-5.0, 25.0)}
    with pytest.raises(DataError, match="already exists"):
        engine.derive(t, _centred_powers("x", 0.0, 1.0, 0.5, "k", "d2"))


# -- row transformations: filters, derived columns, lookup joins ----------------------------
# Every construct of the expression language (approxdp.engines.expressions) on edge values
# (NULL, NaN, ±inf, −0.0, 0, large integers, text with quotes, backslashes and non-ASCII
# characters): the engines must give the same value on every row, and the listed references.
_EDGE = {
    "id": list(range(18)),
    "i": [3, -7, 0, None, 1, 2, 2**62, -1, 10, 5, -3, 7, 1, 0, 4, 6, 8, 9],
    "f": [0.5, -2.5, 0.0, float("nan"), float("inf"), float("-inf"), -0.0, 0.285, 1e300,
          None, 2.5, -0.5, 1.005, 1e-300, 3.0, -1e300, 123.456, 7.0],
    "s": ["Female", "male", "", "a_b", "a%b", "it's", "back\\slash", "ünï", "😀", " pad ",
          None, "12", " 3.5 ", "1e3", "abc", "-7.9", "x' OR '1'='1", "a!b"],
    "b": [True, False, None, True, False, True, None, False, True, True, False, None, True,
          False, True, False, True, False],
}
_VALUES = [
    "i + f", "i - 1", "i * 2", "f / i", "i / 0", "i % 3", "f % 2", "-f", "-i", "power(f, 2)",
    "f ** 0.5", "abs(i)", "abs(f)", "sqrt(f)", "exp(f / 100)", "ln(f)", "log10(f)", "floor(f)",
    "ceil(f)", "round(f)", "round(f, 2)", "round(f, -1)", "CAST(f AS BIGINT)",
    "CAST(s AS DOUBLE)", "CAST(s AS BIGINT)", "CAST(i AS VARCHAR)", "CAST(b AS VARCHAR)",
    "CAST(b AS BIGINT)", "CAST(b AS DOUBLE)", "CAST(i AS DOUBLE)", "greatest(i, f)",
    "least(i, 0)", "coalesce(f, -1)", "nullif(i, 0)",
    "CASE WHEN f < 0 THEN 'neg' WHEN f >= 0 THEN 'pos' ELSE 'other' END",
    "CASE s WHEN 'Female' THEN 1 WHEN 'male' THEN 2 END", "if(b, i, -i)", "lower(s)",
    "upper(s)", "length(s)", "trim(s)", "substring(s, 2, 3)", "substring(s, -2)",
    "substr(s, 1)", "replace(s, 'a', 'A')", "s || '-' || CAST(i AS VARCHAR)",
    "i > 0", "f >= 0.5", "s = 'Female'", "s <> 'Female'", "s LIKE 'a%'", "s LIKE '%\\%'",
    "s LIKE 'a!_b' ESCAPE '!'", "s LIKE 'a!b'", "s ILIKE 'FE%'", "s NOT LIKE '%a%'",
    "i IN (1, 2, -3)", "i NOT IN (1, NULL)", "f BETWEEN 0 AND 1", "i IS NULL", "b IS TRUE",
    "b IS NOT FALSE", "f IS DISTINCT FROM 0.5", "starts_with(s, 'a')", "b AND i > 0",
    "b OR NOT b", "f = f", "f > 1e308", "s = 'x'' OR ''1''=''1'", "s = 'back\\slash'",
    "s < 'b'", "s = 'ünï'", "s = '😀'",
]
_NAN = float("nan")


def _sql_round(x: float, d: int = 0) -> float:
    p = 10.0**d
    return math.copysign(math.floor(abs(x) * p + 0.5) / p, x) if math.isfinite(x) else x


def _ln(x: float | None) -> float | None:
    if x is None or math.isnan(x):
        return x
    return math.log(x) if x > 0 else None


_REFERENCE: dict[str, Any] = {  # a Python value per row (None: NULL), where one is written
    "f / i": lambda r: None if None in (r["f"], r["i"]) or r["i"] == 0 else r["f"] / r["i"],
    "i / 0": lambda r: None,
    "i % 3": lambda r: None if r["i"] is None else math.fmod(r["i"], 3),
    "ln(f)": lambda r: _ln(r["f"]),
    "floor(f)": lambda r: None if r["f"] is None else (
        float(math.floor(r["f"])) if math.isfinite(r["f"]) else r["f"]),
    "round(f, 2)": lambda r: None if r["f"] is None else _sql_round(r["f"], 2),
    "round(f)": lambda r: None if r["f"] is None else _sql_round(r["f"]),
    "CAST(f AS BIGINT)": lambda r: None if r["f"] is None or not math.isfinite(r["f"])
    or abs(r["f"]) >= 2**63 else int(r["f"]),
    "CAST(s AS BIGINT)": lambda r: {"12": 12, " 3.5 ": 3, "1e3": 1000, "-7.9": -7}.get(r["s"]),
    "s = 'x'' OR ''1''=''1'": lambda r: None if r["s"] is None else r["s"] == "x' OR '1'='1",
    "s = 'back\\slash'": lambda r: None if r["s"] is None else r["s"] == "back\\slash",
    "s LIKE 'a!b'": lambda r: None if r["s"] is None else r["s"] == "a!b",
    "s LIKE '%\\%'": lambda r: None if r["s"] is None else "\\" in r["s"],
    "f > 1e308": lambda r: None if r["f"] is None else (math.isnan(r["f"]) or r["f"] > 1e308),
}


def _edge_table() -> pa.Table:
    return pa.table({**_EDGE, "i": pa.array(_EDGE["i"], pa.int64()),
                     "f": pa.array(_EDGE["f"], pa.float64()),
                     "d": pa.array([None, 1, 2] * 6, pa.date32())})


def _derive_all(engine: Engine, exprs: list[str]) -> dict[str, list[Any]]:
    """Each expression as a derived column, read back per id through one grouped count."""
    from approxdp.engines.expressions import parse_expression

    t = engine.load(_edge_table())
    types = engine.column_types(t)
    names = [f"e{j}" for j in range(len(exprs))]
    for name, text in zip(names, exprs, strict=True):
        t = engine.with_expression(t, name, parse_expression(text, types))
    res = engine.aggregate(t, AggregateRequest(("id", *names), (Aggregation("n", "count"),)))
    order = np.argsort(res.keys["id"].astype(int))
    assert res.keys["id"][order].tolist() == _EDGE["id"]
    return {text: res.keys[name][order].tolist() for name, text in zip(names, exprs, strict=True)}


#: Computed by each engine's maths library (glibc's, Java's): equal to within a few units in
#: the last place, not always exactly. Everything else must be exactly equal.
_TRANSCENDENTAL = ("exp(", "ln(", "log10(", "power(", "**")


def _same(a: Any, b: Any, rel: float = 0.0) -> bool:
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=rel)
    return type(a) is type(b) and a == b


def test_derived_columns_give_the_same_value_on_every_engine(
    both: tuple[Engine, Engine]
) -> None:
    duck, spark = (_derive_all(e, _VALUES) for e in both)
    for text in _VALUES:
        rel = 4e-16 if any(f in text for f in _TRANSCENDENTAL) else 0.0
        bad = [(r, a, b) for r, (a, b) in enumerate(zip(duck[text], spark[text], strict=True))
               if not _same(a, b, rel)]
        assert not bad, f"{text}: (row, duckdb, spark) differ at {bad}"


@pytest.mark.parametrize("text", sorted(_REFERENCE))
def test_derived_columns_match_the_reference(engine: Engine, text: str) -> None:
    got = _derive_all(engine, [text])[text]
    rows = [dict(zip(_EDGE, r, strict=True)) for r in zip(*_EDGE.values(), strict=True)]
    want = [_REFERENCE[text](r) for r in rows]
    rel = 4e-16 if any(f in text for f in _TRANSCENDENTAL) else 0.0
    bad = [(r, g, w) for r, (g, w) in enumerate(zip(got, want, strict=True))
           if not (g is None and w is None) and not (g is not None and w is not None
                                                      and _same(float(g), float(w), rel))]
    assert not bad, f"{text}: (row, engine, reference) differ at {bad}"


def test_filter_keeps_the_rows_where_the_predicate_is_true(engine: Engine) -> None:
    from approxdp.engines.expressions import parse_expression

    t = engine.load(_edge_table())
    types = engine.column_types(t)
    i, f, b = _EDGE["i"], _EDGE["f"], _EDGE["b"]
    for text, want in [
        ("i > 0", [r for r, x in enumerate(i) if x is not None and x > 0]),
        ("s = 'x'' OR ''1''=''1'", [16]),
        ("f IS NULL OR i IS NULL", [r for r in _EDGE["id"] if f[r] is None or i[r] is None]),
        ("d IS NOT NULL AND b", [r for r in _EDGE["id"] if r % 3 and b[r]]),
        ("NOT (f = f)", []),  # NaN = NaN is true on both engines
    ]:
        kept = engine.filter_rows(t, parse_expression(text, types, role="predicate"))
        res = engine.aggregate(kept, AggregateRequest(("id",), (Aggregation("n", "count"),)))
        assert sorted(int(k) for k in res.keys["id"]) == want, text
    assert engine.count_rows(engine.filter_rows(t, parse_expression("FALSE", types,
                                                                    role="predicate"))) == 0


def test_column_types_are_the_same_on_every_engine(both: tuple[Engine, Engine]) -> None:
    duck, spark = (e.column_types(e.load(_edge_table())) for e in both)
    assert duck == spark == {"id": "integer", "i": "integer", "f": "float", "s": "string",
                             "b": "boolean", "d": "other"}


def test_derived_column_names_are_checked(engine: Engine) -> None:
    from approxdp.engines.expressions import parse_expression

    t = engine.load(_edge_table())
    expr = parse_expression("i + 1", engine.column_types(t))
    with pytest.raises(DataError, match="'i' already exists"):
        engine.with_expression(t, "I", expr)
    with pytest.raises(InvalidParameterError, match="reserved"):
        engine.with_expression(t, "__x", expr)
    other = engine.load(pa.table({"z": [1]}))
    with pytest.raises(DataError, match="column 'i' not found"):
        engine.filter_rows(other, parse_expression("i > 0", engine.column_types(t),
                                                   role="predicate"))


def _join_tables() -> tuple[pa.Table, pa.Table]:
    private = pa.table({"id": list(range(8)), "k": [1, 2, 2, 3, None, 9, 1, 3],
                        "s": ["a", "b", "b", "c", "a", None, "z", "c"]})
    lookup = pa.table({"key": [1, 2, 3, None], "region": ["north", "south", "east", "void"],
                       "price": [1.5, 2.0, None, 9.0]})
    return private, lookup


@pytest.mark.parametrize("how", ["inner", "left"])
def test_join_lookup_adds_the_matching_columns(engine: Engine, how: str) -> None:
    private, lookup = _join_tables()
    t = engine.join_lookup(engine.load(private), engine.load(lookup), [("k", "key")], how)
    assert list(engine.column_types(t)) == ["id", "k", "s", "region", "price"]
    res = engine.aggregate(t, AggregateRequest(("id", "region"), (Aggregation("n", "count"),
                                               Aggregation("p", "sum", "price", 0, 10))))
    got = {int(i): (r, p) for i, r, p in zip(res.keys["id"], res.keys["region"],
                                              res.values["p"], strict=True)}
    want = {0: ("north", 1.5), 1: ("south", 2.0), 2: ("south", 2.0), 3: ("east", 0.0),
            6: ("north", 1.5), 7: ("east", 0.0)}  # NULL and unmatched keys never match
    if how == "left":
        want |= {4: (None, 0.0), 5: (None, 0.0)}
    assert got == want


def test_join_lookup_on_text_keys_and_several_columns(engine: Engine) -> None:
    private = pa.table({"a": ["x", "y", "x"], "b": [1, 1, 2], "v": [1.0, 2.0, 3.0]})
    lookup = pa.table({"a": ["x", "x", "y"], "bb": [1, 2, 2], "w": [10, 20, 30]})
    t = engine.join_lookup(engine.load(private), engine.load(lookup), [("a", "a"), ("b", "bb")],
                           "inner")
    res = engine.aggregate(t, AggregateRequest(("v", "w"), (Aggregation("n", "count"),)))
    assert list(zip(res.keys["v"], res.keys["w"], strict=True)) == [(1.0, 10), (3.0, 20)]


def test_join_lookup_on_a_spark_lookup_of_the_same_lineage(spark_session: Any) -> None:
    """A lookup derived from the private DataFrame itself: the key condition must compare the
    two sides, not one column with itself (Spark's self-join trap, a cross join)."""
    from approxdp.engines.spark import SparkEngine

    engine = SparkEngine(spark_session)
    df = spark_session.createDataFrame(_join_tables()[0].to_pandas())
    lookup = df.select("id", "s").withColumnRenamed("s", "s2").filter("id < 3")
    t = engine.join_lookup(engine.load(df), engine.load(lookup), [("k", "id")], "inner")
    res = engine.aggregate(t, AggregateRequest(("id", "s2"), (Aggregation("n", "count"),)))
    # private rows whose k (1, 2, 2, 1) is a lookup id (0, 1, 2): ids 0, 1, 2, 6
    assert sorted(int(i) for i in res.keys["id"]) == [0, 1, 2, 6]
    assert res.values["n"].tolist() == [1.0] * 4


def test_join_lookup_checks(engine: Engine) -> None:
    private, lookup = _join_tables()
    p, lk = engine.load(private), engine.load(lookup)
    with pytest.raises(DataError, match="cannot be matched"):
        engine.join_lookup(p, lk, [("s", "key")], "inner")
    with pytest.raises(DataError, match="'kk' not found in the public table"):
        engine.join_lookup(p, lk, [("k", "kk")], "inner")
    with pytest.raises(DataError, match="has the name of the private table's column 's'"):
        engine.join_lookup(p, engine.load(pa.table({"k": [1], "S": ["q"]})), [("k", "k")],
                           "inner")
    with pytest.raises(InvalidParameterError, match="how must be one of"):
        engine.join_lookup(p, lk, [("k", "key")], "outer")


def test_duplicate_keys(engine: Engine) -> None:
    t = engine.load(pa.table({"k": [1, 2, 2, None, None, 3, 3, 3], "c": list("abcdefgh")}))
    assert engine.duplicate_keys(t, ["k"]) == (2, ((2,), (3,)))
    assert engine.duplicate_keys(t, ["k"], limit=1) == (2, ((2,),))
    assert engine.duplicate_keys(t, ["k", "c"]) == (0, ())
