"""The Spark engine end to end: inputs, engine selection, and PrivateTable releases that match
DuckDB's exactly for the same seed (same aggregates, same bounding, same seeded noise).

Spark runs in local mode from the session fixture in ``conftest.py``. The missing-dependency
test runs without Spark.
"""

from __future__ import annotations

import builtins
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from approxdp.engines import engine_for
from approxdp.engines.duckdb import DuckDBEngine
from approxdp.errors import DataError, MissingDependencyError, ParameterTypeError
from approxdp.releases.session import PrivateTable
from approxdp.releases.specs import Count, Histogram, Mean, Sum

DOMAIN = {"a": list(range(12)), "b": ["x", "y", "z", "w"]}


def _data(n: int = 3000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "user": rng.integers(0, n // 6, n),
        "a": rng.integers(0, 12, n),
        "b": rng.choice(["x", "y", "z"], n),
        "v": np.round(rng.uniform(-2, 12, n), 3),
    })


def test_missing_pyspark_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_pyspark(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    with pytest.raises(MissingDependencyError, match=r"pip install 'approxdp\[spark\]'"):
        engine_for("data.parquet", "spark")


def test_import_approxdp_never_imports_pyspark() -> None:
    code = (
        "import sys, approxdp, approxdp.engines, approxdp.engines.spark, approxdp.releases.session;"
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_engine_for_detects_spark_dataframes(spark_session: Any) -> None:
    df = spark_session.createDataFrame(_data(10))
    assert engine_for(df).name == "spark"
    assert engine_for(_data(10)).name == "duckdb"
    assert engine_for("x.parquet", "spark").name == "spark"
    with pytest.raises(ParameterTypeError, match="Spark DataFrame"):
        DuckDBEngine().load(df)


def test_every_input_kind_on_spark(spark_session: Any, tmp_path: Path) -> None:
    import polars as pl

    from approxdp.engines.spark import SparkEngine

    table = _data(500)
    pq.write_table(table, tmp_path / "t.parquet")
    table.to_pandas().to_csv(tmp_path / "t.csv", index=False)
    engine = SparkEngine(spark_session)
    sources: dict[str, Any] = {
        "dataframe": spark_session.createDataFrame(table),
        "arrow": table,
        "pandas": table.to_pandas(),
        "polars": pl.from_arrow(table),
        "parquet": tmp_path / "t.parquet",
        "csv": str(tmp_path / "t.csv"),
    }
    for kind, source in sources.items():
        t = engine.load(source)
        assert list(engine.schema(t)) == ["user", "a", "b", "v"], kind
        assert engine.count_rows(t) == 500, kind
    with pytest.raises(DataError, match="not found"):
        engine.load(tmp_path / "missing.parquet")
    with pytest.raises(DataError, match="format"):
        engine.load(__file__)


def _release(source: Any, seed: int, **bounds: Any) -> list[np.ndarray]:
    t = PrivateTable(source, budget=(100.0, 0.5), seed=seed, **bounds)
    res = t.release(
        [
            Count(),
            Sum("v", (0, 10)),
            Mean("v", (0, 10), ("b",), {"b": ["x", "y", "z"]}),
            Histogram(("a", "b"), DOMAIN),
            Histogram(("a",)),  # partition selection
        ],
        epsilon=2.0,
        delta=1e-6,
    )
    out = []
    for r in res:
        out += [np.asarray(r.values), np.asarray(r.ci_low),
                np.asarray([r.diagnostics.rows["used"]])]
        out.append(np.asarray([hash(k) for k in r.keys]))
    return out


@pytest.mark.parametrize("bounds", [
    {},
    {"privacy_unit": "user", "max_partitions": 2, "max_rows_per_partition": 2},
])
def test_private_releases_match_duckdb_for_the_same_seed(
    spark_session: Any, bounds: dict[str, Any]
) -> None:
    data = _data()
    on_spark = _release(spark_session.createDataFrame(data), 11, **bounds)
    on_duckdb = _release(data, 11, **bounds)
    assert len(on_spark) == len(on_duckdb)
    for s, d in zip(on_spark, on_duckdb, strict=True):
        np.testing.assert_allclose(s, d, rtol=1e-9)


def test_large_domain_release_matches_duckdb_for_the_same_seed(
    spark_session: Any, tmp_path: Path
) -> None:
    data = _data()
    dom = {"a": list(range(12)), "b": ["x", "y", "z", "w", None]}
    results = {}
    for name, source in (("spark", spark_session.createDataFrame(data)), ("duckdb", data)):
        t = PrivateTable(source, budget=(10.0, 1e-5), seed=4, large_domain_cells=10,
                         privacy_unit="user", max_partitions=2, max_rows_per_partition=3,
                         output_dir=str(tmp_path / name))
        r = t.histogram(["a", "b"], domain=dom, epsilon=1.0, delta=1e-6)
        assert r.table is not None and r.table.path is not None
        cells = r.to_arrow().sort_by([("a", "ascending"), ("b", "ascending")])
        results[name] = (cells, r.diagnostics.rows)
    (s_cells, s_rows), (d_cells, d_rows) = results["spark"], results["duckdb"]
    assert s_rows == d_rows and s_cells.num_rows == 60
    for col in ("a", "b", "value", "std", "ci_low", "ci_high"):
        assert s_cells[col].to_pylist() == pytest.approx(d_cells[col].to_pylist(), rel=1e-12) \
            if col not in ("a", "b") else s_cells[col].to_pylist() == d_cells[col].to_pylist()


def test_large_domain_secure_release_stays_on_the_executors(spark_session: Any) -> None:
    data = _data()
    t = PrivateTable(spark_session.createDataFrame(data), budget=(10.0, 1e-5),
                     large_domain_cells=10)
    r = t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert r.table is not None and r.table.path is None  # checkpointed on the executors
    from approxdp.engines.spark import is_spark_dataframe

    assert is_spark_dataframe(r.table.table)
    first = r.to_arrow().sort_by([("a", "ascending"), ("b", "ascending")])
    again = r.table.table.toArrow().sort_by([("a", "ascending"), ("b", "ascending")])
    assert first["value"].to_pylist() == again["value"].to_pylist()  # drawn once, not re-run
    assert first.num_rows == 48


def test_seeded_spark_releases_are_marked_non_private(spark_session: Any,
                                                      tmp_path: Path) -> None:
    """The same marks as on DuckDB: secure=False, values is_secure rejects, the note, explain(),
    and the written file's name for a large domain."""
    from approxdp.mechanisms import is_secure

    df = spark_session.createDataFrame(_data(600))
    t = PrivateTable(df, budget=(10.0, 1e-5), seed=5, large_domain_cells=40,
                     output_dir=str(tmp_path / "out"))
    small = t.count(epsilon=0.5, delta=1e-7)
    large = t.histogram(["a", "b"], domain=DOMAIN, epsilon=0.5, delta=1e-7)
    for r in (small, large):
        assert r.secure is False and any("NOT private" in n for n in r.notes)
        assert r.explain().startswith("WARNING: seeded simulation - NOT private")
    assert not is_secure(small.value) and not is_secure(small.values)
    assert large.table is not None and large.table.path is not None
    assert large.table.path.endswith("-seeded-NOT-PRIVATE.parquet")


def test_spark_failures_after_planning_spend_nothing(spark_session: Any,
                                                     tmp_path: Path) -> None:
    dirty = tmp_path / "dirty.csv"
    dirty.write_text("g,amount\na,1.5\nb,oops\na,2\n", encoding="utf-8")
    header = tmp_path / "header.csv"
    header.write_text("g,amount\n", encoding="utf-8")
    t = PrivateTable(str(dirty), budget=(1.0, 1e-6), engine="spark")
    with pytest.raises(DataError, match=r"1 value\(s\) are not numbers, e.g. \['oops'\]"):
        t.mean("amount", (0, 10), epsilon=0.5, delta=1e-7)
    with pytest.raises(Exception, match="overflow"):
        t.mean("amount", (0, 1e308), epsilon=0.5, delta=1e-7)
    assert t.accountant.history() == ()
    cast = PrivateTable(str(dirty), budget=(1.0, 1e-6), engine="spark",
                        casts={"amount": "double"}, seed=1)
    assert cast.cast_report == {"amount": (1, ("oops",))}
    assert cast.mean("amount", (0, 10), epsilon=0.5, delta=1e-7).diagnostics.rows["read"] == 3
    empty = PrivateTable(str(header), budget=(1.0, 1e-6), engine="spark")
    with pytest.raises(DataError, match="the table is empty"):
        empty.mean("amount", (0, 10), epsilon=0.5, delta=1e-7)
    assert empty.accountant.history() == ()
