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
import pyarrow.csv as pacsv
import pytest

RESULT_KEYS = {
    "label", "kind", "key_columns", "cells", "level", "mechanism", "method", "sigma",
    "sensitivity", "effective_sensitivity", "epsilon", "delta", "threshold", "receipts",
    "comparisons", "extra", "notes", "secure",
}
BUDGET_KEYS = {"budget_epsilon", "budget_delta", "spent_epsilon", "spent_delta",
               "remaining_epsilon", "remaining_delta", "count", "rule", "adaptivity",
               "certified_by", "spent_meaning", "over_budget", "refusing", "room", "room_used",
               "basic_share", "basic_share_used", "open_commitments", "rdp_share", "sub_budgets",
               "sub_budget_pairs", "rdp_share_pair", "rdp_orders", "rdp_budgets", "rdp_used",
               "rdp_used_fraction"}


def test_count_json_shape_and_value(
    run_json: Any, people_csv: Path, people_table: pa.Table
) -> None:
    data = run_json("release", "count", people_csv, "-e", "0.5", "-d", "1e-6", "--seed", "1")
    assert set(data) == {"command", "schema_version", "file", "query", "result", "budget",
                         "ledger", "ledger_sub"}
    assert data["query"] == {"kind": "count", "columns": [], "by": [], "bounds": None,
                             "domain": None, "derive": {}, "where": []}
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
    assert set(shown) == {"command", "schema_version", "file", "budget", "adaptivity",
                          "composition", "legacy_composition", "basic_share",
                          "sub_budget_of", "spends",
                          "commitments", "status", "explain", "warnings"}
    assert shown["budget"] == {"epsilon": 1.0, "delta": 1e-5}
    assert (shown["adaptivity"], shown["composition"]) == ("full", "gdp")
    assert "filter 'gdp'" in shown["status"]["certified_by"] and shown["warnings"] == []
    assert [s["label"] for s in shown["spends"]] == ["release: count", "release: sum(income)"]
    assert set(shown["spends"][0]) == {"index", "timestamp", "time", "label", "event",
                                       "summary", "rule", "delta_after", "seeded", "receipt",
                                       "epsilon_alone", "epsilon_so_far", "so_far_is",
                                       "at_delta"}
    # ε read at the budget's δ: each spend alone, and the history up to it
    alone = [s["epsilon_alone"] for s in shown["spends"]]
    so_far = [s["epsilon_so_far"] for s in shown["spends"]]
    assert so_far[0] == pytest.approx(alone[0]) and alone[1] < so_far[1] < sum(alone)
    assert so_far[1] == pytest.approx(shown["status"]["spent_epsilon"])
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
    one_line_error(result, 2, "--composition basic differs from the composition 'gdp'")
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
        (["count", "{csv}", "--output", "{dir}/out.txt"],
         ["--output must end in .json, .csv or .parquet"]),
        (["count", "{csv}", "--output", "{dir}/no/such/out.json"], ["does not exist"]),
        (["count", "{csv}", "--ledger", "{dir}/new.sqlite"], ["--budget EPSILON DELTA"]),
        (["count", "{csv}", "--privacy-unit", "uid", "--max-partitions", "0"],
         ["--max-partitions must be >= 1"]),
        (["count", "{csv}", "--level", "1.5"], ["'--level': 1.5 is not in the range 0<x<1"]),
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


def _dirty_csv(path: Path, bad_at: int, n: int = 3000) -> Path:
    """A plain (unquoted) CSV of n rows whose amount at row ``bad_at`` is 'oops'."""
    amounts = [f"{x:.2f}" for x in np.random.default_rng(1).uniform(0, 100, n)]
    amounts[bad_at] = "oops"
    lines = [f"{'ab'[i % 2]},{a}" for i, a in enumerate(amounts)]
    path.write_text("g,amount\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("bad_at", "n"), [(5, 3000), (60_000, 60_001)])
def test_dirty_numeric_column_names_the_value_and_the_cast(
    run: Any, run_json: Any, one_line_error: Any, tmp_path: Path, bad_at: int, n: int
) -> None:
    """Near the top: "must be numeric for aggregation 'm0'"; deep: a raw DuckDB "Conversion
    Error: CSV Error on Line: 60002". Now: the column, the value, and --cast."""
    path = _dirty_csv(tmp_path / "tx.csv", bad_at, n)
    ledger = tmp_path / "l.sqlite"
    line = one_line_error(
        run("release", "mean", path, "amount", "--bounds", "0", "100", "-e", "0.5", "-d",
            "1e-7", "--ledger", ledger, "--budget", "1", "1e-6"),
        2, "mean(amount): column 'amount' must be numeric", "e.g. ['oops']",
        "--cast amount=double")
    assert "m0" not in line and "casts=" not in line and "Conversion Error" not in line
    assert run_json("ledger", ledger)["status"]["count"] == 0
    data = run_json("release", "mean", path, "amount", "--bounds", "0", "100", "-e", "0.5",
                    "-d", "1e-7", "--cast", "amount=double")
    assert "diagnostics" not in data["result"]  # exact: only on request, and labelled
    assert not any("not numbers" in note for note in data["result"]["notes"])
    data = run_json("release", "mean", path, "amount", "--bounds", "0", "100", "-e", "0.5",
                    "-d", "1e-7", "--cast", "amount=double", "--exact-diagnostics")
    diagnostics = data["result"]["diagnostics"]
    assert diagnostics["label"] == "exact, not private — for the data holder"
    assert diagnostics["casts"] == {"amount": {"count": 1, "examples": ["oops"]}}
    assert diagnostics["rows"]["read"] == n


def test_cast_errors_refuse_a_dirty_column_before_the_spend(
    run: Any, run_json: Any, one_line_error: Any, tmp_path: Path
) -> None:
    path = _dirty_csv(tmp_path / "tx.csv", 5, 300)
    ledger = tmp_path / "l.sqlite"
    line = one_line_error(
        run("release", "mean", path, "amount", "--bounds", "0", "100", "-e", "0.5", "-d",
            "1e-7", "--cast", "amount=double", "--cast-errors", "error", "--ledger", ledger,
            "--budget", "1", "1e-6"),
        2, "column 'amount' has values that are not numbers", "--cast-errors drop")
    assert "oops" not in line and "cast_errors" not in line
    assert run_json("ledger", ledger)["status"]["count"] == 0
    data = run_json("release", "median", path, "amount", "--bounds", "0", "100", "-e", "0.5",
                    "-d", "1e-7", "--cast", "amount=double", "--cast-errors", "drop")
    assert data["result"]["label"] == "median(amount)"


def test_header_only_csv_is_an_empty_table(run: Any, one_line_error: Any,
                                           tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("id,amount\n", encoding="utf-8")
    one_line_error(run("release", "mean", path, "amount", "--bounds", "0", "1", "-e", "0.5",
                       "-d", "1e-7"), 2, "the table is empty")


def test_messages_use_the_options_of_the_command_line(
    run: Any, one_line_error: Any, people_csv: Path
) -> None:
    """-e -1 said "budget epsilon must be in [0, inf)" with no --budget given; hints read
    "pass outside_domain='drop'". Options are now checked by Click under their own names, and
    the library's Python spellings are reworded."""
    line = one_line_error(run("release", "count", people_csv, "-e", "-1", "-d", "1e-6"), 2,
                          "'-e' / '--epsilon': -1.0 is not in the range 0<x<inf")
    assert "budget" not in line
    one_line_error(run("release", "count", people_csv, "-e", "1", "-d", "1.5"), 2,
                   "'-d' / '--delta': 1.5 is not in the range 0<x<1")
    one_line_error(run("release", "count", people_csv, "-e", "1", "-d", "1e-6", "--budget",
                       "1", "2"), 2, "'--budget': 2.0 is not in the range 0<=x<1")
    one_line_error(run("release", "sum", people_csv, "age", "--bounds", "0", "inf", "-e", "1",
                       "-d", "1e-6"), 2, "'--bounds': inf is not in the range")
    line = one_line_error(run("release", "histogram", people_csv, "sex", "--domain", "sex=F",
                              "-e", "1", "-d", "1e-6"), 2, "--outside-domain drop",
                          "--domain sex=")
    assert "outside_domain" not in line and "domain['" not in line
    line = one_line_error(run("release", "count", people_csv, "-e", "20", "-d", "1e-6",
                              "--method", "dwork-2006"), 2, "use --method optimal")
    assert "method='" not in line
    one_line_error(run("release", "count", people_csv, "--cast", "age=int", "-e", "1", "-d",
                       "1e-6"), 2, "--cast must look like COLUMN=double")


def test_cli_wording_rewrites_python_spellings() -> None:
    from approxdp.cli.output import cli_wording

    assert cli_wording("or pass outside_domain='drop' (exact)") == (
        "or pass --outside-domain drop (exact)")
    assert cli_wording("casts={'amount': 'double'} turns") == "--cast amount=double turns"
    assert cli_wording("max_partitions must be >= 1, got max_partitions=0") == (
        "--max-partitions must be >= 1, got --max-partitions=0")
    assert cli_wording("fails above epsilon=9.7") == "fails above epsilon=9.7"  # not an option


def test_mean_empty_cells_null_keys_and_one_format_per_column(
    run: Any, run_json: Any, tmp_path: Path
) -> None:
    """Empty cells printed like results (200.0000 / 0 / 100.0000, std 100); formats mixed in
    one column; a NULL key written as an empty string in the CSV."""
    path = tmp_path / "m.csv"
    pacsv.write_csv(pa.table({"g": ["a"] * 400 + [None] * 400,
                              "x": np.linspace(0, 200, 800)}), path)
    args = ["release", "mean", path, "x", "--bounds", "0", "200", "--by", "g", "--domain",
            "g=a,b,NULL", "-e", "1", "-d", "1e-6", "--seed", "3"]
    data = run_json(*args)
    cells = {c["key"]["g"]: c for c in data["result"]["cells"]}
    assert cells["a"]["informative"] is True and cells[None]["informative"] is True
    assert cells["b"]["informative"] is False  # no rows: midpoint or bound, CI = [0, 200]
    table = run(*args).stdout
    assert "†" in table and "no information" in table
    rows = [line.split("│") for line in table.splitlines() if line.count("│") == 5]
    values = [r[2].strip().rstrip(" †") for r in rows if r[1].strip() in ("a", "b", "NULL")]
    decimals = {len(v.split(".")[1]) if "." in v else 0 for v in values}
    assert len(values) == 3 and len(decimals) == 1, values
    out = tmp_path / "out.csv"
    assert run(*args, "-o", out).exit_code == 0
    with open(out, newline="", encoding="utf-8") as fh:
        written = list(csv.DictReader(fh))
    assert [r["g"] for r in written] == ["a", "b", "NULL"]
    assert [r["informative"] for r in written] == ["true", "false", "true"]


def test_bounds_private_and_the_bounds_kind_from_the_command_line(
    run_json: Any, run: Any, one_line_error: Any, people_csv: Path, tmp_path: Path,
) -> None:
    """Issue 24 §3: every clamped kind takes --bounds private (two spends, the split in its
    notes), and private bounds are a kind of their own."""
    ledger = tmp_path / "l.sqlite"
    common = ("-e", "1", "-d", "1e-6", "--seed", "2", "--allow-seeded-ledger", "--ledger",
              str(ledger), "--budget", "20", "1e-4")
    for kind, extra in (("median", ()), ("quantiles", ("--q", "0.5")), ("variance", ()),
                        ("std", ()), ("mean", ()), ("sum", ())):
        data = run_json("release", kind, people_csv, "age", "--bounds", "private", *extra,
                        *common)
        assert data["query"]["bounds"] == "private"
        assert "bounds='private'" in data["result"]["notes"][-1], kind
    assert run_json("ledger", ledger)["status"]["count"] == 12  # two spends each
    share = run_json("release", "median", people_csv, "age", "--bounds", "private",
                     "--bounds-share", "0.5", *common)
    assert "bounds_share=0.5" in share["result"]["notes"][-1]
    bounds = run_json("release", "bounds", people_csv, "age", *common)["result"]
    assert bounds["kind"] == "bounds" and [c["key"]["bound"] for c in bounds["cells"]] == [
        "low", "high"]
    one_line_error(run("release", "count", people_csv, "--bounds", "private", *common), 2,
                   "count takes no --bounds")
    one_line_error(run("release", "bounds", people_csv, "age", "--bounds", "0", "1", *common),
                   2, "bounds takes no --bounds")
    one_line_error(run("release", "median", people_csv, "age", "--bounds", "0", "100",
                       "--bounds-share", "0.5", *common), 2, "--bounds-share goes with")
    one_line_error(run("release", "median", people_csv, "age", "--bounds", "1", *common), 2,
                   "'--bounds'")


def test_basic_share_lets_a_ledger_pay_for_partition_selection_later(
    run: Any, run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    """Partition selection's δ is covered by no Gaussian: after a ledger's first spend the
    default filter admits it only from a basic share fixed when the ledger was created."""
    plain, shared = str(tmp_path / "plain.sqlite"), str(tmp_path / "shared.sqlite")
    for ledger, share in ((plain, ()), (shared, ("--basic-share", "0", "1e-6"))):
        run_json("release", "count", people_csv, "-e", "0.2", "-d", "1e-7", "--ledger", ledger,
                 "--budget", "2", "1e-5", *share)
    refused = run("release", "histogram", people_csv, "sex", "-e", "0.2", "-d", "1e-7",
                  "--ledger", plain)
    assert refused.exit_code == 3 and "basic share" in refused.output
    made = run_json("release", "histogram", people_csv, "sex", "-e", "0.2", "-d", "1e-7",
                    "--ledger", shared)
    assert made["budget"]["count"] == 2
    other = run("release", "count", people_csv, "-e", "0.1", "-d", "1e-7", "--ledger", shared,
                "--basic-share", "0", "2e-6")
    assert other.exit_code != 0 and "--basic-share" in other.output
