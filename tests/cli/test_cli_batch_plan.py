"""``approxdp release batch QUERY_FILE`` (one jointly calibrated plan, one spend) and ``approxdp
plan QUERY_FILE`` (least ε for a target accuracy; reads no data, spends nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from approxdp import Count, Histogram, Mean, PrivateTable

QUERIES = """
file = "{file}"
epsilon = 1.0
delta = 1e-6

[[query]]
kind = "count"
half_width = 60

[[query]]
kind = "mean"
column = "age"
bounds = [18, 90]
by = ["sex"]
domain = {{sex = ["F", "M"]}}

[[query]]
kind = "histogram"
columns = ["sex"]
domain = {{sex = ["F", "M"]}}
weight = 2.0
"""


def _spec(tmp_path: Path, data: Path, suffix: str = ".toml") -> Path:
    spec = tmp_path / f"spec{suffix}"
    text = QUERIES.format(file=data.name)
    if suffix == ".json":
        import tomllib

        text = json.dumps(tomllib.loads(text))
    (tmp_path / data.name).write_bytes(data.read_bytes())
    spec.write_text(text, encoding="utf-8")
    return spec


def test_batch_is_one_plan_like_python_release(run_json: Any, people_parquet: Path,
                                               tmp_path: Path) -> None:
    data = run_json("release", "batch", _spec(tmp_path, people_parquet), "--seed", "4")
    assert data["command"] == "release batch"
    assert [r["kind"] for r in data["results"]] == ["count", "mean", "histogram"]
    assert data["budget"]["count"] == 1  # one spend for the whole batch
    table = PrivateTable(str(people_parquet), budget=(1.0, 1e-6), seed=4)
    expected = table.release(
        [Count(), Mean("age", (18, 90), ("sex",), {"sex": ["F", "M"]}),
         Histogram(("sex",), {"sex": ["F", "M"]})],
        epsilon=1.0, delta=1e-6, weights=[1.0, 1.0, 2.0])
    for got, want in zip(data["results"], expected, strict=True):
        np.testing.assert_allclose([c["value"] for c in got["cells"]], want.values)


def test_batch_from_json_with_a_ledger(run: Any, people_parquet: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, people_parquet, ".json")
    ledger = tmp_path / "budget.sqlite"
    out = tmp_path / "out.json"
    result = run("release", "batch", spec, "--ledger", ledger, "--budget", "2", "1e-5",
                 "--output", out)
    assert result.exit_code == 0, result.stderr
    assert "private count" in result.stdout and "Budget in ledger" in result.stdout
    assert len(json.loads(out.read_text())["results"]) == 3
    again = run("release", "batch", spec, "--ledger", ledger, "-e", "5")
    assert again.exit_code == 3  # over the ledger's budget: refused, nothing spent


def test_batch_errors_are_one_line(run: Any, one_line_error: Any, tmp_path: Path,
                                   people_parquet: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('file = "x.parquet"\nepsilon = 1\ndelta = 1e-6\n[[query]]\nkind = "mode"\n')
    one_line_error(run("release", "batch", bad), 2, "query 1: kind must be one of")
    bad.write_text('file = "x.parquet"\nepsilon = 1\ndelta = 1e-6\n[[query]]\nkind = "median"\n')
    one_line_error(run("release", "batch", bad), 2, 'a median needs column = "NAME"')
    bad.write_text("file = [")
    one_line_error(run("release", "batch", bad), 2, "not valid TOML")
    spec = _spec(tmp_path, people_parquet)
    one_line_error(run("release", "batch", spec, "age"), 2, "no COLUMNS")
    one_line_error(run("release", "count", spec), 2, "Missing option '-e' / '--epsilon'")


EVERY_STATISTIC = """
file = "{file}"
epsilon = 2.0
delta = 1e-6

[[query]]
kind = "count"

[[query]]
kind = "median"
column = "age"
bounds = [0, 100]
weight = 2

[[query]]
kind = "quantiles"
column = "age"
bounds = [0, 100]
qs = [0.1, 0.9]

[[query]]
kind = "variance"
column = "age"
bounds = [0, 100]

[[query]]
kind = "std"
column = "age"
bounds = [0, 100]

[[query]]
kind = "bounds"
column = "age"
"""


def test_every_statistic_in_one_batch_is_one_plan_with_stated_shares(
    run_json: Any, run: Any, one_line_error: Any, people_parquet: Path, tmp_path: Path,
) -> None:
    """Issue 24 §3: median, quantiles, variance, std and private bounds are batch kinds; the
    whole spec is one plan (one spend) and each entry states its share of it."""
    (tmp_path / people_parquet.name).write_bytes(people_parquet.read_bytes())
    spec = tmp_path / "all.toml"
    spec.write_text(EVERY_STATISTIC.format(file=people_parquet.name), encoding="utf-8")
    data = run_json("release", "batch", spec, "--seed", "3")
    assert [r["kind"] for r in data["results"]] == [
        "count", "quantiles", "quantiles", "variance", "std", "bounds"]
    assert data["budget"]["count"] == 1  # one spend for the whole spec
    shares = [r["share"] for r in data["results"]]
    assert shares == [1 / 7, 2 / 7, 1 / 7, 1 / 7, 1 / 7, 1 / 7]
    # the same plan through the API gives the same values (same seed)
    from approxdp.releases.kinds import RELEASE_KINDS, KindInputs

    table = PrivateTable(str(people_parquet), budget=(2.0, 1e-6), seed=3)
    age = KindInputs(columns=("age",), bounds=(0.0, 100.0))
    queries = [RELEASE_KINDS["count"].build(KindInputs()),
               RELEASE_KINDS["median"].build(age),
               RELEASE_KINDS["quantiles"].build(KindInputs(("age",), (0.0, 100.0),
                                                           qs=(0.1, 0.9))),
               RELEASE_KINDS["variance"].build(age), RELEASE_KINDS["std"].build(age),
               RELEASE_KINDS["bounds"].build(KindInputs(columns=("age",)))]
    expected = table.release(queries, epsilon=2.0, delta=1e-6,
                             weights=[1.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    for got, want in zip(data["results"], expected, strict=True):
        np.testing.assert_allclose([c["value"] for c in got["cells"]], want.values)
    shown = run("release", "batch", spec, "--seed", "3")
    assert shown.exit_code == 0 and "each query's share" in shown.stdout
    spec.write_text(EVERY_STATISTIC.format(file=people_parquet.name).replace(
        "bounds = [0, 100]\nweight = 2", 'bounds = "private"'), encoding="utf-8")
    one_line_error(run("release", "batch", spec), 2, "cannot be part of a plan",
                   "--bounds private")


def test_batch_casts_a_dirty_column_and_chooses_drop_or_error(
    run_json: Any, run: Any, one_line_error: Any, tmp_path: Path,
) -> None:
    """A text column with a few values that are not numbers: the spec casts it, and
    cast_errors says whether those values become missing (drop) or refuse the batch."""
    data = tmp_path / "dirty.csv"
    data.write_text("income\n" + "\n".join("n/a" if i % 40 == 0 else str(900 + 11 * i)
                                            for i in range(400)) + "\n", encoding="utf-8")
    spec = tmp_path / "dirty.toml"
    body = ('file = "dirty.csv"\nepsilon = 1.0\ndelta = 1e-6\ncasts = {{income = "double"}}\n'
            '{errors}[[query]]\nkind = "median"\ncolumn = "income"\nbounds = [0, 6000]\n'
            '[[query]]\nkind = "variance"\ncolumn = "income"\nbounds = [0, 6000]\n')
    spec.write_text(body.format(errors='cast_errors = "drop"\n'), encoding="utf-8")
    made = run_json("release", "batch", spec, "--seed", "1")
    assert [r["label"] for r in made["results"]] == ["median(income)", "variance(income)"]
    assert made["budget"]["count"] == 1
    spec.write_text(body.format(errors='cast_errors = "error"\n'), encoding="utf-8")
    line = one_line_error(run("release", "batch", spec), 2,
                          "column 'income' has values that are not numbers",
                          "--cast-errors drop")
    assert "n/a" not in line


def test_plan_meets_the_targets_and_spends_nothing(run_json: Any, people_parquet: Path,
                                                   tmp_path: Path) -> None:
    spec = _spec(tmp_path, people_parquet)
    data = run_json("plan", spec, "--half-width", "0.8", "--rows", "2000")
    plan = data["plan"]
    assert [q["target_half_width"] for q in plan["queries"]] == [60, 0.8, 0.8]
    assert all(q["half_width"] <= q["target_half_width"] for q in plan["queries"])
    back = run_json("plan", spec, "-e", str(plan["epsilon"]), "--rows", "2000")
    assert back["plan"]["epsilon"] == plan["epsilon"]


def test_plan_needs_a_target(run: Any, one_line_error: Any, people_parquet: Path,
                             tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('delta = 1e-6\n[[query]]\nkind = "histogram"\ncolumns = ["sex"]\n')
    one_line_error(run("plan", spec), 2, "give a target")
    result = run("plan", spec, "--rmse", "10")
    assert result.exit_code == 0 and "Least ε" in result.stdout


def test_median_quantiles_variance_and_std_from_the_command_line(
    run_json: Any, run: Any, one_line_error: Any, people_csv: Path
) -> None:
    common = ("--bounds", "0", "100", "-e", "1", "-d", "1e-6", "--seed", "2")
    median = run_json("release", "median", people_csv, "age", *common)["result"]
    assert median["kind"] == "quantiles" and len(median["cells"]) == 1
    quantiles = run_json("release", "quantiles", people_csv, "age", "--q", "0.1", "--q", "0.9",
                         *common)["result"]
    assert [c["key"] for c in quantiles["cells"]] == [{"quantile": 0.1}, {"quantile": 0.9}]
    for kind in ("variance", "std"):
        cell = run_json("release", kind, people_csv, "age", *common)["result"]["cells"][0]
        assert cell["ci_low"] <= cell["value"] <= cell["ci_high"]
    shown = run("release", "median", people_csv, "age", *common)
    assert shown.exit_code == 0 and "median(age)" in shown.stdout
    one_line_error(run("release", "median", people_csv, "age", "-e", "1", "-d", "1e-6"), 2,
                   "--bounds")
    one_line_error(run("release", "mean", people_csv, "age", "--q", "0.5", *common), 2,
                   "--q is for quantiles only")


def test_tree_shape_from_the_command_line_and_a_batch_is_the_apis(
    run_json: Any, run: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    """Issue 23 §4: the not-informative note names a tree shape; --bins/--branching (and the
    keys bins/branching of a batch query) set it, and give exactly the API's release."""
    common = ("--bounds", "0", "100", "-e", "1", "-d", "1e-6", "--seed", "7")
    shape = ("--bins", "64", "--branching", "8")
    got = run_json("release", "quantiles", people_csv, "age", "--q", "0.1", "--q", "0.9",
                   *shape, *common)
    want = PrivateTable(str(people_csv), budget=(1.0, 1e-6), seed=7).quantiles(
        "age", (0.1, 0.9), (0.0, 100.0), epsilon=1.0, delta=1e-6, bins=64, branching=8)
    assert [c["value"] for c in got["result"]["cells"]] == want.values.tolist()
    assert [c["ci_low"] for c in got["result"]["cells"]] == want.ci_low.tolist()
    assert got["query"]["bins"] == 64 and got["query"]["branching"] == 8
    assert any("64 leaves" in n and "branching 8" in n for n in got["result"]["notes"])
    default = run_json("release", "quantiles", people_csv, "age", "--q", "0.1", "--q", "0.9",
                       *common)
    assert [c["value"] for c in default["result"]["cells"]] != want.values.tolist()
    median = run_json("release", "median", people_csv, "age", "--bins", "16", "--branching",
                      "16", *common)["result"]
    want_median = PrivateTable(str(people_csv), budget=(1.0, 1e-6), seed=7).median(
        "age", (0.0, 100.0), epsilon=1.0, delta=1e-6, bins=16, branching=16)
    assert median["cells"][0]["value"] == float(want_median.values[0])

    (tmp_path / people_csv.name).write_bytes(people_csv.read_bytes())
    spec = tmp_path / "tree.toml"
    spec.write_text(f'file = "{people_csv.name}"\nepsilon = 1.0\ndelta = 1e-6\n[[query]]\n'
                    'kind = "quantiles"\ncolumn = "age"\nbounds = [0, 100]\nqs = [0.1, 0.9]\n'
                    'bins = 64\nbranching = 8\n')
    batch = run_json("release", "batch", spec, "--seed", "7")
    assert [c["value"] for c in batch["results"][0]["cells"]] == want.values.tolist()

    one_line_error(run("release", "quantiles", people_csv, "age", "--bins", "100",
                       "--branching", "8", *common), 2, "--bins/--branching",
                   "bins must be a power of branching=8 in [8, 65536], got bins=100")
    one_line_error(run("release", "median", people_csv, "age", "--bins", "4096",
                       "--branching", "1", *common), 2,
                   "branching must be in [2, 65536], got branching=1")
    one_line_error(run("release", "median", people_csv, "age", "--bins", str(2**17),
                       "--branching", "2", *common), 2, "got bins=131072")
    one_line_error(run("release", "mean", people_csv, "age", "--bins", "64", *common), 2,
                   "--bins and --branching are for median, quantiles only")
    one_line_error(run("release", "batch", spec, "--bins", "64"), 2, "keys bins and branching")
    spec.write_text(spec.read_text().replace("bins = 64", "bins = 60"))
    one_line_error(run("release", "batch", spec, "--seed", "7"), 2,
                   "query 1: bins must be a power of branching=8", "got bins=60")
    spec.write_text(spec.read_text().replace("bins = 60", 'bins = "64"'))
    one_line_error(run("release", "batch", spec, "--seed", "7"), 2,
                   "query 1: bins must be an integer")
    spec.write_text(spec.read_text().replace('kind = "quantiles"', 'kind = "variance"')
                    .replace("qs = [0.1, 0.9]\n", ""))
    one_line_error(run("release", "batch", spec, "--seed", "7"), 2,
                   "a variance takes no bins or branching")
