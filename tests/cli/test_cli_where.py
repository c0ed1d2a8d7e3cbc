"""``--where`` and ``--derive`` on ``approxdp release`` (every kind of the registry) and
``where``/``derive`` in ``release batch`` specs, on the bundled Adult data: the same results
as the API's ``PrivateTable.with_column``/``filter`` for the same seed, on DuckDB and Spark;
expressions outside the language refused in one line, before anything is spent."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from approxdp import Mean, PrivateTable, Quantiles
from approxdp.cli.row_options import parse_derives
from approxdp.data import load_adult
from approxdp.errors import InvalidParameterError
from approxdp.releases.kinds import RELEASE_KINDS, KindInputs

EPS, DELTA = 1.0, 1e-6
WOMEN_OVER_30 = ("sex = 'Female'", "age > 30")
RACES = ("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Adult data (45,222 complete rows) as a CSV file."""
    path = tmp_path_factory.mktemp("adult") / "adult.csv"
    pacsv.write_csv(load_adult(), path)
    return path


@pytest.fixture(scope="module")
def adult_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same data as Parquet (the Spark engine reads it with its types)."""
    path = tmp_path_factory.mktemp("adult") / "adult.parquet"
    pq.write_table(load_adult(), path)
    return path


def _where_args(conditions: tuple[str, ...]) -> list[str]:
    return [arg for c in conditions for arg in ("--where", c)]


def _cells(result: dict[str, Any]) -> list[tuple[Any, float]]:
    return [(tuple(c["key"].values()), c["value"]) for c in result["cells"]]


def _api_cells(result: Any) -> list[tuple[Any, float]]:
    values = result.values.tolist()
    keys = ([tuple(k) for k in result.keys] if len(result.keys) == len(values)
            else [(i,) for i in range(len(values))])
    return list(zip(keys, values, strict=True))


#: For each kind of the registry: its command-line arguments and the API's inputs.
KIND_CASES: dict[str, tuple[list[str], KindInputs]] = {
    "count": ([], KindInputs()),
    "sum": (["hours-per-week", "--bounds", "0", "100"],
            KindInputs(columns=("hours-per-week",), bounds=(0.0, 100.0))),
    "mean": (["hours-per-week", "--bounds", "0", "100"],
             KindInputs(columns=("hours-per-week",), bounds=(0.0, 100.0))),
    "histogram": (["race", "--domain", f"race={','.join(RACES)}"],
                  KindInputs(columns=("race",), domain={"race": RACES})),
    "median": (["age", "--bounds", "0", "100"],
               KindInputs(columns=("age",), bounds=(0.0, 100.0))),
    "quantiles": (["age", "--bounds", "0", "100", "--q", "0.1", "--q", "0.9"],
                  KindInputs(columns=("age",), bounds=(0.0, 100.0), qs=(0.1, 0.9))),
    "variance": (["hours-per-week", "--bounds", "0", "100"],
                 KindInputs(columns=("hours-per-week",), bounds=(0.0, 100.0))),
    "std": (["hours-per-week", "--bounds", "0", "100"],
            KindInputs(columns=("hours-per-week",), bounds=(0.0, 100.0))),
    "bounds": (["capital-gain"], KindInputs(columns=("capital-gain",))),
}


def test_every_kind_of_the_registry_has_a_case() -> None:
    assert set(KIND_CASES) == set(RELEASE_KINDS)


@pytest.mark.parametrize("kind", list(RELEASE_KINDS))
def test_every_release_kind_takes_where_like_the_api(run_json: Any, adult_parquet: Path,
                                                     kind: str) -> None:
    args, inputs = KIND_CASES[kind]
    data = run_json("release", kind, adult_parquet, *args, *_where_args(WOMEN_OVER_30),
                    "-e", EPS, "-d", DELTA, "--seed", 11)
    table = PrivateTable(str(adult_parquet), budget=(EPS, DELTA), seed=11)
    for condition in WOMEN_OVER_30:
        table = table.filter(condition)
    expected = table.release_kind(kind, inputs, epsilon=EPS, delta=DELTA)
    assert _cells(data["result"]) == _api_cells(expected)
    assert data["query"]["where"] == list(WOMEN_OVER_30)
    assert data["budget"]["count"] == 1


def test_mean_hours_of_women_over_30_is_the_filtered_mean(run_json: Any,
                                                          adult_csv: Path) -> None:
    """The filter really applies: near the exact mean of the subset, far from the whole's."""
    data = run_json("release", "mean", adult_csv, "hours-per-week", "--bounds", "0", "100",
                    *_where_args(WOMEN_OVER_30), "-e", EPS, "-d", DELTA, "--seed", 3)
    adult = load_adult().to_pandas()
    subset = adult[(adult["sex"] == "Female") & (adult["age"] > 30)]["hours-per-week"]
    value = data["result"]["cells"][0]["value"]
    assert abs(value - subset.mean()) < 0.2
    assert abs(value - adult["hours-per-week"].mean()) > 2.0


def test_derive_then_where_like_the_api(run_json: Any, adult_parquet: Path) -> None:
    """Derived columns come first (in order, each may use the previous), then the filters,
    which may test them; a derived value column is clamped to --bounds."""
    derives = ['net="capital-gain" - "capital-loss"', "gain_k=net / 1000"]
    data = run_json("release", "mean", adult_parquet, "gain_k", "--bounds", "-5", "20",
                    *[a for d in derives for a in ("--derive", d)], "--where", "net <> 0",
                    "-e", EPS, "-d", DELTA, "--seed", 5)
    table = (PrivateTable(str(adult_parquet), budget=(EPS, DELTA), seed=5)
             .with_column("net", '"capital-gain" - "capital-loss"')
             .with_column("gain_k", "net / 1000").filter("net <> 0"))
    expected = table.mean("gain_k", (-5.0, 20.0), epsilon=EPS, delta=DELTA)
    assert _cells(data["result"]) == _api_cells(expected)
    assert data["query"]["derive"] == {"net": '"capital-gain" - "capital-loss"',
                                       "gain_k": "net / 1000"}


def test_derived_column_with_private_bounds(run_json: Any, adult_parquet: Path) -> None:
    data = run_json("release", "median", adult_parquet, "years_to_65", "--derive",
                    "years_to_65=65 - age", "--bounds", "private", "--where", "age < 65",
                    "-e", EPS, "-d", DELTA, "--seed", 9)
    table = (PrivateTable(str(adult_parquet), budget=(EPS, DELTA), seed=9)
             .with_column("years_to_65", "65 - age").filter("age < 65"))
    expected = table.median("years_to_65", "private", epsilon=EPS, delta=DELTA)
    assert _cells(data["result"]) == _api_cells(expected)
    assert data["budget"]["count"] == 2  # the bounds, then the median


@pytest.mark.parametrize("condition, fragment", [
    ("1=1; DROP TABLE x", "statement separators"),
    ("read_csv('/etc/passwd') IS NOT NULL", "read_csv() is not allowed"),
    ("age > (SELECT 1)", "subqueries are not allowed"),
    ("age IN (SELECT age FROM read_parquet('x.parquet'))", "not allowed"),
    ("age > 30 -- comment", "comment"),
    ("agee > 30", "did you mean 'age'"),
    ("age + 1", "true or false"),
])
def test_where_outside_the_language_is_one_line_and_spends_nothing(
        run: Any, one_line_error: Any, adult_parquet: Path, tmp_path: Path, condition: str,
        fragment: str) -> None:
    ledger = tmp_path / "budget.sqlite"
    result = run("release", "count", adult_parquet, "--where", condition, "-e", EPS, "-d", DELTA,
                 "--ledger", ledger, "--budget", 2, 1e-5)
    line = one_line_error(result, 2, "--where", fragment)
    assert line.startswith(f"error: --where {condition!r}")
    if ledger.exists():
        with sqlite3.connect(ledger) as db:
            assert db.execute("SELECT count(*) FROM spends").fetchone()[0] == 0


@pytest.mark.parametrize("spec, fragment", [
    ("net", "NAME=SQL"),
    ("=age + 1", "NAME=SQL"),
    ("net=", "NAME=SQL"),
    ("age >= 30", "NAME=SQL"),
])
def test_malformed_derive_is_refused(run: Any, one_line_error: Any, adult_parquet: Path,
                                     spec: str, fragment: str) -> None:
    result = run("release", "count", adult_parquet, "--derive", spec, "-e", EPS, "-d", DELTA)
    one_line_error(result, 2, "--derive", fragment)


def test_derive_errors_name_the_option(run: Any, one_line_error: Any, adult_parquet: Path) -> None:
    one_line_error(run("release", "count", adult_parquet, "--derive", "x=read_csv('a.csv')",
                       "-e", EPS, "-d", DELTA), 2, "--derive x=", "read_csv() is not allowed")
    one_line_error(run("release", "count", adult_parquet, "--derive", "age=age + 1",
                       "-e", EPS, "-d", DELTA), 2, "age")
    one_line_error(run("release", "count", adult_parquet, "--derive", "x=1", "--derive", "x=2",
                       "-e", EPS, "-d", DELTA), 2, "twice")


def test_parse_derives_keeps_order_and_splits_at_the_first_equals() -> None:
    assert parse_derives(["b=a = 1", " c = b "]) == (("b", "a = 1"), ("c", "b"))
    with pytest.raises(InvalidParameterError):
        parse_derives(["a<=1"])


BATCH = """
file = "{file}"
epsilon = 1.0
delta = 1e-6
{top}

[[query]]
kind = "mean"
column = "hours-per-week"
bounds = [0, 100]

[[query]]
kind = "quantiles"
column = "years_to_65"
bounds = [0, 50]
qs = [0.5]
"""


def _write_spec(tmp_path: Path, data: Path, top: str, suffix: str = ".toml") -> Path:
    text = BATCH.format(file=data, top=top)
    if suffix == ".json":
        import tomllib

        text = json.dumps(tomllib.loads(text))
    spec = tmp_path / f"spec{suffix}"
    spec.write_text(text, encoding="utf-8")
    return spec


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_batch_where_and_derive_are_one_plan_like_the_api(
        run_json: Any, adult_parquet: Path, tmp_path: Path, suffix: str) -> None:
    top = ("where = [\"sex = 'Female'\", \"age > 30\"]\n"
           "derive = {years_to_65 = \"65 - age\"}")
    data = run_json("release", "batch", _write_spec(tmp_path, adult_parquet, top, suffix),
                    "--seed", 8)
    assert data["budget"]["count"] == 1  # the whole spec: one plan, one spend
    assert data["where"] == list(WOMEN_OVER_30)
    assert data["derive"] == {"years_to_65": "65 - age"}
    table = PrivateTable(str(adult_parquet), budget=(EPS, DELTA), seed=8).with_column(
        "years_to_65", "65 - age")
    for condition in WOMEN_OVER_30:
        table = table.filter(condition)
    expected = table.release([Mean("hours-per-week", (0, 100)),
                              Quantiles("years_to_65", (0.5,), (0, 50))],
                             epsilon=EPS, delta=DELTA)
    assert [_cells(r) for r in data["results"]] == [_api_cells(r) for r in expected]


def test_batch_where_may_be_one_string(run_json: Any, adult_parquet: Path, tmp_path: Path) -> None:
    data = run_json("release", "batch", _write_spec(
        tmp_path, adult_parquet, "where = \"sex = 'Female' AND age > 30\"\n"
        "derive = {years_to_65 = \"65 - age\"}"), "--seed", 8)
    assert data["where"] == ["sex = 'Female' AND age > 30"]


@pytest.mark.parametrize("top, fragments", [
    ("where = \"age > (SELECT 1)\"\nderive = {years_to_65 = \"65 - age\"}",
     ("where", "subqueries are not allowed")),
    ("where = 3\nderive = {years_to_65 = \"65 - age\"}", ("where", "string")),
    ("derive = [\"65 - age\"]", ("derive", "mapping")),
    ("derive = {years_to_65 = \"read_csv('x')\"}", ("derive.years_to_65", "not allowed")),
    ("engine = \"pandas\"\nderive = {years_to_65 = \"65 - age\"}", ("engine", "duckdb")),
])
def test_batch_where_and_derive_errors(run: Any, one_line_error: Any, adult_parquet: Path,
                                       tmp_path: Path, top: str,
                                       fragments: tuple[str, ...]) -> None:
    result = run("release", "batch", _write_spec(tmp_path, adult_parquet, top))
    one_line_error(result, 2, *fragments)


def test_batch_takes_where_from_its_spec_only(run: Any, one_line_error: Any,
                                              adult_parquet: Path, tmp_path: Path) -> None:
    spec = _write_spec(tmp_path, adult_parquet, "derive = {years_to_65 = \"65 - age\"}")
    one_line_error(run("release", "batch", spec, "--where", "age > 30"), 2, "spec",
                   "--where")


def test_batch_where_per_query_says_it_is_a_spec_key(run: Any, one_line_error: Any,
                                                     adult_parquet: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(f'file = "{adult_parquet}"\nepsilon = 1.0\ndelta = 1e-6\n\n[[query]]\n'
                    "kind = \"count\"\nwhere = \"age > 30\"\n", encoding="utf-8")
    one_line_error(run("release", "batch", spec), 2, "query 1", "where", "top")


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_where_and_derive_on_each_engine(run_json: Any, adult_parquet: Path, engine: str,
                                         request: pytest.FixtureRequest) -> None:
    if engine == "spark":
        request.getfixturevalue("spark_session")  # the tests' local session, reused
    args = ["release", "quantiles", adult_parquet, "hours_per_day", "--derive",
            "hours_per_day=\"hours-per-week\" / 5", "--bounds", "0", "20", "--q", "0.5",
            *_where_args(WOMEN_OVER_30), "-e", EPS, "-d", DELTA, "--seed", 21,
            "--engine", engine]
    data = run_json(*args)
    table = PrivateTable(str(adult_parquet), budget=(EPS, DELTA), seed=21).with_column(
        "hours_per_day", '"hours-per-week" / 5')
    for condition in WOMEN_OVER_30:
        table = table.filter(condition)
    expected = table.quantiles("hours_per_day", (0.5,), (0.0, 20.0), epsilon=EPS,
                               delta=DELTA)
    got, want = _cells(data["result"]), _api_cells(expected)
    assert [k for k, _ in got] == [k for k, _ in want]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-12)


def test_the_guides_commands_run(run_json: Any, adult_csv: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The command-line examples of docs/guide/transformations.md run as printed (in a folder
    holding adult.csv), and the filtered mean is near the truth the page states."""
    import shlex

    guide = (Path(__file__).parents[2] / "docs" / "guide" / "transformations.md").read_text(
        encoding="utf-8")
    block = guide.split("## From the command line", 1)[1].split("```bash\n", 1)[1]
    block = block.split("```", 1)[0].replace("\\\n", " ")
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [c[:3] for c in commands] == [["approxdp", "release", "mean"],
                                         ["approxdp", "release", "median"]]
    monkeypatch.chdir(adult_csv.parent)
    mean, median = (run_json(*c[1:], "--seed", 1)["result"]["cells"][0] for c in commands)
    assert abs(mean["value"] - 38.69) < 0.3
    assert abs(median["value"] - 3325) < 500
