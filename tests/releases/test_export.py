"""Exports for publication (releases/export.py): ReleaseResult.to_pandas, to_polars, to_csv
and to_parquet hold the released cells and the public parameters, and nothing exact."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from approxdp import DataError, LinearQuery, PrivateTable
from approxdp.releases.export import PARAMETER_COLUMNS, VALUE_COLUMNS

N_ROWS = 7919  # rows of the table: must not appear in any export
N_BAD = 613  # text values a cast cannot convert: counted exactly in a result note, not exported


def _table() -> pa.Table:
    rng = np.random.default_rng(0)
    amount = [f"{x:.2f}" for x in rng.gamma(2.0, 30.0, N_ROWS)]
    for i in rng.choice(N_ROWS, N_BAD, replace=False):
        amount[i] = "n/a"
    return pa.table({"region": rng.choice(["north", "south"], N_ROWS), "amount": amount})


def _texts(tmp_path: Path, result: object) -> list[str]:
    """Every export of ``result``, as text (the Parquet file: its bytes, decoded loosely,
    and its table and metadata as text)."""
    csv_path = result.to_csv(tmp_path / "r.csv")  # type: ignore[attr-defined]
    pq_path = result.to_parquet(tmp_path / "r.parquet")  # type: ignore[attr-defined]
    read = pq.read_table(pq_path)
    return [
        csv_path.read_text(),
        pq_path.read_bytes().decode("latin-1"),
        read.to_pandas().to_csv(),
        str(read.schema.metadata),
        result.to_pandas().to_csv(),  # type: ignore[attr-defined]
        str(result.to_polars()),  # type: ignore[attr-defined]
    ]


def test_nothing_exact_leaves_in_an_export(tmp_path: Path) -> None:
    t = PrivateTable(_table(), budget=(1.0, 1e-5), seed=3, casts={"amount": "double"})
    count = t.count(epsilon=0.01, delta=1e-6)  # σ ≈ 400: far from the exact count
    mean = t.mean("amount", (0, 300), epsilon=0.2, delta=1e-6, by=["region"],
                  domain={"region": ["north", "south"]})
    # the exact numbers are there for the data holder, in the diagnostics only
    assert count.diagnostics.rows["read"] == N_ROWS and abs(count.value - N_ROWS) > 50
    assert mean.diagnostics.casts["amount"][0] == N_BAD
    used = mean.diagnostics.rows["used"]  # rows with an amount
    for result in (count, mean):
        for text in _texts(tmp_path, result):
            # random hex ids and hashes (public, blind to the data) may spell a number by chance
            text = re.sub(r"(?<![0-9A-Za-z])[0-9a-f]{32,}(?![0-9A-Za-z])", "<hex id>", text)
            for exact in (N_ROWS, N_BAD, used):
                assert not re.search(rf"(?<![\d.]){exact}(?![\d])", text), (result.label, exact)
            assert "not numbers" not in text and "rows" not in text


def test_columns_and_values(tmp_path: Path) -> None:
    t = PrivateTable(_table(), budget=(5.0, 1e-5), casts={"amount": "double"})  # secure
    r = t.sum("amount", (0, 300), epsilon=1.0, delta=1e-6, by=["region"],
              domain={"region": ["north", "south"]})
    df = r.to_pandas()
    assert list(df.columns) == ["region", *VALUE_COLUMNS, *PARAMETER_COLUMNS]
    assert df["region"].tolist() == ["north", "south"]
    np.testing.assert_array_equal(df["value"].to_numpy(), np.asarray(r.values))
    np.testing.assert_array_equal(df["ci_high"].to_numpy(), np.asarray(r.ci_high))
    assert set(df["statistic"]) == {"sum(amount)"} and set(df["epsilon"]) == {1.0}
    assert df["secure"].all()
    meta = pq.read_schema(r.to_parquet(tmp_path / "s.parquet")).metadata
    assert meta[b"approxdp.secure"] == b"true" and b'"statistic": "sum(amount)"' in meta[
        b"approxdp.release"]
    polars = r.to_polars()
    assert polars.columns == list(df.columns) and polars["value"].to_list() == df[
        "value"].tolist()
    back = pa.csv.read_csv(r.to_csv(tmp_path / "s.csv"))
    assert back.column_names == list(df.columns) and back.num_rows == 2


def test_seeded_exports_are_marked_not_private(tmp_path: Path) -> None:
    r = PrivateTable(_table(), budget=(1.0, 1e-6), seed=1).count(epsilon=0.5, delta=5e-7)
    assert r.to_pandas()["secure"].tolist() == [False]
    assert ",false" in r.to_csv(tmp_path / "c.csv").read_text().splitlines()[1]
    assert pq.read_schema(r.to_parquet(tmp_path / "c.parquet")).metadata[
        b"approxdp.secure"] == b"false"


def test_linear_queries_large_domains_and_mean_informative(tmp_path: Path) -> None:
    t = PrivateTable(_table(), budget=(5.0, 1e-5), seed=2, casts={"amount": "double"},
                     large_domain_cells=2)
    lq = t.linear_queries([LinearQuery(), LinearQuery("amount", (0, 100),
                                                      {"region": "north"})],
                          epsilon=0.5, delta=1e-6)
    assert lq.to_pandas()["index"].tolist() == [0, 1]
    dense = t.histogram("region", epsilon=0.5, delta=1e-6,
                        domain={"region": ["north", "south", "east"]})
    assert dense.table is not None  # kept by the engine; the export collects it
    df = dense.to_pandas().sort_values("region")
    assert df["region"].tolist() == ["east", "north", "south"] and df["informative"].all()
    tiny = PrivateTable(pa.table({"g": ["a"] * 3 + ["b"] * 3000, "x": [1.0] * 3003}),
                        budget=(1.0, 1e-6), seed=4)
    m = tiny.mean("x", (0, 1), by=["g"], domain={"g": ["a", "b"]}, epsilon=0.05, delta=1e-7)
    assert m.to_pandas()["informative"].tolist() == np.asarray(m.informative).tolist()


def test_a_key_column_named_like_an_export_column_is_refused() -> None:
    t = PrivateTable(pa.table({"value": ["a", "b"] * 10}), budget=(1.0, 1e-6))
    r = t.histogram("value", epsilon=0.5, delta=5e-7, domain={"value": ["a", "b"]})
    with pytest.raises(DataError, match=r"key column\(s\) \['value'\]"):
        r.to_pandas()


def test_an_export_carries_its_spend_receipt(tmp_path: Path) -> None:
    """Spent from a ledger file: the receipt is in the CSV and the Parquet metadata, and
    ``approxdp ledger verify`` reads it from either (issue 23 §6)."""
    from click.testing import CliRunner

    from approxdp import PrivacyAccountant
    from approxdp.cli.app import cli

    ledger = tmp_path / "l.sqlite"
    t = PrivateTable(_table(), accountant=PrivacyAccountant((1.0, 1e-5), ledger=ledger))
    r = t.count(epsilon=0.3, delta=1e-6)
    (receipt,) = r.receipts
    df = r.to_pandas()
    assert list(df.columns)[-1] == "receipt" and set(df["receipt"]) == {str(receipt)}
    for path in (r.to_csv(tmp_path / "r.csv"), r.to_parquet(tmp_path / "r.parquet")):
        done = CliRunner().invoke(cli, ["ledger", "verify", str(ledger), "--receipt", str(path)])
        assert done.exit_code == 0 and "1 receipt(s) checked" in done.stdout, done.output
