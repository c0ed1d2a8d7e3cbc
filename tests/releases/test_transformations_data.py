"""Filters, derived columns and public joins on real data: the bundled Adult census and the
Palmer penguins (344 rows, a CSV shipped in the ``palmerpenguins`` package; Horst et al. 2020).
Each compares releases over several seeds with the truth computed directly from the rows.

Statistical tests: every check is "within 5 reported standard deviations" (false failure
< 1e-6 per check under Gaussian noise) or a coverage count whose false-failure rate is given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from approxdp import PrivateTable
from approxdp.data import load_adult

SEEDS = range(20)


@pytest.fixture(scope="module")
def adult() -> pa.Table:
    return load_adult()


@pytest.fixture(scope="module")
def penguins_csv() -> Path:
    palmerpenguins = pytest.importorskip("palmerpenguins")
    path = Path(os.path.dirname(palmerpenguins.__file__)) / "data" / "penguins.csv"
    assert path.exists()
    return path


def _penguins(path: Path) -> pa.Table:
    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(null_values=["NA"]))


def _col(table: pa.Table, name: str) -> np.ndarray[Any, Any]:
    return np.asarray(table[name].to_numpy(zero_copy_only=False))


def _coverage_and_errors(results: list[Any], truth: float) -> tuple[int, np.ndarray[Any, Any]]:
    covered = sum(int(r.ci_low[0] <= truth <= r.ci_high[0]) for r in results)
    z = np.array([(float(r.value) - truth) / float(r.std[0]) for r in results])
    return covered, z


def test_adult_filtered_mean_over_seeds(adult: pa.Table) -> None:
    """Mean hours per week of women over 30 (9,043 rows; true mean 38.69) at ε = 1: every
    seed within 5σ, and the 95 % intervals cover the truth in ≥ 15 of 20 seeds (a false
    failure has probability < 3e-4 if they cover with probability ≥ 0.95)."""
    age, sex, hours = (_col(adult, c) for c in ("age", "sex", "hours-per-week"))
    truth = float(hours[(age > 30) & (sex == "Female")].mean())
    results = [
        PrivateTable(adult, budget=(1.0, 1e-6), seed=s)
        .filter("age > 30 AND sex = 'Female'")
        .mean("hours-per-week", (0, 100), epsilon=1.0, delta=1e-6)
        for s in SEEDS
    ]
    covered, z = _coverage_and_errors(results, truth)
    assert covered >= 15 and np.all(np.abs(z) < 5)
    assert float(np.mean([abs(float(r.value) - truth) for r in results])) < 0.1  # hours


def test_adult_derived_column_and_public_lookup(adult: pa.Table) -> None:
    """Net capital gain (a derived column with declared bounds) per education level (a public
    lookup of the 16 education values), against the truth."""
    levels = {"Preschool": "school", "1st-4th": "school", "5th-6th": "school",
              "7th-8th": "school", "9th": "school", "10th": "school", "11th": "school",
              "12th": "school", "HS-grad": "school", "Some-college": "college",
              "Assoc-voc": "college", "Assoc-acdm": "college", "Bachelors": "college",
              "Masters": "graduate", "Prof-school": "graduate", "Doctorate": "graduate"}
    lookup = pa.table({"education": list(levels), "level": list(levels.values())})
    t = PrivateTable(adult, budget=(10.0, 1e-5), seed=3)
    j = (t.join_public(lookup, on="education")
         .with_column("net_gain", '"capital-gain" - "capital-loss"', bounds=(-5000, 20000)))
    r = j.mean("net_gain", epsilon=2.0, delta=1e-6, by=["level"],
               domain={"level": ["school", "college", "graduate"]})
    education = _col(adult, "education")
    net = np.clip(_col(adult, "capital-gain") - _col(adult, "capital-loss"), -5000, 20000)
    for (level,), value, std in zip(r.keys, r.values, r.std, strict=True):
        rows = np.isin(education, [e for e, lv in levels.items() if lv == level])
        assert abs(float(value) - net[rows].mean()) <= 5 * float(std), level
    assert r.values[2] > r.values[0]  # graduates gain more than school leavers


def test_penguins_filtered_mean_from_the_csv(penguins_csv: Path) -> None:
    """Gentoo body mass (123 penguins with a mass; the CSV's "NA" makes the column text, cast
    here) at ε = 1: within 5σ for every seed, intervals covering in ≥ 15 of 20."""
    pen = _penguins(penguins_csv)
    mass = _col(pen, "body_mass_g").astype(float)
    gentoo = (_col(pen, "species") == "Gentoo") & ~np.isnan(mass)
    truth = float(np.clip(mass[gentoo], 2500, 6500).mean())
    results = []
    for s in SEEDS:
        t = PrivateTable(penguins_csv, budget=(1.0, 1e-6), seed=s,
                         casts={"body_mass_g": "double"})
        results.append(t.filter("species = 'Gentoo'").mean("body_mass_g", (2500, 6500),
                                                          epsilon=1.0, delta=1e-6))
        assert results[-1].diagnostics.casts["body_mass_g"][0] == 2  # the two "NA" rows
    covered, z = _coverage_and_errors(results, truth)
    assert covered >= 15 and np.all(np.abs(z) < 5)


def test_penguins_derived_ratio_and_island_lookup_on_both_engines(
    penguins_csv: Path, spark_session: Any
) -> None:
    """A derived bill ratio (text cast inside the expression) and a public table of islands:
    the same release on DuckDB and Spark, and close to the truth."""
    islands = pa.table({"island": ["Biscoe", "Dream", "Torgersen"],
                        "latitude": [-65.43, -64.73, -64.77]})
    out = []
    for engine in ("duckdb", "spark"):
        t = PrivateTable(penguins_csv, budget=(5.0, 1e-5), seed=9, engine=engine)
        j = (t.with_column("ratio", "TRY_CAST(bill_length_mm AS DOUBLE) / "
                                    "TRY_CAST(bill_depth_mm AS DOUBLE)", bounds=(1, 4))
             .join_public(islands, on="island")
             .filter("latitude < -65"))
        out.append((j.mean("ratio", epsilon=1.0, delta=1e-6),
                    j.histogram("species", epsilon=1.0, delta=1e-6,
                                domain={"species": ["Adelie", "Chinstrap", "Gentoo"]})))
    (duck_mean, duck_hist), (spark_mean, spark_hist) = out
    assert float(duck_mean.value) == pytest.approx(float(spark_mean.value), rel=1e-12)
    np.testing.assert_allclose(np.asarray(duck_hist.values), np.asarray(spark_hist.values),
                               rtol=1e-12)
    pen = _penguins(penguins_csv)
    biscoe = _col(pen, "island") == "Biscoe"
    ratio = _col(pen, "bill_length_mm").astype(float) / _col(pen, "bill_depth_mm").astype(float)
    ok = biscoe & ~np.isnan(ratio)
    assert abs(float(duck_mean.value) - np.clip(ratio[ok], 1, 4).mean()) <= 5 * float(
        duck_mean.std[0])
    species = _col(pen, "species")[biscoe]
    for (name,), value, std in zip(duck_hist.keys, duck_hist.values, duck_hist.std,
                                   strict=True):
        assert abs(float(value) - int((species == name).sum())) <= 5 * float(std)
