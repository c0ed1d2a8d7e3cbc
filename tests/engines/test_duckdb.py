"""The DuckDB engine's contribution bounding against a plain-Python reference of its contract.

:class:`~approxdp.engines.shapes.PerKeyLimit` says: each unit keeps the ``max_groups`` groups
with the smallest keyed rank (:func:`approxdp.engines.keyed_hash.reference_rank`; ties broken
by the group values, NULL last), and a kept (unit, group) pair with n > ``max_rows`` rows counts
``max_rows`` and has its partial sums scaled by ``max_rows / n``. The reference below does all
of it in Python, row by row; with a deliberately coarsened rank it also checks the
tie-breaking path (which real 32-bit ranks almost never take).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import approxdp.engines._duckdb_sql as duckdb_sql
from approxdp.engines import AggregateRequest, Aggregation, Membership, PerKeyLimit
from approxdp.engines.duckdb import DuckDBEngine
from approxdp.engines.keyed_hash import reference_rank
from approxdp.errors import DataError


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    g = rng.choice(np.array(["a", "b", "c", "d", "e"], dtype=object), n)
    g[rng.random(n) < 0.1] = None
    v = rng.normal(3, 4, n)
    v[rng.random(n) < 0.05] = np.nan
    heavy = rng.random(n) < 0.3  # a few units with many rows, so the row cap bites
    unit = np.where(heavy, rng.integers(0, 5, n), rng.integers(5, 200, n))
    return pa.table(
        {
            "unit": unit,
            "g": pa.array(g.tolist(), pa.string()),
            "h": rng.integers(0, 3, n),
            "v": pa.array([None if i % 97 == 0 else x for i, x in enumerate(v)], pa.float64()),
        }
    )


def _reference(
    table: pa.Table, request: AggregateRequest, modulus: int | None = None
) -> dict[tuple[Any, ...], dict[str, float]]:
    """Per group: each aggregation and ``__rows``, computed in Python from the contract (ranks
    taken ``% modulus`` when given, as the coarsened engine does)."""
    limit = request.sample
    assert limit is not None
    rows = table.to_pylist()

    def allowed(row: dict[str, Any], conds: tuple[Membership, ...]) -> bool:
        return all(row[c.column] in c.values for c in conds)

    def value(row: dict[str, Any], agg: Aggregation) -> float | None:
        if not allowed(row, agg.where):
            return None
        x = row[agg.column] if agg.column is not None else 1.0
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return None
        if agg.function == "count":
            return 1.0
        return min(max(float(x), agg.low), agg.high) - agg.shift

    pairs: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if allowed(row, request.keep):
            pairs[(row[limit.key], *(row[c] for c in request.by))].append(i)
    by_unit: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
    for pair in pairs:
        by_unit[pair[0]].append(pair)

    def order(pair: tuple[Any, ...]) -> tuple[Any, ...]:
        g, h = pair[1:]
        rank = reference_rank(limit.seed, [(g, "text"), (h, "integer")], (pair[0], "integer"))
        if modulus is not None:
            rank %= modulus
        return (rank, *((v is None, v) for v in pair[1:]))

    out: dict[tuple[Any, ...], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    m = limit.max_rows
    for unit_pairs in by_unit.values():
        for pair in sorted(unit_pairs, key=order)[: limit.max_groups]:
            idx = pairs[pair]
            cell = out[pair[1:]]
            for agg in request.aggregations:
                vals = [x for x in (value(rows[i], agg) for i in idx) if x is not None]
                cell[agg.name] += sum(vals) * (1.0 if len(idx) <= m else m / len(idx))
            cell["__rows"] += min(len(idx), m)
    return out


@pytest.mark.parametrize("collide", [False, True], ids=["hash", "colliding-hash"])
@pytest.mark.parametrize(("k", "m", "seed"), [(1, 1, 0), (2, 3, 1), (3, 2, 2), (20, 50, 3)])
def test_per_key_limit_matches_the_contract(
    k: int, m: int, seed: int, collide: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if collide:  # a 2-valued rank: most units have groups that tie, so ties decide
        monkeypatch.setattr(duckdb_sql, "rank_order_sql", lambda rank: f"(({rank}) % 2)")
    table = _table(3000, seed)
    request = AggregateRequest(
        ("g", "h"),
        (
            Aggregation("n", "count"),
            Aggregation("s", "sum", "v", -1.0, 6.0, shift=0.5),
            Aggregation("nv", "count", "v"),
            Aggregation("f", "count", where=(Membership("h", (0, 2)),)),
        ),
        keep=(Membership("g", ("a", "b", "c", "d", None)),),
        sample=PerKeyLimit("unit", k, m, seed=1234 + seed),
    )
    engine = DuckDBEngine(threads=2)
    res = engine.aggregate(engine.load(table), request)
    ref = _reference(table, request, 2 if collide else None)
    got = list(zip(res.keys["g"], res.keys["h"], strict=True))
    assert sorted(got, key=lambda c: (c[0] is None, c)) == got  # ordered, NULL last
    assert set(got) == set(ref)
    for i, cell in enumerate(got):
        for name in ("n", "s", "nv", "f"):
            assert res.values[name][i] == pytest.approx(ref[cell][name], rel=1e-12, abs=1e-9)
        assert res.group_rows[i] == ref[cell]["__rows"]
    assert res.rows_used == sum(c["__rows"] for c in ref.values())


def test_global_aggregate_with_a_unit_caps_rows() -> None:
    table = pa.table({"unit": [1, 1, 1, 1, 2], "v": [1.0, 2.0, 3.0, 10.0, 4.0]})
    engine = DuckDBEngine(threads=1)
    res = engine.aggregate(
        engine.load(table),
        AggregateRequest(
            (),
            (Aggregation("s", "sum", "v", 0, 5), Aggregation("n", "count")),
            sample=PerKeyLimit("unit", 1, 2, seed=5),
        ),
    )
    # unit 1: clamped sum 11 over 4 rows, scaled by 2/4; unit 2: 4
    assert res.values["s"].tolist() == [pytest.approx(9.5)]
    assert res.values["n"].tolist() == [3.0]
    assert res.rows_used == 3


def test_negative_zero_group_hashes_as_zero() -> None:
    """-0.0 and 0.0 are one group in SQL; which of them a unit's group is hashed as must not
    depend on another unit's rows (that would move other units' contributions: not stable)."""
    # a seed where the text forms "-0.0" and "0.0" rank on opposite sides of "1.0" for unit 1
    seed = next(
        s for s in range(1000)
        if (reference_rank(s, [("-0.0", "text")], (1, "integer"))
            < reference_rank(s, [("1.0", "text")], (1, "integer")))
        != (reference_rank(s, [("0.0", "text")], (1, "integer"))
            < reference_rank(s, [("1.0", "text")], (1, "integer")))
    )
    engine = DuckDBEngine(threads=1)
    request = AggregateRequest(
        ("g",), (Aggregation("n", "count"),), sample=PerKeyLimit("u", 1, 10, seed=seed)
    )
    kept = []
    for rows in ([(1, 0.0), (1, 1.0)], [(2, -0.0), (1, 0.0), (1, 1.0)]):
        table = pa.table({"u": [r[0] for r in rows],
                          "g": pa.array([r[1] for r in rows], pa.float64())})
        res = engine.aggregate(engine.load(table), request)
        kept.append(res.values["n"][res.keys["g"] == 1.0].sum())  # unit 1's choice only
    assert kept[0] == kept[1]
    assert reference_rank(seed, [(-0.0, "text")], (1, "integer")) == reference_rank(
        seed, [(0.0, "text")], (1, "integer"))


def test_negative_zero_unit_is_one_unit_for_the_row_cap() -> None:
    table = pa.table({"u": pa.array([-0.0] * 3 + [0.0] * 3, pa.float64()), "g": ["a"] * 6})
    engine = DuckDBEngine(threads=1)
    res = engine.aggregate(
        engine.load(table),
        AggregateRequest(("g",), (Aggregation("n", "count"),),
                         sample=PerKeyLimit("u", 2, 3, seed=1)),
    )
    assert res.values["n"].tolist() == [3.0]  # one unit, one group: at most max_rows rows
    assert res.rows_used == 3


@pytest.mark.parametrize("by", [("g", "h"), ("h",)], ids=["text", "integer"])
def test_source_columns_named_like_internal_ones_do_not_shadow_them(by: tuple[str, ...]) -> None:
    """Unused source columns called ``__unit``, ``__h``, ``__kg0``, ``__ku0`` were picked up by
    ``SELECT *`` and bound instead of the statement's own (the wrong privacy unit, silently)."""
    table = _table(800, 11)
    n = table.num_rows
    for name in ("__unit", "__h", "__kg0", "__ku0"):
        table = table.append_column(name, pa.array(np.zeros(n, dtype=np.int64)))
    request = AggregateRequest(by, (Aggregation("n", "count"),),
                               sample=PerKeyLimit("unit", 2, 3, seed=8))
    engine = DuckDBEngine(threads=1)
    clean = engine.aggregate(engine.load(table.select(["unit", "g", "h", "v"])), request)
    noisy = engine.aggregate(engine.load(table), request)
    assert noisy.values["n"].tolist() == clean.values["n"].tolist()
    assert noisy.rows_used == clean.rows_used > 3 * 2  # many units, not one


def test_used_columns_named_like_internal_ones_raise() -> None:
    table = pa.table({"__rows": [1, 2], "u": [1, 2]})
    engine = DuckDBEngine(threads=1)
    with pytest.raises(DataError, match=r"'__rows'.*reserved"):
        engine.aggregate(engine.load(table),
                         AggregateRequest(("__rows",), (Aggregation("n", "count"),)))
