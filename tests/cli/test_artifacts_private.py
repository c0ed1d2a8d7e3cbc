"""Nothing exact leaves (issue 23 §2): every writer of a release's artifact, fed a file with a
known number of rows, writes a file in which that number appears nowhere.

N = 7919 rows (a prime no parameter, seed, bound or domain here equals), every value present,
so the exact counts a release reads — rows read, rows used, rows with a value — are all N. A
writer passes if no number written in its output equals N (the noisy count, e.g. 7921.37,
may of course start with the same digits), and the literal token 7919 occurs nowhere (nor the
exact diagnostics' keys). With ``--exact-diagnostics`` the number is there, labelled: the test
can fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from approxdp import PrivacyAccountant
from approxdp.releases import PrivateTable

N = 7919
NUMBER = re.compile(r"-?\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers(text: str) -> list[float]:
    out = []
    for token in NUMBER.findall(text):
        try:
            out.append(float(token.replace(",", "").replace("_", "")))
        except ValueError:
            continue
    return out


# The ledger's id and chain hash are random hex (32 and 64 digits), public and blind to the
# data; a run of digits inside them may spell N by chance (about 1 artifact in 700).
HEX_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32,}(?![0-9A-Za-z])")


def assert_no_exact_count(text: str, where: str, n: int = N) -> None:
    text = HEX_ID.sub("<hex id>", text)
    plain = text.replace(",", "")  # 7,919 as a table prints it
    assert re.search(rf"(?<![\d.]){n}(?![\d])(?!\.\d)", plain) is None, f"{where}: {n} found"
    assert n not in _numbers(text), f"{where}: a number equal to {n}"
    for key in ('"read"', '"used"', '"dropped"', "exact, not private"):
        assert key not in text, f"{where}: exact diagnostics ({key}) written"


@pytest.fixture(scope="module")
def data_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(23)
    table = pa.table({
        "g": rng.choice(["a", "b", "c"], N),
        "x": np.round(rng.uniform(1.0, 99.0, N), 2),
        "uid": rng.integers(0, 3000, N),
    })
    path = tmp_path_factory.mktemp("art") / "people.csv"
    pacsv.write_csv(table, path)
    return path


RELEASES = [
    ["count"],
    ["sum", "x", "--bounds", "0", "100"],
    ["mean", "x", "--bounds", "0", "100"],
    ["mean", "x", "--bounds", "0", "100", "--by", "g", "--domain", "g=a,b,c"],
    ["histogram", "g", "--domain", "g=a,b,c"],
    ["histogram", "g"],  # partition selection
    ["median", "x", "--bounds", "0", "100"],
    ["quantiles", "x", "--bounds", "0", "100"],
    ["variance", "x", "--bounds", "0", "100"],
    ["std", "x", "--bounds", "0", "100"],
    ["count", "--privacy-unit", "uid", "--max-rows-per-partition", "2"],
    ["bounds", "x"],  # private bounds, a kind of their own
    ["mean", "x", "--bounds", "private"],  # two spends, two receipts
]


def _ids(args: list[str]) -> str:
    return " ".join(args)


@pytest.mark.parametrize("args", RELEASES, ids=_ids)
def test_release_json_csv_parquet_hold_no_exact_count(
    run: Any, data_csv: Path, tmp_path: Path, args: list[str]
) -> None:
    kind, *rest = args
    ledger = tmp_path / "l.sqlite"
    outputs = [tmp_path / f"out.{ext}" for ext in ("json", "csv", "parquet")]
    stdout = []
    for out in outputs:
        result = run("release", kind, data_csv, *rest, "-e", "1", "-d", "1e-6", "--seed", "5",
                     "--ledger", ledger, "--budget", "20", "1e-5", "--basic-share", "1", "5e-6",
                     "--allow-seeded-ledger", "--json", "-o", out)
        assert result.exit_code == 0, result.stderr
        stdout.append(result.stdout)
    for i, text in enumerate(stdout):
        assert_no_exact_count(text, f"--json ({i})")
    assert_no_exact_count(outputs[0].read_text(), "--output .json")
    assert_no_exact_count(outputs[1].read_text(), "--output .csv")
    table = pq.read_table(outputs[2])
    assert_no_exact_count(json.dumps(table.to_pylist(), default=str), "--output .parquet")
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    assert_no_exact_count(json.dumps(meta), "--output .parquet metadata")
    # the tables on the terminal, too
    shown = run("release", kind, data_csv, *rest, "-e", "1", "-d", "1e-6", "--seed", "5")
    assert shown.exit_code == 0, shown.stderr
    assert_no_exact_count(shown.stdout, "terminal")
    # every artifact carries the spend's receipt
    assert json.loads(outputs[0].read_text())["result"]["receipts"]
    assert "receipt" in outputs[1].read_text().splitlines()[0]
    assert "approxdp.receipts" in meta


def test_the_exact_diagnostics_are_there_only_on_request(
    run: Any, data_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "d.json"
    result = run("release", "mean", data_csv, "x", "--bounds", "0", "100", "-e", "1", "-d",
                 "1e-6", "--seed", "5", "--exact-diagnostics", "-o", out)
    assert result.exit_code == 0, result.stderr
    diagnostics = json.loads(out.read_text())["result"]["diagnostics"]
    assert diagnostics == {"label": "exact, not private — for the data holder",
                           "rows": {"read": N, "used": N, "dropped": 0}, "casts": {},
                           "notes": []}
    assert "exact, not private — for the data holder" in result.stdout
    with pytest.raises(AssertionError):  # the check above can fail
        assert_no_exact_count(out.read_text(), "with --exact-diagnostics")


def _spec(path: Path, data: Path) -> Path:
    path.write_text(f'''file = "{data}"
epsilon = 1.0
delta = 1e-6

[[query]]
kind = "count"

[[query]]
kind = "mean"
column = "x"
bounds = [0, 100]
by = ["g"]
domain = {{g = ["a", "b", "c"]}}

[[query]]
kind = "histogram"
columns = ["g"]
''', encoding="utf-8")
    return path


def test_batch_outputs_hold_no_exact_count(run: Any, data_csv: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path / "spec.toml", data_csv)
    out = tmp_path / "batch.json"
    result = run("release", "batch", spec, "--seed", "3", "--json", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert_no_exact_count(result.stdout, "batch --json")
    assert_no_exact_count(out.read_text(), "batch --output")
    shown = run("release", "batch", spec, "--seed", "3")
    assert_no_exact_count(shown.stdout, "batch terminal")


def _texts(results: Iterable[Any]) -> Iterable[tuple[str, str]]:
    for r in results:
        yield f"{r.label} to_dict", json.dumps(r.to_dict(), default=str)
        yield f"{r.label} explain", r.explain()
        yield f"{r.label} str", str(r)
        arrow = r.to_arrow()
        yield f"{r.label} to_arrow", json.dumps(arrow.to_pylist(), default=str)
        yield f"{r.label} to_arrow metadata", str(arrow.schema.metadata)


def test_the_python_views_hold_no_exact_count(data_csv: Path, tmp_path: Path) -> None:
    # a basic share pays partition selection's δ after the first spend (the default filter)
    t = PrivateTable(str(data_csv), accountant=PrivacyAccountant((30.0, 1e-5),
                                                                 basic_share=(1.0, 5e-6)),
                     seed=9, casts={"x": "double"})
    results = [
        t.count(epsilon=1, delta=1e-6),
        t.mean("x", (0, 100), epsilon=1, delta=1e-6, by=["g"], domain={"g": ["a", "b", "c"]}),
        t.histogram("g", epsilon=1, delta=1e-6),
        t.quantiles("x", [0.1, 0.5], (0, 100), epsilon=1, delta=1e-6),
        t.variance("x", (0, 100), epsilon=1, delta=1e-6),
        t.estimate_bounds("x", epsilon=1, delta=1e-6),
        t.mean("x", "private", epsilon=2, delta=1e-6),
    ]
    for where, text in _texts(results):
        assert_no_exact_count(text, where)
    assert all(r.diagnostics.rows["read"] == N for r in results[:2])
    assert f"read = {N}" in results[0].explain(exact_diagnostics=True)
    assert results[0].to_dict(exact_diagnostics=True)["diagnostics"]["rows"]["used"] == N


def test_a_large_domain_release_writes_no_exact_count(tmp_path: Path) -> None:
    """Cells kept by the engine, written as Parquet under ``output_dir``."""
    rng = np.random.default_rng(4)
    data = pa.table({"k": rng.integers(0, 50, N)})
    acc = PrivacyAccountant((5.0, 1e-5), ledger=tmp_path / "l.sqlite")
    t = PrivateTable(data, accountant=acc, large_domain_cells=10,
                     output_dir=str(tmp_path / "cells"))
    r = t.histogram("k", epsilon=1, delta=1e-6, domain={"k": list(range(50))})
    assert r.table is not None and r.table.path is not None and r.receipts
    written = pq.read_table(r.table.path)
    assert sorted(written.column_names) == ["ci_high", "ci_low", "k", "std", "value"]
    assert_no_exact_count(json.dumps(written.to_pylist()), "large-domain Parquet")
    assert_no_exact_count(json.dumps(r.to_dict(), default=str), "large-domain to_dict")


def test_the_demo_holds_no_exact_count_of_adult(run: Any) -> None:
    """The same rule on the bundled data: 45,222 complete records, never written."""
    result = run("demo", "--seed", "2", "--json")
    assert result.exit_code == 0, result.stderr
    shown = run("demo", "--seed", "2")
    assert shown.exit_code == 0, shown.stderr
    for text in (result.stdout, shown.stdout):
        assert_no_exact_count(text, "demo", 45222)
