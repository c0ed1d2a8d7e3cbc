"""``release`` and ``ledger``: private answers from files, the ledger across runs, refusals.

Noise is seeded (``--seed``), so every run is deterministic. The checks on released values
allow 6 noise standard deviations: over a fresh seed they would fail with probability
about 2e-9 each.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

RESULT_KEYS = {
    "label", "kind", "key_columns", "cells", "level", "mechanism", "method", "sigma",
    "sensitivity", "effective_sensitivity", "epsilon", "delta", "threshold", "rows",
    "comparisons", "extra", "notes", "secure",
}
BUDGET_KEYS = {"budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta",
               "remaining_epsilon", "remaining_delta", "count", "rule"}


def test_count_json_shape_and_value(
    run_json: Any, people_csv: Path, people_table: pa.Table
) -> None:
    data = run_json("release", "count", people_csv, "-e", "0.5", "-d", "1e-6", "--seed", "1")
    assert set(data) == {"command", "schema_version", "file", "query", "result", "budget",
                         "ledger"}
    assert data["query"] == {"kind": "count", "columns": [], "by": [], "bounds": None,
                             "domain": None}
    result = data["result"]
    assert set(result) == RESULT_KEYS
    (cell,) = result["cells"]
    assert set(cell) == {"key", "value", "std", "ci_low", "ci_high", "informative"}
    assert cell["key"] == {} and cell["informative"] is True
    assert result["secure"] is False  # --seed: a simulation, and the JSON says so
    assert any("NOT private" in note for note in result["notes"])
    assert abs(cell["value"] - people_table.num_rows) < 6 * cell["std"]
    assert cell["ci_low"] < cell["value"] < cell["ci_high"]
    assert result["sensitivity"]["l2"] == 1.0
    assert {c["method"] for c in result["comparisons"]} >= {"optimal", "dwork-roth-2014"}
    assert set(data["budget"]) == BUDGET_KEYS
    assert data["budget"]["budget_epsilon"] == 0.5  # no --budget: the release's own
    assert data["ledger"] is None


def test_histogram_with_domain_writes_csv(
    run: Any, people_csv: Path, people_table: pa.Table, tmp_path: Path
) -> None:
    out = tmp_path / "sex.csv"
    result = run("release", "histogram", people_csv, "sex", "--domain", "sex=F,M,X",
                 "-e", "1", "-d", "1e-6", "--seed", "2", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "histogram(sex) — histogram: SEEDED SIMULATION, NOT private" in result.stdout
    assert "remaining" in result.stdout
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["sex"] for r in rows] == ["F", "M", "X"]  # every declared cell, empty ones too
    assert {r["secure"] for r in rows} == {"false"}  # the file says it is NOT private
    truth = {s: int(np.sum(np.asarray(people_table["sex"]) == s)) for s in ("F", "M", "X")}
    for r in rows:
        assert abs(float(r["value"]) - truth[r["sex"]]) < 6 * float(r["std"])


def test_mean_from_parquet_json_output_file(
    run: Any, people_parquet: Path, people_table: pa.Table, tmp_path: Path
) -> None:
    out = tmp_path / "mean.json"
    result = run("release", "mean", people_parquet, "age", "--bounds", "18", "89", "--by",
                 "sex", "--domain", "sex=F,M", "-e", "1", "-d", "1e-6", "--seed", "3",
                 "-o", out, "--json")
    assert result.exit_code == 0, result.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(result.stdout)
    cells = written["result"]["cells"]
    assert [c["key"] for c in cells] == [{"sex": "F"}, {"sex": "M"}]
    ages = np.asarray(people_table["age"])
    sexes = np.asarray(people_table["sex"])
    for c in cells:
        truth = float(ages[sexes == c["key"]["sex"]].mean())
        assert abs(c["value"] - truth) < 6 * c["std"]
        assert c["ci_low"] < c["value"] < c["ci_high"]


def test_numeric_domain_values_are_typed_like_the_column(run_json: Any, tmp_path: Path) -> None:
    path = tmp_path / "grades.csv"
    path.write_text("grade\n" + "\n".join(["1"] * 50 + ["2"] * 30) + "\n", encoding="utf-8")
    data = run_json("release", "histogram", path, "grade", "--domain", "grade=1,2,3",
                    "-e", "1", "-d", "1e-6", "--seed", "4")
    keys = [c["key"]["grade"] for c in data["result"]["cells"]]
    assert keys == [1, 2, 3]


def test_ledger_keeps_the_budget_across_runs(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "budget.sqlite"
    first = run_json("release", "count", people_csv, "-e", "0.4", "-d", "1e-6",
                     "--ledger", ledger, "--budget", "1", "1e-5")
    assert first["ledger"] == str(ledger) and first["budget"]["count"] == 1
    # The second run finds the budget in the ledger file: no --budget needed.
    second = run_json("release", "sum", people_csv, "income", "--bounds", "0", "100000",
                      "-e", "0.4", "-d", "1e-6", "--ledger", ledger)
    assert second["budget"]["count"] == 2
    shown = run_json("ledger", ledger)
    assert set(shown) == {"command", "schema_version", "file", "budget", "composition",
                          "spends", "status"}
    assert shown["budget"] == {"epsilon": 1.0, "delta": 1e-5}
    assert shown["composition"] == "auto"
    assert [s["label"] for s in shown["spends"]] == ["release: count", "release: sum(income)"]
    assert set(shown["spends"][0]) == {"index", "timestamp", "time", "label", "event",
                                       "summary", "rule", "delta_after"}
    assert shown["status"] == second["budget"]

    # A release the budget cannot pay for: exit 3, one line, and nothing is spent.
    refused = run("release", "count", people_csv, "-e", "3", "-d", "1e-6", "--ledger", ledger)
    one_line_error(refused, 3, "privacy budget exceeded", "nothing was spent")
    assert refused.stdout == ""
    # A release that fails on its input: exit 2, and nothing is spent either.
    misspelled = run("release", "sum", people_csv, "incme", "--bounds", "0", "1",
                     "-e", "0.1", "-d", "1e-7", "--ledger", ledger)
    one_line_error(misspelled, 2, "'incme'", "did you mean 'income'")
    after = run_json("ledger", ledger)
    assert after["spends"] == shown["spends"] and after["status"] == shown["status"]

    table = run("ledger", ledger)
    assert table.exit_code == 0
    assert "release: sum(income)" in table.stdout and "remaining" in table.stdout


def test_ledger_refuses_another_budget(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "b.sqlite"
    run_json("release", "count", people_csv, "-e", "0.1", "-d", "1e-7", "--ledger", ledger,
             "--budget", "1", "1e-5")
    result = run("release", "count", people_csv, "-e", "0.1", "-d", "1e-7", "--ledger", ledger,
                 "--budget", "2", "1e-5")
    one_line_error(result, 2, "--budget 2 1e-05 differs from the budget (1, 1e-05) stored",
                   "leave out --budget")
    # what --budget's help promises: the stored budget is kept, the same one may be repeated
    for same in ([], ["--budget", "1", "1e-5"]):
        data = run_json("release", "count", people_csv, "-e", "0.1", "-d", "1e-7",
                        "--ledger", ledger, *same)
        assert (data["budget"]["budget_epsilon"], data["budget"]["budget_delta"]) == (1, 1e-5)
    help_text = " ".join(run("release", "--help").stdout.split())
    assert "a different one is refused" in help_text
    result = run("release", "count", people_csv, "-e", "0.1", "-d", "1e-7", "--ledger", ledger,
                 "--composition", "basic")
    one_line_error(result, 2, "--composition basic differs from the rule 'auto'")
    assert run_json("ledger", ledger)["status"]["count"] == 3


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["count", "{csv}", "age"], ["count takes no COLUMNS"]),
        (["sum", "{csv}", "income"], ["needs --bounds LOW HIGH"]),
        (["mean", "{csv}", "age", "sex", "--bounds", "0", "1"], ["exactly one value COLUMN"]),
        (["histogram", "{csv}"], ["at least one COLUMN"]),
        (["sum", "{csv}", "age", "--bounds", "5", "1"], ["low <= high"]),
        (["sum", "{csv}", "sex", "--bounds", "0", "1"], ["'sex' must be numeric"]),
        (["histogram", "{csv}", "sex", "--domain", "sex=F"], ["outside the declared domain"]),
        (["histogram", "{csv}", "sex", "--domain", "sex"], ["COLUMN=VALUE1,VALUE2"]),
        (["histogram", "{csv}", "age", "--domain", "age=1,x"], ["'x'", "not a number"]),
        (["histogram", "{csv}", "sex", "--domain", "sexx=F,M"], ["'sexx' not found"]),
        (["count", "{dir}/missing.csv"], ["data file not found"]),
        (["count", "{dir}/bad.parquet"], ["cannot read", "bad.parquet"]),
        (["count", "{dir}/data.xlsx"], ["cannot tell the format"]),
        (["count", "{csv}", "--output", "{dir}/out.txt"], ["--output must end in .json or .csv"]),
        (["count", "{csv}", "--output", "{dir}/no/such/out.json"], ["does not exist"]),
        (["count", "{csv}", "--ledger", "{dir}/new.sqlite"], ["--budget EPSILON DELTA"]),
        (["count", "{csv}", "--privacy-unit", "uid", "--max-partitions", "0"],
         ["--max-partitions must be >= 1"]),
        (["count", "{csv}", "--level", "1.5"], ["level"]),
    ],
)
def test_bad_release_input(
    run: Any, one_line_error: Any, people_csv: Path, tmp_path: Path, args: list[str],
    fragments: list[str],
) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"\x00garbage")
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    argv = [a.format(csv=people_csv, dir=tmp_path) for a in args]
    result = run("release", *argv, "-e", "0.5", "-d", "1e-6")
    one_line_error(result, 2, *fragments)
    assert not (tmp_path / "new.sqlite").exists()


def test_ledger_command_errors(run: Any, one_line_error: Any, people_csv: Path,
                               tmp_path: Path) -> None:
    missing = tmp_path / "none.sqlite"
    one_line_error(run("ledger", missing), 2, "ledger file not found")
    assert not missing.exists()  # looking at a ledger never creates one
    one_line_error(run("ledger", people_csv), 2, "not a SQLite file")
