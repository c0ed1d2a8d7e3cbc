"""Partitioned Parquet folders and globs: read natively by DuckDB and Spark, with the
key=value partition columns, and the same answers on both for the same seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from approxdp import PrivateTable
from approxdp.errors import DataError

DOMAIN = {"year": [2020, 2021], "region": ["n", "s"]}


def _write(root: Path) -> None:
    rng = np.random.default_rng(0)
    for year in (2020, 2021):
        for region in ("n", "s"):
            folder = root / f"year={year}" / f"region={region}"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"x": rng.normal(5, 2, 50)}), folder / "part-0.parquet")


def _release(source: str, engine: str) -> tuple[list[float], float]:
    t = PrivateTable(source, budget=(10.0, 1e-5), seed=1, engine=engine)
    h = t.histogram(["year", "region"], epsilon=1.0, delta=1e-6, domain=DOMAIN)
    m = t.mean("x", (0, 10), epsilon=1.0, delta=1e-6)
    return [float(v) for v in h.values], float(m.value)


@pytest.mark.parametrize("pattern", ["", "*/*/*.parquet", "year=2020/*/*.parquet"])
def test_folders_and_globs_on_duckdb(tmp_path: Path, pattern: str) -> None:
    _write(tmp_path)
    source = str(tmp_path / pattern) if pattern else str(tmp_path)
    t = PrivateTable(source, budget=(10.0, 1e-5), seed=1)
    assert set(t.engine.schema(t.table)) == {"x", "year", "region"}
    assert t.engine.count_rows(t.table) == (100 if "2020" in pattern else 200)


def test_missing_globs_and_empty_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no file matches"):
        PrivateTable(str(tmp_path / "*" / "*.parquet"), budget=(1.0, 1e-6))
    with pytest.raises(DataError, match=r"holds no \.parquet file"):
        PrivateTable(str(tmp_path), budget=(1.0, 1e-6))


def test_the_same_answers_on_spark(tmp_path: Path, spark_session: Any) -> None:
    del spark_session  # the engine reuses the active session
    _write(tmp_path)
    for source in (str(tmp_path), str(tmp_path / "*" / "*" / "*.parquet"),
                   str(tmp_path / "year=2020" / "*" / "*.parquet")):
        assert _release(source, "spark") == _release(source, "duckdb")
