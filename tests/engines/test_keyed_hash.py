"""The engine-independent keyed hash: DuckDB SQL and Spark compute the Python reference bit for
bit, over integer, boolean, text and NULL inputs; and the ranking it induces looks random.

The uniformity test is a binomial check at 6 standard deviations (false-failure rate < 1e-8).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from approxdp.engines.keyed_hash import DuckDBSteps, HashInput, reference_rank, seed_state

INTS = [0, 1, -1, 2**31 - 1, 2**31, -(2**31), 2**62 + 17, -(2**63), 2**63 - 1, 123456789012, None]
TEXTS = ["", "a", "region-07", "é€😀", "x y", "NULL", "0", None]
SEEDS = [0, 1, 2**63 - 1, 987654321987654321]


def _cases() -> list[tuple[int, Any, Any]]:
    return [(s, t, i) for s in SEEDS for t in TEXTS for i in INTS]


def _duckdb_ranks(cases: list[tuple[int, Any, Any]], unit_type: str) -> list[int]:
    con = duckdb.connect()
    out = []
    for seed in SEEDS:
        rows = [(t, i) for s, t, i in cases if s == seed]
        con.register("v", pa.table({"t": [r[0] for r in rows],
                                    "i": pa.array([r[1] for r in rows], pa.int64())}))
        g = DuckDBSteps("__g")
        state = g.fmix(g.absorb(str(seed_state(seed)), g.limbs('"t"', "VARCHAR")))
        u = DuckDBSteps("__u")
        rank = u.fmix(u.absorb(state, u.limbs(f'CAST("i" AS {unit_type})', unit_type)))
        sql = f"SELECT {g.select_list()}, {u.select_list()}, {rank} AS r FROM v"
        out += [int(r[-1]) for r in con.sql(sql).fetchall()]
        con.unregister("v")
    return out


def test_duckdb_sql_equals_the_reference() -> None:
    cases = _cases()
    want = [reference_rank(s, [(t, "text")], (i, "integer")) for s, t, i in cases]
    assert _duckdb_ranks(cases, "BIGINT") == want
    assert all(0 <= w < 2**32 for w in want)


def test_duckdb_wide_integers_and_booleans() -> None:
    con = duckdb.connect()
    values = [0, 1, 2**63, 2**64 - 1, 5 * 2**40 + 3]
    for sql_type in ("UBIGINT", "HUGEINT"):
        g = DuckDBSteps("__g")
        state = g.fmix(g.absorb("7", g.limbs(f"CAST(x AS {sql_type})", sql_type)))
        got = [int(r[-1]) for r in con.sql(
            f"SELECT {g.select_list()}, {state} AS r FROM unnest({values}::HUGEINT[]) t(x)"
        ).fetchall()]
        want = []
        for v in values:
            s = 7
            for limb in ((v & (2**32 - 1)), (v >> 32) & (2**32 - 1)):
                s = (s * 1_103_515_245 + limb) & (2**32 - 1)
            want.append(_fmix(s))
        assert got == want, sql_type
    b = DuckDBSteps("__b")
    state = b.absorb("0", b.limbs("x", "BOOLEAN"))
    got = [r[-1] for r in con.sql(
        f"SELECT {b.select_list()}, {state} AS r FROM (VALUES (true), (false)) t(x)"
    ).fetchall()]
    assert got == [1_103_515_245, 0]  # booleans enter as 1 and 0: limbs (1, 0) and (0, 0)


def _fmix(x: int) -> int:
    from approxdp.engines import keyed_hash

    return keyed_hash._fmix(x)


def test_spark_equals_the_reference(spark_session: Any) -> None:
    from pyspark.sql import functions

    from approxdp.engines._spark_hash import with_rank

    cases = [(t, i) for t in TEXTS for i in INTS]
    df = spark_session.createDataFrame(
        pa.table({"t": [c[0] for c in cases], "b": [i % 2 == 0 if i is not None else None
                                                    for _, i in cases],
                  "__unit": pa.array([c[1] for c in cases], pa.int64())})
    )
    for seed in SEEDS[::2]:
        for kinds, cols in ((("text",), ("t",)), (("text", "integer"), ("t", "b"))):
            ranked = with_rank(df, cols, kinds, "integer", seed)
            rows = ranked.select(*cols, "__unit", "__rank").collect()
            for row in rows:
                group: list[tuple[object, HashInput]] = [
                    (row[c], k) for c, k in zip(cols, kinds, strict=True)
                ]
                assert row["__rank"] == reference_rank(seed, group, (row["__unit"], "integer"))
            assert len(rows) == len(cases)
        ranked = with_rank(df.withColumn("__unit", functions.col("t")), ("b",),
                           ("integer",), "text", seed)
        for row in ranked.select("b", "__unit", "__rank").collect():
            assert row["__rank"] == reference_rank(seed, [(row["b"], "integer")],
                                                   (row["__unit"], "text"))


def test_ranking_is_uniform_across_units() -> None:
    groups = ["a", "b", "c", "d", "e"]
    kept: Counter[str] = Counter()
    n_units = 20_000
    for u in range(n_units):
        ranks = sorted(groups, key=lambda g, u=u: reference_rank(99, [(g, "text")], (u, "integer")))
        kept.update(ranks[:2])
    p = 2 / 5
    sd = math.sqrt(n_units * p * (1 - p))
    for g in groups:
        assert abs(kept[g] - n_units * p) < 6 * sd, kept
    # and it depends on the seed
    other = [reference_rank(100, [("a", "text")], (u, "integer")) for u in range(50)]
    same = [reference_rank(99, [("a", "text")], (u, "integer")) for u in range(50)]
    assert other != same
    assert len(set(np.array(same) % 1000)) > 40
